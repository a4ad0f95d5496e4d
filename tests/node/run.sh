#!/usr/bin/env bash
# The node phase: the operator's image built (scripts/image.sh) and run on a real node
# (tests/control-plane/cp.sh up --node), installed the ways users install it, upgraded,
# rolled back and uninstalled (scenarios.py), against the emulator over HTTPS.
#
#   tests/node/run.sh [--binary PATH]   PATH: a release binary already built (else built)
#
# Needs root (the node's containers, bridge and iptables) and Go (the node's binaries).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
log() { printf '[node] %s\n' "$*" >&2; }

binary=
while [ $# -gt 0 ]; do
    case $1 in
    --binary) binary=$2; shift 2 ;;
    *) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done

start=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/gpucloud-node.XXXXXX")
cp_dir=$work/cp
emulator_pid=
cleanup() {
    [ -n "$emulator_pid" ] && kill -INT "$emulator_pid" 2>/dev/null || true
    tests/control-plane/cp.sh down --dir "$cp_dir" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
# Stopped: stop the scenarios too (their kubectl would outlive the cluster), then clean up.
trap 'pkill -TERM -P $$ 2>/dev/null; exit 1' INT TERM

# The image, twice: the chart's tag, and a second tag to upgrade to.
tag=$(sed -nE 's/^appVersion: "?([^"]*)"?$/\1/p' deploy/helm/gpucloud-operator/Chart.yaml)
next_tag=$tag-next
if [ -z "$binary" ]; then
    cargo build --release --locked --bin gpucloud-operator
    binary=${CARGO_TARGET_DIR:-$root/target}/release/gpucloud-operator
fi
scripts/image.sh --tag "$tag" --binary "$binary" --out "$work/image.tar"
podman tag "ghcr.io/gpucloud/gpucloud-operator:$tag" "ghcr.io/gpucloud/gpucloud-operator:$next_tag"
podman save --quiet --format oci-archive --output "$work/image-next.tar" "ghcr.io/gpucloud/gpucloud-operator:$next_tag"
image_done=$SECONDS

cp_env=$(tests/control-plane/cp.sh up --node --dir "$cp_dir")
eval "$cp_env"
export KUBECONFIG
tests/control-plane/cp.sh import "$work/image.tar" --dir "$cp_dir"
tests/control-plane/cp.sh import "$work/image-next.tar" --dir "$cp_dir"
node_ip=$(kubectl get node -o jsonpath='{.items[0].status.addresses[?(@.type=="InternalIP")].address}')
node_done=$SECONDS

# The platform: the emulator on the node's address, over HTTPS with a CA of its own, under
# a host name the operator's pods learn from a host alias.
pki=$work/platform-pki
mkdir -p "$pki"
host=api.gpucloud.test
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=gpucloud-platform-test-ca" \
    -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=$host" -keyout "$pki/tls.key" -out "$pki/tls.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n' "$host" >"$pki/ext"
openssl x509 -req -in "$pki/tls.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial -days 2 \
    -extfile "$pki/ext" -out "$pki/tls.crt" 2>/dev/null
cat /etc/ssl/certs/ca-certificates.crt "$pki/ca.crt" >"$pki/bundle.crt"
api_key=node-$(openssl rand -hex 8)
admin_token=$(openssl rand -hex 16)
port=$("$root/tests/free-ports.py")
"$binary" emulator --listen "$node_ip:$port" --tls-cert-dir "$pki" --api-key "$api_key" \
    --admin-token "$admin_token" --pod-boot-ms 500 >"$work/emulator.log" 2>&1 &
emulator_pid=$!
for _ in $(seq 1 50); do
    curl -sf --cacert "$pki/ca.crt" --resolve "$host:$port:$node_ip" \
        -H "x-emulator-admin-token: $admin_token" "https://$host:$port/_emulator/clock" >/dev/null && break
    sleep 0.2
done

helm=$(tests/install/helm.sh)
python3 tests/node/scenarios.py --helm "$helm" --tags "$tag,$next_tag" \
    --platform-url "https://$host:$port" --platform-admin-url "https://$node_ip:$port" --platform-host "$host" --platform-ip "$node_ip" \
    --platform-ca "$pki/ca.crt" --ca-bundle "$pki/bundle.crt" \
    --api-key "$api_key" --admin-token "$admin_token" || {
    echo "--- operator pods' logs (last 40 lines each)"
    for f in "$cp_dir"/pod-logs/gpucloud-system_*/operator/*.log; do
        [ -f "$f" ] && { echo "## $f"; tail -40 "$f"; }
    done
    exit 1
}

size=$(stat -c %s "$work/image.tar")
log "image archive: $size bytes ($((size / 1024 / 1024)) MiB)"
log "times: image $((image_done - start)) s, node up $((node_done - image_done)) s, scenarios $((SECONDS - node_done)) s, all $((SECONDS - start)) s"
