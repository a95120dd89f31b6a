#!/usr/bin/env bash
# A real node beside the kwok nodes of the local control plane: containerd 2.x with
# Debian's runc, CNI (a bridge of our own), kubelet and kube-proxy built from the
# pinned Kubernetes module, run as local processes (root needed).
#
#   node.sh up              joins node `overseer-node` to the cluster of .cluster/kubeconfig
#   node.sh load ARCHIVE IMAGE   imports an OCI archive (hack/image/build.sh) as IMAGE
#   node.sh check           fails, saying why, unless the node is Ready and takes pods
#   node.sh down            stops it, unmounts and removes its state, deletes the Node
#
# The node is labelled and tainted `overseer.dev/real-node=true`: only pods that ask for
# it land there (a namespace annotated as in `namespace_annotations` below sends all its
# pods there through the PodNodeSelector and PodTolerationRestriction admission plugins).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
state="$repo/.cluster/node"
# containerd's sockets and the runtime state want short paths.
run=/run/overseer-node
node=overseer-node
bridge=overseer0
node_ip=10.244.0.1
pod_cidr=10.244.0.0/24
sandbox_image=localhost/overseer/pause:sandbox
kubeconfig="$repo/.cluster/kubeconfig"
log() { echo "node: $*" >&2; }

[ "$(id -u)" -eq 0 ] || { log "the real node needs root (containerd, kubelet, iptables)"; exit 1; }

kube_bin() { bash "$repo/hack/testenv/build.sh" | tail -n 1; }
node_bin() { bash "$here/build.sh" | tail -n 1; }

ctr_() { "$NODE_BIN/ctr" --address "$run/containerd.sock" --namespace k8s.io "$@"; }

running() { [ -f "$state/$1.pid" ] && kill -0 "$(cat "$state/$1.pid")" 2>/dev/null; }

# Starts `name` in the background with its log in $state/NAME.log.
start() {
  local name="$1"; shift
  running "$name" && return
  log "starting $name"
  nohup "$@" >"$state/$name.log" 2>&1 &
  echo $! >"$state/$name.pid"
}

wait_for() {
  local what="$1" seconds="$2"; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ $SECONDS -ge "$deadline" ]; then
      log "$what: not ready after ${seconds}s; the last lines of the logs:"
      tail -n 20 "$state"/*.log >&2 || true
      exit 1
    fi
    sleep 0.5
  done
}

network() {
  if ! ip link show "$bridge" >/dev/null 2>&1; then
    ip link add "$bridge" type bridge
  fi
  ip addr show dev "$bridge" | grep -q "inet $node_ip/" || ip addr add "$node_ip/24" dev "$bridge"
  ip link set "$bridge" up
  sysctl -qw net.ipv4.ip_forward=1
  mkdir -p "$state/cni"
  cat >"$state/cni/10-overseer.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "overseer",
  "plugins": [
    {"type": "bridge", "bridge": "$bridge", "isGateway": true, "isDefaultGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$state/cni/ipam",
              "ranges": [[{"subnet": "$pod_cidr", "gateway": "$node_ip"}]]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
}

containerd_up() {
  mkdir -p "$run" "$state/containerd"
  cat >"$state/containerd.toml" <<TOML
version = 3
root = "$state/containerd"
state = "$run/containerd"
[grpc]
  address = "$run/containerd.sock"
[ttrpc]
  address = "$run/containerd.sock.ttrpc"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '$sandbox_image'
[plugins.'io.containerd.cri.v1.runtime']
  # The machine withholds CAP_SYS_RESOURCE: no process here may lower its OOM score
  # (the pod sandbox asks for -998), so pods keep containerd's score or higher.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = 'io.containerd.runc.v2'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = '$(command -v runc)'
      SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['$NODE_BIN/cni']
    conf_dir = '$state/cni'
TOML
  # The shim is found on PATH.
  PATH="$NODE_BIN:$PATH" start containerd "$NODE_BIN/containerd" --config "$state/containerd.toml"
  wait_for containerd 30 ctr_ version
  ctr_ images import --base-name "${sandbox_image%:*}" "$NODE_BIN/pause.tar" >&2
}

kubelet_up() {
  mkdir -p "$state/kubelet" "$state/pod-logs"
  # The node's pods have no DNS: there is no cluster DNS, and the machine's own resolver
  # is not theirs to use. A resolver that answers nothing fails a lookup at once, where
  # an unreachable one makes a CLI that looks up its vendor's hosts at start (Claude
  # Code) wait for timeouts before it takes input.
  echo "nameserver 127.0.0.1" >"$state/resolv.conf"
  cat >"$state/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$run/containerd.sock
# The machine's cgroups are v1 (hybrid); Kubernetes >= 1.35 refuses them unless told.
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
address: $node_ip
readOnlyPort: 0
# Only the API server (and this machine) reaches it, on an address of our own bridge.
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
registerWithTaints: [{key: overseer.dev/real-node, value: "true", effect: NoSchedule}]
podLogsDir: $state/pod-logs
serializeImagePulls: false
resolvConf: $state/resolv.conf
# Local images cannot be pulled again: never collect them, never evict for disk.
imageGCHighThresholdPercent: 100
# Absolute, not percentages: on a shared machine whose disk is large and mostly used by
# others, 1% is gigabytes, and a node under DiskPressure is tainted and takes no pod.
evictionHard: {memory.available: "100Mi", nodefs.available: "256Mi", imagefs.available: "256Mi"}
YAML
  start kubelet "$KUBE_BIN/kubelet" --config "$state/kubelet.yaml" --kubeconfig "$kubeconfig" \
    --root-dir "$state/kubelet" --cert-dir "$state/kubelet/pki" --hostname-override "$node" \
    --node-ip "$node_ip" --node-labels overseer.dev/real-node=true
  wait_for "node $node Ready" 120 bash -c \
    "'$KUBE_BIN/kubectl' --kubeconfig '$kubeconfig' get node '$node' -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].status}' | grep -qx True"
}

kube_proxy_up() {
  cat >"$state/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $kubeconfig}
hostnameOverride: $node
mode: iptables
clusterCIDR: $pod_cidr
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# Leave the machine's conntrack sysctls alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
  start kube-proxy "$KUBE_BIN/kube-proxy" --config "$state/kube-proxy.yaml"
  wait_for "kube-proxy's rules" 60 bash -c "iptables -t nat -S KUBE-SERVICES | grep -q default/kubernetes"
}

up() {
  [ -f "$kubeconfig" ] || { log "no local cluster: run hack/testenv/cluster.sh up first"; exit 1; }
  KUBE_BIN="$(kube_bin)"
  NODE_BIN="$(node_bin)"
  mkdir -p "$state"
  local started=$SECONDS
  network
  containerd_up
  kubelet_up
  kube_proxy_up
  log "node $node Ready in $((SECONDS - started))s (containerd, kubelet, kube-proxy; logs in $state)"
}

load() {
  local archive="$1" name="$2"
  NODE_BIN="$(node_bin)"
  local started=$SECONDS
  ctr_ images import --base-name "${name%:*}" "$archive" >&2
  log "imported $name in $((SECONDS - started))s"
}

# The node takes pods only when Ready with no taint but ours (a DiskPressure or
# MemoryPressure taint would leave every e2e pod Pending until its test times out).
check() {
  KUBE_BIN="$(kube_bin)"
  local kubectl=("$KUBE_BIN/kubectl" --kubeconfig "$kubeconfig") taints ready
  ready="$("${kubectl[@]}" get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')"
  taints="$("${kubectl[@]}" get node "$node" -o jsonpath='{range .spec.taints[*]}{.key}{"\n"}{end}' |
    grep -vx overseer.dev/real-node || true)"
  [ "$ready" = True ] && [ -z "$taints" ] && return
  log "node $node takes no pods: Ready=$ready, taints: ${taints:-none}; its conditions:"
  "${kubectl[@]}" get node "$node" \
    -o jsonpath='{range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}' >&2
  df -h "$state" >&2
  exit 1
}

stop() {
  local name="$1" pid
  running "$name" || { rm -f "$state/$name.pid"; return 0; }
  pid="$(cat "$state/$name.pid")"
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$state/$name.pid"
}

down() {
  stop kube-proxy
  stop kubelet
  # The pods' containers and shims outlive containerd: stop them through it first.
  if running containerd; then
    NODE_BIN="$(node_bin)"
    local task
    for task in $(ctr_ tasks list -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$task" >/dev/null 2>&1 || true; done
  fi
  stop containerd
  pkill -f "containerd-shim-runc-v2 .*-address $run/containerd.sock" 2>/dev/null || true
  # Unmount everything under the node's state (pod volumes, sandboxes, snapshots).
  local m
  for m in $(awk '{print $2}' /proc/self/mounts | grep -E "^($state|$run)" | sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  iptables-save | grep -q KUBE- && "${KUBE_BIN:-$(kube_bin)}/kube-proxy" --cleanup >/dev/null 2>&1 || true
  ip link del "$bridge" 2>/dev/null || true
  rm -rf "$state" "$run"
  if [ -f "$kubeconfig" ]; then
    "${KUBE_BIN:-$(kube_bin)}/kubectl" --kubeconfig "$kubeconfig" delete node "$node" --ignore-not-found >/dev/null 2>&1 || true
  fi
}

case "${1:-}" in
  up) up ;;
  load) load "$2" "$3" ;;
  check) check ;;
  down) down ;;
  *) echo "usage: $0 up | load ARCHIVE IMAGE | check | down" >&2; exit 2 ;;
esac
