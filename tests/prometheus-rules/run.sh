#!/usr/bin/env bash
# The operator's alerts through Prometheus's own rule loader (rulefmt of
# github.com/prometheus/prometheus, pinned in go.mod): the kustomize PrometheusRule and the
# Helm chart's rule file, plus the Grafana dashboard's queries through its PromQL parser.
# Extra rule files, for a one-off:  RULE_FILES="a.yaml b.yaml" tests/prometheus-rules/run.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
command -v go >/dev/null || { echo "error: go is required" >&2; exit 1; }
go vet ./...
go test -count=1 -v ./... 2>&1 | grep -v '^=== RUN'
exit "${PIPESTATUS[0]}"
