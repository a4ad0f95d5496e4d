# syntax=docker/dockerfile:1
# gpucloud-operator for those who build with Docker: the same image as scripts/image.sh
# (which needs no container daemon and pulls no base image, and is the one the tests run
# on a real node). Both lay out the files with `scripts/image.sh rootfs`: the release
# binary at /usr/local/bin/gpucloud-operator, the C libraries it links and the CA
# certificates from Debian's packages, /etc/passwd naming 65532 nonroot, an empty /tmp;
# then FROM scratch, as user 65532, entrypoint the binary, command `run`.
#
#   docker build -t ghcr.io/gpucloud/gpucloud-operator:0.1.0 .

FROM rust:1-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin gpucloud-operator \
 && scripts/image.sh rootfs /rootfs target/release/gpucloud-operator

FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
WORKDIR /home/nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/gpucloud-operator"]
CMD ["run"]
