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
#   build.sh agent-claude the same Debian base with the real Claude Code, its native
#                         binary from the npm registry at the version pinned in
#                         hack/image/real-clis.env (CLAUDE_CODE_VERSION overrides it);
#                         as hack/image/agent-claude.Dockerfile
#   build.sh agent-codex  the same with the real codex (CODEX_VERSION); as
#                         hack/image/agent-codex.Dockerfile
#   build.sh agent-copilot the same with the real Copilot CLI's native binary
#                         (COPILOT_VERSION); as hack/image/agent-copilot.Dockerfile
#   build.sh agent-pi     Debian trixie (Node.js 20 from Debian's packages, ripgrep, fd)
#                         with pi and its dependencies from the npm registry (PI_VERSION);
#                         as hack/image/agent-pi.Dockerfile
#
# Prints the archive's path on the last line of stdout. The image names are in
# hack/image/images.env. The Debian root filesystem is cached outside the repository
# (it changes only with the package list); everything else is rebuilt, since it is ours.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=images.env
source "$here/images.env"
# The environment's versions win over the pinned ones (make real-cli-latest).
pinned_claude="${CLAUDE_CODE_VERSION:-}" pinned_codex="${CODEX_VERSION:-}"
pinned_copilot="${COPILOT_VERSION:-}" pinned_pi="${PI_VERSION:-}"
# shellcheck source=real-clis.env
source "$here/real-clis.env"
CLAUDE_CODE_VERSION="${pinned_claude:-$CLAUDE_CODE_VERSION}"
CODEX_VERSION="${pinned_codex:-$CODEX_VERSION}"
COPILOT_VERSION="${pinned_copilot:-$COPILOT_VERSION}"
PI_VERSION="${pinned_pi:-$PI_VERSION}"
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

# A minimal Debian root filesystem of SUITE with PACKAGES (default: the agent test
# image's), what an agent image needs under overseer. Keyed by the suite and the
# package list, so a second build reuses it.
agent_rootfs() {
  local suite="${1:-$AGENT_TEST_SUITE}" packages="${2:-$AGENT_TEST_PACKAGES}"
  local key; key="$(echo "$suite $packages" | sha256sum | cut -c1-12)"
  local tarball="$cache/debian-$suite-$key.tar"
  if [ ! -f "$tarball" ]; then
    need_packages debootstrap:debootstrap
    local root; root="$(mktemp -d)/rootfs"
    log "debootstrap $suite with ${packages// /,} (once; cached)"
    debootstrap --variant=minbase --include="${packages// /,}" \
      "$suite" "$root" "$AGENT_TEST_MIRROR" >&2
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

# The npm package `spec` (NAME@VERSION) unpacked, cached by name and version: its
# directory. `npm pack` fetches the tarball alone; no install script runs.
npm_package() {
  local spec="$1"
  local dir="$cache/npm/${spec//\//+}"
  if [ ! -d "$dir/package" ]; then
    need_packages npm:npm
    local work; work="$(mktemp -d)"
    log "npm pack $spec (once; cached)"
    (cd "$work" && npm pack --silent "$spec" >&2) || { log "npm pack $spec failed"; exit 1; }
    mkdir -p "$work/unpacked"
    tar -C "$work/unpacked" -xzf "$work"/*.tgz || { log "no tarball for $spec"; exit 1; }
    mkdir -p "$(dirname "$dir")"
    rm -rf "$dir" && mv "$work/unpacked" "$dir"
    rm -rf "$work"
  fi
  echo "$dir"
}

# The npm package `spec` installed with its dependencies (no dev dependencies, no
# install scripts), cached by name and version: the prefix holding node_modules/.
npm_installed() {
  local spec="$1"
  local dir="$cache/npm-installed/${spec//\//+}"
  if [ ! -d "$dir/node_modules" ]; then
    need_packages npm:npm
    local work; work="$(mktemp -d)"
    log "npm install $spec (once; cached)"
    npm install --silent --omit=dev --ignore-scripts --no-audit --no-fund --prefix "$work" "$spec" >&2 ||
      { log "npm install $spec failed"; exit 1; }
    mkdir -p "$(dirname "$dir")"
    rm -rf "$dir" && mv "$work" "$dir"
  fi
  echo "$dir"
}

# What every agent image with a real CLI holds besides the CLI: the agent test image's
# Debian base, a home for the CLI's state and the workspace, both the agent user's.
fill_agent_base() {
  local root="$1"
  tar -C "$root" --numeric-owner -xf "$AGENT_ROOTFS"
  install -d -m 0755 -o 65532 -g 65532 "$root/workspace" "$root/home/agent"
}

# A CLI published as one native binary, CLI_BINARY, in its npm platform package
# (Claude Code, Copilot).
fill_agent_native() {
  local root="$1"
  fill_agent_base "$root"
  install -m 0755 "$CLI_PACKAGE/package/$CLI_BINARY" "$root/usr/local/bin/$CLI_BINARY"
}

fill_agent_codex() {
  local root="$1"
  fill_agent_base "$root"
  # The native package's layout as the npm launcher expects it: bin/, the tools it
  # puts on PATH (codex-path: rg) and its resources (bwrap).
  mkdir -p "$root/opt/codex"
  cp -a "$CLI_PACKAGE/package/vendor/x86_64-unknown-linux-musl/." "$root/opt/codex/"
  ln -s /opt/codex/bin/codex "$root/usr/local/bin/codex"
}

fill_agent_pi() {
  local root="$1"
  fill_agent_base "$root"
  mkdir -p "$root/opt/pi"
  cp -a "$CLI_PACKAGE/node_modules" "$root/opt/pi/"
  ln -s /opt/pi/node_modules/@mariozechner/pi-coding-agent/dist/cli.js "$root/usr/local/bin/pi"
  # pi looks for `fd`; Debian names it fdfind.
  ln -s /usr/bin/fdfind "$root/usr/local/bin/fd"
  # pi's own directory, the agent's: a models.json mounted into it (a provider of the
  # user's) leaves it writable for pi's sessions and settings.
  install -d -m 0755 -o 65532 -g 65532 "$root/home/agent/.pi" "$root/home/agent/.pi/agent"
}

# agent_cli NAME PACKAGE@VERSION VERSION FILL REPOSITORY PATH_PREFIX [UMOCI_CONFIG...]: an
# agent image with a real CLI, tagged VERSION.
agent_cli() {
  local name="$1" package="$2" version="$3" fill="$4" repository="$5" path_prefix="$6"
  shift 6
  need_packages umoci:umoci
  AGENT_ROOTFS="$(agent_rootfs "${ROOTFS_SUITE:-}" "${ROOTFS_PACKAGES:-}")"
  CLI_PACKAGE="$("${NPM_FETCH:-npm_package}" "$package")"
  local out="$cache/$name-$version.tar"
  oci_archive "$out" "$repository:$version" "$fill" \
    --config.user 65532:65532 --config.workingdir /workspace \
    --config.env PATH=$path_prefix/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.env HOME=/home/agent --config.cmd /bin/bash "$@"
  log "$name image $repository:$version: $(du -h "$out" | cut -f1) archive"
  echo "$out"
}

case "${1:-}" in
  operator) operator ;;
  agent-test) agent_test ;;
  agent-claude)
    CLI_BINARY=claude agent_cli agent-claude "@anthropic-ai/claude-code-linux-x64@$CLAUDE_CODE_VERSION" \
      "$CLAUDE_CODE_VERSION" fill_agent_native "$AGENT_CLAUDE_REPOSITORY" "" \
      --config.env CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 ;;
  agent-codex)
    # codex publishes its native builds as versions of its own package.
    agent_cli agent-codex "@openai/codex@$CODEX_VERSION-linux-x64" "$CODEX_VERSION" \
      fill_agent_codex "$AGENT_CODEX_REPOSITORY" /opt/codex/codex-path: ;;
  agent-copilot)
    # Copilot publishes its native builds as packages of their own, as claude does.
    CLI_BINARY=copilot agent_cli agent-copilot "@github/copilot-linux-x64@$COPILOT_VERSION" \
      "$COPILOT_VERSION" fill_agent_native "$AGENT_COPILOT_REPOSITORY" "" ;;
  agent-pi)
    # pi is a Node program: Debian trixie's Node.js 20 (bookworm has 18; pi needs 20.6).
    # PI_OFFLINE: no update checks or install telemetry from inside a pod.
    ROOTFS_SUITE="$AGENT_PI_SUITE" ROOTFS_PACKAGES="$AGENT_PI_PACKAGES" NPM_FETCH=npm_installed \
      agent_cli agent-pi "@mariozechner/pi-coding-agent@$PI_VERSION" "$PI_VERSION" \
      fill_agent_pi "$AGENT_PI_REPOSITORY" "" --config.env PI_OFFLINE=1 ;;
  *) echo "usage: $0 operator | agent-test | agent-claude | agent-codex | agent-copilot | agent-pi" >&2; exit 2 ;;
esac
