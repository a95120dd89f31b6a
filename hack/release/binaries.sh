#!/usr/bin/env bash
# The release's binaries: the static (musl) `overseer` for each Linux architecture
# given (amd64, arm64), cross-compiled with cargo-zigbuild (zig as the C compiler and
# linker for ring and the rest), each packed as the krew archive
# kubectl-overseer-linux-ARCH.tar.gz (the binary as kubectl-overseer, LICENSE, and
# kubectl_complete-overseer). cargo-zigbuild comes from crates.io and zig from PyPI
# (the ziglang wheel) when missing. Into dist/ (or $DIST):
#   dist/linux-ARCH/overseer, dist/kubectl-overseer-linux-ARCH.tar.gz
#   PROFILE=release (default) or dev (make test: compiled and linked, not optimised)
#   hack/release/binaries.sh amd64 arm64
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dist="${DIST:-$repo/dist}"
profile="${PROFILE:-release}"
zigbuild_version=0.24.1
zig_version=0.13.0
[ "$#" -ge 1 ] || { echo "usage: $0 amd64|arm64..." >&2; exit 2; }
log() { echo "release: $*" >&2; }

if ! cargo-zigbuild --version 2>/dev/null | grep -qx "cargo-zigbuild $zigbuild_version"; then
  log "installing cargo-zigbuild $zigbuild_version"
  cargo install --locked --quiet cargo-zigbuild --version "$zigbuild_version"
fi
if ! command -v zig >/dev/null; then
  tools="${XDG_CACHE_HOME:-$HOME/.cache}/overseer-testenv/zig-$zig_version"
  if [ ! -x "$tools/bin/zig" ]; then
    log "installing zig $zig_version (the ziglang wheel from PyPI)"
    PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --target "$tools/lib" "ziglang==$zig_version"
    mkdir -p "$tools/bin"
    printf '#!/bin/sh\nexec python3 -m ziglang "$@"\n' > "$tools/bin/zig"
    chmod +x "$tools/bin/zig"
  fi
  export PATH="$tools/bin:$PATH" PYTHONPATH="$tools/lib${PYTHONPATH:+:$PYTHONPATH}"
fi

for arch in "$@"; do
  case "$arch" in
    amd64) target=x86_64-unknown-linux-musl machine=x86-64 ;;
    arm64) target=aarch64-unknown-linux-musl machine=aarch64 ;;
    *) echo "unknown architecture $arch: amd64 or arm64" >&2; exit 2 ;;
  esac
  rustup target list --installed | grep -qx "$target" || rustup target add "$target" >&2
  log "building overseer for linux/$arch ($target, profile $profile)"
  (cd "$repo" && cargo zigbuild --locked --quiet --profile "$profile" --target "$target" \
    --features otlp --bin overseer)
  out_dir=$([ "$profile" = dev ] && echo debug || echo "$profile")
  built="$repo/target/$target/$out_dir/overseer"
  # What the image and krew need: a static executable for that machine.
  described="$(file -b "$built")"
  case "$described" in
    *"$machine"*statically\ linked*|*"$machine"*static-pie\ linked*) ;;
    *) echo "overseer for $arch is not a static $machine executable: $described" >&2; exit 1 ;;
  esac
  mkdir -p "$dist/linux-$arch" "$dist/stage-$arch"
  cp "$built" "$dist/linux-$arch/overseer"
  cp "$built" "$dist/stage-$arch/kubectl-overseer"
  cp "$repo/LICENSE" "$repo/hack/krew/kubectl_complete-overseer" "$dist/stage-$arch/"
  tar -czf "$dist/kubectl-overseer-linux-$arch.tar.gz" -C "$dist/stage-$arch" \
    kubectl-overseer kubectl_complete-overseer LICENSE
  rm -rf "$dist/stage-$arch"
  log "$arch: $described"
done
