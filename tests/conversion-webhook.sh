#!/usr/bin/env bash
# Starts the CRDs' conversion webhook for the control plane of KUBECONFIG in the background,
# as an install without cert-manager runs it: its own CA and certificate in a Secret of
# `default`, and the CRDs pointed at it by URL (the apiserver runs on this host), checked
# every second, so that CRDs installed later are pointed too. Prints its process id.
#
#   tests/conversion-webhook.sh LOG
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log=${1:?usage: tests/conversion-webhook.sh LOG}
: "${KUBECONFIG:?set KUBECONFIG to the control plane the webhook is for}"
port=$("$root/tests/free-ports.py")
"${CARGO_TARGET_DIR:-$root/target}/debug/gpucloud-operator" conversion-webhook \
    --conversion-webhook-addr "127.0.0.1:$port" \
    --conversion-webhook-url "https://127.0.0.1:$port/convert" \
    --conversion-webhook-check-interval 1s --namespace default >"$log" 2>&1 &
echo $!
