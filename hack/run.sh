#!/usr/bin/env bash
# `make run`: the operator in the foreground, against the current kubeconfig context
# when it answers, otherwise against the local control plane (demo profile: step
# pods complete after a few seconds, so a Goal visibly moves).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
bin="$(bash hack/testenv/build.sh | tail -n 1)"
kubectl="$bin/kubectl"

if "$kubectl" --request-timeout=5s get --raw /readyz >/dev/null 2>&1; then
  echo "run: using the current context: $("$kubectl" config current-context)" >&2
else
  echo "run: no cluster answers the current context; starting the local one" >&2
  bash hack/testenv/cluster.sh up demo
  export KUBECONFIG="$repo/.cluster/kubeconfig"
  # kwok runs exec on this machine: nudges, wakes and sends run this binary.
  export OVERSEER_INPUT_COMMAND="$repo/target/release/overseer"
  echo "run: in another shell: export KUBECONFIG=$KUBECONFIG PATH=$repo/.cluster/bin:\$PATH" >&2
fi

cargo build --release
"$kubectl" apply --server-side --field-manager=overseer-install -f crds/ >&2
"$kubectl" wait --for condition=Established --timeout=60s -f crds/ >&2
exec ./target/release/overseer run --metrics-addr "${OVERSEER_METRICS_ADDR:-127.0.0.1:8080}"
