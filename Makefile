# The two commands: `make run` and `make test`. Everything else is a step of theirs.
SHELL := /bin/bash
CLUSTER := hack/testenv/cluster.sh
TEST_KUBECONFIG := $(CURDIR)/.cluster/kubeconfig

.PHONY: run test lint unit release-check dist integration e2e real-cli-latest crash fuzz images node cluster cluster-down testenv generate build bench demo-loop

## The operator against the current cluster, or against the local one it brings up.
run:
	bash hack/run.sh

## Everything: lint (fmt, clippy, the dependency audit, the workflows), unit tests, the
## release's arm64 cross-build, cluster up, integration tests, cluster down (also on failure).
test: lint unit release-check integration

lint:
	bash hack/testenv/packages.sh
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo clippy --workspace --all-targets --features otlp -- -D warnings
	bash hack/deny.sh
	bash hack/release/lint.sh

unit:
	bash hack/testenv/packages.sh
	cargo test

# The release workflow's cross-build, as it runs on a tag (hack/release/binaries.sh), for
# arm64 and unoptimised: compiled and linked into a static aarch64 executable.
release-check:
	PROFILE=dev DIST=$(CURDIR)/target/release-check bash hack/release/binaries.sh arm64
	bash hack/krew/manifest.sh https://example.invalid/release \
	  target/release-check/kubectl-overseer-linux-arm64.tar.gz >/dev/null

## The release's binaries and krew archives for amd64 and arm64, in dist/.
dist:
	bash hack/release/binaries.sh amd64 arm64

# no_crds first, one test at a time: it changes the CRDs cluster-wide and puts them back. Then the
# kwok suite; then, alone, the tests that restart the API server under everyone or run an operator
# of every namespace; then the OTLP
# trace export (feature `otlp`); then the e2e suite (the Helm chart and our images on a real node).
integration:
	bash $(CLUSTER) up test
	export OVERSEER_TEST_KUBECONFIG=$(TEST_KUBECONFIG); \
	  cargo test --test no_crds -- --ignored --test-threads=1 && \
	  cargo test --test cluster -- --ignored --skip api_server_restart --skip cluster_wide && \
	  cargo test --test cluster -- --ignored --test-threads=1 api_server_restart cluster_wide && \
	  cargo test --features otlp --test otlp -- --ignored && \
	  bash hack/e2e/run.sh; \
	  status=$$?; bash $(CLUSTER) down; exit $$status

## The e2e suite alone: control plane, real node, images, Helm install (left up afterwards).
e2e:
	bash hack/e2e/run.sh

## The real-CLI e2e tests against the newest published claude, codex, copilot and pi
## instead of the pinned ones (hack/image/real-clis.env): a release that changes a
## dialog fails here (weekly in .github/workflows/real-cli-latest.yml).
real-cli-latest:
	CLAUDE_CODE_VERSION=$$(npm view @anthropic-ai/claude-code version) \
	  CODEX_VERSION=$$(npm view @openai/codex version) \
	  COPILOT_VERSION=$$(npm view @github/copilot version) \
	  PI_VERSION=$$(npm view @mariozechner/pi-coding-agent version) \
	  E2E_TESTS=real_cli:: bash hack/e2e/run.sh

## Crash injection at every write of each scenario (make test crashes at a sample).
crash:
	bash $(CLUSTER) up test
	OVERSEER_CRASH_ALL=1 OVERSEER_TEST_KUBECONFIG=$(TEST_KUBECONFIG) \
	  cargo test --test cluster crash:: -- --ignored --nocapture --skip api_server_restart

## Spec fuzzing with 2,500 generated specs per kind (make test generates 250).
fuzz:
	bash $(CLUSTER) up test
	OVERSEER_FUZZ_ALL=1 OVERSEER_TEST_KUBECONFIG=$(TEST_KUBECONFIG) \
	  cargo test --test cluster fuzz:: -- --ignored --nocapture

## The operator and agent test images, as OCI archives (no container engine needed).
images:
	bash hack/image/build.sh operator
	bash hack/image/build.sh agent-test
	bash hack/image/build.sh agent-claude
	bash hack/image/build.sh agent-codex
	bash hack/image/build.sh agent-copilot
	bash hack/image/build.sh agent-pi

## A real node (containerd, kubelet, kube-proxy) joined to the local control plane.
node: cluster
	bash hack/node/node.sh up

## The local control plane (test profile) and its teardown.
cluster:
	bash $(CLUSTER) up test

cluster-down:
	bash $(CLUSTER) down

## Build (or find in the cache) the pinned control-plane binaries.
testenv:
	bash hack/testenv/build.sh

## Rewrite crds/, docs/reference.md and the CRD snapshots from the code.
generate:
	UPDATE_GENERATED=1 INSTA_UPDATE=always cargo test --test generated
	cargo test --test generated

build:
	cargo build --release

## The overseer loop on the local cluster (with `make run` in another shell).
demo-loop:
	bash hack/demo-loop.sh

## Step-advance, wake and whole-loop latency (p50/p99), an idle agent's API writes, a
## goal's 20 steps fanned out beside the same in sequence, step
## advance at 100 to 3,000 concurrent Goals and 1,000 to 10,000 quiet agents beside a bare
## controller, and an operator restart among them, on the local cluster.
bench:
	bash $(CLUSTER) up test
	OVERSEER_TEST_KUBECONFIG=$(TEST_KUBECONFIG) cargo bench --bench step_advance
	OVERSEER_TEST_KUBECONFIG=$(TEST_KUBECONFIG) cargo bench --bench wake_latency
	OVERSEER_TEST_KUBECONFIG=$(TEST_KUBECONFIG) cargo bench --bench loop_latency
	OVERSEER_TEST_KUBECONFIG=$(TEST_KUBECONFIG) cargo bench --bench mail_latency
	OVERSEER_TEST_KUBECONFIG=$(TEST_KUBECONFIG) cargo bench --bench idle_writes
	OVERSEER_TEST_KUBECONFIG=$(TEST_KUBECONFIG) cargo bench --bench swarm_rest_writes
	OVERSEER_TEST_KUBECONFIG=$(TEST_KUBECONFIG) cargo bench --bench goal_scale
	OVERSEER_TEST_KUBECONFIG=$(TEST_KUBECONFIG) cargo bench --bench goal_fanout
	OVERSEER_TEST_KUBECONFIG=$(TEST_KUBECONFIG) cargo bench --bench agent_scale
	OVERSEER_TEST_KUBECONFIG=$(TEST_KUBECONFIG) cargo bench --bench console_load
