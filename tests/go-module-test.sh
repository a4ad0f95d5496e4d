#!/usr/bin/env bash
# `go vet` and `go test` of the Go module in the folder given (a check written on
# Kubernetes', Argo CD's or Prometheus' own libraries), printing the tests' results
# without the "=== RUN" noise, and failing as `go test` does.
set -euo pipefail
cd "$1"
command -v go >/dev/null || { echo "error: go is required" >&2; exit 1; }
go vet ./...
go test -count=1 -v ./... 2>&1 | grep -v '^=== RUN'
exit "${PIPESTATUS[0]}"
