#!/usr/bin/env bash
# A real Kubernetes control plane for tests and demos: etcd, kube-apiserver and
# kube-controller-manager built from Go modules at pinned versions, started on
# 127.0.0.1 only, with a throw-away data folder. With --node, a real single-node cluster:
# the same control plane plus kube-scheduler, a kubelet on containerd and runc, and
# kube-proxy (node.sh); the apiserver then listens on the node's bridge address instead.
#
#   cp.sh build [--node] [--k8s R]  build the binaries into the cache (reused when present)
#   cp.sh up [--dir DIR] [--node] [--k8s R] [--apiserver-arg ARG]...
#                                 start everything, write DIR/kubeconfig, print the export line;
#                                 each ARG (`--apiserver-arg=ARG` too) ends kube-apiserver's command line
#   cp.sh stop COMPONENT [--dir DIR]   SIGTERM etcd, kube-apiserver or kube-controller-manager and
#                                 wait until it has exited (KILL after 20 s); the rest runs on
#   cp.sh start COMPONENT [--dir DIR]  start it again with its first command line, wait until ready
#   cp.sh import ARCHIVE [--dir DIR]  load an image archive into the node's containerd
#   cp.sh down [--dir DIR]        stop what `up` started (by process id) and remove DIR
#   cp.sh bin [--k8s R]           print the folder holding the binaries
#   cp.sh version [--k8s R]       print the Kubernetes version, such as v1.36.3
#
# --k8s R chooses the Kubernetes release of build, up, bin and version: newest (the
# default) or oldest, the newest and the oldest supported (docs/operations.md, "Supported
# Kubernetes versions"). Each has its own Go module and cache folder; oldest builds no node.
#
# stop and start stand for a managed control plane's upgrade or failover in outage tests;
# `down` stops everything whatever was stopped or started since.
#
# Environment: GPUCLOUD_CP_CACHE (binary cache root, default ~/.cache/gpucloud-operator),
# GPUCLOUD_CP_DIR (state folder, default /tmp/gpucloud-control-plane).
set -euo pipefail

# The newest and the oldest supported Kubernetes, each built from its own Go module.
K8S_NEWEST=v1.36.3
K8S_OLDEST=v1.34.4
ETCD_VERSION=v3.6.16

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${GPUCLOUD_CP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpucloud-operator}
k8s_release=newest
k8s_given=false
state_dir=${GPUCLOUD_CP_DIR:-/tmp/gpucloud-control-plane}
with_node=false
# Extra kube-apiserver flags from --apiserver-arg, after the script's own (so they win).
apiserver_args=()
# What stop and start may act on: the node's parts are tied to each other and to containerd.
restartable="etcd kube-apiserver kube-controller-manager"
# How long stop waits after SIGTERM before SIGKILL.
stop_timeout=20

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

# Sets K8S_VERSION, the Go module that builds it and the cache folder from --k8s.
choose_release() {
    case $k8s_release in
    newest) K8S_VERSION=$K8S_NEWEST kube_module=$here/kube ;;
    oldest) K8S_VERSION=$K8S_OLDEST kube_module=$here/kube-1.34 ;;
    *) die "--k8s takes newest or oldest, not '$k8s_release'" ;;
    esac
    bin_dir="$cache_root/control-plane/k8s-$K8S_VERSION-etcd-$ETCD_VERSION"
    if [ "$with_node" = true ] && [ "$k8s_release" != newest ]; then
        die "--node runs the newest Kubernetes only"
    fi
}

build() {
    command -v go >/dev/null || die "go is not installed; it is needed to build the control plane"
    # A version bumped here but not in the module (or the other way) would build the wrong
    # release into a folder named for this one.
    grep -q "^require k8s.io/kubernetes $K8S_VERSION\$" "$kube_module/go.mod" \
        || die "$kube_module/go.mod does not require k8s.io/kubernetes $K8S_VERSION"
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
            (cd "$kube_module" && env $extra CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$bin_dir.partial/$cmd" "k8s.io/kubernetes/cmd/$cmd")
        fi
    done
    rm -rf "$bin_dir"
    mv "$bin_dir.partial" "$bin_dir"
    log "built in $((SECONDS - start)) s into $bin_dir"
}

# N different loopback ports, free now, on one line (tests/free-ports.py).
free_ports() {
    "$here/../free-ports.py" "$1"
}

# Why COMPONENT of folder D did not start: its log's warnings and errors first (etcd's
# panic names its cause in a line the stack trace that follows pushes out of a plain
# tail), then the log's end, and the room left where its data goes.
explain_failure() {
    local d=$1 name=$2
    grep -E '"level":"(warn|error|panic|fatal)"|^[EF][0-9]{4} ' "$d/$name.log" | head -10 >&2 || true
    tail -20 "$d/$name.log" >&2
    df -h "$d" >&2 || true
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

# Starts NAME in the background: its output in DIR/NAME.log, "PID NAME" in DIR/pids (the
# order `down` stops in, reversed), and its command line, shell-quoted, in DIR/NAME.cmd for
# `start` to run again.
start_bg() {
    local d=$1 name=$2
    shift 2
    printf '%q ' "$@" >"$d/$name.cmd"
    "$@" >"$d/$name.log" 2>&1 &
    echo "$! $name" >>"$d/pids"
}

# Milliseconds since the epoch, and the time since one of those, as "1.234 s".
now_ms() { date +%s%3N; }
since() {
    local ms=$(($(now_ms) - $1))
    printf '%d.%03d s' $((ms / 1000)) $((ms % 1000))
}

# NAME's recorded command line, into the array cmd_argv.
read_cmd() {
    local d=$1 name=$2
    [ -f "$d/$name.cmd" ] || die "$d/$name.cmd is missing: $name was not started by this cp.sh's 'up'"
    eval "cmd_argv=($(<"$d/$name.cmd"))"
}

# The value after FLAG on NAME's recorded command line.
recorded_arg() {
    local d=$1 name=$2 flag=$3 i
    read_cmd "$d" "$name"
    for ((i = 0; i + 1 < ${#cmd_argv[@]}; i++)); do
        if [ "${cmd_argv[i]}" = "$flag" ]; then
            echo "${cmd_argv[i + 1]}"
            return
        fi
    done
    die "$name's command line has no $flag"
}

# NAME's process id in DIR/pids ("-" once `stop` stopped it).
pid_of() {
    awk -v n="$2" '$2 == n {print $1; exit}' "$1/pids"
}

# Records PID (or "-") as NAME's in DIR/pids, in its place, so `down` keeps its order.
set_pid() {
    local d=$1 name=$2 pid=$3
    awk -v n="$name" -v p="$pid" '$2 == n {$1 = p} {print}' "$d/pids" >"$d/pids.new"
    mv "$d/pids.new" "$d/pids"
}

# Whether process PID runs: a zombie (exited, not yet reaped by its new parent) does not.
alive() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    # The state follows the command name, which is in parentheses and may hold spaces.
    stat=${stat##*) }
    [ "${stat%% *}" != Z ]
}

# Whether NAME runs under the id DIR/pids records, running NAME's program (not a later
# process that got the same id).
running() {
    local d=$1 name=$2 pid argv0
    pid=$(pid_of "$d" "$name")
    [ -n "$pid" ] && [ "$pid" != - ] && alive "$pid" || return 1
    [ -f "$d/$name.cmd" ] || return 0
    read_cmd "$d" "$name"
    argv0=$(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -1)
    [ "$argv0" = "${cmd_argv[0]}" ]
}

# SIGTERM to PID, then SIGKILL if it still runs after TIMEOUT seconds; returns once it
# has exited: 0, 1 if it needed the SIGKILL, 2 if it still runs 10 s after that.
terminate() {
    local pid=$1 timeout=$2 _
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 $((timeout * 10))); do
        alive "$pid" || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
        alive "$pid" || return 1
        sleep 0.1
    done
    log "process $pid still runs 10 s after SIGKILL"
    return 2
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
    read -r etcd_port etcd_peer api_port < <(free_ports 3)

    # 8 GiB rather than etcd's 2 GiB: a benchmark of 100,000 objects writes each several times
    # between two compactions, and a full quota stops every write (the "database space exceeded" alarm).
    start_bg "$d" etcd "$bin_dir/etcd" --name test --data-dir "$d/etcd" \
        --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
        --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
        --initial-cluster "test=http://127.0.0.1:$etcd_peer" --unsafe-no-fsync --log-level warn \
        --quota-backend-bytes 8589934592
    wait_for etcd 30 curl -sf "http://127.0.0.1:$etcd_port/health" || { explain_failure "$d" etcd; down; die "etcd did not start"; }

    start_bg "$d" kube-apiserver "$bin_dir/kube-apiserver" \
        --etcd-servers "http://127.0.0.1:$etcd_port" \
        --bind-address "$api_host" --advertise-address "$api_host" --secure-port "$api_port" \
        --tls-cert-file "$d/apiserver.crt" --tls-private-key-file "$d/apiserver.key" \
        --client-ca-file "$d/ca.crt" --token-auth-file "$d/tokens.csv" \
        --service-account-issuer https://kubernetes.default.svc.cluster.local \
        --service-account-signing-key-file "$d/sa.key" --service-account-key-file "$d/sa.pub" \
        --authorization-mode RBAC --service-cluster-ip-range 10.0.0.0/24 "${node_flags[@]}" \
        "${apiserver_args[@]}"
    wait_for kube-apiserver 60 curl -sf --cacert "$d/ca.crt" -H "Authorization: Bearer $token" \
        "https://$api_host:$api_port/readyz" || { explain_failure "$d" kube-apiserver; down; die "kube-apiserver did not become ready"; }
    write_kubeconfig "$d" "$api_host" "$api_port" "$token"

    # The namespace controller empties a namespace with two calls per namespaced resource
    # type (about 80); at the default 20 requests a second the test lanes, which delete
    # dozens of namespaces at once, wait minutes on its rate limiter.
    start_bg "$d" kube-controller-manager "$bin_dir/kube-controller-manager" \
        --kubeconfig "$d/kubeconfig" --authentication-kubeconfig "$d/kubeconfig" \
        --authorization-kubeconfig "$d/kubeconfig" \
        --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
        --root-ca-file "$d/ca.crt" --controllers "$controllers" \
        --kube-api-qps 300 --kube-api-burst 600 --concurrent-namespace-syncs 25
    if [ "$with_node" = true ]; then
        node_up "$d"
    fi
    log "Kubernetes $K8S_VERSION up in $((SECONDS - start)) s; state in $d"
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
        if [ "$pid" = - ]; then
            log "$name was stopped already (cp.sh stop)"
            continue
        fi
        terminate "$pid" 5 || true
        log "stopped $name ($pid)"
    done <<<"$lines"
    if [ -f "$d/node" ]; then
        node_cleanup "$d"
    fi
    rm -rf "$d"
}

# Dies unless NAME is one stop and start act on, in a folder `up` started.
check_component() {
    local name=$1
    [ -n "$name" ] || die "which component? one of: $restartable"
    case " $restartable " in
    *" $name "*) ;;
    *) die "cannot stop or start '$name'; one of: $restartable" ;;
    esac
    [ -f "$state_dir/pids" ] || die "nothing runs in $state_dir (start it with 'up --dir $state_dir')"
    [ -n "$(pid_of "$state_dir" "$name")" ] || die "$state_dir has no $name"
}

# SIGTERMs one component, as a managed control plane's upgrade or failover does, and
# returns once it has exited; its line in DIR/pids says "-" until `start`. The apiserver
# refuses connections at once but, by default, holds open watches (the controller
# manager's, an operator's) until its HTTP server's shutdown times out (--request-timeout,
# 60 s), so it is killed at 20 s with those watches still open; with
# --apiserver-arg=--shutdown-watch-termination-grace-period=2s it ends them and exits in ~1 s.
stop_component() {
    local d=$state_dir name=$1 pid t0
    check_component "$name"
    running "$d" "$name" || die "$name is not running in $d (stopped already, or it exited: see $d/$name.log)"
    pid=$(pid_of "$d" "$name")
    t0=$(now_ms)
    local rc=0
    terminate "$pid" "$stop_timeout" || rc=$?
    case $rc in
    0) log "stopped $name ($pid) in $(since "$t0")" ;;
    1) log "stopped $name ($pid): killed, still running $stop_timeout s after SIGTERM" ;;
    *) die "could not stop $name ($pid)" ;;
    esac
    set_pid "$d" "$name" -
}

# Whether the component answers: etcd's /health, the apiserver's /readyz (as `up` waits),
# the controller manager (no port here: --secure-port 0) still running after a second.
component_ready() {
    local d=$1 name=$2
    case $name in
    etcd) curl -sf "$(recorded_arg "$d" etcd --advertise-client-urls)/health" ;;
    kube-apiserver)
        curl -sf --cacert "$d/ca.crt" -H "Authorization: Bearer $(cut -d, -f1 "$d/tokens.csv")" \
            "$(sed -n 's/^ *server: //p' "$d/kubeconfig")/readyz" ;;
    kube-controller-manager) sleep 1 && running "$d" "$name" ;;
    esac
}

# Starts a stopped component again with its recorded command line, its output appended
# to its log, and waits until it is ready (the apiserver needs etcd for that).
start_component() {
    local d=$state_dir name=$1 pid t0 timeout=30
    check_component "$name"
    if running "$d" "$name"; then
        die "$name is already running in $d (process $(pid_of "$d" "$name")); stop it first"
    fi
    read_cmd "$d" "$name"
    t0=$(now_ms)
    printf '\n[control-plane] %s: started again by cp.sh start\n' "$(date -u +%FT%TZ)" >>"$d/$name.log"
    "${cmd_argv[@]}" >>"$d/$name.log" 2>&1 &
    pid=$!
    set_pid "$d" "$name" "$pid"
    [ "$name" = kube-apiserver ] && timeout=60
    wait_for "$name" "$timeout" component_ready "$d" "$name" \
        || { tail -30 "$d/$name.log" >&2; die "$name ($pid) not ready within $timeout s; still recorded for 'down'"; }
    log "started $name again ($pid) in $(since "$t0")"
}

import_image() {
    [ -f "$state_dir/node" ] || die "$state_dir runs no node (start it with 'up --node')"
    node_import "$(cd "$state_dir" && pwd)" "$1"
}

# shellcheck source=node.sh
. "$here/node.sh"

cmd=${1:-}
[ $# -gt 0 ] && shift
# import's archive, or stop's and start's component.
operand=
while [ $# -gt 0 ]; do
    case $1 in
    --dir) state_dir=$2; shift 2 ;;
    --node) with_node=true; shift ;;
    --k8s)
        [ $# -ge 2 ] || die "--k8s needs newest or oldest"
        k8s_release=$2 k8s_given=true; shift 2 ;;
    --k8s=*) k8s_release=${1#--k8s=} k8s_given=true; shift ;;
    --apiserver-arg)
        [ $# -ge 2 ] || die "--apiserver-arg needs a value"
        apiserver_args+=("$2"); shift 2 ;;
    --apiserver-arg=*) apiserver_args+=("${1#--apiserver-arg=}"); shift ;;
    -*) die "unknown argument $1" ;;
    *)
        case $cmd in import | stop | start) [ -z "$operand" ] ;; *) false ;; esac || die "unknown argument $1"
        operand=$1; shift ;;
    esac
done
# `start` reruns the first command line, so extra flags would be silently dropped there.
[ ${#apiserver_args[@]} -eq 0 ] || [ "$cmd" = up ] || die "--apiserver-arg is for 'up' only"
# The other commands act on what `up` started, whatever its release.
case $cmd in
build | up | bin | version) ;;
*) [ "$k8s_given" = false ] || die "--k8s is for build, up, bin and version" ;;
esac
choose_release
case $cmd in
build) build ;;
up) up ;;
down) down ;;
stop) stop_component "$operand" ;;
start) start_component "$operand" ;;
import) [ -n "$operand" ] || die "import needs an image archive"; import_image "$operand" ;;
bin) echo "$bin_dir" ;;
version) echo "$K8S_VERSION" ;;
# The comment block at the top.
*) sed -n '2,/^[^#]/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
