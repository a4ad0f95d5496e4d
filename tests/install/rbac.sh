#!/usr/bin/env bash
# RBAC proven: the operator runs with only the deploy/ ServiceAccount's rights (a token
# from the TokenRequest API, in a kubeconfig of its own) on the RBAC-enforcing control
# plane in KUBECONFIG, with leader election and its key from the Secret, as the
# Deployment runs it; a NetworkVolume converges against the emulator, and the operator
# log has no "forbidden". Needs the debug binary (cargo build).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
bin=${GPUCLOUD_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/gpucloud-operator}
: "${KUBECONFIG:?set KUBECONFIG}"
[ -x "$bin" ] || { echo "no operator binary at $bin: run cargo build" >&2; exit 1; }
log() { printf '[rbac] %s\n' "$*" >&2; }
work=$(mktemp -d); pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

tests/install/sa-kubeconfig.sh "$work/kubeconfig"

port=$("$root/tests/free-ports.py")
"$bin" emulator --listen 127.0.0.1:$port --api-key k >"$work/emulator.log" 2>&1 & pids+=($!)
KUBECONFIG=$work/kubeconfig POD_NAME=rbac-test "$bin" run --rest-url http://127.0.0.1:$port/v1 \
    --graphql-url http://127.0.0.1:$port/graphql --serverless-url http://127.0.0.1:$port/v2 \
    --registry-url http://127.0.0.1:$port --api-url http://127.0.0.1:$port/v2 --metrics-addr 127.0.0.1:0 \
    --api-key-secret gpucloud-system/gpucloud-api-key --leader-election \
    --leader-election-namespace gpucloud-system >"$work/operator.log" 2>&1 & pids+=($!)

ns=rbac-$(date +%s)
kubectl create namespace $ns >/dev/null
kubectl -n $ns apply -f - >/dev/null <<YAML
apiVersion: gpucloud.io/v1alpha1
kind: NetworkVolume
metadata: {name: data}
spec: {sizeGb: 10, dataCenterId: EU-RO-1, deletionPolicy: Delete}
YAML
start=$SECONDS
until [ "$(kubectl -n $ns get networkvolume data -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]; do
    if [ $((SECONDS - start)) -gt 60 ]; then log "NetworkVolume not Ready in 60 s"; cat "$work/operator.log" >&2; exit 1; fi
    sleep 0.5
done
log "NetworkVolume Ready in $((SECONDS - start)) s, as the ServiceAccount"
# Deletion through the finalizer, too.
kubectl -n $ns delete networkvolume data --timeout=60s >/dev/null
# "403" as a whole word: the log also carries ephemeral port numbers such as 40391.
refused='forbidden|\b403\b'
if grep -Eqi "$refused" "$work/operator.log"; then
    log "the operator was refused something:"; grep -Ei "$refused" "$work/operator.log" >&2; exit 1
fi
grep -q '"leading"\|leading' "$work/operator.log" || { log "the operator never took the Lease"; cat "$work/operator.log" >&2; exit 1; }
[ -n "$(kubectl -n gpucloud-system get lease gpucloud-operator -o jsonpath='{.spec.holderIdentity}')" ] || { log "no Lease holder"; exit 1; }
[ -n "$(kubectl -n $ns get events.events.k8s.io -o name)" ] || { log "the operator published no Event"; exit 1; }
kubectl delete namespace $ns --wait=false >/dev/null
log "ok: converged and deleted with only the deploy/ RBAC"
