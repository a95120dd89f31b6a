#!/usr/bin/env bash
# Lints the GitHub workflows (.github/workflows) with actionlint at a pinned version,
# installed from the Go module proxy when missing (about a minute).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
version=v1.7.12
bin="$(go env GOPATH)/bin/actionlint"
if ! "$bin" -version 2>/dev/null | grep -qx "$version"; then
  echo "release: installing actionlint $version" >&2
  go install "github.com/rhysd/actionlint/cmd/actionlint@$version"
fi
cd "$repo" && "$bin" .github/workflows/*.yml
