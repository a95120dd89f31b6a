#!/usr/bin/env bash
# Packages the chart for a release: version and appVersion from the tag, and the
# operator image pinned by the digest the image build printed, so an install runs
# exactly the image that was signed. Writes dist/overseer-VERSION.tgz (or into $DIST).
#   hack/release/chart.sh VERSION IMAGE_DIGEST     (VERSION without the v: 0.2.0)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dist="${DIST:-$repo/dist}"
helm="${HELM:-helm}"
[ "$#" -eq 2 ] || { echo "usage: $0 VERSION sha256:DIGEST" >&2; exit 2; }
version="$1" digest="$2"
[[ "$version" =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] \
  || { echo "$version: not a semantic version" >&2; exit 2; }
[[ "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] || { echo "$digest: not a sha256 digest" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp -r "$repo/charts/overseer" "$work/overseer"
sed -i "s/^  digest: \"\"/  digest: \"$digest\"/" "$work/overseer/values.yaml"
grep -q "^  digest: \"$digest\"" "$work/overseer/values.yaml" \
  || { echo "values.yaml has no empty image.digest to fill" >&2; exit 1; }
mkdir -p "$dist"
"$helm" package "$work/overseer" --version "$version" --app-version "$version" \
  --destination "$dist" >&2
echo "$dist/overseer-$version.tgz"
