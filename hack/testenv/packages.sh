#!/usr/bin/env bash
# Machine packages the tests need (tmux for the shim; openssl, curl, unzip for the
# control plane's build; shellcheck for actionlint's check of the workflows' scripts;
# file for the release binaries' check; chromium and its driver for the console's
# browser tests), installed from apt when missing. Idempotent and quick.
set -euo pipefail
missing=()
for pair in openssl tmux curl unzip shellcheck file chromium chromedriver:chromium-driver; do
  tool="${pair%%:*}" package="${pair#*:}"
  command -v "$tool" >/dev/null || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "packages: installing ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >&2
fi
