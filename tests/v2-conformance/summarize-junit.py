#!/usr/bin/env python3
"""Prints schemathesis' JUnit report as a short list of findings, grouped by operation.

    summarize-junit.py REPORT.xml

One line per failure: the check that failed and the request that reproduces it (the first
`curl` line schemathesis gives, its Authorization header already filtered). Exits 0; the
caller decides from schemathesis' own exit status.
"""

import sys
import xml.etree.ElementTree as ET


def findings(report_path):
    """Yields (operation, [(check, reproduction)]) for each operation with failures."""
    root = ET.parse(report_path).getroot()
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


def main():
    found = list(findings(sys.argv[1]))
    print(f"REST v2 conformance: {len(found)} operations with failures")
    for operation, failures in found:
        print(f"  {operation}")
        for check, curl in failures:
            print(f"    {check}")
            if curl:
                print(f"      {curl}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
