#!/usr/bin/env bash
# Builds the operator's container image with no container daemon and no base image: the
# release binary, the C libraries it links and the CA certificates, all taken from this
# machine's Debian packages, on `FROM scratch`, run as the nonroot user 65532.
#
#   scripts/image.sh [--tag TAG] [--binary PATH] [--out ARCHIVE]
#       build (cargo build --release unless --binary), then `podman build` the image
#       ghcr.io/gpucloud/gpucloud-operator:TAG (default: the chart's appVersion) and, with
#       --out, save it as an OCI archive (what `cp.sh import` loads into a node)
#   scripts/image.sh rootfs DIR BINARY
#       only lay out the image's files in DIR (the Dockerfile does this, so the two images
#       have the same layout)
#
# The layout: /usr/local/bin/gpucloud-operator (entrypoint, command `run`),
# /etc/ssl/certs/ca-certificates.crt, /etc/passwd and /etc/group naming 65532 nonroot,
# /etc/nsswitch.conf (hosts from /etc/hosts, then DNS), the dynamic loader and libraries
# under /lib, and an empty /tmp, the only place the operator writes.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
repository=ghcr.io/gpucloud/gpucloud-operator

log() { printf '[image] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Lays out the image's files in $1 for the binary $2.
rootfs() {
    local dir=$1 binary=$2 lib
    [ -x "$binary" ] || die "no binary at $binary"
    rm -rf "$dir"
    mkdir -p "$dir/usr/local/bin" "$dir/etc/ssl/certs" "$dir/tmp" "$dir/home/nonroot"
    install -m 0755 "$binary" "$dir/usr/local/bin/gpucloud-operator"
    # The libraries the binary links (glibc, libgcc_s), at the paths the loader looks in.
    # glibc 2.34 and later resolves host names without loading NSS modules for `files`
    # and `dns`, so none are copied.
    for lib in $(ldd "$binary" | grep -o '/[^ ]*'); do
        mkdir -p "$dir$(dirname "$lib")"
        cp -L "$lib" "$dir$lib"
    done
    [ -e "$dir/lib64/ld-linux-x86-64.so.2" ] || die "the dynamic loader is missing from the image"
    cp /etc/ssl/certs/ca-certificates.crt "$dir/etc/ssl/certs/ca-certificates.crt"
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$dir/etc/passwd"
    printf 'root:x:0:\nnonroot:x:65532:\n' >"$dir/etc/group"
    printf 'hosts: files dns\n' >"$dir/etc/nsswitch.conf"
    chmod 1777 "$dir/tmp"
    chown 65532:65532 "$dir/home/nonroot" 2>/dev/null || true
}

# The versions of the distribution packages the image's files come from, for its labels.
package_versions() {
    dpkg-query -W -f '${Package}=${Version} ' libc6 libgcc-s1 ca-certificates 2>/dev/null | sed 's/ $//'
}

build() {
    local tag=$1 binary=$2 out=$3 work
    "$root/scripts/packages.sh" image
    if [ -z "$binary" ]; then
        log "building the release binary"
        (cd "$root" && cargo build --release --locked --bin gpucloud-operator)
        binary=${CARGO_TARGET_DIR:-$root/target}/release/gpucloud-operator
    fi
    work=$(mktemp -d)
    trap 'rm -rf "$work"' RETURN
    rootfs "$work/rootfs" "$binary"
    cat >"$work/Containerfile" <<EOF
FROM scratch
COPY rootfs/ /
USER 65532:65532
WORKDIR /home/nonroot
EXPOSE 8080
LABEL org.opencontainers.image.source="https://github.com/gpucloud/gpucloud-operator" \\
      org.opencontainers.image.version="$tag" \\
      io.gpucloud.debian-packages="$(package_versions)"
ENTRYPOINT ["/usr/local/bin/gpucloud-operator"]
CMD ["run"]
EOF
    local image=$repository:$tag
    podman build --quiet --format oci --tag "$image" "$work" >/dev/null
    log "built $image: $(podman image inspect --format '{{.Size}}' "$image") bytes"
    if [ -n "$out" ]; then
        rm -f "$out"
        podman save --quiet --format oci-archive --output "$out" "$image"
        log "saved to $out ($(stat -c %s "$out") bytes)"
    fi
}

case ${1:-} in
rootfs)
    [ $# -eq 3 ] || die "usage: $0 rootfs DIR BINARY"
    rootfs "$2" "$3"
    exit 0
    ;;
esac

tag=$(sed -nE 's/^appVersion: "?([^"]*)"?$/\1/p' "$root/deploy/helm/gpucloud-operator/Chart.yaml")
binary=
out=
while [ $# -gt 0 ]; do
    case $1 in
    --tag) tag=$2; shift 2 ;;
    --binary) binary=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done
build "$tag" "$binary" "$out"
