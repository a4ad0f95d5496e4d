#!/usr/bin/env bash
# Argo CD health check (deploy/argocd/health.lua) run by gopher-lua (pinned in go.mod,
# the interpreter Argo CD embeds) on the objects the operator wrote (tests/kstatus/testdata).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
command -v go >/dev/null || { echo "error: go is required" >&2; exit 1; }
go vet ./...
go test -count=1 -v ./... 2>&1 | grep -v '^=== RUN'
exit "${PIPESTATUS[0]}"
