# An agent image with the real pi, for engines that can pull:
#   docker build -f hack/image/agent-pi.Dockerfile \
#     --build-arg PI_VERSION=0.73.1 -t localhost/overseer/agent-pi:0.73.1 .
# hack/image/build.sh agent-pi makes the same image without one. The version is pinned
# in hack/image/real-clis.env. pi is a Node program (Node >= 20.6): Debian trixie's
# Node.js, and pi with its dependencies from the npm registry (no install scripts run).
FROM debian:trixie-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      bash tmux git ca-certificates procps nodejs npm ripgrep fd-find \
 && rm -rf /var/lib/apt/lists/*
ARG PI_VERSION=0.73.1
RUN npm install --omit=dev --ignore-scripts --no-audit --no-fund --prefix /opt/pi \
      "@mariozechner/pi-coding-agent@$PI_VERSION" \
 && ln -s /opt/pi/node_modules/@mariozechner/pi-coding-agent/dist/cli.js /usr/local/bin/pi \
 && ln -s /usr/bin/fdfind /usr/local/bin/fd \
 && install -d -m 0755 -o 65532 -g 65532 /workspace /home/agent /home/agent/.pi /home/agent/.pi/agent
# No update checks or install telemetry from inside a pod.
ENV HOME=/home/agent PI_OFFLINE=1
USER 65532:65532
WORKDIR /workspace
CMD ["/bin/bash"]
