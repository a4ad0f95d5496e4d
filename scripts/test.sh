#!/usr/bin/env bash
# The project's whole test suite, from a clean clone on a machine that has only the
# toolchains (Rust, Go, Python): builds the control plane (cached between runs), lints,
# builds, brings a real kube-apiserver up on 127.0.0.1, runs every test, brings it down.
# Beside those, the node phase (tests/node/run.sh) builds the release image, runs it on a
# real node and installs, upgrades and uninstalls it; it installs the distribution's
# packages it needs (scripts/packages.sh), and needs root. After the suites, the oldest
# supported Kubernetes gets the CRDs and the admission suites (tests/oldest-kubernetes/).
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

phase "control planes and node: build (cached), packages"
tests/control-plane/cp.sh build --node
if [ ${#cargo_args[@]} -eq 0 ]; then
    tests/control-plane/cp.sh build --k8s oldest
    scripts/packages.sh node
fi

phase "format and lint"
cargo fmt --all -- --check
# The benchmark figures README.md and docs/bench/README.md quote are those of the reports in
# docs/bench/ (scripts/bench.sh), each naming a benchmark that exists.
python3 scripts/bench-docs.py --check
# The version in Cargo.toml, Cargo.lock, the chart and the manifests' image tags is one.
scripts/release.sh --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# Every link of the API docs resolves, private items too (the crates' own docs only).
RUSTDOCFLAGS="-D rustdoc::broken_intra_doc_links -A rustdoc::private_intra_doc_links" \
    cargo doc --workspace --no-deps --document-private-items --locked --quiet

phase "previous release: build (cached)"
# The operator of the release the upgrade test starts from (tests/e2e_upgrade.rs), from
# this repository's history, in the same target folder so that the crates the two share
# build once; kept outside the checkout between runs.
GPUCLOUD_PREVIOUS_RELEASE=$(tests/upgrade/build.sh)
export GPUCLOUD_PREVIOUS_RELEASE

phase "build"
cargo build --workspace --all-targets --locked
# Every test binary just built, a line each: its name (the unit tests' as unit-KIND-CRATE)
# and its path; the outage phase and the lanes run them from here.
test_binaries=$(mktemp "${TMPDIR:-/tmp}/gpucloud-test-binaries.XXXXXX")
cargo test --workspace --lib --bins --tests --locked --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        t = m["target"]
        kind = t["kind"][0]
        print(t["name"] if kind == "test" else "unit-%s-%s" % (kind, t["name"]), m["executable"])' \
    >"$test_binaries"

phase "control plane: up"
cp_dir=$(mktemp -d "${TMPDIR:-/tmp}/gpucloud-cp.XXXXXX")
rmdir "$cp_dir"
node_pid=
outage_pid=
webhook_pid=
node_log=$(mktemp "${TMPDIR:-/tmp}/gpucloud-node-phase.XXXXXX")
cleanup() {
    # The node phase's own script brings its node down when stopped.
    [ -n "$node_pid" ] && pkill -TERM -f "tests/node/run.sh" 2>/dev/null || true
    # The outage phase's suites bring their control planes down when they end; cut short,
    # their processes go here.
    [ -n "$outage_pid" ] && pkill -KILL -f "e2e_apiserver_outage-|e2e_etcd_compaction-|/gpucloud-(outage|compaction)" 2>/dev/null || true
    [ -n "$webhook_pid" ] && kill "$webhook_pid" 2>/dev/null || true
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
# wait out outages. The lanes below leave them out.
outage_pid=
outage_log=$(mktemp "${TMPDIR:-/tmp}/gpucloud-outage-phase.XXXXXX")
if [ ${#cargo_args[@]} -eq 0 ]; then
    mapfile -t outage_bins < <(
        awk '$1 ~ /^e2e_(apiserver_outage|etcd_compaction)$/ { print $2 }' "$test_binaries"
    )
    [ ${#outage_bins[@]} -eq 2 ] || { echo "error: the outage suites were not built" >&2; exit 1; }
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
# The CRDs' conversion webhook for this control plane, run as an install without
# cert-manager runs it: its own CA and certificate in a Secret, and the CRDs pointed at it
# (by URL: the apiserver runs on this host). The suites install the CRDs; it points each
# at itself within a second of that (tests/common/conversion.rs waits for it).
webhook_pid=$(tests/conversion-webhook.sh "$cp_dir.webhook.log")

phase "doctests"
cargo test --workspace --doc --locked

if [ ${#cargo_args[@]} -gt 0 ]; then
    phase "cargo test $(printf '%q ' "${cargo_args[@]}")(REST v2)"
    # End-to-end tests are #[ignore]d so that a bare `cargo test` needs no cluster; here
    # the control plane is up, so they run too.
    GPUCLOUD_TEST_PLATFORM_API=v2 \
        cargo test --workspace --lib --bins --tests --locked --no-fail-fast -- --include-ignored \
        "${cargo_args[@]}"
else
    phase "install manifests: kustomize and Helm, server dry run"
    tests/install/run.sh
    phase "RBAC: the operator as the deploy/ ServiceAccount"
    tests/install/rbac.sh
    phase "RBAC: every install variant, and the user roles"
    tests/install/rbac-variants.sh

    phase "tests: unit, emulator, client; end-to-end on three lanes at once"
    # Every test binary of the workspace (built above), through one pool of workers
    # (tests/run-lanes.py), on three lanes that share the one control plane (every test
    # has its own namespace):
    #   v2:   everything, the operator on REST v2 (its default) with the tests' admin
    #         credentials;
    #   seed: the end-to-end suites with the operator on REST v1 + GraphQL;
    #   sa:   the end-to-end suites on REST v2 with the operator authenticated as deploy/'s
    #         ServiceAccount, so every path is proven to need no more than its RBAC.
    # A test for one backend only is named v2_only_* or seed_only_*: the other backend's
    # lanes leave it out by name, and say how many. The end-to-end suites mostly wait, so
    # many binaries at once take a fraction of running them in turn. Not on the seed and sa
    # lanes: the harness's own suite, which runs no operator; the demo on sa, whose
    # operator runs in-process with the caller's credentials. On none: the outage phase's
    # suites, which ran both backends beside.
    tests/install/sa-kubeconfig.sh "$cp_dir/operator-sa.kubeconfig"
    not_beside='^e2e_(apiserver_outage|etcd_compaction)$'
    # The suites that bring up a control plane of their own sign in as its admin, so the
    # ServiceAccount lane would run them again unchanged: it leaves them out. Those that
    # call no platform (the storage migration, the webhook's cert-manager certificate) run
    # on the v2 lane alone. A control plane costs the machine an apiserver's start.
    own_control_plane='^e2e_(uninstall|upgrade|storage_migration|webhook_cert_manager)$'
    no_platform='^e2e_(storage_migration|webhook_cert_manager)$'
    lane_logs=$(mktemp -d "${TMPDIR:-/tmp}/gpucloud-lanes.XXXXXX")
    # The v2 lane records the operator's objects in each state it sees them in, for the
    # kstatus and Argo CD phases to judge (tests/common/recording.rs).
    recordings=$lane_logs/recordings
    python3 tests/run-lanes.py --jobs "${GPUCLOUD_TEST_JOBS:-8}" --logs "$lane_logs" \
        --binaries "$test_binaries" \
        --times "${XDG_CACHE_HOME:-$HOME/.cache}/gpucloud-operator/lane-times.json" \
        --lane "v2 GPUCLOUD_TEST_PLATFORM_API=v2 GPUCLOUD_TEST_RECORD_DIR=$recordings \
            --except=$not_beside --skip=seed_only_" \
        --lane "seed GPUCLOUD_TEST_PLATFORM_API=seed --only=^e2e_ --except=$not_beside \
            --except=^e2e_harness --except=$no_platform --skip=v2_only_" \
        --lane "sa GPUCLOUD_TEST_PLATFORM_API=v2 OPERATOR_KUBECONFIG=$cp_dir/operator-sa.kubeconfig \
            --only=^e2e_ --except=$not_beside --except=^e2e_(harness|demo) \
            --except=$own_control_plane --skip=seed_only_"

    phase "kstatus on the objects the lanes recorded"
    GPUCLOUD_RECORDINGS=$recordings tests/kstatus/run.sh
    phase "Argo CD health check (gopher-lua) on the objects the lanes recorded"
    GPUCLOUD_RECORDINGS=$recordings tests/argocd/run.sh
    phase "Prometheus rules and dashboard queries (rulefmt, PromQL)"
    tests/prometheus-rules/run.sh

    # On a control plane of its own; its CEL self-test also installs a CRD on this one
    # (and removes it), so it runs after the lanes. The suites it runs (the admission and
    # conversion suites): `suites` in tests/oldest-kubernetes/run.sh.
    phase "Kubernetes $(tests/control-plane/cp.sh version --k8s oldest) (oldest supported): CRDs, CEL self-test, admission suites"
    tests/oldest-kubernetes/run.sh "$test_binaries"
fi

if [ ${#cargo_args[@]} -eq 0 ]; then
    # On a copy of the repository, with no network and no build (--no-sbom).
    phase "release script: every version set in one step, and checked"
    python3 tests/release/test_release.py
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
