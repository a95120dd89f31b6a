# Sourced by the build scripts: sets GO to a Go >= 1.26 (the machine's, else the
# pinned toolchain module from the proxy, cached). Needs GO_VERSION and cache_root.
ensure_go() {
  local want="go${GO_VERSION}" have=""
  if command -v go >/dev/null; then have="$(go env GOVERSION 2>/dev/null || true)"; fi
  if [ -n "$have" ] && [ "$(printf '%s\n%s\n' "go1.26" "$have" | sort -V | head -1)" = "go1.26" ]; then
    GO=go
    return
  fi
  local dir="$cache_root/toolchain/$want"
  if [ ! -x "$dir/bin/go" ]; then
    echo "fetching Go $GO_VERSION toolchain from the module proxy" >&2
    local tmp; tmp="$(mktemp -d)"
    curl -fsSL -o "$tmp/go.zip" \
      "https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-${want}.linux-amd64.zip"
    unzip -q "$tmp/go.zip" -d "$tmp"
    mkdir -p "$(dirname "$dir")"
    rm -rf "$dir"
    mv "$tmp/golang.org/toolchain@v0.0.1-${want}.linux-amd64" "$dir"
    chmod +x "$dir/bin/"* "$dir/pkg/tool/"*/* 2>/dev/null || true
    rm -rf "$tmp"
  fi
  GO="$dir/bin/go"
}
