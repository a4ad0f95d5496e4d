#!/usr/bin/env bash
# Captures the fixtures under testdata/ from a real run: the emulator, the operator and
# the control plane given by KUBECONFIG. Re-run it when the operator's status changes:
#
#   eval "$(tests/control-plane/cp.sh up --dir /tmp/cp)"; tests/kstatus/capture.sh
#
# Needs the debug binary (cargo build). Leaves its namespace kstatus-fixtures-* behind (one object is held by its finalizer).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${GPUCLOUD_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/gpucloud-operator}
out=$here/testdata
: "${KUBECONFIG:?set KUBECONFIG}"
[ -x "$bin" ] || { echo "no operator binary at $bin: run cargo build (or set GPUCLOUD_BIN)" >&2; exit 1; }
ns=kstatus-fixtures-$(date +%s)
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" emulator --listen 127.0.0.1:$port --api-key k >"$work/emulator.log" 2>&1 & pids+=($!)
start_operator() {
    GPUCLOUD_API_KEY=k "$bin" run --rest-url http://127.0.0.1:$port/v1 --graphql-url http://127.0.0.1:$port/graphql \
        --serverless-url http://127.0.0.1:$port/v2 --registry-url http://127.0.0.1:$port --api-url http://127.0.0.1:$port/v2 \
        --metrics-addr 127.0.0.1:0 --poll-interval 5s --namespaces $ns >>"$work/operator.log" 2>&1 &
    operator=$!; pids+=($operator)
}
cond() { kubectl -n $ns get "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status}" 2>/dev/null; }
wait_for() { # kind/name condition status
    for _ in $(seq 60); do [ "$(cond "$1" "$2")" = "$3" ] && return; sleep 0.5; done
    echo "timed out waiting for $1 $2=$3" >&2; cat "$work/operator.log" >&2; exit 1
}
save() { kubectl -n $ns get "$1" -o yaml >"$out/$2.yaml"; echo "captured $2"; }

kubectl apply --server-side -f "$root/crds/gpucloud.io.yaml" >/dev/null

kubectl create namespace $ns >/dev/null
start_operator
nv() { # name size [annotations-json]
    cat <<YAML | kubectl -n $ns apply -f - >/dev/null
apiVersion: gpucloud.io/v1alpha1
kind: NetworkVolume
metadata: {name: $1}
spec: {sizeGb: $2, dataCenterId: EU-RO-1, deletionPolicy: Delete}
YAML
}
# Current: Ready=True at the observed generation.
nv data 10; wait_for networkvolume/data Ready True
# Failed: the Secret it names for its API key does not exist (Stalled=True).
cat <<YAML | kubectl -n $ns apply -f - >/dev/null
apiVersion: gpucloud.io/v1alpha1
kind: NetworkVolume
metadata: {name: no-key}
spec: {sizeGb: 10, dataCenterId: EU-RO-1, credentialsSecretRef: {name: missing-secret}}
YAML
wait_for networkvolume/no-key Stalled True
# InProgress: an Endpoint waiting for a NetworkVolume that does not exist (Reconciling=True).
cat <<YAML | kubectl -n $ns apply -f - >/dev/null
apiVersion: gpucloud.io/v1alpha1
kind: Endpoint
metadata: {name: waiting}
spec:
  templateId: tmpl-worker-base
  gpuTypeIds: ["NVIDIA A40"]
  workersMin: 0
  workersMax: 1
  networkVolumeRef: {name: not-there}
YAML
wait_for endpoint/waiting Reconciling True
# Suspended for Argo CD: paused by annotation.
nv paused 10; wait_for networkvolume/paused Ready True
kubectl -n $ns annotate networkvolume paused gpucloud.io/paused=true >/dev/null
wait_for networkvolume/paused Synced False
nv behind 10; wait_for networkvolume/behind Ready True
nv deleting 10; wait_for networkvolume/deleting Ready True
save networkvolume/data current
save networkvolume/no-key stalled
save endpoint/waiting reconciling
save networkvolume/paused paused

# With the operator stopped: a spec change it has not seen, an object it never saw, and
# a deletion held by its finalizer.
kill "$operator"; wait "$operator" 2>/dev/null || true
kubectl -n $ns patch networkvolume behind --type merge -p '{"spec":{"sizeGb":20}}' >/dev/null
nv fresh 10
kubectl -n $ns delete networkvolume deleting --wait=false >/dev/null
save networkvolume/behind generation-behind
save networkvolume/fresh never-reconciled
save networkvolume/deleting terminating
