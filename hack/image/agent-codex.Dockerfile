# An agent image with the real codex, for engines that can pull:
#   docker build -f hack/image/agent-codex.Dockerfile \
#     --build-arg CODEX_VERSION=0.171.0 -t localhost/overseer/agent-codex:0.171.0 .
# hack/image/build.sh agent-codex makes the same image without one. The version is
# pinned in hack/image/real-clis.env. codex publishes its native builds as versions of
# its own package (VERSION-linux-x64); Node is not needed at run time.
FROM node:22-bookworm-slim AS cli
ARG CODEX_VERSION=0.171.0
ARG TARGETARCH=amd64
WORKDIR /cli
RUN case "$TARGETARCH" in arm64) triple=aarch64-unknown-linux-musl; arch=arm64 ;; *) triple=x86_64-unknown-linux-musl; arch=x64 ;; esac \
 && npm pack --silent "@openai/codex@$CODEX_VERSION-linux-$arch" \
 && tar -xzf ./*.tgz \
 && mv "package/vendor/$triple" /opt-codex

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends bash tmux git ca-certificates procps \
 && rm -rf /var/lib/apt/lists/*
COPY --from=cli /opt-codex /opt/codex
RUN ln -s /opt/codex/bin/codex /usr/local/bin/codex \
 && install -d -m 0755 -o 65532 -g 65532 /workspace /home/agent
ENV HOME=/home/agent PATH=/opt/codex/codex-path:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
USER 65532:65532
WORKDIR /workspace
CMD ["/bin/bash"]
