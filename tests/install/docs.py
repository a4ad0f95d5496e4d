#!/usr/bin/env python3
"""Picks objects out of a stream of YAML documents on stdin (the output of `kubectl
kustomize` or `helm template`), by kind and name, for the install tests.

    docs.py list                  KIND NAME of each object, one a line
    docs.py keep KIND[/NAME]...   the objects that match one of the patterns
    docs.py drop KIND[/NAME]...   the objects that match none of them
    docs.py args                  the args of the Deployment's first container, one a line

Reads the top-level `kind:` and `metadata.name` as text, which is all these tests need:
Python's standard library has no YAML parser, and the project asks for no other package.
"""

import re
import sys


def documents(text):
    """The non-empty documents of a YAML stream, split on `---` lines."""
    docs, lines = [], []
    for line in text.splitlines():
        if re.fullmatch(r"---\s*", line):
            docs.append("\n".join(lines))
            lines = []
        else:
            lines.append(line)
    docs.append("\n".join(lines))
    return [d for d in docs if kind_and_name(d)[0]]


def kind_and_name(doc):
    """The object's kind and metadata.name (empty strings when it has none)."""
    kind = name = ""
    top = None
    for line in doc.splitlines():
        key = re.match(r"([A-Za-z]\w*):(.*)", line)
        if key:
            top = key.group(1)
            if top == "kind":
                kind = key.group(2).strip()
            continue
        child = re.match(r"  name:\s*(\S+)", line)
        if top == "metadata" and child and not name:
            name = child.group(1).strip("'\"")
    return kind, name


def matches(doc, patterns):
    kind, name = kind_and_name(doc)
    for pattern in patterns:
        want_kind, _, want_name = pattern.partition("/")
        if want_kind == kind and want_name in ("", name):
            return True
    return False


def container_args(doc):
    """The items of the first `args:` list in the document (a container's, in a
    Deployment), unquoted."""
    lines = doc.splitlines()
    for at, line in enumerate(lines):
        if re.fullmatch(r"\s*(- )?args:\s*", line):
            break
    else:
        return []
    args, indent = [], None
    for line in lines[at + 1 :]:
        item = re.match(r"(\s*)- (.*)", line)
        if not item or (indent is not None and len(item.group(1)) != indent):
            break
        indent = len(item.group(1))
        value = item.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        args.append(value)
    return args


def main(argv):
    if len(argv) < 2 or argv[1] not in ("list", "keep", "drop", "args"):
        sys.exit(__doc__)
    docs = documents(sys.stdin.read())
    command, patterns = argv[1], argv[2:]
    if command == "args":
        deployments = [d for d in docs if kind_and_name(d)[0] == "Deployment"]
        for arg in container_args(deployments[0]) if deployments else []:
            print(arg)
        return
    if command == "list":
        for doc in docs:
            print(*kind_and_name(doc))
        return
    keep = command == "keep"
    picked = [d for d in docs if matches(d, patterns) == keep]
    print("\n---\n".join(picked))


if __name__ == "__main__":
    main(sys.argv)
