# An agent image with the real GitHub Copilot CLI, for engines that can pull:
#   docker build -f hack/image/agent-copilot.Dockerfile \
#     --build-arg COPILOT_VERSION=1.0.102 -t localhost/overseer/agent-copilot:1.0.102 .
# hack/image/build.sh agent-copilot makes the same image without one. The version is
# pinned in hack/image/real-clis.env. The native binary comes from the npm registry's
# platform package (npm pack: no install script runs); Node is not needed at run time.
FROM node:22-bookworm-slim AS cli
ARG COPILOT_VERSION=1.0.102
ARG TARGETARCH=amd64
WORKDIR /cli
RUN arch="$(case "$TARGETARCH" in arm64) echo arm64 ;; *) echo x64 ;; esac)" \
 && npm pack --silent "@github/copilot-linux-$arch@$COPILOT_VERSION" \
 && tar -xzf ./*.tgz

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bash tmux git ca-certificates procps \
 && rm -rf /var/lib/apt/lists/*
COPY --from=cli /cli/package/copilot /usr/local/bin/copilot
RUN install -d -m 0755 -o 65532 -g 65532 /workspace /home/agent
ENV HOME=/home/agent
USER 65532:65532
WORKDIR /workspace
CMD ["/bin/bash"]
