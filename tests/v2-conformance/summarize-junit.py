#!/usr/bin/env python3
"""Prints schemathesis' JUnit report as a short list of findings, grouped by operation.

    summarize-junit.py REPORT.xml [TALLY]

First the figures: operations tested, failures per check, and, from the tally refused_valid.py
keeps (TALLY), the responses per kind of case (positive, negative, missing header, undeclared
method) and how often each entry of refused-valid.toml let a refusal pass. Then one line per
failure: the check that failed and the request that reproduces it (the first `curl` line
schemathesis gives, its Authorization header already filtered). Exits 0; the caller decides
from schemathesis' own exit status.
"""

import collections
import os
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import refused_valid  # noqa: E402


def findings(root):
    """Yields (operation, [(check, reproduction)]) for each operation with failures."""
    for case in root.iter("testcase"):
        failures = []
        for failure in list(case.iter("failure")) + list(case.iter("error")):
            failures.extend(parse_failure(failure.text or "", failure.get("message", "")))
        if failures:
            yield case.get("name", "?"), failures


def parse_failure(text, fallback_check):
    """One failure element may hold several checks of one test case, and one reproduction."""
    checks = [line[2:].strip() for line in text.splitlines() if line.startswith("- ")]
    curl = next((line.strip() for line in text.splitlines() if line.strip().startswith("curl ")), "")
    return [(check, curl) for check in (checks or [fallback_check])]


def print_tally(path):
    counts = collections.Counter()
    with open(path) as tally:
        for line in tally:
            counts[line.strip()] += 1
    kinds = {k[5:]: n for k, n in counts.items() if k.startswith("case ")}
    by_kind = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))
    print(f"  responses checked: {sum(kinds.values())} ({by_kind})")
    print("  refused-valid.toml entries that let a refusal pass:")
    for entry in refused_valid.load():
        unfounded = "  (no rule in the document)" if entry["rule"] == "none" else ""
        print(f"    {counts.get('listed ' + entry['id'], 0):5}  {entry['id']}{unfounded}")


def main():
    root = ET.parse(sys.argv[1]).getroot()
    operations = [case.get("name", "?") for case in root.iter("testcase")]
    found = list(findings(root))
    # Test cases are named `METHOD /path`, besides one for the stateful phase.
    tested = [name for name in operations if name.split()[0].isupper()]
    print(f"REST v2 conformance: {len(tested)} operations tested")
    per_check = collections.Counter(check for _, failures in found for check, _ in failures)
    print(f"  failures: {sum(per_check.values())}")
    for check, n in sorted(per_check.items()):
        print(f"    {n:5}  {check}")
    if len(sys.argv) > 2 and os.path.exists(sys.argv[2]):
        print_tally(sys.argv[2])
    print(f"{len(found)} operations with failures")
    for operation, failures in found:
        print(f"  {operation}")
        for check, curl in failures:
            print(f"    {check}")
            if curl:
                print(f"      {curl}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
