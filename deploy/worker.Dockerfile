# syntax=docker/dockerfile:1.7
# The worker image: the same `ramen` binary plus Python, because a worker node (`runner`)
# starts the Python runtime (`python3 -m ramen_runtime`) as its child and pip-installs each
# group's requirements.txt into a virtualenv under the data directory. Build from the root:
#   docker build -f deploy/worker.Dockerfile -t ramen-worker:dev .
#
# The runtime's sources are embedded in the binary (services/runner/build.rs): the node
# writes them into its working directory and puts them on the child's PYTHONPATH itself, so
# the image needs only the interpreter. Base images: see deploy/Dockerfile (same pins).

ARG RUST_IMAGE=rust:1.95.0-bookworm@sha256:6258907abe69656e41cd992e0b705cdcfabcbbe3db374f92ed2d47121282d4a1
ARG RUNTIME_IMAGE=debian:bookworm-20260824-slim@sha256:88200866dfff7ea7f5cbcb6ec7c8a701889efe6fe859fe64d6990e4b07ea4171

FROM ${RUST_IMAGE} AS builder
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake clang pkg-config \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/src/target,sharing=locked \
    cargo build --release --locked -p ramen \
 && install -D -m 0755 target/release/ramen /out/ramen

FROM ${RUNTIME_IMAGE} AS runtime
ARG RAMEN_UID=10001
# python3 (Debian bookworm: 3.11, the runtime's minimum) and python3-venv: each node creates
# a virtualenv (with pip, from ensurepip) for the group's requirements.txt, so no system pip.
# git is deliberately absent: the control plane clones, workers never do.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tini python3 python3-venv \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid ${RAMEN_UID} ramen \
 && useradd --system --uid ${RAMEN_UID} --gid ramen --home-dir /var/lib/ramen --shell /usr/sbin/nologin ramen \
 && install -d -o ramen -g ramen -m 0700 /var/lib/ramen
COPY --from=builder /out/ramen /usr/local/bin/ramen
ENV RAMEN_MODE=cloud \
    RAMEN_LOG_FORMAT=json \
    RAMEN_DATA_DIR=/var/lib/ramen \
    HOME=/var/lib/ramen \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
USER ${RAMEN_UID}:${RAMEN_UID}
WORKDIR /var/lib/ramen
# 8000 MCP streamable HTTP, 7105 admin gRPC (RunnerService), 9090 health and metrics.
EXPOSE 8000 7105 9090
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/ramen", "worker"]
CMD ["--config", "/etc/ramen/worker.toml"]
