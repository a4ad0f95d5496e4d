#!/usr/bin/env bash
# The project's whole test suite, from a clean clone on a machine that has only the
# toolchains (Rust, Go, Python): builds the control plane (cached between runs), lints,
# builds, brings a real kube-apiserver up on 127.0.0.1, runs every test, brings it down.
# Beside those, the node phase (tests/node/run.sh) builds the release image, runs it on a
# real node and installs, upgrades and uninstalls it; it installs the distribution's
# packages it needs (scripts/packages.sh), and needs root.
#
#   scripts/test.sh            everything
#   scripts/test.sh -- FILTER  pass FILTER on to `cargo test`
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

declare -a phases=()
phase_start=$SECONDS
phase() {
    local now=$SECONDS
    if [ -n "${current_phase:-}" ]; then
        phases+=("$(printf '%-28s %5d s' "$current_phase" $((now - phase_start)))")
    fi
    current_phase=$1
    phase_start=$now
    printf '\n==> %s\n' "$1"
}
report() {
    phase done
    printf '\nPhase timings:\n'
    printf '  %s\n' "${phases[@]}"
}

cargo_args=()
if [ "${1:-}" = "--" ]; then
    shift
    cargo_args=("$@")
fi

for tool in cargo go python3 openssl curl; do
    command -v "$tool" >/dev/null || { echo "error: $tool is required" >&2; exit 1; }
done

# What the run has to work with, for when a build stops on a full disk.
df -h "$root" "${TMPDIR:-/tmp}" 2>/dev/null || true

phase "control plane and node: build (cached), packages"
tests/control-plane/cp.sh build --node
if [ ${#cargo_args[@]} -eq 0 ]; then
    scripts/packages.sh node
fi

phase "format and lint"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings

phase "build"
cargo build --workspace --all-targets --locked

phase "control plane: up"
cp_dir=$(mktemp -d "${TMPDIR:-/tmp}/gpucloud-cp.XXXXXX")
rmdir "$cp_dir"
node_pid=
outage_pid=
node_log=$(mktemp "${TMPDIR:-/tmp}/gpucloud-node-phase.XXXXXX")
cleanup() {
    # The node phase's own script brings its node down when stopped.
    [ -n "$node_pid" ] && pkill -TERM -f "tests/node/run.sh" 2>/dev/null || true
    # The outage phase's suites bring their control planes down when they end; cut short,
    # their processes go here.
    [ -n "$outage_pid" ] && pkill -KILL -f "e2e_apiserver_outage-|e2e_etcd_compaction-|/gpucloud-(outage|compaction)" 2>/dev/null || true
    tests/control-plane/cp.sh down --dir "$cp_dir" >/dev/null 2>&1 || true
}
trap 'cleanup; report' EXIT
if [ ${#cargo_args[@]} -eq 0 ]; then
    # The node phase runs beside every other phase: its release build and its scenarios
    # wait on other things than the tests do. Its output is shown when it ends.
    (
        s=$SECONDS
        cargo build --release --locked --bin gpucloud-operator
        echo "[node] release build: $((SECONDS - s)) s"
        tests/node/run.sh --binary "${CARGO_TARGET_DIR:-$root/target}/release/gpucloud-operator"
    ) >"$node_log" 2>&1 &
    node_pid=$!
fi
# The suites that stop their own control plane's apiserver and etcd, or compact it
# (tests/e2e_apiserver_outage.rs, tests/e2e_etcd_compaction.rs; their tests are named
# own_control_plane_*) run beside the rest too, once per backend at once: they mostly
# wait out outages. The passes below skip them.
outage_pid=
outage_log=$(mktemp "${TMPDIR:-/tmp}/gpucloud-outage-phase.XXXXXX")
own_cp_skip=()
if [ ${#cargo_args[@]} -eq 0 ]; then
    own_cp_skip=(--skip own_control_plane_)
    mapfile -t outage_bins < <(
        cargo test --locked --no-run --message-format=json \
            --test e2e_apiserver_outage --test e2e_etcd_compaction 2>/dev/null |
            python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["executable"])'
    )
    (
        s=$SECONDS
        pids=()
        for backend in v2 seed; do
            (
                for bin in "${outage_bins[@]}"; do
                    GPUCLOUD_TEST_PLATFORM_API=$backend "$bin" --include-ignored --nocapture \
                        --test-threads 1 || exit 1
                done
            ) >"$outage_log.$backend" 2>&1 &
            pids+=($!)
        done
        status=0
        for pid in "${pids[@]}"; do
            wait "$pid" || status=1
        done
        for backend in v2 seed; do
            echo "--- outages and compaction, backend $backend"
            if [ $status -eq 0 ]; then
                grep -E '^(RECOVERY|COMPACTION|test .* \.\.\. |test result:)' "$outage_log.$backend" || true
            else
                cat "$outage_log.$backend"
            fi
        done
        echo "[outage] $((SECONDS - s)) s"
        exit $status
    ) >"$outage_log" 2>&1 &
    outage_pid=$!
fi
eval "$(tests/control-plane/cp.sh up --dir "$cp_dir")"
export KUBECONFIG

phase "cargo test (unit, emulator, client, end-to-end on REST v2)"
# End-to-end tests are #[ignore]d so that a bare `cargo test` needs no cluster;
# here the control plane is up, so they run too. Benchmarks are built by clippy above
# and run on their own (`cargo bench`), not here. The operator speaks REST v2 (its
# default); the seed backend's pass follows.
GPUCLOUD_TEST_PLATFORM_API=v2 \
    cargo test --workspace --lib --bins --tests --locked --no-fail-fast -- --include-ignored \
    "${own_cp_skip[@]}" "${cargo_args[@]}"

if [ ${#cargo_args[@]} -eq 0 ]; then
    phase "install manifests: kustomize and Helm, server dry run"
    tests/install/run.sh
    phase "RBAC: the operator as the deploy/ ServiceAccount"
    tests/install/rbac.sh
    phase "RBAC: every install variant, and the user roles"
    tests/install/rbac-variants.sh
    phase "end-to-end: the seed backend, and REST v2 as the deploy/ ServiceAccount"
    # Two lanes at once on the one control plane (every test has its own namespace):
    #   seed: the same suites with the operator on REST v1 + GraphQL;
    #   sa:   the same suites on REST v2 with the operator authenticated as deploy/'s
    #         ServiceAccount, so every path is proven to need no more than its RBAC.
    # The binaries are run directly: two `cargo test` at once would queue on cargo's lock.
    tests/install/sa-kubeconfig.sh "$cp_dir/operator-sa.kubeconfig"
    # Every end-to-end suite (tests/e2e_*.rs, so a new kind's suite joins by its name) but
    # the harness's own, which runs no operator, and the outage phase's, which ran both
    # backends already.
    mapfile -t e2e_suites < <(cd tests && ls e2e_*.rs | sed 's/\.rs$//' |
        grep -vxE 'e2e_harness|e2e_apiserver_outage|e2e_etcd_compaction')
    mapfile -t e2e_bins < <(
        cargo test --locked --no-run --message-format=json \
            $(printf -- '--test %s ' "${e2e_suites[@]}") 2>/dev/null |
            python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print(m["executable"])'
    )
    [ ${#e2e_bins[@]} -eq ${#e2e_suites[@]} ] || {
        echo "error: found ${#e2e_bins[@]} end-to-end binaries, want ${#e2e_suites[@]}" >&2
        exit 1
    }
    lane() { # NAME ENV... : runs the e2e binaries with ENV, output in $cp_dir/lane-NAME.log
        local name=$1 status=0
        shift
        for bin in "${e2e_bins[@]}"; do
            # The demo runs its operator in-process with the caller's credentials: the
            # ServiceAccount lane has nothing to prove there.
            if [ "$name" = sa ] && [[ $(basename "$bin") == e2e_demo-* ]]; then
                continue
            fi
            env "$@" "$bin" --include-ignored >>"$cp_dir/lane-$name.log" 2>&1 || status=1
        done
        return $status
    }
    lane seed GPUCLOUD_TEST_PLATFORM_API=seed &
    seed_pid=$!
    lane sa GPUCLOUD_TEST_PLATFORM_API=v2 OPERATOR_KUBECONFIG="$cp_dir/operator-sa.kubeconfig" &
    sa_pid=$!
    lanes_ok=true
    wait $seed_pid || lanes_ok=false
    wait $sa_pid || lanes_ok=false
    for name in seed sa; do
        echo "--- lane $name"
        grep -E '^(test .* \.\.\. |test result:|failures:)' "$cp_dir/lane-$name.log" || true
    done
    if [ "$lanes_ok" != true ]; then
        for name in seed sa; do
            echo "--- lane $name, whole log"
            cat "$cp_dir/lane-$name.log"
        done
        echo "error: an end-to-end lane failed" >&2
        exit 1
    fi
    phase "kstatus on the operator's objects"
    tests/kstatus/run.sh
    phase "Argo CD health check (gopher-lua)"
    tests/argocd/run.sh
    phase "Prometheus rules and dashboard queries (rulefmt, PromQL)"
    tests/prometheus-rules/run.sh
fi

if [ -x tests/python/run.sh ] && [ ${#cargo_args[@]} -eq 0 ]; then
    phase "official Python SDK against the emulator"
    tests/python/run.sh
fi

if [ -x tests/v2-conformance/run.sh ] && [ ${#cargo_args[@]} -eq 0 ]; then
    # Needs only the emulator: no control plane, no cluster.
    phase "REST v2 conformance (schemathesis) against the emulator"
    tests/v2-conformance/run.sh
fi

# Waits for a phase that ran beside the others, prints its output, and fails the run if
# it failed.
await_beside() { # NAME PID LOG
    local ok=true
    wait "$2" || ok=false
    cat "$3"
    [ "$ok" = true ] || { echo "error: the $1 phase failed" >&2; exit 1; }
}

if [ -n "$outage_pid" ]; then
    phase "outages: apiserver 20 s and 120 s, etcd 20 s, compaction (waiting)"
    pid=$outage_pid
    outage_pid=
    await_beside outage "$pid" "$outage_log"
fi

if [ -n "$node_pid" ]; then
    phase "node: the image on a real node; install, upgrade, rollback, uninstall (waiting)"
    pid=$node_pid
    node_pid=
    await_beside node "$pid" "$node_log"
fi
