#!/usr/bin/env bash
# A real Kubernetes control plane for tests and demos: etcd, kube-apiserver and
# kube-controller-manager built from Go modules at pinned versions, started on
# 127.0.0.1 only, with a throw-away data folder. With --node, a real single-node cluster:
# the same control plane plus kube-scheduler, a kubelet on containerd and runc, and
# kube-proxy (node.sh); the apiserver then listens on the node's bridge address instead.
#
#   cp.sh build [--node]          build the binaries into the cache (reused when present)
#   cp.sh up [--dir DIR] [--node] start everything, write DIR/kubeconfig, print the export line
#   cp.sh import ARCHIVE [--dir DIR]  load an image archive into the node's containerd
#   cp.sh down [--dir DIR]        stop what `up` started (by process id) and remove DIR
#   cp.sh bin                     print the folder holding the binaries
#
# Environment: GPUCLOUD_CP_CACHE (binary cache root, default ~/.cache/gpucloud-operator),
# GPUCLOUD_CP_DIR (state folder, default /tmp/gpucloud-control-plane).
set -euo pipefail

K8S_VERSION=v1.36.3
ETCD_VERSION=v3.6.16

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${GPUCLOUD_CP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpucloud-operator}
bin_dir="$cache_root/control-plane/k8s-$K8S_VERSION-etcd-$ETCD_VERSION"
state_dir=${GPUCLOUD_CP_DIR:-/tmp/gpucloud-control-plane}
with_node=false

log() { printf '[control-plane] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Go 1.27 made encoding/json v2 the default, which changes the apiserver's
# OpenAPI output and breaks kubectl; the pinned Kubernetes expects v1.
go_env() {
    local minor
    minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
    if [ "${minor:-0}" -ge 27 ]; then
        echo "GOEXPERIMENT=nojsonv2"
    fi
}

# The Kubernetes commands to build: the control plane's, and the node's with --node.
kube_commands() {
    echo kube-apiserver kube-controller-manager
    if [ "$with_node" = true ]; then
        echo kube-scheduler kubelet kube-proxy
    fi
}

build() {
    command -v go >/dev/null || die "go is not installed; it is needed to build the control plane"
    local cmd missing=false
    for cmd in etcd $(kube_commands); do
        [ -x "$bin_dir/$cmd" ] || missing=true
    done
    if [ "$missing" = false ]; then
        log "binaries cached in $bin_dir"
        return
    fi
    # Built into a side folder, then moved in: a cache folder holds whole binaries only.
    if [ -d "$bin_dir" ]; then
        mkdir -p "$bin_dir.partial"
        cp -n "$bin_dir"/* "$bin_dir.partial/" 2>/dev/null || true
    fi
    mkdir -p "$bin_dir.partial"
    local start=$SECONDS extra
    extra=$(go_env)
    local pkg=k8s.io/component-base/version
    local major minor
    major=$(echo "$K8S_VERSION" | sed -E 's/^v([0-9]+)\..*/\1/')
    minor=$(echo "$K8S_VERSION" | sed -E 's/^v[0-9]+\.([0-9]+)\..*/\1/')
    local ldflags="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
    if [ ! -x "$bin_dir.partial/etcd" ]; then
        log "building etcd $ETCD_VERSION"
        (cd "$here/etcd" && env $extra CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$bin_dir.partial/etcd" go.etcd.io/etcd/server/v3)
    fi
    for cmd in $(kube_commands); do
        if [ ! -x "$bin_dir.partial/$cmd" ]; then
            log "building $cmd $K8S_VERSION"
            (cd "$here/kube" && env $extra CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin_dir.partial/$cmd" "k8s.io/kubernetes/cmd/$cmd")
        fi
    done
    rm -rf "$bin_dir"
    mv "$bin_dir.partial" "$bin_dir"
    log "built in $((SECONDS - start)) s into $bin_dir"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

wait_for() {
    local what=$1 timeout=$2
    shift 2
    local deadline=$((SECONDS + timeout))
    until "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            return 1
        fi
        sleep 0.2
    done
    log "$what ready"
}

gen_certs() {
    local d=$1 san=IP:127.0.0.1
    [ "$with_node" = true ] && san="IP:$NODE_IP,IP:10.0.0.1"
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=gpucloud-test-ca" \
        -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
        -keyout "$d/apiserver.key" -out "$d/apiserver.csr" 2>/dev/null
    printf 'subjectAltName=%s,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n' "$san" >"$d/apiserver.ext"
    openssl x509 -req -in "$d/apiserver.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
        -days 3650 -extfile "$d/apiserver.ext" -out "$d/apiserver.crt" 2>/dev/null
    openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
    openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
}

write_kubeconfig() {
    local d=$1 host=$2 port=$3 token=$4
    cat >"$d/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: gpucloud-test
  cluster:
    server: https://$host:$port
    certificate-authority-data: $(base64 -w0 <"$d/ca.crt")
users:
- name: admin
  user:
    token: $token
contexts:
- name: gpucloud-test
  context:
    cluster: gpucloud-test
    user: admin
current-context: gpucloud-test
EOF
    chmod 600 "$d/kubeconfig"
}

start_bg() {
    local d=$1 name=$2
    shift 2
    "$@" >"$d/$name.log" 2>&1 &
    echo "$! $name" >>"$d/pids"
}

up() {
    build
    local d=$state_dir
    if [ -f "$d/pids" ]; then
        die "$d already holds a running control plane; run '$0 down --dir $d' first"
    fi
    mkdir -p "$d"
    d=$(cd "$d" && pwd)
    local start=$SECONDS
    # Where the apiserver listens: loopback, or the node's bridge address, which the pods
    # reach through the `kubernetes` Service.
    local api_host=127.0.0.1 node_flags=(--endpoint-reconciler-type none --disable-admission-plugins ServiceAccount)
    local controllers=namespace-controller,garbage-collector-controller,serviceaccount-controller,clusterrole-aggregation-controller
    if [ "$with_node" = true ]; then
        node_packages
        touch "$d/node"
        node_bridge
        api_host=$NODE_IP
        node_flags=(--endpoint-reconciler-type lease --kubelet-client-certificate "$d/apiserver-kubelet.crt"
            --kubelet-client-key "$d/apiserver-kubelet.key" --kubelet-certificate-authority "$d/ca.crt"
            --kubelet-preferred-address-types InternalIP)
        controllers+=,deployment-controller,replicaset-controller,endpointslice-controller,endpointslice-mirroring-controller
        controllers+=,disruption-controller,root-ca-certificate-publisher-controller,pod-garbage-collector-controller
        controllers+=,node-lifecycle-controller,ttl-after-finished-controller,job-controller
    fi
    gen_certs "$d"
    if [ "$with_node" = true ]; then
        node_certs "$d"
    fi
    local token
    token=$(openssl rand -hex 16)
    echo "$token,admin,admin-uid,system:masters" >"$d/tokens.csv"
    chmod 600 "$d/tokens.csv"

    local etcd_port etcd_peer api_port
    etcd_port=$(free_port)
    etcd_peer=$(free_port)
    api_port=$(free_port)

    # 8 GiB rather than etcd's 2 GiB: a benchmark of 100,000 objects writes each several times
    # between two compactions, and a full quota stops every write (the "database space exceeded" alarm).
    start_bg "$d" etcd "$bin_dir/etcd" --name test --data-dir "$d/etcd" \
        --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
        --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
        --initial-cluster "test=http://127.0.0.1:$etcd_peer" --unsafe-no-fsync --log-level warn \
        --quota-backend-bytes 8589934592
    wait_for etcd 30 curl -sf "http://127.0.0.1:$etcd_port/health" || { tail -20 "$d/etcd.log" >&2; down; die "etcd did not start"; }

    start_bg "$d" kube-apiserver "$bin_dir/kube-apiserver" \
        --etcd-servers "http://127.0.0.1:$etcd_port" \
        --bind-address "$api_host" --advertise-address "$api_host" --secure-port "$api_port" \
        --tls-cert-file "$d/apiserver.crt" --tls-private-key-file "$d/apiserver.key" \
        --client-ca-file "$d/ca.crt" --token-auth-file "$d/tokens.csv" \
        --service-account-issuer https://kubernetes.default.svc.cluster.local \
        --service-account-signing-key-file "$d/sa.key" --service-account-key-file "$d/sa.pub" \
        --authorization-mode RBAC --service-cluster-ip-range 10.0.0.0/24 "${node_flags[@]}"
    wait_for kube-apiserver 60 curl -sf --cacert "$d/ca.crt" -H "Authorization: Bearer $token" \
        "https://$api_host:$api_port/readyz" || { tail -30 "$d/kube-apiserver.log" >&2; down; die "kube-apiserver did not become ready"; }
    write_kubeconfig "$d" "$api_host" "$api_port" "$token"

    start_bg "$d" kube-controller-manager "$bin_dir/kube-controller-manager" \
        --kubeconfig "$d/kubeconfig" --authentication-kubeconfig "$d/kubeconfig" \
        --authorization-kubeconfig "$d/kubeconfig" \
        --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
        --root-ca-file "$d/ca.crt" --controllers "$controllers"
    if [ "$with_node" = true ]; then
        node_up "$d"
    fi
    log "up in $((SECONDS - start)) s; state in $d"
    echo "export KUBECONFIG=$d/kubeconfig"
}

down() {
    local d=$state_dir
    [ -f "$d/pids" ] || { log "nothing running in $d"; rm -rf "$d"; return 0; }
    # Stop in reverse order of start so the apiserver never loses etcd under it.
    local lines pid name
    if [ -f "$d/node" ]; then
        # The kubelet first, so that it restarts nothing; then every container, while
        # containerd still answers.
        pid=$(awk '$2 == "kubelet" {print $1}' "$d/pids")
        [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
        node_stop_containers "$d"
    fi
    lines=$(tac "$d/pids")
    while read -r pid name; do
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
        log "stopped $name ($pid)"
    done <<<"$lines"
    if [ -f "$d/node" ]; then
        node_cleanup "$d"
    fi
    rm -rf "$d"
}

import_image() {
    [ -f "$state_dir/node" ] || die "$state_dir runs no node (start it with 'up --node')"
    node_import "$(cd "$state_dir" && pwd)" "$1"
}

# shellcheck source=node.sh
. "$here/node.sh"

cmd=${1:-}
[ $# -gt 0 ] && shift
archive=
while [ $# -gt 0 ]; do
    case $1 in
    --dir) state_dir=$2; shift 2 ;;
    --node) with_node=true; shift ;;
    -*) die "unknown argument $1" ;;
    *) [ "$cmd" = import ] && [ -z "$archive" ] || die "unknown argument $1"; archive=$1; shift ;;
    esac
done
case $cmd in
build) build ;;
up) up ;;
down) down ;;
import) [ -n "$archive" ] || die "import needs an image archive"; import_image "$archive" ;;
bin) echo "$bin_dir" ;;
*) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
