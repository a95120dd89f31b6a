#!/usr/bin/env bash
# The dependency audit of `make test`: licences (deny.toml's allow list), bans
# (wildcards; duplicates are listed) and sources (crates.io only), with cargo-deny at a
# pinned version, installed from crates.io when missing (about 3 minutes on 2 cores).
# Advisories need the advisory database from GitHub, which is out of reach here.
set -euo pipefail
version=0.20.2
if ! cargo deny --version 2>/dev/null | grep -qx "cargo-deny $version"; then
  echo "deny: installing cargo-deny $version" >&2
  cargo install --locked --quiet cargo-deny --version "$version"
fi
exec cargo deny --log-level error check --hide-inclusion-graph licenses bans sources
