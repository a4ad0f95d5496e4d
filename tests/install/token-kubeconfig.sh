#!/usr/bin/env bash
# Writes OUT, a kubeconfig for the control plane in KUBECONFIG that authenticates as the
# ServiceAccount NAMESPACE/NAME with a token from the TokenRequest API (valid two hours),
# and checks that the token really is that ServiceAccount's.
#
#   tests/install/token-kubeconfig.sh NAMESPACE NAME OUT
set -euo pipefail
namespace=${1:?usage: token-kubeconfig.sh NAMESPACE NAME OUT} name=${2:?} out=${3:?}
: "${KUBECONFIG:?set KUBECONFIG}"

token=$(kubectl -n "$namespace" create token "$name" --duration=2h)
server=$(kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.server}')
ca=$(kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
umask 077
cat >"$out" <<YAML
apiVersion: v1
kind: Config
clusters: [{name: cp, cluster: {server: "$server", certificate-authority-data: "$ca"}}]
users: [{name: $name, user: {token: "$token"}}]
contexts: [{name: sa, context: {cluster: cp, user: $name}}]
current-context: sa
YAML
who=$(KUBECONFIG=$out kubectl auth whoami -o jsonpath='{.status.userInfo.username}')
[ "$who" = "system:serviceaccount:$namespace:$name" ] || { echo "[token-kubeconfig] token is $who" >&2; exit 1; }
