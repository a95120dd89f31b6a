#!/usr/bin/env bash
# The end-to-end suite on real nodes (tests/e2e), one script for both places it runs:
#
#   E2E_PLATFORM=local (default, `make test`): the local control plane with a real node
#     beside the kwok nodes (hack/node); images built without a container engine
#     (hack/image/build.sh) and imported into that node's containerd.
#   E2E_PLATFORM=kind (CI on GitHub): the cluster of KUBECONFIG (kind); images built
#     with docker from ./Dockerfile and hack/image/agent-test.Dockerfile, then
#     `kind load docker-image`.
#
# Prints how long each phase took; the tests print the figures they measured.
# CLAUDE_CODE_VERSION, CODEX_VERSION, COPILOT_VERSION and PI_VERSION override the real
# CLIs' pinned versions.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# shellcheck source=../image/images.env
source hack/image/images.env
# The real CLIs' versions: pinned, unless the environment names others (make real-cli-latest).
pinned_claude="${CLAUDE_CODE_VERSION:-}" pinned_codex="${CODEX_VERSION:-}"
pinned_copilot="${COPILOT_VERSION:-}" pinned_pi="${PI_VERSION:-}"
# shellcheck source=../image/real-clis.env
source hack/image/real-clis.env
CLAUDE_CODE_VERSION="${pinned_claude:-$CLAUDE_CODE_VERSION}" CODEX_VERSION="${pinned_codex:-$CODEX_VERSION}"
COPILOT_VERSION="${pinned_copilot:-$COPILOT_VERSION}" PI_VERSION="${pinned_pi:-$PI_VERSION}"
export CLAUDE_CODE_VERSION CODEX_VERSION COPILOT_VERSION PI_VERSION
CLAUDE_IMAGE="$AGENT_CLAUDE_REPOSITORY:$CLAUDE_CODE_VERSION" CODEX_IMAGE="$AGENT_CODEX_REPOSITORY:$CODEX_VERSION"
COPILOT_IMAGE="$AGENT_COPILOT_REPOSITORY:$COPILOT_VERSION" PI_IMAGE="$AGENT_PI_REPOSITORY:$PI_VERSION"
platform="${E2E_PLATFORM:-local}"
log() { echo "e2e: $*" >&2; }
phase_start=$SECONDS
took() { log "$1 in $((SECONDS - phase_start))s"; phase_start=$SECONDS; }

case "$platform" in
  local)
    kubeconfig="$repo/.cluster/kubeconfig"
    bash hack/testenv/cluster.sh up test
    took "control plane up"
    bash hack/node/node.sh up
    took "real node up"
    operator_archive="$(bash hack/image/build.sh operator | tail -n 1)"
    took "operator image built"
    agent_archive="$(bash hack/image/build.sh agent-test | tail -n 1)"
    took "agent test image built"
    claude_archive="$(bash hack/image/build.sh agent-claude | tail -n 1)"
    codex_archive="$(bash hack/image/build.sh agent-codex | tail -n 1)"
    copilot_archive="$(bash hack/image/build.sh agent-copilot | tail -n 1)"
    pi_archive="$(bash hack/image/build.sh agent-pi | tail -n 1)"
    took "real-CLI agent images built (claude $CLAUDE_CODE_VERSION, codex $CODEX_VERSION, copilot $COPILOT_VERSION, pi $PI_VERSION)"
    bash hack/node/node.sh load "$operator_archive" "$OPERATOR_IMAGE"
    bash hack/node/node.sh load "$agent_archive" "$AGENT_TEST_IMAGE"
    bash hack/node/node.sh load "$claude_archive" "$CLAUDE_IMAGE"
    bash hack/node/node.sh load "$codex_archive" "$CODEX_IMAGE"
    bash hack/node/node.sh load "$copilot_archive" "$COPILOT_IMAGE"
    bash hack/node/node.sh load "$pi_archive" "$PI_IMAGE"
    took "images imported into the node's containerd"
    bash hack/node/node.sh check
    # Every pod of an e2e namespace goes to the real node, none to kwok's.
    export OVERSEER_E2E_NODE_LABEL=overseer.dev/real-node=true
    ;;
  kind)
    kubeconfig="${KUBECONFIG:-$HOME/.kube/config}"
    docker build -t "$OPERATOR_IMAGE" .
    docker build -f hack/image/agent-test.Dockerfile -t "$AGENT_TEST_IMAGE" .
    docker build -f hack/image/agent-claude.Dockerfile \
      --build-arg "CLAUDE_CODE_VERSION=$CLAUDE_CODE_VERSION" -t "$CLAUDE_IMAGE" .
    docker build -f hack/image/agent-codex.Dockerfile \
      --build-arg "CODEX_VERSION=$CODEX_VERSION" -t "$CODEX_IMAGE" .
    docker build -f hack/image/agent-copilot.Dockerfile \
      --build-arg "COPILOT_VERSION=$COPILOT_VERSION" -t "$COPILOT_IMAGE" .
    docker build -f hack/image/agent-pi.Dockerfile \
      --build-arg "PI_VERSION=$PI_VERSION" -t "$PI_IMAGE" .
    took "images built"
    kind load docker-image --name "${KIND_CLUSTER_NAME:-kind}" "$OPERATOR_IMAGE" "$AGENT_TEST_IMAGE" \
      "$CLAUDE_IMAGE" "$CODEX_IMAGE" "$COPILOT_IMAGE" "$PI_IMAGE"
    took "images loaded into kind"
    ;;
  *) log "E2E_PLATFORM is local or kind, not $platform"; exit 2 ;;
esac

export OVERSEER_TEST_KUBECONFIG="$kubeconfig" OVERSEER_E2E_IMAGE="$OPERATOR_IMAGE" \
  OVERSEER_E2E_AGENT_IMAGE="$AGENT_TEST_IMAGE" OVERSEER_E2E_CLAUDE_IMAGE="$CLAUDE_IMAGE" \
  OVERSEER_E2E_CODEX_IMAGE="$CODEX_IMAGE" OVERSEER_E2E_COPILOT_IMAGE="$COPILOT_IMAGE" \
  OVERSEER_E2E_PI_IMAGE="$PI_IMAGE"
mkdir -p target/test-logs
# One test at a time: each installs two operator replicas and runs real containers.
set +e
# E2E_TESTS narrows the run to tests whose name holds it (make real-cli-latest: real_cli::).
cargo test --features otlp --test e2e -- ${E2E_TESTS:-} --ignored --test-threads=1 --nocapture 2>&1 |
  tee target/test-logs/e2e.log
status=${PIPESTATUS[0]}
set -e
took "e2e suite"
exit "$status"
