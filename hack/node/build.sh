#!/usr/bin/env bash
# Builds the parts of the real test node that do not come from the Kubernetes module
# (kubelet and kube-proxy are built with the control plane by hack/testenv/build.sh):
# containerd, its runc shim and ctr, the CNI plugins, and the pod sandbox ("pause")
# image, into a cache outside the repository keyed by their versions. runc is Debian's.
# Prints the cache's bin directory on the last line of stdout.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
testenv="$(cd "$here/../testenv" && pwd)"
# shellcheck source=../testenv/versions.env
source "$testenv/versions.env"
cache_root="${OVERSEER_TESTENV_CACHE:-$HOME/.cache/overseer-testenv}"
out="$cache_root/node_containerd-${CONTAINERD_VERSION}_cni-${CNI_PLUGINS_VERSION}/bin"
log() { echo "node: $*" >&2; }

binaries=(containerd containerd-shim-runc-v2 ctr cni/bridge cni/host-local cni/loopback cni/portmap pause.tar)
all_built() {
  local b
  for b in "${binaries[@]}"; do [ -e "$out/$b" ] || return 1; done
}

if ! command -v runc >/dev/null || ! command -v iptables >/dev/null || ! command -v conntrack >/dev/null \
  || ! command -v ip >/dev/null || ! command -v umoci >/dev/null; then
  log "installing runc, iptables, conntrack, iproute2, umoci from Debian"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq runc iptables conntrack iproute2 umoci >&2
fi

if all_built; then
  log "cache hit: $out"
  echo "$out"
  exit 0
fi

# shellcheck source=../testenv/go.sh
source "$testenv/go.sh"
ensure_go
export GOTOOLCHAIN=local CGO_ENABLED=0
mkdir -p "$out/cni"

if [ ! -x "$out/containerd" ] || [ ! -x "$out/containerd-shim-runc-v2" ] || [ ! -x "$out/ctr" ]; then
  log "building containerd v${CONTAINERD_VERSION} (containerd, containerd-shim-runc-v2, ctr)"
  GOBIN="$out" "$GO" install -trimpath -tags "no_btrfs no_devmapper no_zfs" \
    -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=v${CONTAINERD_VERSION}" \
    "github.com/containerd/containerd/v2/cmd/containerd@v${CONTAINERD_VERSION}" \
    "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@v${CONTAINERD_VERSION}" \
    "github.com/containerd/containerd/v2/cmd/ctr@v${CONTAINERD_VERSION}" >&2
fi

if [ ! -x "$out/cni/bridge" ] || [ ! -x "$out/cni/portmap" ]; then
  log "building CNI plugins v${CNI_PLUGINS_VERSION} (bridge, host-local, loopback, portmap)"
  p=github.com/containernetworking/plugins/plugins
  GOBIN="$out/cni" "$GO" install -trimpath -ldflags "-s -w" \
    "$p/main/bridge@v${CNI_PLUGINS_VERSION}" "$p/ipam/host-local@v${CNI_PLUGINS_VERSION}" \
    "$p/main/loopback@v${CNI_PLUGINS_VERSION}" "$p/meta/portmap@v${CNI_PLUGINS_VERSION}" >&2
fi

if [ ! -f "$out/pause.tar" ]; then
  log "building the pod sandbox image"
  work="$(mktemp -d)"
  (cd "$here/pause" && "$GO" build -trimpath -ldflags "-s -w" -o "$work/pause" main.go)
  umoci init --layout "$work/layout" >&2
  umoci new --image "$work/layout:sandbox" >&2
  umoci unpack --image "$work/layout:sandbox" "$work/bundle" >&2
  install -m 0755 "$work/pause" "$work/bundle/rootfs/pause"
  umoci repack --image "$work/layout:sandbox" "$work/bundle" >&2
  umoci config --image "$work/layout:sandbox" --os linux --architecture amd64 \
    --config.user 65535:65535 --config.entrypoint /pause >&2
  umoci gc --layout "$work/layout" >&2
  tar -C "$work/layout" -cf "$out/pause.tar" .
  rm -rf "$work"
fi

all_built || { log "build incomplete in $out"; exit 1; }
log "built into $out"
echo "$out"
