#!/usr/bin/env bash
# The oldest supported Kubernetes (tests/control-plane/cp.sh --k8s oldest) on a control
# plane of its own: the committed CRDs installed as users install them, so that a CEL rule
# or schema that apiserver cannot compile fails here with its error; then the suites of
# `suites` below against it. First a self-test shows that this check can fail:
# newer-cel.yaml, whose rule the oldest apiserver cannot compile, must be refused there and
# accepted by the newest (the control plane in KUBECONFIG, left as it was).
#
#   tests/oldest-kubernetes/run.sh BINARIES
#
# BINARIES lists the test binaries scripts/test.sh built, a line each: target name, path.
# `cp.sh up` builds the oldest control plane when its cache folder lacks it (scripts/test.sh
# builds it in its first phase).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
binaries=${1:?usage: tests/oldest-kubernetes/run.sh BINARIES}
: "${KUBECONFIG:?set KUBECONFIG to the newest control plane (tests/control-plane/cp.sh up)}"
newest_kubeconfig=$KUBECONFIG

# What runs on the oldest Kubernetes: the suites of what the CRDs' schemas and CEL rules
# admit and refuse, each TARGET (every test) or TARGET:FILTER (the tests whose names hold
# FILTER, libtest's filter). Each must run at least one test.
suites=(
    e2e_admission
    # Both API versions through the conversion webhook (started below for this control
    # plane), and the operator on objects written in either.
    e2e_conversion
    e2e_cluster:bad_cluster_shapes_are_refused_at_admission
    e2e_templates:bad_manifests_are_refused_or_reported
    # The transition rule of NetworkVolume's size (self >= oldSelf).
    e2e_examples:grow_volume_grows_and_a_shrink_is_refused
)

log() { printf '[oldest] %s\n' "$*" >&2; }
fail() { log "error: $*"; exit 1; }

cp=tests/control-plane/cp.sh
oldest=$("$cp" version --k8s oldest)
newest=$("$cp" version)
work=$(mktemp -d "${TMPDIR:-/tmp}/gpucloud-oldest.XXXXXX")
cp_dir=$work/control-plane
trap '"$cp" down --dir "$cp_dir" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

# Dies unless the control plane of KUBECONFIG runs VERSION: a wrong build must not pass
# for the release this phase is about.
expect_version() { # KUBECONFIG VERSION
    local served
    served=$(KUBECONFIG=$1 kubectl version -o json 2>/dev/null |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')
    [ "$served" = "$2" ] || fail "the apiserver at $1 runs ${served:-nothing}, not $2"
}

# Installs the CRDs of the manifest ARGS name (kubectl's -f FILE or -k DIR) on the control
# plane of KUBECONFIG, as users do, and waits until they are Established. On a refusal it
# prints the apiserver's errors, which name each rule that does not compile and why.
install_crds() { # KUBECONFIG LABEL ARGS...
    local kubeconfig=$1 label=$2 out
    shift 2
    out=$(mktemp "$work/install.XXXXXX")
    if ! KUBECONFIG=$kubeconfig kubectl apply --server-side --force-conflicts \
        --field-manager=oldest-kubernetes-test "$@" >"$out" 2>&1; then
        log "$label: the apiserver refused the CRDs:"
        grep -v -e ' serverside-applied$' -e '^WARNING: version difference' "$out" | sed 's/^/    /' >&2
        return 1
    fi
    # Each applied CRD, as kubectl named it: "customresourcedefinition.apiextensions.k8s.io/NAME".
    local crds
    mapfile -t crds < <(awk '$2 == "serverside-applied" { print $1 }' "$out")
    [ ${#crds[@]} -gt 0 ] || { log "$label: kubectl applied nothing:"; sed 's/^/    /' "$out" >&2; return 1; }
    if ! KUBECONFIG=$kubeconfig kubectl wait --for condition=Established --timeout=30s \
        "${crds[@]}" >"$out" 2>&1; then
        log "$label: the CRDs were not Established within 30 s:"
        sed 's/^/    /' "$out" >&2
        return 1
    fi
}

s=$SECONDS
oldest_kubeconfig=$("$cp" up --k8s oldest --dir "$cp_dir" | sed -n 's/^export KUBECONFIG=//p')
expect_version "$oldest_kubeconfig" "$oldest"
expect_version "$newest_kubeconfig" "$newest"
log "Kubernetes $oldest up in $((SECONDS - s)) s"

s=$SECONDS
selftest=$work/selftest.log
if install_crds "$oldest_kubeconfig" "self-test on $oldest" -f "$here/newer-cel.yaml" 2>"$selftest"; then
    fail "self-test: Kubernetes $oldest accepted newer-cel.yaml, whose rule it cannot compile, so this phase could not catch such a rule"
fi
if ! grep -q 'distinct' "$selftest" || ! grep -qi 'compil' "$selftest"; then
    fail "self-test: $oldest refused newer-cel.yaml without naming the rule that does not compile: $(cat "$selftest")"
fi
log "self-test: Kubernetes $oldest refuses the rule of newer-cel.yaml, naming it:"
grep -o 'x-kubernetes-validations\[[0-9]*\]\.rule: .*' "$selftest" | cut -c1-400 | sed 's/^/    /' >&2
install_crds "$newest_kubeconfig" "self-test on $newest" -f "$here/newer-cel.yaml" ||
    fail "self-test: Kubernetes $newest refused newer-cel.yaml, so it says nothing of the oldest"
KUBECONFIG=$newest_kubeconfig kubectl delete --wait -f "$here/newer-cel.yaml" >/dev/null
log "self-test: Kubernetes $newest accepts it ($((SECONDS - s)) s)"

s=$SECONDS
install_crds "$oldest_kubeconfig" "Kubernetes $oldest" -k deploy/crds ||
    fail "Kubernetes $oldest, the oldest supported, refuses the committed CRDs (deploy/crds): a rule or schema newer than it; see above"
log "the committed CRDs are Established on Kubernetes $oldest ($((SECONDS - s)) s)"

# The conversion webhook for this control plane, as scripts/test.sh runs one for the newest.
webhook_pid=$(KUBECONFIG=$oldest_kubeconfig tests/conversion-webhook.sh "$work/webhook.log")
trap 'kill "$webhook_pid" 2>/dev/null || true; "$cp" down --dir "$cp_dir" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

s=$SECONDS
pids=()
for i in "${!suites[@]}"; do
    target=${suites[i]%%:*}
    filter=
    [ "$target" = "${suites[i]}" ] || filter=${suites[i]#*:}
    path=$(awk -v t="$target" '$1 == t { print $2 }' "$binaries")
    [ -n "$path" ] || fail "the test binary $target was not built (is it in $binaries?)"
    KUBECONFIG=$oldest_kubeconfig GPUCLOUD_TEST_PLATFORM_API=v2 \
        "$path" --include-ignored ${filter:+"$filter"} >"$work/suite-$i.log" 2>&1 &
    pids+=($!)
done
failed=0
for i in "${!suites[@]}"; do
    status=0
    wait "${pids[i]}" || status=$?
    result=$(grep -E '^test result: ' "$work/suite-$i.log" | tail -1)
    passed=$(sed -nE 's/^test result: \w+\. ([0-9]+) passed.*/\1/p' <<<"$result")
    if [ "$status" -ne 0 ] || [ "${passed:-0}" -eq 0 ]; then
        log "FAIL ${suites[i]} (exit $status, ${passed:-0} passed); its log:"
        sed 's/^/    /' "$work/suite-$i.log" >&2
        failed=1
    else
        log "ok   ${suites[i]}: $passed passed"
    fi
done
[ "$failed" -eq 0 ] || fail "suites failed on Kubernetes $oldest"
log "suites on Kubernetes $oldest in $((SECONDS - s)) s"
