#!/usr/bin/env bash
# Installs deploy/ on the control plane in KUBECONFIG and writes OUT, a kubeconfig that
# authenticates as the deploy/ ServiceAccount with a token from the TokenRequest API.
# Checks that the token really is the ServiceAccount's and may not do more than the
# operator needs. All but the Deployment (the operator runs outside the cluster here) and
# the user roles (people's rights, not the operator's: tests/install/rbac-variants.sh
# installs and checks them, and needs the built-in roles without them to begin with).
#
#   tests/install/sa-kubeconfig.sh OUT
set -euo pipefail
out=${1:?usage: sa-kubeconfig.sh OUT}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/../.."
: "${KUBECONFIG:?set KUBECONFIG}"
log() { printf '[sa-kubeconfig] %s\n' "$*" >&2; }

# The CRDs first, as the install goes (deploy/ no longer holds them).
kubectl apply --server-side --force-conflicts -k deploy/crds >/dev/null
kubectl kustomize deploy \
    | tests/install/docs.py drop Deployment ClusterRole/gpucloud-view ClusterRole/gpucloud-edit \
    | kubectl apply --server-side --force-conflicts -f - >/dev/null
kubectl -n gpucloud-system create secret generic gpucloud-api-key --from-literal=apiKey=k \
    --dry-run=client -o yaml | kubectl apply -f - >/dev/null

tests/install/token-kubeconfig.sh gpucloud-system gpucloud-operator "$out"
# Secrets: get only (those the objects name); never list or watch them.
if KUBECONFIG=$out kubectl auth can-i create pods.gpucloud.io -A >/dev/null 2>&1 \
    || KUBECONFIG=$out kubectl auth can-i get configmaps -A >/dev/null 2>&1 \
    || KUBECONFIG=$out kubectl auth can-i list secrets -A >/dev/null 2>&1 \
    || KUBECONFIG=$out kubectl auth can-i watch secrets -A >/dev/null 2>&1; then
    log "the ServiceAccount may do more than the operator needs"; exit 1
fi
log "wrote $out for the ServiceAccount gpucloud-system/gpucloud-operator"
