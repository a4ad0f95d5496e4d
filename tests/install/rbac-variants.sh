#!/usr/bin/env bash
# Every install variant's RBAC, proven by running the operator with it, on the
# RBAC-enforcing control plane in KUBECONFIG. For the kustomize base, the single-namespace
# overlay, the Helm chart cluster-wide and the Helm chart with `namespaces:`, one after the
# other:
# - installs the variant's ServiceAccount, Roles, RoleBindings, ClusterRoles and
#   ClusterRoleBindings, rendered from deploy/, with an operator namespace and a watched
#   namespace of its own, and its names prefixed (kustomize) or its release named
#   (Helm) after it, so that no variant lends another its rights;
# - runs the operator binary as that ServiceAccount (a TokenRequest token) with the flags
#   of the variant's Deployment, leader election in its namespace, against one emulator;
# - checks that the ServiceAccount may get every gpucloud.io CRD by name;
# - creates a NetworkVolume (deletionPolicy Orphan), an Endpoint with its connection
#   ConfigMap (Delete) and a Cluster with its ConfigMap, waits until all are Ready, deletes
#   them, and fails on any that stays (naming it and its finalizers), on a "forbidden" or a
#   403 in the operator's log, when the released record in the operator namespace lacks
#   the volume, or when no orphan census could read that record;
# - checks the variant's user roles through the built-in ones: a user bound to `edit` in
#   one namespace may create every gpucloud kind there and read none in another, a user
#   bound to `view` may list every kind and create none, and the ClusterRoles' rights
#   leave the built-in roles once they are deleted.
# Prints each variant's timings. Needs the debug binary (cargo build) and helm (built by
# tests/install/run.sh).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"
bin=${GPUCLOUD_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/gpucloud-operator}
helm=$("$(dirname "${BASH_SOURCE[0]}")/helm.sh")
: "${KUBECONFIG:?set KUBECONFIG}"
[ -x "$bin" ] || { echo "no operator binary at $bin: run cargo build" >&2; exit 1; }
[ -x "$helm" ] || { echo "no helm at $helm: run tests/install/run.sh once" >&2; exit 1; }
log() { printf '[rbac-variants] %s\n' "$*" >&2; }
READY_TIMEOUT=90 GONE_TIMEOUT=60 CENSUS_TIMEOUT=15 AGGREGATION_TIMEOUT=30

work=$(mktemp -d)
# A tag of this run in every name, so that a run does not meet the namespaces an earlier
# one is still deleting.
run=rv$(printf '%04x' $((RANDOM % 65536)))
users_a=$run-users-a users_b=$run-users-b
pids=() installed=() namespaces=("$users_a" "$users_b")
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for file in "${installed[@]}"; do
        kubectl delete -f "$file" --ignore-not-found --wait=false >/dev/null 2>&1 || true
    done
    kubectl delete namespace "${namespaces[@]}" --ignore-not-found --wait=false >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

fail() { # message, then the failing variant's operator log
    log "FAIL $variant: $1"
    if [ -f "$work/$variant/operator.log" ]; then
        log "operator log (last 80 lines):"
        tail -n 80 "$work/$variant/operator.log" >&2
    fi
    exit 1
}

# The variant's whole install, rendered in its own namespaces and under its own names.
render() { # variant, operator namespace, watched namespace, prefix
    local variant=$1 operator_ns=$2 watched=$3 prefix=$4
    # Kustomize names everything gpucloud-operator, gpucloud-view, gpucloud-edit: prefix
    # the objects' names (and the references to them, at the same indentation) and move
    # the namespaces; the Lease and Secret names the Roles grant stay as the flags use them.
    local rename="s/\bgpucloud-system\b/$operator_ns/g; s/\bgpu-workloads\b/$watched/g; s/^(  name: )(gpucloud-(operator|operator-crds|view|edit))$/\1$prefix-\2/"
    case $variant in
        kustomize-base) kubectl kustomize deploy | sed -E "$rename" ;;
        kustomize-single-namespace) kubectl kustomize deploy/overlays/single-namespace | sed -E "$rename" ;;
        helm-cluster-wide) "$helm" template "$prefix" deploy/helm/gpucloud-operator --namespace "$operator_ns" ;;
        helm-namespaces) "$helm" template "$prefix" deploy/helm/gpucloud-operator --namespace "$operator_ns" \
            --set "namespaces={$watched}" ;;
    esac
}

# How a kubectl auth can-i answers (yes or no) for USER.
can() { # user, namespace, verb, resource, [flags]
    kubectl auth can-i --as="$1" -n "$2" "$3" "$4" "${@:5}" 2>/dev/null || true
}
wait_can() { # want, user, namespace, verb, resource: until can-i answers `want`
    local start=$SECONDS
    until [ "$(can "$2" "$3" "$4" "$5")" = "$1" ]; do
        [ $((SECONDS - start)) -lt $AGGREGATION_TIMEOUT ] \
            || fail "$2 still gets '$(can "$2" "$3" "$4" "$5")' for $4 $5 in $3 after ${AGGREGATION_TIMEOUT} s (does the controller-manager run clusterrole-aggregation-controller?)"
        sleep 0.3
    done
}

# The CRDs, the emulator every variant's operator talks to, and the users of the user roles:
# user-b edits and user-c views namespace b; neither has anything in namespace a.
kubectl apply --server-side --force-conflicts -f crds/gpucloud.io.yaml >/dev/null
kubectl wait --for condition=Established -f crds/gpucloud.io.yaml --timeout=30s >/dev/null
mapfile -t kinds < <(kubectl api-resources --api-group=gpucloud.io -o name | sort)
[ ${#kinds[@]} -gt 0 ] || { log "no gpucloud.io resources served"; exit 1; }
free_port() { "$root/tests/free-ports.py"; }
port=$(free_port)
"$bin" emulator --listen 127.0.0.1:$port --api-key k --pod-boot-ms 300 >"$work/emulator.log" 2>&1 & pids+=($!)
kubectl create namespace "$users_a" >/dev/null
kubectl create namespace "$users_b" >/dev/null
kubectl -n "$users_b" create rolebinding user-b-edit --clusterrole=edit --user=user-b >/dev/null
kubectl -n "$users_b" create rolebinding user-c-view --clusterrole=view --user=user-c >/dev/null
variant=start
for kind in "${kinds[@]}"; do
    [ "$(can user-b "$users_b" create "$kind")" = no ] \
        || fail "user-b may create $kind before any user role is installed: a ClusterRole on this control plane already aggregates gpucloud rights into edit"
done

objects() { # the variant's objects, in the watched namespace
    cat <<YAML
apiVersion: gpucloud.io/v1alpha1
kind: NetworkVolume
metadata: {name: kept}
spec: {sizeGb: 10, dataCenterId: EU-RO-1, deletionPolicy: Orphan}
---
apiVersion: gpucloud.io/v1alpha1
kind: Endpoint
metadata: {name: infer}
spec:
  templateId: tmpl-worker-base
  gpuTypeIds: ["NVIDIA A40"]
  workersMin: 0
  workersMax: 1
  deletionPolicy: Delete
  writeConnectionTo: infer-connection
---
apiVersion: gpucloud.io/v1alpha1
kind: Cluster
metadata: {name: train}
spec:
  type: TRAINING
  image: ghcr.io/acme/train:1
  compute: {gpuTypes: ["NVIDIA GeForce RTX 4090", "NVIDIA A40"], gpuCountPerPod: 2, podCount: 2}
  deletionPolicy: Delete
YAML
}
managed=(networkvolumes.gpucloud.io/kept endpoints.gpucloud.io/infer clusters.gpucloud.io/train)
# The ConfigMaps the operator writes beside the Endpoint and the Cluster, owned by them: the
# garbage collector removes them after their owners, in its own time.
written=(configmap/infer-connection:endpoints.gpucloud.io/infer configmap/train-cluster:clusters.gpucloud.io/train)

ready() { # namespace, object: its Ready condition's status
    kubectl -n "$1" get "$2" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null
}
# What is left of `managed`, each with its finalizers and Ready message.
left() { # namespace
    local object
    for object in "${managed[@]}"; do
        kubectl -n "$1" get "$object" -o jsonpath='{.kind}/{.metadata.name} finalizers={.metadata.finalizers} deleting-since={.metadata.deletionTimestamp} ready={.status.conditions[?(@.type=="Ready")].message}{"\n"}' 2>/dev/null || true
    done
}

timings=()
for variant in kustomize-base kustomize-single-namespace helm-cluster-wide helm-namespaces; do
    case $variant in
        kustomize-base) id=kbase ;; kustomize-single-namespace) id=ksingle ;;
        helm-cluster-wide) id=hcluster ;; helm-namespaces) id=hns ;;
    esac
    prefix=$run-$id operator_ns=$run-$id-system watched=$run-$id-work
    mkdir -p "$work/$variant"
    start=$SECONDS

    # Install: the variant's RBAC only, and the key Secret its Deployment names.
    render "$variant" "$operator_ns" "$watched" "$prefix" >"$work/$variant/all.yaml"
    tests/install/docs.py keep ServiceAccount Role RoleBinding ClusterRole ClusterRoleBinding \
        <"$work/$variant/all.yaml" >"$work/$variant/rbac.yaml"
    if grep -q 'gpucloud-system\|gpu-workloads' "$work/$variant/rbac.yaml"; then
        fail "the RBAC still names gpucloud-system or gpu-workloads after the renaming"
    fi
    namespaces+=("$operator_ns" "$watched")
    kubectl create namespace "$operator_ns" >/dev/null
    kubectl create namespace "$watched" >/dev/null
    installed+=("$work/$variant/rbac.yaml")
    kubectl apply --server-side -f "$work/$variant/rbac.yaml" >/dev/null
    kubectl -n "$operator_ns" create secret generic gpucloud-api-key --from-literal=apiKey=k >/dev/null
    sa=$(tests/install/docs.py keep ServiceAccount <"$work/$variant/rbac.yaml" | tests/install/docs.py list | cut -d' ' -f2)
    tests/install/token-kubeconfig.sh "$operator_ns" "$sa" "$work/$variant/kubeconfig"
    # Every kind's CRD, by name: the operator reads it before deleting a remote object and
    # deletes nothing while it may not (see docs/operations.md, "Uninstall").
    for kind in "${kinds[@]}"; do
        [ "$(can "system:serviceaccount:$operator_ns:$sa" default get "customresourcedefinitions.apiextensions.k8s.io/$kind")" = yes ] \
            || fail "the ServiceAccount may not get the CustomResourceDefinition $kind"
    done

    # Run: the Deployment's flags, with the emulator's URLs, quick intervals (the orphan
    # census reads the released record every 2 s) and its namespace's Lease as in the Pod.
    # The census says why it skipped a reading only at debug level. /metrics is read here in
    # plain HTTP on loopback (--metrics-auth=none); its token check is tests/e2e_metrics_auth.rs's.
    # The conversion webhook is served as the Deployment serves it (its certificate in a
    # Secret of the operator namespace, the CRDs patched by name), but pointed at by URL on
    # loopback instead of through the Service, which has no endpoints here: the variant's
    # objects are written in v1alpha1, so the webhook the CRDs name must answer. The
    # control plane's own webhook points them back within a second.
    metrics=$(free_port) hook=$(free_port)
    overrides=(--rest-url=http://127.0.0.1:$port/v1 --graphql-url=http://127.0.0.1:$port/graphql
        --serverless-url=http://127.0.0.1:$port/v2 --registry-url=http://127.0.0.1:$port
        --api-url=http://127.0.0.1:$port/v2 --metrics-addr=127.0.0.1:$metrics --metrics-auth=none
        --leader-election-namespace=$operator_ns --poll-interval=2s --progress-interval=1s
        --orphan-census-interval=2s --conversion-webhook-addr=127.0.0.1:$hook
        --conversion-webhook-url=https://127.0.0.1:$hook/convert)
    replaced=(--conversion-webhook-service)
    mapfile -t deployment_args < <(tests/install/docs.py args <"$work/$variant/all.yaml")
    [[ " ${deployment_args[*]} " == *" --conversion-webhook-service="* ]] \
        || fail "the Deployment serves no conversion webhook behind its Service: this override is stale"
    flags=()
    for arg in "${deployment_args[@]}"; do
        [ "$arg" = run ] && continue
        [[ " ${overrides[*]%%=*} ${replaced[*]} " == *" ${arg%%=*} "* ]] || flags+=("$arg")
    done
    KUBECONFIG=$work/$variant/kubeconfig POD_NAME=$prefix \
        RUST_LOG=info,kube_lease_manager=warn,gpucloud_policy::orphans=debug \
        "$bin" run "${flags[@]}" "${overrides[@]}" >"$work/$variant/operator.log" 2>&1 &
    operator=$!; pids+=($operator)
    installed_at=$SECONDS

    objects | kubectl -n "$watched" apply -f - >/dev/null
    for object in "${managed[@]}"; do
        until [ "$(ready "$watched" "$object")" = True ]; do
            kill -0 $operator 2>/dev/null || fail "the operator stopped"
            [ $((SECONDS - installed_at)) -lt $READY_TIMEOUT ] || fail "$object not Ready in ${READY_TIMEOUT} s: $(left "$watched")"
            sleep 0.3
        done
    done
    for pair in "${written[@]}"; do
        config_map=${pair%%:*} owner=${pair#*:}
        until owned_by=$(kubectl -n "$watched" get "$config_map" 2>/dev/null \
            -o jsonpath='{.metadata.ownerReferences[?(@.controller==true)].uid}'); do
            [ $((SECONDS - installed_at)) -lt $READY_TIMEOUT ] || fail "$config_map not written in ${READY_TIMEOUT} s"
            sleep 0.3
        done
        [ "$owned_by" = "$(kubectl -n "$watched" get "$owner" -o jsonpath='{.metadata.uid}')" ] \
            || fail "$config_map is not owned by $owner"
    done
    ready_at=$SECONDS
    volume_id=$(kubectl -n "$watched" get networkvolumes.gpucloud.io kept -o jsonpath='{.status.id}')

    kubectl -n "$watched" delete "${managed[@]}" --wait=false >/dev/null
    until [ -z "$(left "$watched")" ]; do
        [ $((SECONDS - ready_at)) -lt $GONE_TIMEOUT ] || fail "still there ${GONE_TIMEOUT} s after the delete:
$(left "$watched")"
        sleep 0.3
    done
    gone_at=$SECONDS

    # The volume released on purpose is in the record, in the operator's namespace.
    kubectl -n "$operator_ns" get configmaps -l gpucloud.io/record=released -o json >"$work/$variant/record.json"
    python3 - "$work/$variant/record.json" "networkvolume.$volume_id" "$watched/kept" <<'PY' \
        || fail "the released record in $operator_ns lacks networkvolume.$volume_id"
import json, sys
items, key, owner = json.load(open(sys.argv[1]))["items"], sys.argv[2], sys.argv[3]
sys.exit(0 if any((cm.get("data") or {}).get(key) == owner for cm in items) else 1)
PY
    # A census that read the record (a list) sets its gauge; one refused sets nothing.
    until curl -fs "http://127.0.0.1:$metrics/metrics" | grep -q '^gpucloud_orphans{kind="NetworkVolume"}'; do
        [ $((SECONDS - gone_at)) -lt $CENSUS_TIMEOUT ] || fail "no orphan census read the released record in ${CENSUS_TIMEOUT} s"
        sleep 0.3
    done
    census_at=$SECONDS
    kill $operator; wait $operator 2>/dev/null || true
    # "403" as a whole word: the log also carries ephemeral port numbers such as 40391.
    refused='forbidden|\b403\b'
    if grep -Eqi "$refused" "$work/$variant/operator.log"; then
        fail "the operator was refused something:
$(grep -Ei "$refused" "$work/$variant/operator.log" | head -n 20)"
    fi
    grep -q 'leading: this process holds the Lease' "$work/$variant/operator.log" \
        || fail "the operator never took its Lease"

    # The user roles, through the built-in edit and view.
    for kind in "${kinds[@]}"; do
        wait_can yes user-b "$users_b" create "$kind"
        wait_can yes user-c "$users_b" list "$kind"
        for verb in get list; do
            [ "$(can user-b "$users_a" $verb "$kind")" = no ] || fail "user-b may $verb $kind in $users_a"
        done
        [ "$(can user-b "$users_b" patch "$kind" --subresource=status)" = no ] || fail "user-b may patch $kind status"
        [ "$(can user-c "$users_b" create "$kind")" = no ] || fail "user-c (view) may create $kind"
    done
    users_at=$SECONDS

    # Uninstall, and wait until the built-in roles no longer carry this variant's rights, so
    # that the next variant's are its own.
    kubectl delete -f "$work/$variant/rbac.yaml" --ignore-not-found --wait=false >/dev/null
    kubectl delete namespace "$operator_ns" "$watched" --wait=false >/dev/null
    wait_can no user-b "$users_b" create "${kinds[0]}"
    wait_can no user-c "$users_b" list "${kinds[0]}"
    timings+=("$(printf '%-28s %3d s: installed %2d s, Ready %2d s, deleted %2d s, census %2d s, user roles %2d s, uninstalled %2d s' \
        "$variant" $((SECONDS - start)) $((installed_at - start)) $((ready_at - installed_at)) \
        $((gone_at - ready_at)) $((census_at - gone_at)) $((users_at - census_at)) $((SECONDS - users_at)))")
    log "ok   ${timings[-1]}"
done
log "ok: every variant converged, deleted and released with only its own RBAC"
printf '  %s\n' "${timings[@]}" >&2
