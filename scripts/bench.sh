#!/usr/bin/env bash
# The benchmarks whose figures README.md and docs/performance.md quote, run one after
# another on a control plane of their own, each writing its JSON report (commit, machine,
# command, figures with units; benches/support/report.rs) into docs/bench/, then the docs'
# figures (docs/bench/README.md, README.md) regenerated from those reports
# (scripts/bench-docs.py). A benchmark that does not
# converge, or whose requests fail, stops the run with its exit status.
#
#   scripts/bench.sh            the set, about 20 minutes on 2 cores once built
#   scripts/bench.sh --long     100,000 NetworkVolumes (about an hour), into docs/bench/long/
#
# Needs what scripts/test.sh needs, and kubectl on PATH. Run it on an otherwise idle machine:
# the figures are of the machine as much as of the code.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

long=false
case "${1:-}" in
    --long) long=true ;;
    "") ;;
    *) echo "usage: scripts/bench.sh [--long]" >&2; exit 2 ;;
esac
command -v kubectl >/dev/null || { echo "error: kubectl is required" >&2; exit 1; }

out=$root/docs/bench
$long && out=$out/long
mkdir -p "$out"
export BENCH_REPORT_DIR
BENCH_REPORT_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gpucloud-bench.XXXXXX")

echo "==> build"
cargo bench --locked --no-run

cp_dir=$(mktemp -d "${TMPDIR:-/tmp}/gpucloud-bench-cp.XXXXXX")
rmdir "$cp_dir"
trap 'tests/control-plane/cp.sh down --dir "$cp_dir" >/dev/null 2>&1 || true' EXIT
eval "$(tests/control-plane/cp.sh up --dir "$cp_dir")"
export KUBECONFIG

# The operator is measured, not the emulator's quota (a real account has one: the
# benchmarks that meet it say so).
export BENCH_V2_QUOTA_PER_MINUTE=100000

declare -a timings=()
bench() { # NAME [ENV=VALUE...] [-- ARGS...]
    local name=$1 started=$SECONDS
    shift
    local -a vars=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do vars+=("$1"); shift; done
    [ "${1:-}" = "--" ] && shift
    printf '\n==> %s %s %s\n' "${vars[*]}" "$name" "$*"
    env "${vars[@]}" cargo bench --locked --bench "$name" -- "$@"
    timings+=("$(printf '%-28s %5d s' "$name" $((SECONDS - started)))")
}

if $long; then
    bench operator_network_volume BENCH_DELETE=orphan BENCH_POLL_SECONDS=60 -- 100000
else
    bench client
    bench emulator
    bench operator_network_volume BENCH_DELETE=orphan -- 10000
    bench operator_pod -- 1000
    bench operator_latency BENCH_SAMPLES=20
    bench operator_cluster
    bench operator_pod_startup
    bench operator_shards -- 2000
    bench operator_outage BENCH_OUTAGES=20
fi

rm -f "$out"/*.json
cp "$BENCH_REPORT_DIR"/*.json "$out"/
printf '\nBenchmark times:\n'
printf '  %s\n' "${timings[@]}"
python3 scripts/bench-docs.py
echo "reports in ${out#"$root"/}; docs/bench/README.md and README.md regenerated"
