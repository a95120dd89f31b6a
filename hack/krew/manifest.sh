#!/usr/bin/env bash
# Writes the krew manifest of the kubectl plugin (kubectl krew install --manifest=FILE,
# or a pull request to krew-index) for a release: one platform per archive given, each
# a .tar.gz holding `kubectl-overseer` (and LICENSE, and kubectl_complete-overseer for
# kubectl's completion, which krew leaves for the user to link), named kubectl-overseer-OS-ARCH.tar.gz
# and published at BASE_URL/<archive name>.
#   hack/krew/manifest.sh BASE_URL ARCHIVE...   (prints the manifest)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[ "$#" -ge 2 ] || { echo "usage: $0 BASE_URL ARCHIVE..." >&2; exit 2; }
base_url="${1%/}"; shift
version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$here/Cargo.toml" | head -n 1)"
cat <<YAML
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: overseer
spec:
  version: v$version
  homepage: https://github.com/overseer-dev/overseer
  shortDescription: See and steer the coding agents overseer keeps working
  description: |
    What every agent of the overseer operator is doing (ps, -w to follow), each goal's
    progress through its steps (goals) and each swarm (swarms), printed as kubectl get
    prints (-o wide|name|json|yaml|jsonpath=, --no-headers); an agent's output as it
    comes (logs -f), and a terminal in its session (attach) to answer a prompt or take
    over; also send, peek, goal resume, the loop commands and version.
  platforms:
YAML
for archive in "$@"; do
  name="$(basename "$archive")"
  platform="${name#kubectl-overseer-}"; platform="${platform%.tar.gz}"
  os="${platform%-*}"; arch="${platform#*-}"
  if [ "$os" = "$platform" ] || [ -z "$arch" ]; then
    echo "$name: expected kubectl-overseer-OS-ARCH.tar.gz" >&2; exit 2
  fi
  # grep reads the whole listing: with -q it would stop early and fail tar (pipefail).
  if ! tar -tzf "$archive" | grep -x 'kubectl-overseer' >/dev/null; then
    echo "$name holds no kubectl-overseer at its top" >&2; exit 2
  fi
  sha="$(sha256sum "$archive" | cut -d' ' -f1)"
  cat <<YAML
    - selector:
        matchLabels: {os: $os, arch: $arch}
      uri: $base_url/$name
      sha256: $sha
      bin: kubectl-overseer
YAML
done
