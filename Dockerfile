# syntax=docker/dockerfile:1
#
# The `basalt` image: engine (`basalt serve`, port 8080) and controller (`basalt controller`,
# probes on 8081) in one binary. Build from the repository root:
#
#   docker build -t basalt:0.1.0 .
#
# The image has no Postgres server: set BASALT_DATABASE_URL (the embedded-cluster fallback of
# `basalt serve` needs initdb/postgres and a writable data directory, which this image lacks).

FROM rust:1-bookworm AS builder
WORKDIR /build
COPY Cargo.toml Cargo.lock ./
COPY src ./src
# The workspace's other member (a test and benchmark tool): Cargo needs its manifest to load
# the workspace, though the image builds only `basalt`.
COPY crates ./crates
# The cache mounts keep the registry and target/ between builds (BuildKit); the binary is
# copied out of the cached target/ so the next stage can use it.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/usr/local/cargo/git \
    --mount=type=cache,target=/build/target \
    cargo build --release --locked --bin basalt \
    && install -m 0755 target/release/basalt /usr/local/bin/basalt

FROM debian:bookworm-slim AS runtime
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 basalt \
    && useradd --system --uid 10001 --gid 10001 --home-dir /home/basalt --create-home \
       --shell /usr/sbin/nologin basalt
COPY --from=builder /usr/local/bin/basalt /usr/local/bin/basalt
WORKDIR /home/basalt
USER 10001
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/basalt"]
CMD ["serve"]
