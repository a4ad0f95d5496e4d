#!/usr/bin/env python3
"""Runs test binaries for several lanes at once, through one pool of workers.

A lane is a set of test binaries run with one environment (a backend, a kubeconfig) and one
filter. The end-to-end suites mostly wait (on the operator's passes, the emulator's clock, the
apiserver), so running many binaries at once takes a fraction of running them one by one.

Each binary's output goes to LOGS/LANE/NAME.log. At the end each lane says how many tests
passed, failed, and were left out by its filter (libtest's "filtered out"), the slowest
binaries, and the whole log of every binary that failed; last, each failed test's panic
message on a few lines (a long log is cut in the middle by whoever shows only its ends).
Exit status 1 when any failed.

    run-lanes.py --jobs 8 --logs DIR --binaries FILE \\
        --lane 'v2 GPUCLOUD_TEST_PLATFORM_API=v2' \\
        --lane 'seed GPUCLOUD_TEST_PLATFORM_API=seed --skip=v2_only_ --only=^e2e_'

FILE has one line per binary: its target name and its path. A lane is its name, then
KEY=VALUE environment entries, then options: --only=REGEX and --except=REGEX choose
binaries by target name, --skip=PATTERN is passed to each binary (a test whose name contains
PATTERN is left out), --threads=N is each binary's --test-threads. Binaries run longest
first, by the times the last run recorded in --times (a JSON file, rewritten at the end);
unknown ones first of all.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

RESULT = re.compile(
    r"^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored; (\d+) measured; "
    r"(\d+) filtered out"
)


@dataclass
class Lane:
    name: str
    env: dict = field(default_factory=dict)
    only: list = field(default_factory=list)
    exclude: list = field(default_factory=list)
    skip: list = field(default_factory=list)
    threads: int | None = None

    @staticmethod
    def parse(text):
        words = text.split()
        if not words:
            raise SystemExit("error: --lane needs a name")
        lane = Lane(words[0])
        for word in words[1:]:
            key, sep, value = word.partition("=")
            if not sep:
                raise SystemExit(f"error: lane {lane.name}: {word!r} is not KEY=VALUE")
            if key == "--only":
                lane.only.append(re.compile(value))
            elif key == "--except":
                lane.exclude.append(re.compile(value))
            elif key == "--skip":
                lane.skip.append(value)
            elif key == "--threads":
                lane.threads = int(value)
            elif key.startswith("--"):
                raise SystemExit(f"error: lane {lane.name}: unknown option {key}")
            else:
                lane.env[key] = value
        return lane

    def takes(self, target):
        if self.only and not any(r.search(target) for r in self.only):
            return False
        return not any(r.search(target) for r in self.exclude)


@dataclass
class Run:
    lane: Lane
    target: str
    path: str
    log: str
    seconds: float = 0.0
    status: int | None = None
    passed: int = 0
    failed: int = 0
    filtered: int = 0

    def key(self):
        return f"{self.lane.name}/{self.target}"

    def command(self):
        cmd = [self.path, "--include-ignored"]
        for pattern in self.lane.skip:
            cmd += ["--skip", pattern]
        if self.lane.threads:
            cmd += ["--test-threads", str(self.lane.threads)]
        return cmd

    def execute(self, say):
        env = dict(os.environ, **self.lane.env)
        start = time.monotonic()
        with open(self.log, "w") as out:
            self.status = subprocess.call(
                self.command(), stdout=out, stderr=subprocess.STDOUT, env=env
            )
        self.seconds = time.monotonic() - start
        with open(self.log) as text:
            for line in text:
                m = RESULT.match(line)
                if m:
                    self.passed += int(m.group(1))
                    self.failed += int(m.group(2))
                    self.filtered += int(m.group(5))
        if self.status != 0 and self.failed == 0:
            self.failed = 1  # it crashed or was killed before libtest could say
        word = "ok" if self.status == 0 else "FAILED"
        say(f"[{self.lane.name}] {self.target}: {word} in {self.seconds:.0f} s")


def panics(log):
    """Each panic in a binary's log: the thread (libtest names it after the test), where,
    and the message's first lines (up to the backtrace)."""
    found = []
    with open(log, errors="replace") as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        if "panicked at" not in line or not line.startswith("thread '"):
            continue
        message = []
        for follow in lines[i + 1:i + 9]:
            if follow.startswith(("stack backtrace:", "note: ")) or not follow.strip():
                break
            message.append(follow)
        found.append((line, message))
    return found


def expected_order(run, times):
    """Sort key: longest first. A binary the last run did not time goes by its suite's size
    (the end-to-end suites wait most, and the longer ones hold more tests), before the
    timed ones."""
    known = times.get(run.key())
    if known is not None:
        return (1, -known)
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), run.target + ".rs")
    size = os.path.getsize(source) if os.path.exists(source) else 0
    return (0, -size)


def load_times(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--logs", required=True)
    parser.add_argument("--binaries", required=True)
    parser.add_argument("--times", help="JSON of each binary's last time, read and rewritten")
    parser.add_argument("--lane", action="append", required=True, type=Lane.parse)
    args = parser.parse_args()

    with open(args.binaries) as f:
        binaries = [line.split(maxsplit=1) for line in f if line.strip()]
    runs = []
    for lane in args.lane:
        os.makedirs(os.path.join(args.logs, lane.name), exist_ok=True)
        for target, path in binaries:
            if lane.takes(target):
                log = os.path.join(args.logs, lane.name, f"{target}.log")
                runs.append(Run(lane, target, path.strip(), log))
    times = load_times(args.times) if args.times else {}
    runs.sort(key=lambda r: expected_order(r, times))

    lock = threading.Lock()

    def say(text):
        with lock:
            print(text, flush=True)

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for future in [pool.submit(r.execute, say) for r in runs]:
            future.result()
    wall = time.monotonic() - started

    ok = True
    for lane in args.lane:
        mine = [r for r in runs if r.lane is lane]
        failed = [r for r in mine if r.status != 0]
        ok = ok and not failed
        print(f"\n--- lane {lane.name}: {len(mine)} binaries, "
              f"{sum(r.passed for r in mine)} passed, {sum(r.failed for r in mine)} failed, "
              f"{sum(r.filtered for r in mine)} left out by "
              f"{' '.join('--skip ' + s for s in lane.skip) or 'no filter'}")
        for r in sorted(mine, key=lambda r: -r.seconds)[:5]:
            print(f"    {r.seconds:6.0f} s  {r.target}")
        for r in failed:
            print(f"\n--- lane {lane.name}, {r.target} failed (exit {r.status}); its log:")
            with open(r.log) as f:
                sys.stdout.write(f.read())
    brief = [(r, p) for r in runs if r.status != 0 for p in panics(r.log)]
    if brief:
        print("\n--- failures in brief")
        for r, (line, message) in brief:
            print(f"[{r.lane.name}] {r.target}: {line}")
            for m in message:
                print(f"    {m[:400]}")
    print(f"\n{len(runs)} binaries in {wall:.0f} s with {args.jobs} at once "
          f"({sum(r.seconds for r in runs):.0f} s one after another)")
    if args.times:
        times.update({r.key(): round(r.seconds, 1) for r in runs})
        os.makedirs(os.path.dirname(os.path.abspath(args.times)), exist_ok=True)
        with open(args.times, "w") as f:
            json.dump(times, f, indent=1, sort_keys=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
