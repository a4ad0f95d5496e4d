#!/usr/bin/env python3
"""Writes the benchmark figures of the docs from the JSON reports of one run of
scripts/bench.sh (docs/bench/*.json): docs/bench/README.md whole, and in README.md the block
between `<!-- bench:readme -->` and `<!-- /bench:readme -->`, which nothing else writes. A figure the README quotes is looked up by benchmark
and name in the reports: one that no report has fails the script, as does a report of a
benchmark Cargo.toml does not declare.

    scripts/bench-docs.py           rewrite the blocks
    scripts/bench-docs.py --check   fail when a block differs from what the reports give
"""

import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH_DIR = os.path.join(ROOT, "docs", "bench")

# The README's figures: (benchmark, figure name, how the figure reads) per line, grouped
# under a heading. `{v}` is the value as the report gives it, rounded for reading.
README = [
    ("10,000 NetworkVolumes applied with `kubectl apply`", "operator_network_volume", [
        ("10000 volumes: first create to all Ready", "all Ready {v} s after the first create"),
        ("10000 volumes: all Ready after the last create", "{v} s after the last create returned"),
        ("first create to all Ready over kubectl apply with no operator",
         "{v}x the same apply with no operator running (the design's bar: 1.5x)"),
        ("apiserver writes per volume", "{v} apiserver writes per volume"),
        ("platform calls per resync once converged", "{v} platform call per resync once converged"),
        ("operator memory with 10000 volumes", "{v} MiB resident"),
        ("operator memory growth per volume", "{v} KiB per volume over idle"),
    ]),
    ("Deleting them (`Orphan`)", "operator_network_volume", [
        ("10000 Orphan deletes: rate", "{v} per second"),
        ("10000 bare apiserver deletes: rate", "the same deletes with nothing watching: {v} per second"),
    ]),
    ("1,000 GPU Pods", "operator_pod", [
        ("1000 Pods: first create to all Ready", "all Ready {v} s after the first create"),
        ("1000 Pods: apiserver writes per object", "{v} apiserver writes per Pod"),
        ("platform calls per resync once converged", "{v} platform call per resync once converged"),
    ]),
    ("A spec change, the volume alone", "operator_latency", [
        ("alone: spec change to platform call, p50", "reaches the platform in {v} ms (median)"),
        ("alone: spec change to platform call, p99", "{v} ms (p99)"),
    ]),
]


def reports(directory):
    """The reports in `directory`, by benchmark."""
    out = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        with open(path) as f:
            report = json.load(f)
        out[report["benchmark"]] = report
    return out


def declared_benchmarks():
    with open(os.path.join(ROOT, "Cargo.toml")) as f:
        text = f.read()
    return set(re.findall(r'\[\[bench\]\]\s*name\s*=\s*"([^"]+)"', text))


def reading(value):
    """A figure as the docs print it: three significant digits, thousands separated."""
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def figure(report, name, problems):
    for f in report["figures"]:
        if f["name"] == name:
            return f["value"]
    problems.append(f"{report['benchmark']}: no figure named {name!r} in its report")
    return None


def header(all_reports):
    """Where the figures come from: one commit and one machine, or the run is mixed."""
    commits = sorted({r["commit"] for r in all_reports.values()})
    dates = sorted(r["date"][:10] for r in all_reports.values())
    machine = next(iter(all_reports.values()))["machine"]
    cpus = machine.get("cpus")
    model = machine.get("cpu_model") or "unknown CPU"
    return (f"commit `{', '.join(c[:12] for c in commits)}`, {dates[0]}"
            + (f" to {dates[-1]}" if dates[-1] != dates[0] else "")
            + f", {cpus} CPUs, {model}")


def readme_block(all_reports, problems):
    lines = [f"One run of `scripts/bench.sh` ({header(all_reports)}), REST v2, the emulator's "
             "quota lifted; every figure of the run in "
             "[docs/bench/](docs/bench/README.md):"]
    for title, bench, items in README:
        report = all_reports.get(bench)
        if report is None:
            problems.append(f"README quotes {bench}, which the run has no report of")
            continue
        parts = []
        for name, text in items:
            value = figure(report, name, problems)
            if value is not None:
                parts.append(text.format(v=reading(value)))
        lines.append(f"- **{title}:** " + "; ".join(parts) + f" (`{command(report)}`).")
    return "\n".join(lines)


def command(report):
    """The command that made `report`, with the variables that changed what it did."""
    env = " ".join(f"{k}={v}" for k, v in sorted(report["environment"].items())
                   if k != "BENCH_REPORT_DIR")
    args = " ".join(a for a in report["command"][1:] if not a.startswith("--bench"))
    line = f"{env} cargo bench --bench {report['benchmark']}" + (f" -- {args}" if args else "")
    return line.strip()


RUN_PAGE_TITLE = """# The recorded run

Written by `scripts/bench-docs.py` from the reports beside this page, which `scripts/bench.sh`
wrote; not edited by hand. How to read and reproduce them: [Performance](../performance.md).

"""

LONG_PAGE_TITLE = """# The recorded long run

Written by `scripts/bench-docs.py` from the reports beside this page, which
`scripts/bench.sh --long` wrote; not edited by hand. How to read and reproduce them:
[Performance](../../performance.md).

"""


def write_page(path, text, check, stale):
    """Writes `path` whole (unless checking); notes it as stale when it differed."""
    current = open(path).read() if os.path.exists(path) else ""
    if current != text:
        stale.append(os.path.relpath(path, ROOT))
        if not check:
            with open(path, "w") as f:
                f.write(text)


def conditions(report):
    """How long the benchmark ran and how busy the machine was, when its report says."""
    load = report.get("load_average")
    if not load or "seconds" not in report:
        return []
    def averages(values):
        return ", ".join(f"{v:.2f}" for v in values)
    return ["", f"Ran {report['seconds']} s; load average (1, 5, 15 minutes) "
            f"{averages(load['at_begin'])} at its start, {averages(load['at_end'])} at its end."]


def performance_block(all_reports, command_line="scripts/bench.sh", where="docs/bench/"):
    lines = [f"From one run of `{command_line}`: {header(all_reports)}. Each benchmark's "
             f"report, with its command and environment, is in `{where}`."]
    for bench, report in sorted(all_reports.items()):
        lines += ["", f"**{bench}** (`{command(report)}`)"] + conditions(report)
        lines += ["", "| Figure | Value |", "|---|---|"]
        for f in report["figures"]:
            lines.append(f"| {f['name']} | {reading(f['value'])} {f['unit']} |")
    return "\n".join(lines)


def replace_block(text, name, body, path, problems):
    begin, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    if begin not in text or end not in text:
        problems.append(f"{path}: no {begin} ... {end} block")
        return text
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def main():
    check = "--check" in sys.argv[1:]
    problems = []
    all_reports = reports(BENCH_DIR)
    if not all_reports:
        sys.exit(f"no reports in {BENCH_DIR}: run scripts/bench.sh")
    declared = declared_benchmarks()
    for bench, report in all_reports.items():
        if bench not in declared:
            problems.append(f"docs/bench/ has a report of {bench}, a benchmark Cargo.toml does not declare")
        if report["failures"]:
            problems.append(f"{bench}: its run failed ({'; '.join(report['failures'])})")
    pages = {"README.md": [("readme", readme_block(all_reports, problems))]}
    stale = []
    # The runs' pages are written whole.
    write_page(os.path.join(BENCH_DIR, "README.md"),
               RUN_PAGE_TITLE + performance_block(all_reports) + "\n", check, stale)
    long_dir = os.path.join(BENCH_DIR, "long")
    long_reports = reports(long_dir)
    if long_reports:
        for bench, report in long_reports.items():
            if report["failures"]:
                problems.append(f"long/{bench}: its run failed ({'; '.join(report['failures'])})")
        write_page(os.path.join(long_dir, "README.md"),
                   LONG_PAGE_TITLE + performance_block(
                       long_reports, "scripts/bench.sh --long", "docs/bench/long/") + "\n",
                   check, stale)
    for page, blocks in pages.items():
        path = os.path.join(ROOT, page)
        with open(path) as f:
            text = f.read()
        new = text
        for name, body in blocks:
            new = replace_block(new, name, body, page, problems)
        if new != text:
            stale.append(page)
            if not check:
                with open(path, "w") as f:
                    f.write(new)
    if problems:
        sys.exit("error:\n  " + "\n  ".join(problems))
    if check and stale:
        sys.exit("error: the benchmark figures of " + ", ".join(stale)
                 + " are not those of docs/bench/: run scripts/bench-docs.py")


if __name__ == "__main__":
    main()
