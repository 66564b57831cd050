# syntax=docker/dockerfile:1.7
# The worker image: the same `ramen` binary plus Python, because a worker node (`runner`)
# starts the Python runtime (`python3 -m ramen_runtime`) as its child and pip-installs each
# group's requirements.txt into a virtualenv under the data directory. Build from the root:
#   docker build -f deploy/worker.Dockerfile -t ramen-worker:dev .

ARG RUST_VERSION=1.95
ARG DEBIAN_RELEASE=bookworm

FROM rust:${RUST_VERSION}-${DEBIAN_RELEASE} AS builder
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

FROM debian:${DEBIAN_RELEASE}-slim AS runtime
ARG RAMEN_UID=10001
# python3-venv + pip: each node builds a virtualenv for the group's requirements.txt.
# git is deliberately absent: the control plane clones, workers never do.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tini python3 python3-venv python3-pip \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid ${RAMEN_UID} ramen \
 && useradd --system --uid ${RAMEN_UID} --gid ramen --home-dir /var/lib/ramen --shell /usr/sbin/nologin ramen \
 && install -d -o ramen -g ramen -m 0700 /var/lib/ramen
COPY --from=builder /out/ramen /usr/local/bin/ramen
# The runtime uses only the standard library, so it sits on PYTHONPATH and is importable from
# any group virtualenv without being installed into it (it can never clash with a group's
# requirements).
COPY services/runner/runtime/ramen_runtime /opt/ramen/runtime/ramen_runtime
ENV RAMEN_MODE=cloud \
    RAMEN_LOG_FORMAT=json \
    RAMEN_DATA_DIR=/var/lib/ramen \
    HOME=/var/lib/ramen \
    PYTHONPATH=/opt/ramen/runtime \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
USER ${RAMEN_UID}:${RAMEN_UID}
WORKDIR /var/lib/ramen
# 8000 MCP streamable HTTP, 7105 admin gRPC (RunnerService), 9090 health and metrics.
EXPOSE 8000 7105 9090
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/ramen", "worker"]
CMD ["--config", "/etc/ramen/worker.toml"]
