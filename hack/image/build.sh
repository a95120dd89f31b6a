#!/usr/bin/env bash
# Builds overseer's images without a container engine and without pulling anything,
# as OCI archives that `ctr images import` (or `podman load`) reads:
#
#   build.sh operator     the operator image: the same final image as ./Dockerfile
#                         (/overseer static, the CA bundle, user 65532, no shell)
#   build.sh agent-test   the agent test image: a Debian root filesystem from Debian's
#                         packages (bash, tmux, git) with the scripted CLIs of
#                         tests/fake-agents as `claude` and `codex`; as
#                         hack/image/agent-test.Dockerfile
#
# Prints the archive's path on the last line of stdout. The image names are in
# hack/image/images.env. The Debian root filesystem is cached outside the repository
# (it changes only with the package list); everything else is rebuilt, since it is ours.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=images.env
source "$here/images.env"
cache="${OVERSEER_TESTENV_CACHE:-$HOME/.cache/overseer-testenv}/images"
log() { echo "image: $*" >&2; }

# Each argument is COMMAND:DEBIAN_PACKAGE; the packages of missing commands are installed.
need_packages() {
  local missing=() pair
  for pair in "$@"; do command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}"); done
  [ "${#missing[@]}" -eq 0 ] && return
  log "installing ${missing[*]}"
  local sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >&2
}

# An OCI layout holding one image `name`, built from the root filesystem `fill`
# writes into the directory it is given, with the user and entrypoint/cmd given.
# Writes the layout as a tar to `out`.
oci_archive() {
  local out="$1" name="$2" fill="$3"; shift 3
  local work; work="$(mktemp -d)"
  local tag="${name##*:}"
  umoci init --layout "$work/layout" >&2
  umoci new --image "$work/layout:$tag" >&2
  umoci unpack --image "$work/layout:$tag" "$work/bundle" >&2
  "$fill" "$work/bundle/rootfs"
  umoci repack --image "$work/layout:$tag" "$work/bundle" >&2
  umoci config --image "$work/layout:$tag" --os linux --architecture amd64 \
    --author overseer --created 1970-01-01T00:00:00Z "$@" >&2
  umoci gc --layout "$work/layout" >&2
  mkdir -p "$(dirname "$out")"
  tar -C "$work/layout" -cf "$out.tmp" . && mv "$out.tmp" "$out"
  rm -rf "$work"
}

static_binary() {
  need_packages musl-gcc:musl-tools umoci:umoci readelf:binutils
  rustup target list --installed | grep -qx x86_64-unknown-linux-musl ||
    rustup target add x86_64-unknown-linux-musl >&2
  (cd "$repo" && CC_x86_64_unknown_linux_musl=musl-gcc \
    cargo build --release --locked --target x86_64-unknown-linux-musl --features otlp --bin overseer >&2)
  local bin="$repo/target/x86_64-unknown-linux-musl/release/overseer"
  # The init container copies it into images of any distribution: no loader, no libc.
  if readelf -l "$bin" | grep -q 'Requesting program interpreter'; then
    log "$bin is not static"; exit 1
  fi
  echo "$bin"
}

fill_operator() {
  local root="$1"
  install -m 0755 "$OPERATOR_BINARY" "$root/overseer"
  install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
}

operator() {
  OPERATOR_BINARY="$(static_binary)"
  [ -f /etc/ssl/certs/ca-certificates.crt ] || need_packages update-ca-certificates:ca-certificates
  local out="$cache/overseer.tar"
  oci_archive "$out" "$OPERATOR_IMAGE" fill_operator \
    --config.user 65532:65532 --config.entrypoint /overseer
  log "operator image $OPERATOR_IMAGE: $(du -h "$out" | cut -f1) archive, binary $(du -h "$OPERATOR_BINARY" | cut -f1)"
  echo "$out"
}

# Debian bookworm, minimal, with what an agent image needs under overseer. Keyed by
# the package list, so a second build reuses it.
agent_rootfs() {
  local key; key="$(echo "$AGENT_TEST_SUITE $AGENT_TEST_PACKAGES" | sha256sum | cut -c1-12)"
  local tarball="$cache/debian-$AGENT_TEST_SUITE-$key.tar"
  if [ ! -f "$tarball" ]; then
    need_packages debootstrap:debootstrap
    local root; root="$(mktemp -d)/rootfs"
    log "debootstrap $AGENT_TEST_SUITE with ${AGENT_TEST_PACKAGES// /,} (once; cached)"
    debootstrap --variant=minbase --include="${AGENT_TEST_PACKAGES// /,}" \
      "$AGENT_TEST_SUITE" "$root" "$AGENT_TEST_MIRROR" >&2
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/var/log/*
    mkdir -p "$cache"
    tar -C "$root" --numeric-owner -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -rf "$(dirname "$root")"
  fi
  echo "$tarball"
}

fill_agent_test() {
  local root="$1"
  tar -C "$root" --numeric-owner -xf "$AGENT_ROOTFS"
  mkdir -p "$root/opt/fake-agents"
  install -m 0755 "$repo"/tests/fake-agents/*.sh "$root/opt/fake-agents/"
  install -m 0755 "$here/agent-test/fake-cli" "$root/usr/local/bin/claude"
  install -m 0755 "$here/agent-test/fake-cli" "$root/usr/local/bin/codex"
  install -d -m 0755 -o 65532 -g 65532 "$root/workspace"
}

agent_test() {
  need_packages umoci:umoci
  AGENT_ROOTFS="$(agent_rootfs)"
  local out="$cache/agent-test.tar"
  oci_archive "$out" "$AGENT_TEST_IMAGE" fill_agent_test \
    --config.user 65532:65532 --config.workingdir /workspace \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.env HOME=/workspace --config.cmd /bin/bash
  log "agent test image $AGENT_TEST_IMAGE: $(du -h "$out" | cut -f1) archive"
  echo "$out"
}

case "${1:-}" in
  operator) operator ;;
  agent-test) agent_test ;;
  *) echo "usage: $0 operator | agent-test" >&2; exit 2 ;;
esac
