#!/usr/bin/env bash
# The operator as the previous release built it, for the upgrade test (tests/e2e_upgrade.rs):
# the commit on the last line of tests/upgrade/previous-release, taken from this
# repository's history (`git archive`, no network), built once and kept outside the
# checkout with the CRDs it installed. Prints the folder: `gpucloud-operator` and
# `crds.yaml` in it.
#
#   tests/upgrade/build.sh          build unless kept, print the folder
#   tests/upgrade/build.sh --path   print the folder only (it may not be built yet)
#
# It builds in CARGO_TARGET_DIR (else the checkout's target/), so that the third-party
# crates the two releases share are compiled once, and puts back the current tree's
# binary in debug/ when one was there.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
die() { echo "tests/upgrade/build.sh: $*" >&2; exit 1; }

read -r tag commit < <(grep -v '^#' "$root/tests/upgrade/previous-release" | grep . | tail -1)
[ -n "${commit:-}" ] || die "tests/upgrade/previous-release names no TAG COMMIT"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/gpucloud-operator/releases/$tag-${commit:0:12}

if [ "${1:-}" = "--path" ]; then
    echo "$cache"
    exit 0
fi
[ $# -eq 0 ] || die "usage: tests/upgrade/build.sh [--path]"

if [ -x "$cache/gpucloud-operator" ] && [ -f "$cache/crds.yaml" ]; then
    echo "$cache"
    exit 0
fi

git -C "$root" cat-file -e "$commit^{commit}" 2>/dev/null \
    || die "commit $commit ($tag) is not in this clone's history: a shallow clone cannot build the previous release"
if git -C "$root" rev-parse -q --verify "refs/tags/$tag" >/dev/null; then
    [ "$(git -C "$root" rev-parse "$tag^{commit}")" = "$commit" ] \
        || die "tag $tag is not commit $commit, which tests/upgrade/previous-release names"
fi

start=$SECONDS
src=$(mktemp -d "${TMPDIR:-/tmp}/gpucloud-$tag.XXXXXX")
trap 'rm -rf "$src"' EXIT
git -C "$root" archive "$commit" | tar -x -C "$src"
target=${CARGO_TARGET_DIR:-$root/target}
binary=$target/debug/gpucloud-operator
if [ -x "$binary" ]; then
    cp -p "$binary" "$src/current-gpucloud-operator"
fi
echo "building gpucloud-operator $tag ($commit) in $target" >&2
(cd "$src" && CARGO_TARGET_DIR=$target cargo build --locked --quiet --bin gpucloud-operator)
mkdir -p "$cache.partial"
cp "$binary" "$cache.partial/gpucloud-operator"
if [ -x "$src/current-gpucloud-operator" ]; then
    cp -p "$src/current-gpucloud-operator" "$binary"
fi
cp "$src/deploy/crds/gpucloud.io.yaml" "$cache.partial/crds.yaml"
rm -rf "$cache"
mv "$cache.partial" "$cache"
echo "built $tag in $((SECONDS - start)) s into $cache" >&2
echo "$cache"
