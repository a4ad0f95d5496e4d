#!/usr/bin/env bash
# The project's whole test suite, from a clean clone on a machine that has only the
# toolchains (Rust, Go, Python): builds the control plane (cached between runs), lints,
# builds, brings a real kube-apiserver up on 127.0.0.1, runs every test, brings it down.
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

phase "control plane: build (cached)"
tests/control-plane/cp.sh build

phase "format and lint"
cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings

phase "build"
cargo build --all-targets --locked

phase "control plane: up"
cp_dir=$(mktemp -d "${TMPDIR:-/tmp}/gpucloud-cp.XXXXXX")
rmdir "$cp_dir"
cleanup() {
    tests/control-plane/cp.sh down --dir "$cp_dir" >/dev/null 2>&1 || true
}
trap 'cleanup; report' EXIT
eval "$(tests/control-plane/cp.sh up --dir "$cp_dir")"
export KUBECONFIG

phase "cargo test (unit, emulator, client, end-to-end)"
# End-to-end tests are #[ignore]d so that a bare `cargo test` needs no cluster;
# here the control plane is up, so they run too. Benchmarks are built by clippy above
# and run on their own (`cargo bench`), not here.
cargo test --lib --bins --tests --locked --no-fail-fast -- --include-ignored "${cargo_args[@]}"

if [ ${#cargo_args[@]} -eq 0 ]; then
    phase "install manifests: kustomize and Helm, server dry run"
    tests/install/run.sh
    phase "RBAC: the operator as the deploy/ ServiceAccount"
    tests/install/rbac.sh
    phase "end-to-end suites again, the operator as the deploy/ ServiceAccount"
    # Same suites, same control plane; only the operator's credentials change, so every
    # path the suites reach is proven to need no more than deploy/'s RBAC.
    tests/install/sa-kubeconfig.sh "$cp_dir/operator-sa.kubeconfig"
    OPERATOR_KUBECONFIG="$cp_dir/operator-sa.kubeconfig" cargo test --locked --no-fail-fast \
        --test e2e_network_volume --test e2e_network_volume_faults --test e2e_endpoint \
        --test e2e_pod --test e2e_pod_faults --test e2e_examples -- --include-ignored
    phase "kstatus on the operator's objects"
    tests/kstatus/run.sh
    phase "Argo CD health check (gopher-lua)"
    tests/argocd/run.sh
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
