#!/usr/bin/env python3
"""Strips the prose out of the platform's published REST v2 OpenAPI document.

What stays is what a schema-driven API tester needs: paths, methods, parameters, request and
response schemas, enums, required lists, defaults, status codes, headers, content types and
security. What goes: every description, summary, example and examples, tag descriptions,
every `x-*` extension (the document's are code samples and code-generation names, none
changes what a request or answer may be).

The walk is structural, not a blind key filter: in maps whose keys are names (properties,
paths, status codes, media types, header names, components) a key called `description` or
`summary` is a name and is kept; values of `enum`, `const`, `default` and `required` are data
and are copied as they are.

A Response Object must have a `description` in OpenAPI 3.x, so each keeps an empty one: the
document stays valid for strict loaders.

    strip-openapi.py SOURCE OUTPUT --as-of YYYY-MM-DD

The output is deterministic: keys sorted, 2-space indent, UTF-8, one trailing newline.
"""

import argparse
import datetime
import json
import sys

PROSE = {"description", "summary", "example", "examples", "externalDocs"}
# Keyword values that are data, not schema: copied without being walked.
DATA = {"enum", "const", "default", "required"}
# Keywords whose value maps names to objects of one kind.
NAME_MAPS = {
    "paths",
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "schemas",
    "responses",
    "parameters",
    "headers",
    "securitySchemes",
    "requestBodies",
    "links",
    "callbacks",
    "pathItems",
    "webhooks",
    "content",
    "encoding",
    "variables",
    "mapping",
}


def is_dropped(key):
    return key in PROSE or key.startswith("x-")


def strip(node, in_responses=False):
    """Strips one OpenAPI or JSON Schema object (a dict), or a list of them."""
    if isinstance(node, list):
        return [strip(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if is_dropped(key):
            continue
        if key in DATA:
            out[key] = value
        elif key in NAME_MAPS and isinstance(value, dict):
            out[key] = strip_name_map(key, value)
        else:
            out[key] = strip(value)
    if in_responses and "$ref" not in out:
        out["description"] = ""
    return out


def strip_name_map(keyword, names):
    """Keeps every name of the map and strips each named object."""
    # `mapping` maps discriminator values to references: plain strings.
    if keyword == "mapping":
        return dict(names)
    return {
        name: strip(value, in_responses=(keyword == "responses"))
        for name, value in names.items()
        if not name.startswith("x-") or keyword not in ("paths", "responses")
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source")
    parser.add_argument("output")
    parser.add_argument(
        "--as-of",
        required=True,
        type=datetime.date.fromisoformat,
        help="the date the source document was taken (YYYY-MM-DD)",
    )
    args = parser.parse_args()

    with open(args.source, encoding="utf-8") as f:
        document = json.load(f)
    stripped = strip(document)
    stripped["info"]["x-source"] = (
        "the platform's published REST v2 OpenAPI document, as of "
        f"{args.as_of.isoformat()}, stripped of prose by tests/v2-conformance/strip-openapi.py"
    )
    text = json.dumps(stripped, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
