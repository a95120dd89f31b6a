#!/usr/bin/env bash
# Vendors the console's one browser library, the terminal emulator of its attach page:
# @xterm/xterm from the npm registry, pinned by version and by the tarball's sha256,
# with its licence, into src/console/assets/vendor/xterm/ (embedded in the binary; no
# Node at run time). Run it to change the version; the files are checked in.
set -euo pipefail
version=6.0.0
sha256=908e66e04af6c8dc6b00dd3b54de088e2e81e5ed866284fd6c2fb3c2d1c7a3f6
here="$(cd "$(dirname "$0")/../.." && pwd)"
dest="$here/src/console/assets/vendor/xterm"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "@xterm/xterm@$version" >/dev/null)
tarball="$work/xterm-xterm-$version.tgz"
echo "$sha256  $tarball" | sha256sum --check --quiet
tar -xzf "$tarball" -C "$work"
mkdir -p "$dest"
cp "$work/package/lib/xterm.js" "$work/package/css/xterm.css" "$work/package/LICENSE" "$dest/"
echo "@xterm/xterm $version" > "$dest/VERSION"
echo "vendored @xterm/xterm $version into ${dest#$here/}"
