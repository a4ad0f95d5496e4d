# A real node for the test control plane: containerd with runc and CNI bridge networking
# (Debian's packages), kubelet, kube-scheduler and kube-proxy (built by cp.sh at the pinned
# Kubernetes version). Sourced by cp.sh, which calls node_packages, node_up and node_down.
#
# Everything stays on this machine: the node's address is the gateway of a bridge the run
# creates (no uplink), the pods live in network namespaces containerd creates for them, and
# the apiserver listens on that gateway address so the pods reach it through the
# `kubernetes` Service that kube-proxy programs.
#
# One node cluster per machine at a time: the bridge name and its subnet are fixed.

NODE_NAME=gpucloud-node
NODE_BRIDGE=gpuc0
NODE_IP=10.89.0.1
NODE_SUBNET=10.89.0.0/24
# The sandbox ("pause") image, built here: no registry is reachable.
PAUSE_IMAGE=localhost/gpucloud-test/pause:1

# The distribution's packages the node needs, installed when one is missing.
node_packages() {
    "$here/../../scripts/packages.sh" node
}

# The bridge the pods hang off; its address is the node's and the apiserver's.
node_bridge() {
    if ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
        die "bridge $NODE_BRIDGE exists: another node cluster runs here (or was not brought down)"
    fi
    ip link add "$NODE_BRIDGE" type bridge
    ip addr add "$NODE_IP/24" dev "$NODE_BRIDGE"
    ip link set "$NODE_BRIDGE" up
}

# A static pause binary in a FROM scratch image, imported into the node's containerd.
node_pause_image() {
    local d=$1 ctx=$1/pause
    mkdir -p "$ctx"
    cat >"$ctx/pause.c" <<'EOF'
#include <signal.h>
#include <unistd.h>
static void quit(int sig) { (void)sig; _exit(0); }
int main(void) {
    signal(SIGINT, quit);
    signal(SIGTERM, quit);
    for (;;) pause();
}
EOF
    gcc -static -Os -o "$ctx/pause" "$ctx/pause.c"
    printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' >"$ctx/Containerfile"
    podman build -q -t "$PAUSE_IMAGE" "$ctx" >/dev/null
    podman save -q --format oci-archive -o "$ctx/pause.tar" "$PAUSE_IMAGE"
    node_import "$d" "$ctx/pause.tar"
}

# Imports an image archive (OCI or docker) into the node's containerd, where the kubelet
# finds it.
node_import() {
    local d=$1 archive=$2
    ctr --address "$d/containerd/containerd.sock" -n k8s.io images import --all-platforms "$archive" >/dev/null
}

node_containerd() {
    local d=$1 c=$1/containerd
    mkdir -p "$c" "$d/cni/net.d" "$d/cni/ipam"
    cat >"$c/config.toml" <<EOF
version = 2
root = "$c/root"
state = "$c/state"
[grpc]
  address = "$c/containerd.sock"
[ttrpc]
  address = "$c/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  # This machine may not lower a process's oom_score_adj (the kubelet asks -998 for a
  # sandbox): keep every container's at or above containerd's own.
  restrict_oom_score_adj = true
  sandbox_image = "$PAUSE_IMAGE"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$d/cni/net.d"
EOF
    cat >"$d/cni/net.d/10-gpucloud.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "gpucloud-test",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$NODE_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$NODE_SUBNET", "gateway": "$NODE_IP"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$d/cni/ipam"
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
    start_bg "$d" containerd containerd --config "$c/config.toml"
    wait_for containerd 30 ctr --address "$c/containerd.sock" version \
        || { tail -20 "$d/containerd.log" >&2; die "containerd did not start"; }
}

# The kubelet's serving certificate, and the apiserver's client certificate for it (logs,
# exec), both from the control plane's CA.
node_certs() {
    local d=$1
    openssl req -newkey rsa:2048 -nodes -subj "/CN=$NODE_NAME" \
        -keyout "$d/kubelet.key" -out "$d/kubelet.csr" 2>/dev/null
    printf 'subjectAltName=IP:%s,DNS:%s\nextendedKeyUsage=serverAuth\n' "$NODE_IP" "$NODE_NAME" >"$d/kubelet.ext"
    openssl x509 -req -in "$d/kubelet.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
        -days 3650 -extfile "$d/kubelet.ext" -out "$d/kubelet.crt" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=kube-apiserver-kubelet-client" \
        -keyout "$d/apiserver-kubelet.key" -out "$d/apiserver-kubelet.csr" 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' >"$d/apiserver-kubelet.ext"
    openssl x509 -req -in "$d/apiserver-kubelet.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
        -days 3650 -extfile "$d/apiserver-kubelet.ext" -out "$d/apiserver-kubelet.crt" 2>/dev/null
}

node_kubelet() {
    local d=$1 port
    port=$(free_ports 1)
    mkdir -p "$d/kubelet" "$d/pod-logs"
    cat >"$d/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $port
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 0
tlsCertFile: $d/kubelet.crt
tlsPrivateKeyFile: $d/kubelet.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $d/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$d/containerd/containerd.sock
cgroupDriver: cgroupfs
# This VM has cgroup v1 only, which Kubernetes 1.35 and later refuse unless told.
failCgroupV1: false
failSwapOn: false
# The node's images come from image archives, not a registry: never collect them, and
# never evict for a disk the rest of the machine fills.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 50Mi
  nodefs.available: 1%
  imagefs.available: 1%
  nodefs.inodesFree: 1%
resolvConf: /etc/resolv.conf
podLogsDir: $d/pod-logs
serializeImagePulls: false
EOF
    start_bg "$d" kubelet "$bin_dir/kubelet" --config "$d/kubelet.yaml" --kubeconfig "$d/kubeconfig" \
        --root-dir "$d/kubelet" --hostname-override "$NODE_NAME" --node-ip "$NODE_IP"
}

node_scheduler() {
    local d=$1
    start_bg "$d" kube-scheduler "$bin_dir/kube-scheduler" --kubeconfig "$d/kubeconfig" \
        --authentication-kubeconfig "$d/kubeconfig" --authorization-kubeconfig "$d/kubeconfig" \
        --leader-elect=false --bind-address 127.0.0.1 --secure-port 0
}

node_proxy() {
    local d=$1 healthz metrics
    read -r healthz metrics < <(free_ports 2)
    cat >"$d/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: $d/kubeconfig
mode: iptables
clusterCIDR: $NODE_SUBNET
hostnameOverride: $NODE_NAME
healthzBindAddress: 127.0.0.1:$healthz
metricsBindAddress: 127.0.0.1:$metrics
nodePortAddresses: ["$NODE_IP/32"]
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
    start_bg "$d" kube-proxy "$bin_dir/kube-proxy" --config "$d/kube-proxy.yaml"
}

node_ready() {
    kubectl --kubeconfig "$1/kubeconfig" get node "$NODE_NAME" \
        -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -qx True
}

# Starts the node's parts once the control plane serves on $NODE_IP.
node_up() {
    local d=$1
    node_containerd "$d"
    node_pause_image "$d"
    node_kubelet "$d"
    node_scheduler "$d"
    node_proxy "$d"
    wait_for "node $NODE_NAME" 120 node_ready "$d" \
        || { tail -30 "$d/kubelet.log" >&2; die "the node did not become Ready"; }
}

# Stops every container the node runs, while containerd still answers.
node_stop_containers() {
    local d=$1 sock=$1/containerd/containerd.sock ids id
    [ -S "$sock" ] || return 0
    ids=$(ctr --address "$sock" -n k8s.io tasks ls -q 2>/dev/null || true)
    for id in $ids; do
        ctr --address "$sock" -n k8s.io tasks kill -s SIGKILL "$id" >/dev/null 2>&1 || true
    done
    sleep 0.5
    for id in $ids; do
        ctr --address "$sock" -n k8s.io tasks delete -f "$id" >/dev/null 2>&1 || true
    done
}

# Once every process is stopped: removes what the run made outside $d (the containers'
# shims and mounts, the pods' network namespaces, the bridge, kube-proxy's iptables chains).
node_cleanup() {
    local d=$1 mnt ns
    pkill -KILL -f -- "-address $d/containerd/containerd.sock" 2>/dev/null || true
    "$bin_dir/kube-proxy" --cleanup >/dev/null 2>&1 || true
    grep -o " $d/[^ ]*" /proc/mounts | sort -r | while read -r mnt; do
        umount -l "$mnt" 2>/dev/null || true
    done
    for ns in $(ip netns list 2>/dev/null | awk '/^cni-/{print $1}'); do
        ip netns delete "$ns" 2>/dev/null || true
    done
    ip link delete "$NODE_BRIDGE" 2>/dev/null || true
}
