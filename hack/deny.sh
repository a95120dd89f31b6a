#!/usr/bin/env bash
# The dependency audit of `make test`, with cargo-deny at a pinned version (installed
# from crates.io when missing, about 3 minutes on 2 cores):
# - licences (deny.toml's allow list), bans (wildcards; duplicates are listed) and
#   sources (crates.io only), always;
# - advisories (RustSec), against a copy of the advisory database. It comes from
#   $OVERSEER_ADVISORY_DB (a git URL or path, for a machine where GitHub is out of
#   reach), else GitHub. Where none can be had, the audit says loudly that advisories
#   were not checked.
set -euo pipefail
version=0.20.2
if ! cargo deny --version 2>/dev/null | grep -qx "cargo-deny $version"; then
  echo "deny: installing cargo-deny $version" >&2
  cargo install --locked --quiet cargo-deny --version "$version"
fi
cargo deny --log-level error check --hide-inclusion-graph licenses bans sources

# cargo-deny keeps each database under db-path in a folder named from its URL's hash;
# this is the folder of the default URL (https://github.com/rustsec/advisory-db).
dbs="${XDG_CACHE_HOME:-$HOME/.cache}/overseer-testenv/advisory-dbs"
db="$dbs/advisory-db-3157b0e258782691"
sources=()
[[ -n "${OVERSEER_ADVISORY_DB:-}" ]] && sources+=("$OVERSEER_ADVISORY_DB")
sources+=(https://github.com/rustsec/advisory-db)
fetched=""
for source in "${sources[@]}"; do
  if [[ "$source" != http* && ! -d "$source" ]]; then continue; fi
  rm -rf "$db.new"
  if timeout 120 git clone --quiet --depth 1 "$source" "$db.new" 2>/dev/null; then
    rm -rf "$db" && mv "$db.new" "$db"
    fetched="$source"
    break
  fi
done
if [[ -z "$fetched" && ! -d "$db" ]]; then
  echo "deny: ADVISORIES NOT CHECKED: no copy of the RustSec advisory database could be had" \
    "(set OVERSEER_ADVISORY_DB to a clone of https://github.com/rustsec/advisory-db)" >&2
  exit 0
fi
config="$(mktemp)"
trap 'rm -f "$config"' EXIT
cp deny.toml "$config"
printf '\n[advisories]\ndb-path = "%s"\n' "$dbs" >> "$config"
echo "deny: advisories against $(git -C "$db" log -1 --format='%h of %cs') (${fetched:-the cached copy})" >&2
cargo deny --log-level error --offline --config "$config" check --hide-inclusion-graph advisories
