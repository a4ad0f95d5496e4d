#!/usr/bin/env bash
# kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status, pinned in go.mod) on objects the
# operator wrote: go test over the objects the end-to-end suites recorded in this run, in
# GPUCLOUD_RECORDINGS (scripts/test.sh; see tests/common/recording.rs).
# The CLI for end-to-end tests:  tests/kstatus/run.sh status FILE.yaml...  (or - for stdin)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"
command -v go >/dev/null || { echo "error: go is required" >&2; exit 1; }
if [ "${1:-}" = "status" ]; then
    shift
    go build -o "${TMPDIR:-/tmp}/gpucloud-kstatus" .
    exec "${TMPDIR:-/tmp}/gpucloud-kstatus" "$@"
fi
exec "$here/../go-module-test.sh" "$here"
