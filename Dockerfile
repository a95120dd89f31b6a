# The operator image: one static binary (operator, in-pod shim and CLI) and the CA
# bundle, nothing else. The init container of every agent and step pod copies
# /overseer into images of any distribution, so the binary must stay static (musl).
#
#   docker build -t ghcr.io/overseer-dev/overseer:dev .
#
# Without a container engine, hack/image/build.sh operator makes the same final image
# (the same two files, user and entrypoint) with umoci.

FROM rust:1-bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends musl-tools \
 && rm -rf /var/lib/apt/lists/* \
 && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
ENV CC_x86_64_unknown_linux_musl=musl-gcc
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --target x86_64-unknown-linux-musl --features otlp --bin overseer \
 && cp target/x86_64-unknown-linux-musl/release/overseer /overseer

FROM scratch
COPY --from=build /overseer /overseer
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
# Numeric, so `runAsNonRoot` can be verified by the kubelet without an /etc/passwd.
USER 65532:65532
ENTRYPOINT ["/overseer"]
