"""What strip-openapi.py keeps and drops (run by run.sh before schemathesis)."""

import importlib.util
import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent
SPEC = importlib.util.spec_from_file_location("strip_openapi", HERE / "strip-openapi.py")
strip_openapi = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(strip_openapi)

DOCUMENT = {
    "openapi": "3.1.0",
    "info": {"title": "T", "version": "2", "description": "prose"},
    "tags": [{"name": "Pods", "description": "prose"}],
    "x-codeSamples": [{"lang": "sh"}],
    "paths": {
        "/v2/things/{id}": {
            "summary": "prose",
            "get": {
                "operationId": "getThing",
                "summary": "prose",
                "description": "prose",
                "parameters": [
                    {"in": "path", "name": "id", "required": True, "example": "x",
                     "schema": {"type": "string", "description": "prose"}},
                ],
                "responses": {
                    "200": {
                        "description": "prose",
                        "headers": {"x-request-id": {"schema": {"type": "string"}}},
                        "content": {"application/json": {
                            "schema": {"$ref": "#/components/schemas/Thing"},
                            "examples": {"one": {"value": {}}},
                        }},
                    },
                    "default": {"$ref": "#/components/responses/Error"},
                },
            },
        },
    },
    "components": {
        "responses": {"Error": {"description": "prose", "content": {}}},
        "schemas": {
            "Thing": {
                "type": "object",
                "description": "prose",
                "required": ["description", "summary"],
                "x-enum-varnames": ["A"],
                "properties": {
                    "description": {"type": "string", "examples": ["prose"]},
                    "summary": {"type": "string"},
                    "x-custom": {"type": "integer"},
                    "kind": {"enum": ["A", "B"], "default": {"description": "data"}},
                },
            },
        },
    },
}


def test_prose_goes_and_structure_stays():
    out = strip_openapi.strip(DOCUMENT)
    assert out["info"] == {"title": "T", "version": "2"}
    assert out["tags"] == [{"name": "Pods"}]
    assert "x-codeSamples" not in out
    item = out["paths"]["/v2/things/{id}"]
    assert "summary" not in item
    op = item["get"]
    assert set(op) == {"operationId", "parameters", "responses"}
    assert op["parameters"] == [
        {"in": "path", "name": "id", "required": True, "schema": {"type": "string"}}
    ]
    ok = op["responses"]["200"]
    assert ok["description"] == ""
    assert ok["headers"] == {"x-request-id": {"schema": {"type": "string"}}}
    assert ok["content"] == {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}
    # A reference stands for a response and must not grow a description beside it.
    assert op["responses"]["default"] == {"$ref": "#/components/responses/Error"}
    assert out["components"]["responses"]["Error"] == {"description": "", "content": {}}


def test_names_and_data_that_look_like_prose_are_kept():
    thing = strip_openapi.strip(DOCUMENT)["components"]["schemas"]["Thing"]
    assert thing["required"] == ["description", "summary"]
    assert "x-enum-varnames" not in thing and "description" not in thing
    assert thing["properties"] == {
        "description": {"type": "string"},
        "summary": {"type": "string"},
        "x-custom": {"type": "integer"},
        "kind": {"enum": ["A", "B"], "default": {"description": "data"}},
    }


def test_output_is_deterministic_and_names_its_source(tmp_path):
    source = tmp_path / "in.json"
    source.write_text(json.dumps(DOCUMENT))
    outputs = []
    for name in ("a.json", "b.json"):
        subprocess.run(
            [sys.executable, str(HERE / "strip-openapi.py"), str(source), str(tmp_path / name),
             "--as-of", "2026-11-22"],
            check=True,
        )
        outputs.append((tmp_path / name).read_text())
    assert outputs[0] == outputs[1]
    assert outputs[0].endswith("}\n")
    assert "as of 2026-11-22" in json.loads(outputs[0])["info"]["x-source"]
    assert outputs[0] == json.dumps(json.loads(outputs[0]), indent=2, sort_keys=True,
                                    ensure_ascii=False) + "\n"
