#!/usr/bin/env bash
# Argo CD health check (deploy/argocd/health.lua) run by gopher-lua (pinned in go.mod,
# the interpreter Argo CD embeds) on the objects the operator wrote, as the end-to-end suites
# recorded them in this run (GPUCLOUD_RECORDINGS, set by scripts/test.sh).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$here/../go-module-test.sh" "$here"
