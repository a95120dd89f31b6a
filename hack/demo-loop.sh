#!/usr/bin/env bash
# `make demo-loop`: the overseer loop on the local cluster, with `make run` running in
# another shell. Applies examples/agent.yaml (an overseer `lead` and an in-loop
# `builder`) and stands in for their two simulated pods with real `overseer shim`
# processes on this machine, running the scripted CLIs of tests/fake-agents/ (kwok
# routes the operator's exec and `kubectl logs` for those pods to them). The lead
# runs as its own ServiceAccount, so its peek and send use exactly its permissions.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
export KUBECONFIG="$repo/.cluster/kubeconfig"
export PATH="$repo/.cluster/bin:$PATH"
ns="${NAMESPACE:-default}"
bin="$repo/target/release/overseer"
work="$repo/target/demo-loop"

if ! kubectl --request-timeout=5s get --raw /readyz >/dev/null 2>&1; then
  echo "demo-loop: the local cluster is not up: run \`make run\` in another shell first" >&2
  exit 1
fi
command -v tmux >/dev/null || bash hack/testenv/packages.sh
cargo build --release --quiet

kubectl -n "$ns" delete agent lead builder --ignore-not-found --wait=true >/dev/null
kubectl -n "$ns" apply -f examples/agent.yaml
# A minute of idling is realistic but slow to watch: the builder counts as stopped
# after 10s here.
kubectl -n "$ns" patch agent builder --type merge \
  -p '{"spec":{"loop":{"idleAfter":"10s","interval":"2s"}}}' >/dev/null

rm -rf "$work"
# The shims stop their tmux servers on SIGTERM.
cleanup() { pkill -TERM -f -- "--socket $work/" 2>/dev/null || true; }
trap cleanup EXIT

# Stands in for AGENT's pod: a shim running SCRIPT, reachable by exec and logs.
stand_in() {
  local agent=$1 script=$2 impersonate=$3 pod dir
  pod="$(kubectl -n "$ns" wait agent "$agent" --for=jsonpath='{.status.podName}' --timeout=60s \
    -o jsonpath='{.status.podName}')"
  dir="$work/$agent"
  mkdir -p "$dir"
  (
    export OVERSEER_AGENT="$agent" OVERSEER_NAMESPACE="$ns" OVERSEER_BIN="$bin"
    export OVERSEER_INPUT_SOCKET="$dir/input.sock" FAKE_LOG="$dir/fake.log" FAKE_DIR="$dir"
    [ -n "$impersonate" ] && export KUBE_RS_DEBUG_IMPERSONATE_USER="$impersonate"
    exec "$bin" shim --agent "$agent" --namespace "$ns" --attempt "${pod##*-}" \
      --mode tui --runtime claude --interval 2s --quiet 2s --socket "$dir/input.sock" \
      -- "$repo/tests/fake-agents/$script" 2>"$dir/shim.log" |
      while IFS= read -r line; do
        printf '%s stdout F %s\n' "$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)" "$line"
      done >"$dir/container.log"
  ) &
  kubectl -n "$ns" apply -f - >/dev/null <<YAML
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Exec
metadata: {name: $pod}
spec:
  execs:
    - local:
        envs: [{name: OVERSEER_INPUT_SOCKET, value: "$dir/input.sock"}]
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Logs
metadata: {name: $pod}
spec:
  logs: [{containers: [agent], logsFile: "$dir/container.log"}]
YAML
  echo "demo-loop: $agent's pod $pod is stood in for by a local shim running $script"
}

stand_in lead tui-overseer.sh "system:serviceaccount:$ns:overseer-agent-lead"
stand_in builder tui-builder.sh ""

for _ in $(seq 1 60); do
  echo
  "$bin" ps -n "$ns"
  phase="$(kubectl -n "$ns" get agent builder -o jsonpath='{.status.phase}')"
  [ "$phase" = Done ] && break
  sleep 2
done
echo
echo "== what the lead's scripted CLI did ($work/lead/fake.log)"
cat "$work/lead/fake.log" 2>/dev/null || true
echo "== what the builder read ($work/builder/fake.log)"
cat "$work/builder/fake.log" 2>/dev/null || true
echo "== the builder's events"
uid="$(kubectl -n "$ns" get agent builder -o jsonpath='{.metadata.uid}')"
kubectl -n "$ns" get events --field-selector "involvedObject.uid=$uid" \
  --sort-by=.lastTimestamp -o custom-columns=REASON:.reason,MESSAGE:.message
[ "$phase" = Done ] || { echo "demo-loop: the builder did not finish" >&2; exit 1; }
# LOOP_PICTURE=docs/images/loop.svg draws this run (README.md's picture).
if [ -n "${LOOP_PICTURE:-}" ]; then
  kubectl -n "$ns" get events -o json >"$work/events.json"
  python3 hack/loop-picture.py "$work/events.json" "$work/builder/fake.log" \
    "$work/lead/fake.log" "$LOOP_PICTURE"
fi
echo "demo-loop: the loop closed: idle builder -> lead woken -> peek + send -> builder working -> loop done"
