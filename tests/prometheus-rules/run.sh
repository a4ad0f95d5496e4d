#!/usr/bin/env bash
# The operator's alerts through Prometheus's own rule loader (rulefmt of
# github.com/prometheus/prometheus, pinned in go.mod): the kustomize PrometheusRule and the
# Helm chart's rule file, plus the Grafana dashboard's queries through its PromQL parser.
# Extra rule files, for a one-off:  RULE_FILES="a.yaml b.yaml" tests/prometheus-rules/run.sh
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exec "$here/../go-module-test.sh" "$here"
