#!/usr/bin/env bash
# Sets the release version everywhere it is written, in one step, and checks that those
# places agree. The binary, the image and the Helm chart carry one version
# (docs/operations.md, "Versions and upgrades").
#
#   scripts/release.sh VERSION [--no-sbom]
#       VERSION is MAJOR.MINOR.PATCH, optionally with a pre-release (1.2.0-rc.1), newer
#       than the current one, with no leading v. Sets it in:
#         Cargo.toml      [workspace.package] version (every crate inherits it)
#         Cargo.lock      the workspace's own packages (cargo update --workspace --offline)
#         Chart.yaml      the chart's version and appVersion (the image tag Helm deploys)
#         the manifests   every ghcr.io/gpucloud/gpucloud-operator:TAG reference and every
#                         kustomize `images:` newTag of that image, in deploy/, examples/,
#                         docs/, README.md, CONTRIBUTING.md and the Dockerfile
#         CHANGELOG.md    the Unreleased section becomes "## [VERSION] - today"
#       then writes a CycloneDX SBOM of every crate in Cargo.lock to
#       dist/gpucloud-operator-VERSION.cdx.json (--no-sbom: not; the tests use it), and
#       prints the git commands that commit and tag the release. It commits nothing.
#   scripts/release.sh --check
#       Only verifies that Cargo.toml, Cargo.lock, Chart.yaml, the chart's image tag and
#       the manifests' image tags agree, and that CHANGELOG.md has a section for that
#       version; exits 1 naming each file that disagrees. Needs no cargo.
#
# The SBOM comes from cargo-cyclonedx, installed from crates.io into the project's tool
# cache on first use. Its `cargo metadata` may fetch from crates.io the sources of crates
# that only other platforms build, once: the SBOM covers every target, as the kubectl
# plugin ships for several.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

image=ghcr.io/gpucloud/gpucloud-operator
image_re=${image//./\\.}
chart=deploy/helm/gpucloud-operator/Chart.yaml
values=deploy/helm/gpucloud-operator/values.yaml
# The one manifest every kustomize install deploys: it must name the image.
deployment=deploy/base/deployment.yaml
repository_url=https://github.com/gpucloud/gpucloud-operator
tools=${XDG_CACHE_HOME:-$HOME/.cache}/gpucloud-operator/tools
cyclonedx_version=0.5.9

die() {
    echo "error: $*" >&2
    exit 1
}

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
}

# ---- Reading the versions -------------------------------------------------------------

# `version` of [workspace.package] in Cargo.toml.
workspace_version() {
    awk '
        /^\[/ { section = $0; next }
        section == "[workspace.package]" && /^version *=/ {
            v = $0; sub(/^version *= *"/, "", v); sub(/".*$/, "", v); print v; exit
        }' Cargo.toml
}

# A top-level scalar field of Chart.yaml, without its quotes.
chart_field() {
    sed -nE "s/^$1:[[:space:]]*\"?([^\"[:space:]]*)\"?[[:space:]]*\$/\\1/p" "$chart"
}

# `image.tag` of the chart's values.yaml ("" means the chart's appVersion).
values_image_tag() {
    awk '
        /^[^[:space:]#]/ { in_image = ($0 ~ /^image:/) }
        in_image && /^[[:space:]]+tag:/ {
            v = $0; sub(/^[[:space:]]+tag:[[:space:]]*/, "", v); sub(/[[:space:]]*#.*$/, "", v)
            gsub(/"/, "", v); print v; exit
        }' "$values"
}

# "NAME VERSION" of each package of Cargo.lock with no source: the workspace's own.
lock_workspace_packages() {
    awk '
        function emit() { if (name != "" && !sourced) print name, version }
        /^\[\[package\]\]/ { emit(); name = ""; version = ""; sourced = 0; next }
        /^name = / { name = $3; gsub(/"/, "", name) }
        /^version = / { version = $3; gsub(/"/, "", version) }
        /^source = / { sourced = 1 }
        END { emit() }' Cargo.lock
}

# The files that name the image with a version tag, or hold a kustomize newTag for it.
image_files() {
    {
        grep -rlE --include='*.yaml' --include='*.yml' --include='*.md' --include='*.tpl' \
            "$image_re:[0-9]" deploy examples docs || true
        grep -lE "$image_re:[0-9]" README.md CONTRIBUTING.md Dockerfile 2>/dev/null || true
        grep -rlE --include='kustomization.yaml' --include='kustomization.yml' \
            "name:[[:space:]]*\"?$image_re\"?[[:space:]]*\$" deploy examples || true
    } | sort -u
}

# "LINE TAG" of each newTag that belongs to an `images:` entry naming the image, in either
# order of the entry's keys.
newtag_lines() {
    awk -v image="$image" '
        function flush() { if (ours && tag_line) print tag_line, tag; ours = 0; tag_line = 0 }
        /^[[:space:]]*-[[:space:]]/ { flush() }
        {
            line = $0; sub(/^[[:space:]]*-?[[:space:]]*/, "", line)
            if (line ~ /^name:/) {
                v = line; sub(/^name:[[:space:]]*/, "", v); gsub(/["[:space:]]/, "", v)
                ours = (v == image)
            } else if (line ~ /^newTag:/) {
                v = line; sub(/^newTag:[[:space:]]*/, "", v); gsub(/["[:space:]]/, "", v)
                tag = v; tag_line = NR
            }
        }
        END { flush() }' "$1"
}

# The tag of each versioned image reference in a file, a line each.
image_tags() {
    grep -oE "$image_re:[0-9][0-9A-Za-z.+-]*" "$1" | sed "s|^$image_re:||" || true
}

# ---- Checking -------------------------------------------------------------------------

# Prints what disagrees with VERSION, a line per place, naming its file.
disagreements() {
    local want=$1 file name version tag line
    while read -r name version; do
        [ "$version" = "$want" ] || echo "Cargo.lock: $name is $version"
    done < <(lock_workspace_packages)
    [ "$(chart_field version)" = "$want" ] || echo "$chart: version is '$(chart_field version)'"
    [ "$(chart_field appVersion)" = "$want" ] ||
        echo "$chart: appVersion is '$(chart_field appVersion)'"
    tag=$(values_image_tag)
    [ -z "$tag" ] || [ "$tag" = "$want" ] || echo "$values: image.tag is '$tag'"
    grep -qE "$image_re:[0-9]" "$deployment" ||
        echo "$deployment: names no $image:VERSION image"
    grep -qF "## [$want] - " CHANGELOG.md || echo "CHANGELOG.md: no section '## [$want] - DATE'"
    while read -r file; do
        while read -r tag; do
            [ -z "$tag" ] || [ "$tag" = "$want" ] || echo "$file: image tag $tag"
        done < <(image_tags "$file")
        while read -r line tag; do
            [ "$tag" = "$want" ] || echo "$file:$line: newTag $tag"
        done < <(newtag_lines "$file")
    done < <(image_files)
}

check() {
    local version problems
    version=$(workspace_version)
    [ -n "$version" ] || die "Cargo.toml has no [workspace.package] version"
    problems=$(disagreements "$version")
    if [ -n "$problems" ]; then
        echo "versions disagree with Cargo.toml's $version:" >&2
        printf '%s\n' "$problems" | sed 's/^/  /' >&2
        echo "set them all with: scripts/release.sh VERSION" >&2
        return 1
    fi
    echo "versions agree: $version (Cargo.toml, Cargo.lock, $chart, the image tags of $(image_files | wc -l) files)"
}

# ---- Setting --------------------------------------------------------------------------

semver='^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$'

# Refuses what is not a version this script may set: malformed, build metadata (an image
# tag cannot hold a +), or not newer than the current one.
validate() {
    local new=$1 current=$2
    case $new in
    v[0-9]*) die "'$new': give the version without the v (the tag v${new#v} is made from it)" ;;
    *+*) die "'$new': build metadata (+...) cannot be part of an image tag" ;;
    esac
    [[ $new =~ $semver ]] || die "'$new' is not a version MAJOR.MINOR.PATCH[-PRERELEASE] (semver 2.0)"
    [ "$new" != "$current" ] || die "$new is already the version"
    local -a a b
    IFS=. read -r -a a <<<"${new%%-*}"
    IFS=. read -r -a b <<<"${current%%-*}"
    local i
    for i in 0 1 2; do
        if [ "${a[i]}" -gt "${b[i]}" ]; then return 0; fi
        if [ "${a[i]}" -lt "${b[i]}" ]; then die "$new is older than the current version $current"; fi
    done
    # The same MAJOR.MINOR.PATCH: a release is newer than its pre-releases, and of two
    # pre-releases (rc.2, rc.10) the later in version order.
    if [[ $current != *-* ]]; then
        die "$new is a pre-release of $current, which is already the version"
    fi
    if [[ $new == *-* ]] &&
        [ "$(printf '%s\n' "${new#*-}" "${current#*-}" | sort -V | tail -n 1)" != "${new#*-}" ]; then
        die "$new is older than the current version $current"
    fi
}

# The Unreleased section must say something, and VERSION must not have a section yet.
check_changelog() {
    local new=$1
    [ -f CHANGELOG.md ] || die "CHANGELOG.md is missing"
    grep -q '^## \[Unreleased\]' CHANGELOG.md || die "CHANGELOG.md has no '## [Unreleased]' section"
    ! grep -qF "## [$new]" CHANGELOG.md || die "CHANGELOG.md already has a section for $new"
    awk '/^## \[Unreleased\]/ { on = 1; next } /^## / { on = 0 } on && /^- / { found = 1 }
         END { exit !found }' CHANGELOG.md ||
        die "CHANGELOG.md: Unreleased lists no change; write what this release changes first"
    grep -qE "^\[Unreleased\]: $repository_url/compare/v.+\.\.\.HEAD\$" CHANGELOG.md ||
        die "CHANGELOG.md has no link line '[Unreleased]: $repository_url/compare/vPREVIOUS...HEAD'"
}

# Rewrites FILE through a command that reads it on stdin, keeping its mode.
rewrite() {
    local file=$1
    shift
    local tmp
    tmp=$(mktemp "$file.XXXXXX")
    "$@" <"$file" >"$tmp" || { rm -f "$tmp"; die "could not rewrite $file"; }
    chmod --reference="$file" "$tmp"
    mv "$tmp" "$file"
}

set_cargo() {
    local new=$1
    # shellcheck disable=SC2016 # the $ are awk's, in awk's own program
    rewrite Cargo.toml awk -v new="$new" '
        /^\[/ { section = $0 }
        section == "[workspace.package]" && /^version *=/ && !done {
            print "version = \"" new "\""; done = 1; next
        }
        { print }'
    # Only the workspace's own packages change; nothing is fetched or resolved anew.
    cargo update --workspace --offline --quiet
}

set_chart() {
    local new=$1
    rewrite "$chart" sed -E -e "s/^version:.*/version: $new/" -e "s/^appVersion:.*/appVersion: \"$new\"/"
    if [ -n "$(values_image_tag)" ]; then
        rewrite "$values" sed -E "/^image:/,/^[^[:space:]#]/s/^([[:space:]]+tag:[[:space:]]*).*/\\1\"$new\"/"
    fi
}

set_image_tags() {
    local new=$1 file line tag
    while read -r file; do
        rewrite "$file" sed -E "s|($image_re:)[0-9][0-9A-Za-z.+-]*|\\1$new|g"
        while read -r line tag; do
            rewrite "$file" sed -E "${line}s/(newTag:[[:space:]]*).*/\\1\"$new\"/"
        done < <(newtag_lines "$file")
        echo "  $file: image tag $new"
    done < <(image_files)
}

# Unreleased becomes the new version's section, with today's date, under an empty
# Unreleased; the compare links at the bottom follow.
set_changelog() {
    local new=$1 today=$2 previous
    previous=$(sed -nE "s|^\[Unreleased\]: $repository_url/compare/v(.*)\.\.\.HEAD\$|\\1|p" CHANGELOG.md)
    rewrite CHANGELOG.md awk -v new="$new" -v today="$today" -v previous="$previous" -v url="$repository_url" '
        /^## \[Unreleased\]/ { print; print ""; print "## [" new "] - " today; next }
        /^\[Unreleased\]: / {
            print "[Unreleased]: " url "/compare/v" new "...HEAD"
            print "[" new "]: " url "/compare/v" previous "...v" new
            next
        }
        { print }'
}

# cargo-cyclonedx from the tool cache, installed there from crates.io when absent.
cyclonedx() {
    local bin=$tools/bin/cargo-cyclonedx
    if [ ! -x "$bin" ]; then
        echo "installing cargo-cyclonedx $cyclonedx_version into $tools (once; a few minutes)" >&2
        local build=/tmp/cyclonedx-build
        CARGO_TARGET_DIR=$build cargo install cargo-cyclonedx --version "$cyclonedx_version" \
            --locked --root "$tools" --quiet >&2 || { rm -rf "$build"; die "could not install cargo-cyclonedx"; }
        rm -rf "$build"
    fi
    echo "$bin"
}

write_sbom() {
    local new=$1 bin name out
    bin=$(cyclonedx)
    # cargo-cyclonedx writes one file beside each crate's Cargo.toml; the root package's
    # describes the binary with every dependency, the workspace's crates included.
    name=release-sbom-$$
    mkdir -p dist
    out=dist/gpucloud-operator-$new.cdx.json
    # As `cargo cyclonedx`, with every target (the plugin ships for several platforms).
    "$bin" cyclonedx --format json --spec-version 1.5 --target all \
        --override-filename "$name" --quiet
    mv "$name.json" "$out"
    rm -f crates/*/"$name.json"
    echo "  $out: CycloneDX 1.5 JSON, every crate of Cargo.lock for every target"
}

release() {
    local new=$1 sbom=$2 current today
    current=$(workspace_version)
    [ -n "$current" ] || die "Cargo.toml has no [workspace.package] version"
    validate "$new" "$current"
    check_changelog "$new"
    command -v cargo >/dev/null || die "cargo is needed to update Cargo.lock"
    today=$(date -u +%F)

    echo "release $current -> $new"
    set_cargo "$new"
    echo "  Cargo.toml: [workspace.package] version $new"
    echo "  Cargo.lock: $(lock_workspace_packages | wc -l) workspace packages at $new"
    set_chart "$new"
    echo "  $chart: version $new, appVersion $new"
    set_image_tags "$new"
    set_changelog "$new" "$today"
    echo "  CHANGELOG.md: Unreleased is now [$new] - $today"
    if [ "$sbom" = true ]; then
        write_sbom "$new"
    fi
    check >/dev/null || die "the versions still disagree after setting them (see above)"

    cat <<EOF

Nothing is committed. Review (git diff), then:
  git add -u
  git commit -m "Release $new"
  git tag -a v$new -m "gpucloud-operator $new"
  git push origin HEAD v$new
Then name the release in tests/upgrade/previous-release, so the upgrade test of the next
release starts from it:
  echo "v$new \$(git rev-parse v$new^{commit})" >> tests/upgrade/previous-release
EOF
    if [ "$sbom" = true ]; then
        echo "and attach dist/gpucloud-operator-$new.cdx.json to the release v$new."
    fi
}

sbom=true
version=
mode=release
for arg in "$@"; do
    case $arg in
    --check) mode=check ;;
    --no-sbom) sbom=false ;;
    -h | --help) usage ;;
    -*) echo "error: unknown option $arg" >&2; usage ;;
    *)
        [ -z "$version" ] || { echo "error: one VERSION only" >&2; usage; }
        version=$arg
        ;;
    esac
done

case $mode in
check)
    [ -z "$version" ] || { echo "error: --check takes no VERSION" >&2; usage; }
    check
    ;;
release)
    [ -n "$version" ] || usage
    release "$version" "$sbom"
    ;;
esac
