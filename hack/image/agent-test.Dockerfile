# The agent test image for engines that can pull (kind in CI):
#   docker build -f hack/image/agent-test.Dockerfile -t localhost/overseer/agent-test:dev .
# hack/image/build.sh agent-test makes the same image from Debian's packages without one.
FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bash tmux git ca-certificates procps \
 && rm -rf /var/lib/apt/lists/*
COPY tests/fake-agents/*.sh /opt/fake-agents/
COPY hack/image/agent-test/fake-cli /usr/local/bin/claude
COPY hack/image/agent-test/fake-cli /usr/local/bin/codex
RUN install -d -m 0755 -o 65532 -g 65532 /workspace
ENV HOME=/workspace
USER 65532:65532
WORKDIR /workspace
CMD ["/bin/bash"]
