#!/usr/bin/env bash
# `make run`: the operator in the foreground, against the current kubeconfig context
# when it answers, otherwise against the local control plane (demo profile: step
# pods complete after a few seconds, so a Goal visibly moves).
#
# On a cluster with real nodes the step and agent pods need the operator's image (their
# init container copies the binary from it), so it is built and put where the nodes
# find it: kind (`kind load`), the local real node (hack/node), or a registry
# (OVERSEER_IMAGE=registry/overseer:tag, pushed with docker).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
# shellcheck source=image/images.env
source hack/image/images.env
bin="$(bash hack/testenv/build.sh | tail -n 1)"
kubectl="$bin/kubectl"
log() { echo "run: $*" >&2; }

# Builds the operator image and makes it reachable from the current cluster's nodes.
provide_image() {
  local image="$1" context
  context="$("$kubectl" config current-context)"
  if "$kubectl" get node overseer-node >/dev/null 2>&1; then
    log "the local real node: importing $image built without a container engine"
    bash hack/node/node.sh load "$(bash hack/image/build.sh operator | tail -n 1)" "$image"
  elif [[ "$context" == kind-* ]] && command -v kind >/dev/null && command -v docker >/dev/null; then
    log "kind cluster ${context#kind-}: docker build and kind load of $image"
    docker build -t "$image" .
    kind load docker-image --name "${context#kind-}" "$image"
  elif [ -n "${OVERSEER_IMAGE:-}" ] && command -v docker >/dev/null; then
    log "docker build and push of $image"
    docker build -t "$image" . && docker push "$image"
  else
    log "the nodes must be able to pull $image (set OVERSEER_IMAGE to an image in a registry you can push to, with docker here)"
  fi
}

if "$kubectl" --request-timeout=5s get --raw /readyz >/dev/null 2>&1; then
  log "using the current context: $("$kubectl" config current-context)"
  # Only simulated (kwok) nodes: nothing runs the image, so nothing is built.
  if "$kubectl" get nodes -o jsonpath='{range .items[*]}{.metadata.annotations.kwok\.x-k8s\.io/node}{"\n"}{end}' | grep -qvx fake; then
    export OVERSEER_IMAGE="${OVERSEER_IMAGE:-$OPERATOR_IMAGE}"
    provide_image "$OVERSEER_IMAGE"
  fi
else
  log "no cluster answers the current context; starting the local one"
  bash hack/testenv/cluster.sh up demo
  export KUBECONFIG="$repo/.cluster/kubeconfig"
  # kwok runs exec on this machine: nudges, wakes and sends run this binary.
  export OVERSEER_INPUT_COMMAND="$repo/target/release/overseer"
  log "in another shell: export KUBECONFIG=$KUBECONFIG PATH=$repo/.cluster/bin:\$PATH"
fi

cargo build --release
"$kubectl" apply --server-side --field-manager=overseer-install -f crds/ >&2
"$kubectl" wait --for condition=Established --timeout=60s -f crds/ >&2
exec ./target/release/overseer run --metrics-addr "${OVERSEER_METRICS_ADDR:-127.0.0.1:8080}"
