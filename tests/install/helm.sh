#!/usr/bin/env bash
# Prints the path of the helm the tests use, building it first when it is not cached:
# helm.sh/helm/v3 at HELM_VERSION from the Go module proxy (about 5 min cold, 60 MB) into
# GPUCLOUD_TOOLS_CACHE (default ~/.cache/gpucloud-operator/tools).
set -euo pipefail
HELM_VERSION=v3.19.0
cache=${GPUCLOUD_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpucloud-operator/tools}
helm=$cache/helm-$HELM_VERSION/helm
mkdir -p "$cache"
# The node phase and the install tests may ask at the same time: one builds, the other waits.
exec 9>"$cache/helm.lock"
flock 9
if [ ! -x "$helm" ]; then
    printf '[helm] building helm %s into %s (once)\n' "$HELM_VERSION" "$cache" >&2
    mkdir -p "$cache/helm-$HELM_VERSION.partial"
    GOBIN="$cache/helm-$HELM_VERSION.partial" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >&2
    rm -rf "$cache/helm-$HELM_VERSION" && mv "$cache/helm-$HELM_VERSION.partial" "$cache/helm-$HELM_VERSION"
fi
echo "$helm"
