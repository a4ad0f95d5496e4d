#!/usr/bin/env bash
# Validates the install manifests against the control plane in KUBECONFIG with
# `kubectl apply --dry-run=server`: the CRDs (deploy/crds), the kustomize base (deploy/),
# the single-namespace overlay, the ServiceMonitor and PrometheusRule variants, and the
# Helm chart rendered with its defaults, with a namespace list + ServiceMonitor +
# PrometheusRule + a metrics certificate, with a namespace selector, and with an open
# /metrics; then what each variant promises of its RBAC and options. Fails on any error.
#
# helm comes from tests/install/helm.sh (built once, cached).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
: "${KUBECONFIG:?set KUBECONFIG (e.g. eval \"\$(tests/control-plane/cp.sh up --dir /tmp/cp)\")}"
helm=$("$here/helm.sh")
log() { printf '[install] %s\n' "$*" >&2; }

# The CRD copies that kustomize and Helm read must be the generated ones.
for copy in deploy/crds/gpucloud.io.yaml deploy/helm/gpucloud-operator/crds/gpucloud.io.yaml; do
    cmp -s crds/gpucloud.io.yaml "$copy" || { log "error: $copy differs from crds/gpucloud.io.yaml; copy it over"; exit 1; }
done

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
# A dry run persists nothing, so objects cannot land in a namespace created by the same
# dry run: create the namespaces first (for real), and stand-in ServiceMonitor and
# PrometheusRule CRDs (any fields) when the Prometheus Operator's are absent.
for ns in gpucloud-system gpu-workloads; do
    kubectl get namespace "$ns" >/dev/null 2>&1 || kubectl create namespace "$ns" >/dev/null
done
for kinds in ServiceMonitor:servicemonitors PrometheusRule:prometheusrules; do
    kind=${kinds%%:*} plural=${kinds#*:}
    kubectl get crd "$plural.monitoring.coreos.com" >/dev/null 2>&1 && continue
    kubectl apply -f - >/dev/null <<YAML
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: $plural.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  names: {kind: $kind, listKind: ${kind}List, plural: $plural, singular: ${plural%s}}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
YAML
    kubectl wait --for condition=Established "crd/$plural.monitoring.coreos.com" --timeout=30s >/dev/null
done

failed=0
check() { # name, manifest file
    local start=$SECONDS
    if kubectl apply --dry-run=server --server-side --force-conflicts --field-manager=install-test -f "$2" >"$work/out" 2>&1 \
        && kubectl apply --dry-run=server -f "$2" >>"$work/out" 2>&1; then
        log "ok   $1 ($(grep -c . "$work/out") lines, $((SECONDS - start)) s)"
    else
        log "FAIL $1"; sed 's/^/    /' "$work/out" >&2; failed=1
    fi
}
render() { # name, then a command writing YAML
    local name=$1; shift
    if "$@" >"$work/$name.yaml" 2>"$work/$name.err"; then check "$name" "$work/$name.yaml"
    else log "FAIL $name (render)"; sed 's/^/    /' "$work/$name.err" >&2; failed=1; fi
}
render kustomize-crds kubectl kustomize deploy/crds
render kustomize-base kubectl kustomize deploy
render kustomize-single-namespace kubectl kustomize deploy/overlays/single-namespace
render kustomize-servicemonitor kubectl kustomize deploy/overlays/with-servicemonitor
render kustomize-prometheusrule kubectl kustomize deploy/overlays/with-prometheusrule
"$helm" lint --strict deploy/helm/gpucloud-operator >"$work/lint" 2>&1 || { log "FAIL helm lint"; cat "$work/lint" >&2; failed=1; }
render helm-defaults "$helm" template gpucloud-operator deploy/helm/gpucloud-operator \
    --namespace gpucloud-system --include-crds
render helm-namespaces "$helm" template ops deploy/helm/gpucloud-operator --namespace gpucloud-system \
    --include-crds --set 'namespaces={gpu-workloads}' --set metrics.serviceMonitor.enabled=true \
    --set replicas=2 --set pollInterval=30s --set apiKey.create=true --set apiKey.value=not-a-key \
    --set prometheusRule.enabled=true --set prometheusRule.labels.release=prometheus \
    --set metrics.auth.certSecret=ops-metrics-tls --set 'metrics.auth.readers={monitoring/prometheus-k8s}'
render helm-metrics-open "$helm" template open deploy/helm/gpucloud-operator --namespace gpucloud-system \
    --set metrics.auth.enabled=false --set metrics.serviceMonitor.enabled=true
render helm-namespace-selector "$helm" template sel deploy/helm/gpucloud-operator --namespace gpucloud-system \
    --include-crds --set namespaceSelector=gpucloud.io/managed=yes

# The CRDs are their own base: deploy/crds holds them all, and no install of the operator
# does, so that `kubectl delete -k` of one keeps the CRDs and every custom resource.
crds=$(tests/install/docs.py keep CustomResourceDefinition <"$work/kustomize-crds.yaml" | tests/install/docs.py list | wc -l)
[ "$crds" = "$(grep -c '^kind: CustomResourceDefinition' crds/gpucloud.io.yaml)" ] \
    || { log "FAIL deploy/crds: $crds CRDs, not those of crds/gpucloud.io.yaml"; failed=1; }
for install in kustomize-base kustomize-single-namespace kustomize-servicemonitor kustomize-prometheusrule; do
    if grep -q '^kind: CustomResourceDefinition' "$work/$install.yaml"; then
        log "FAIL $install holds CRDs: deleting it would delete every custom resource"; failed=1
    fi
done

# A namespace selector: the flag passed on, namespaces listable in the ClusterRole; refused
# together with a namespace list.
selected=$work/helm-namespace-selector.yaml
if ! grep -q -- '--namespace-selector=gpucloud.io/managed=yes' "$selected" \
    || ! grep -q 'resources: \["namespaces"\]' "$selected" \
    || grep -q 'resources: \["namespaces"\]' "$work/helm-defaults.yaml"; then
    log "FAIL helm namespaceSelector: flag or namespaces rule missing, or the rule in a default install"; failed=1
fi
if "$helm" template both deploy/helm/gpucloud-operator --set 'namespaces={gpu-workloads}' \
    --set namespaceSelector=a=b >/dev/null 2>"$work/both.err" \
    || ! grep -q 'cannot both be set' "$work/both.err"; then
    log "FAIL helm: namespaces and namespaceSelector together were not refused"; failed=1
fi

# /metrics behind a token by default (the flag, the operator's right to review tokens,
# HTTPS probes and scrapes); plain HTTP and no binding only when metrics.auth is off.
for install in helm-defaults kustomize-base helm-namespaces; do
    f=$work/$install.yaml
    if ! grep -q -- '--metrics-auth=kubernetes' "$f" || ! grep -q 'name: system:auth-delegator' "$f" \
        || grep -q 'scheme: HTTP$' "$f"; then
        log "FAIL $install: /metrics not behind a token (flag, system:auth-delegator binding or HTTPS probes)"; failed=1
    fi
done
if ! grep -q 'scheme: https' "$work/helm-namespaces.yaml" || ! grep -q 'key: ca.crt' "$work/helm-namespaces.yaml" \
    || ! grep -q 'name: prometheus-k8s' "$work/helm-namespaces.yaml"; then
    log "FAIL helm-namespaces: the ServiceMonitor does not scrape https verifying metrics.auth.certSecret, or the reader is not bound"; failed=1
fi
open=$work/helm-metrics-open.yaml
if ! grep -q -- '--metrics-auth=none' "$open" || grep -q 'system:auth-delegator' "$open" \
    || grep -q 'scheme: HTTPS' "$open" || grep -q 'scheme: https' "$open"; then
    log "FAIL helm metrics.auth.enabled=false: not plain HTTP throughout"; failed=1
fi
# What the overlay promises: no cluster-wide rights on objects (its only cluster-scoped RBAC
# is the user roles, bound to nobody, the token check of /metrics: system:auth-delegator
# for the operator, and the role a scraper is bound to, and `get` on the gpucloud.io CRDs
# by name), the watched namespace passed on.
single=$work/kustomize-single-namespace.yaml
cluster_rbac=$(tests/install/docs.py keep ClusterRole ClusterRoleBinding <"$single" | tests/install/docs.py list | sort | tr '\n' ' ')
want="ClusterRole gpucloud-edit ClusterRole gpucloud-metrics-reader ClusterRole gpucloud-operator-crds ClusterRole gpucloud-view ClusterRoleBinding gpucloud-operator-auth-delegator ClusterRoleBinding gpucloud-operator-crds "
if [ "$cluster_rbac" != "$want" ] \
    || ! grep -q -- '--namespaces=gpu-workloads' "$single"; then
    log "FAIL single-namespace overlay: cluster-wide RBAC beyond the user roles and the metrics' token check ($cluster_rbac) or no --namespaces"; failed=1
fi
# The user roles: in every Helm mode by default, named after the release; left out when
# userRoles.enabled is false.
for rendered in helm-defaults:gpucloud helm-namespaces:ops-gpucloud helm-namespace-selector:sel-gpucloud; do
    file=$work/${rendered%%:*}.yaml prefix=${rendered#*:}
    roles=$(tests/install/docs.py keep "ClusterRole/$prefix-view" "ClusterRole/$prefix-edit" <"$file" | tests/install/docs.py list | wc -l)
    [ "$roles" = 2 ] || { log "FAIL ${rendered%%:*}: no user roles $prefix-view and $prefix-edit"; failed=1; }
done
if "$helm" template gpucloud-operator deploy/helm/gpucloud-operator --set userRoles.enabled=false 2>"$work/off.err" \
    | grep -q 'aggregate-to-'; then
    log "FAIL helm userRoles.enabled=false still renders the user roles"; failed=1
fi
# The PrometheusRule comes only when asked for.
if grep -q '^kind: PrometheusRule' "$work/helm-defaults.yaml" "$work/kustomize-base.yaml" \
    || ! grep -q '^kind: PrometheusRule' "$work/helm-namespaces.yaml" \
    || ! grep -q '^kind: PrometheusRule' "$work/kustomize-prometheusrule.yaml"; then
    log "FAIL PrometheusRule: in a default install, or missing where enabled"; failed=1
fi
exit $failed
