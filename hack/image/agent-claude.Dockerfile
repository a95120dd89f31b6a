# An agent image with the real Claude Code, for engines that can pull:
#   docker build -f hack/image/agent-claude.Dockerfile \
#     --build-arg CLAUDE_CODE_VERSION=2.1.332 -t localhost/overseer/agent-claude:2.1.332 .
# hack/image/build.sh agent-claude makes the same image without one. The version is
# pinned in hack/image/real-clis.env. The native binary comes from the npm registry's
# platform package (npm pack: no install script runs); Node is not needed at run time.
FROM node:22-bookworm-slim AS cli
ARG CLAUDE_CODE_VERSION=2.1.332
ARG TARGETARCH=amd64
WORKDIR /cli
RUN arch="$(case "$TARGETARCH" in arm64) echo arm64 ;; *) echo x64 ;; esac)" \
 && npm pack --silent "@anthropic-ai/claude-code-linux-$arch@$CLAUDE_CODE_VERSION" \
 && tar -xzf ./*.tgz

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bash tmux git ca-certificates procps \
 && rm -rf /var/lib/apt/lists/*
COPY --from=cli /cli/package/claude /usr/local/bin/claude
RUN install -d -m 0755 -o 65532 -g 65532 /workspace /home/agent
# No update checks, telemetry or error reports from inside a pod.
ENV HOME=/home/agent CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
USER 65532:65532
WORKDIR /workspace
CMD ["/bin/bash"]
