#!/usr/bin/env bash
# Installs the distribution (Debian) packages a part of the test suite needs, when one is
# missing. The machine that runs the suite has only the toolchains; this is the one place
# that adds to it. Needs root when something is missing.
#
#   scripts/packages.sh image   podman (builds the operator's image), ca-certificates
#   scripts/packages.sh node    containerd, runc, the CNI plugins, iptables, conntrack,
#                               gcc and libc6-dev (a static pause binary), and the image's
set -euo pipefail

log() { printf '[packages] %s\n' "$*" >&2; }

wanted() {
    case $1 in
    image) echo podman:podman ca-certificates:/etc/ssl/certs/ca-certificates.crt ;;
    node)
        wanted image
        echo containerd:containerd runc:runc containernetworking-plugins:/usr/lib/cni/bridge \
            iptables:iptables conntrack:conntrack gcc:gcc libc6-dev:/usr/include/stdio.h
        ;;
    *) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    esac
}

missing=()
for entry in $(wanted "${1:-}"); do
    package=${entry%%:*} probe=${entry#*:}
    if [[ $probe == /* ]]; then
        [ -e "$probe" ] && continue
    else
        command -v "$probe" >/dev/null && continue
    fi
    missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0
[ "$(id -u)" = 0 ] || { log "missing ${missing[*]}: install them as root (apt-get install ${missing[*]})"; exit 1; }
log "installing ${missing[*]}"
start=$SECONDS
out=$(mktemp)
install() { DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >"$out" 2>&1; }
# A fresh machine may have no package lists yet.
install || { apt-get update >"$out" 2>&1 && install; } || { tail -20 "$out" >&2; exit 1; }
rm -f "$out"
log "installed in $((SECONDS - start)) s"
