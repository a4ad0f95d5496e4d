# syntax=docker/dockerfile:1
# gpucloud-operator: a static (musl) binary on distroless static, as user 65532.
#
#   docker build -t ghcr.io/gpucloud/gpucloud-operator:0.1.0 .
#
# Not built by the test suite (no container engine there).

FROM rust:1-bookworm AS build
# musl-gcc for the C parts (aws-lc-sys, the TLS backend); cmake in case aws-lc-sys wants it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools cmake \
 && rm -rf /var/lib/apt/lists/* \
 && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --target x86_64-unknown-linux-musl --bin gpucloud-operator \
 && cp target/x86_64-unknown-linux-musl/release/gpucloud-operator /gpucloud-operator \
 # musl binaries are static: refuse to ship one that is not.
 && ! ldd /gpucloud-operator 2>/dev/null | grep -q '=>'

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /gpucloud-operator /usr/local/bin/gpucloud-operator
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/gpucloud-operator"]
CMD ["run"]
