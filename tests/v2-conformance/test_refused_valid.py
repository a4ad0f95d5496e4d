"""refused-valid.toml: well formed, and every entry names operations and a rule the document has.

Run by run.sh before the conformance run (pytest).
"""

import json
import os
import re

import refused_valid

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "fixtures", "platform-rest-v2.openapi.json")
# The published document, with its prose, where the checkout sits beside the shared spec.
PUBLISHED = os.path.join(HERE, "..", "..", "..", "shared", "spec", "platform-rest-v2.openapi.json")


def resolve(document, path):
    """The node at a dotted path such as `components.schemas.X.allOf[1].properties.y`."""
    node = document
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        node = node[int(part[1:-1])] if part.startswith("[") else node[part]
    return node


def test_entries_are_well_formed_and_their_rules_exist():
    with open(FIXTURE) as f:
        fixture = json.load(f)
    published = None
    if os.path.exists(PUBLISHED):
        with open(PUBLISHED) as f:
            published = json.load(f)
    operation_ids = {
        op["operationId"]
        for item in fixture["paths"].values()
        for op in item.values()
        if isinstance(op, dict) and "operationId" in op
    }
    for entry in refused_valid.load():
        assert entry["operations"], entry["id"]
        assert set(entry["operations"]) <= operation_ids, entry["id"]
        assert entry["body"] and entry["why"], entry["id"]
        rule = entry["rule"]
        # Every refusal rests on a rule of the document (no "none" entries).
        assert rule.endswith(".description"), entry["id"]
        resolve(fixture, rule.removesuffix(".description"))
        if published is not None:
            assert isinstance(resolve(published, rule), str), entry["id"]


def test_a_refusal_passes_only_when_every_reason_is_listed():
    entries = [
        {"id": "a", "operations": ["createPod"], "status": 400, "pattern": re.compile("^gpu: ")},
        {"id": "b", "operations": ["createPod"], "status": 400, "pattern": re.compile("^cpu: ")},
    ]
    body = json.dumps({"status": 400, "errors": ["gpu: x", "cpu: y"]})
    assert [e["id"] for e in refused_valid.matching_entry(entries, "createPod", 400, body)] == ["a", "b"]
    assert refused_valid.matching_entry(entries, "createPod", 422, body) is None
    assert refused_valid.matching_entry(entries, "updatePod", 400, body) is None
    mixed = json.dumps({"status": 400, "errors": ["gpu: x", "name: z"]})
    assert refused_valid.matching_entry(entries, "createPod", 400, mixed) is None
    detail = json.dumps({"status": 400, "detail": "gpu: only a detail"})
    assert [e["id"] for e in refused_valid.matching_entry(entries, "createPod", 400, detail)] == ["a"]
    assert refused_valid.matching_entry(entries, "createPod", 400, b"not json") is None
