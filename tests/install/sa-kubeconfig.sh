#!/usr/bin/env bash
# Installs deploy/ (all but the Deployment: the operator runs outside the cluster here) on
# the control plane in KUBECONFIG and writes OUT, a kubeconfig that authenticates as the
# deploy/ ServiceAccount with a token from the TokenRequest API. Checks that the token
# really is the ServiceAccount's and may not do more than the operator needs.
#
#   tests/install/sa-kubeconfig.sh OUT
set -euo pipefail
out=${1:?usage: sa-kubeconfig.sh OUT}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here/../.."
: "${KUBECONFIG:?set KUBECONFIG}"
log() { printf '[sa-kubeconfig] %s\n' "$*" >&2; }

kubectl kustomize deploy | python3 -c '
import sys
docs = sys.stdin.read().split("\n---\n")
print("\n---\n".join(d for d in docs if "\nkind: Deployment\n" not in "\n" + d + "\n"))' \
    | kubectl apply --server-side --force-conflicts -f - >/dev/null
kubectl -n gpucloud-system create secret generic gpucloud-api-key --from-literal=apiKey=k \
    --dry-run=client -o yaml | kubectl apply -f - >/dev/null

token=$(kubectl -n gpucloud-system create token gpucloud-operator --duration=2h)
server=$(kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.server}')
ca=$(kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
umask 077
cat >"$out" <<YAML
apiVersion: v1
kind: Config
clusters: [{name: cp, cluster: {server: "$server", certificate-authority-data: "$ca"}}]
users: [{name: gpucloud-operator, user: {token: "$token"}}]
contexts: [{name: sa, context: {cluster: cp, user: gpucloud-operator}}]
current-context: sa
YAML
who=$(KUBECONFIG=$out kubectl auth whoami -o jsonpath='{.status.userInfo.username}')
[ "$who" = system:serviceaccount:gpucloud-system:gpucloud-operator ] || { log "token is $who"; exit 1; }
# Secrets: get only (those the objects name); never list or watch them.
if KUBECONFIG=$out kubectl auth can-i create pods.gpucloud.io -A >/dev/null 2>&1 \
    || KUBECONFIG=$out kubectl auth can-i get configmaps -A >/dev/null 2>&1 \
    || KUBECONFIG=$out kubectl auth can-i list secrets -A >/dev/null 2>&1 \
    || KUBECONFIG=$out kubectl auth can-i watch secrets -A >/dev/null 2>&1; then
    log "the ServiceAccount may do more than the operator needs"; exit 1
fi
log "wrote $out for $who"
