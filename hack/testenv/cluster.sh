#!/usr/bin/env bash
# The local control plane: etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler and kwok (two simulated nodes), run as local processes by
# `kwokctl --runtime binary`.
#
#   cluster.sh up [test|demo]   idempotent; the profile picks the pod Stages (see stages/)
#   cluster.sh down             stops it and removes its state
#
# Writes .cluster/kubeconfig and links the pinned kubectl, helm, helm4 and kstatus into
# .cluster/bin/.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
state="$repo/.cluster"
name=overseer
export KWOK_WORKDIR="$state/kwok"
export NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}" no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}"

log() { echo "cluster: $*" >&2; }

bin="$(bash "$here/build.sh" | tail -n 1)"
stages_cache="$(dirname "$bin")/stages"

answers() {
  [ -f "$state/kubeconfig" ] && "$bin/kubectl" --kubeconfig "$state/kubeconfig" --request-timeout=5s get --raw /readyz >/dev/null 2>&1
}

wait_ready() {
  local deadline=$((SECONDS + 180))
  until answers && [ "$("$bin/kubectl" --kubeconfig "$state/kubeconfig" get nodes --no-headers 2>/dev/null | grep -c ' Ready ')" -ge 2 ]; do
    if [ $SECONDS -ge $deadline ]; then
      log "cluster did not become ready in 180s"; "$bin/kubectl" --kubeconfig "$state/kubeconfig" get nodes >&2 || true
      exit 1
    fi
    sleep 1
  done
}

# The config kwokctl reads: kwok's default node and pod Stages (from the kwok module
# it was built from), then ours for the profile.
write_config() {
  local profile="$1" f
  {
    for f in "$here/stages/kwokctl.yaml" "$stages_cache"/*.yaml "$here/stages/outcome.yaml" "$here/stages/exec.yaml"; do
      echo "---"; cat "$f"
    done
    if [ "$profile" = demo ]; then echo "---"; cat "$here/stages/demo.yaml"; fi
  } >"$state/kwok.yaml"
}

link_tools() {
  local tool
  for tool in kubectl helm helm4 kstatus; do ln -sf "$bin/$tool" "$state/bin/$tool"; done
}

up() {
  local profile="${1:-test}"
  mkdir -p "$state/bin"
  link_tools
  if answers && [ "$(cat "$state/profile" 2>/dev/null)" = "$profile" ]; then
    log "already up ($profile): $state/kubeconfig"
    return
  fi
  [ -d "$KWOK_WORKDIR" ] && down
  mkdir -p "$state/bin"
  link_tools
  write_config "$profile"
  log "creating cluster ($profile profile)"
  "$bin/kwokctl" create cluster --name "$name" --runtime binary \
    --config "$state/kwok.yaml" \
    --enable-crds Exec --enable-crds Logs \
    --kubeconfig "$state/kubeconfig" \
    --kube-apiserver-binary "$bin/kube-apiserver" \
    --kube-controller-manager-binary "$bin/kube-controller-manager" \
    --kube-scheduler-binary "$bin/kube-scheduler" \
    --kwok-controller-binary "$bin/kwok" \
    --etcd-binary "$bin/etcd" \
    --timeout 3m --wait 2m >&2
  echo "$profile" >"$state/profile"
  # The kwok nodes' InternalIPs are loopback addresses (kwok serves exec and logs on all
  # of them), as the API server prefers InternalIP to reach the real node.
  "$bin/kwokctl" --name "$name" scale node --replicas 2 --param '.nodeIPs=["127.0.0.1"]' >&2
  wait_ready
  log "ready: export KUBECONFIG=$state/kubeconfig"
}

down() {
  # A real node (hack/node) holds mounts, iptables rules and a bridge of its own.
  if [ -d "$state/node" ]; then bash "$repo/hack/node/node.sh" down; fi
  if [ -d "$KWOK_WORKDIR" ]; then
    log "deleting cluster"
    "$bin/kwokctl" delete cluster --name "$name" >/dev/null 2>&1 || log "kwokctl delete failed; removing its state anyway"
  fi
  rm -rf "$KWOK_WORKDIR" "$state/kubeconfig" "$state/profile" "$state/kwok.yaml"
}

case "${1:-}" in
  up) up "${2:-test}" ;;
  down) down ;;
  *) echo "usage: $0 up [test|demo] | down" >&2; exit 2 ;;
esac
