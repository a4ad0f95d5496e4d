"""The operator as users install it, on a real node: the image built by scripts/image.sh,
the kustomize base, the single-namespace overlay and the Helm chart (cluster-wide and
`namespaces:`), each installed, used, upgraded or rolled back, and uninstalled, with the
emulator as the platform. Run by tests/node/run.sh, which brings the node up and the
emulator with it and passes what they are.

Every install points the operator at the platform the way a user behind a proxy would:
a host alias for the platform's name, and a CA bundle (the system's plus the platform's
test CA) mounted over /etc/ssl/certs. So each scenario also proves that, in the image,
the platform's host name resolves and its certificate verifies."""

import argparse
import os
import re
import tempfile
import threading
import time

from cluster import (OPERATOR_NS, ROOT, DEPLOYMENT, Conversions, Emulator, Failed, Handover, fail,
                     gpucloud_objects, kubectl, kubectl_json, lease_holder, log,
                     operator_pods, ready, run, wait_all_ready, wait_for)

IMAGE = "ghcr.io/gpucloud/gpucloud-operator"
RELEASE = "gpucloud-operator"
# The examples that need nothing but the emulator's built-in catalog.
EXAMPLES = ["cpu-pod.yaml", "gpu-pod-fallback.yaml", "training-cluster.yaml",
            "grow-volume.yaml", "endpoint-on-volume.yaml", "lb-endpoint.yaml",
            "team-budget.yaml"]
HANDOVER_LIMIT_S = 5.0

figures = []


def figure(name, value):
    figures.append((name, value))
    log(f"{name}: {value}")


class Platform:
    def __init__(self, args):
        self.host = args.platform_host
        self.ip = args.platform_ip
        self.url = args.platform_url
        self.api_key = args.api_key
        self.bundle = args.ca_bundle
        self.emulator = Emulator(args.platform_admin_url, args.admin_token, args.platform_ca)


def prepare_operator_namespace(platform):
    """What a user does before installing: the namespace and the API key's Secret."""
    wait_for(f"namespace {OPERATOR_NS} to be gone", 120,
             lambda: not kubectl("get", "namespace", OPERATOR_NS, "--ignore-not-found", "-o", "name").strip())
    kubectl("create", "namespace", OPERATOR_NS)
    kubectl("label", "namespace", OPERATOR_NS, "pod-security.kubernetes.io/enforce=restricted")
    kubectl("create", "secret", "generic", "gpucloud-api-key", "-n", OPERATOR_NS,
            f"--from-literal=apiKey={platform.api_key}")
    kubectl("create", "configmap", "platform-ca", "-n", OPERATOR_NS,
            f"--from-file=ca-certificates.crt={platform.bundle}")


def kustomize_overlay(work, name, base, platform, tag, components=()):
    """A user's kustomization over one of deploy/'s: the image tag, and the platform's
    address and CA bundle."""
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    rel = os.path.relpath(os.path.join(ROOT, base), d)
    comps = "".join(f"  - {os.path.relpath(os.path.join(ROOT, c), d)}\n" for c in components)
    with open(os.path.join(d, "kustomization.yaml"), "w") as f:
        f.write(f"""apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - {rel}
{"components:" + chr(10) + comps if comps else ""}images:
  - name: {IMAGE}
    newTag: "{tag}"
patches:
  - target: {{kind: Deployment, name: {DEPLOYMENT}}}
    patch: |
      - op: add
        path: /spec/template/spec/hostAliases
        value: [{{ip: "{platform.ip}", hostnames: ["{platform.host}"]}}]
      - op: add
        path: /spec/template/spec/containers/0/args/-
        value: --api-url={platform.url}/v2
      - op: add
        path: /spec/template/spec/containers/0/args/-
        value: --serverless-url={platform.url}/v2
      - op: add
        path: /spec/template/spec/containers/0/args/-
        value: --registry-url={platform.url}
      - op: add
        path: /spec/template/spec/volumes/-
        value: {{name: platform-ca, configMap: {{name: platform-ca}}}}
      - op: add
        path: /spec/template/spec/containers/0/volumeMounts/-
        value: {{name: platform-ca, mountPath: /etc/ssl/certs, readOnly: true}}
""")
    return d


def helm_values(platform):
    return ["--set", f"apiUrl={platform.url}/v2",
            "--set", f"extraArgs[0]=--serverless-url={platform.url}/v2",
            "--set", f"extraArgs[1]=--registry-url={platform.url}",
            "--set", f"hostAliases[0].ip={platform.ip}",
            "--set", f"hostAliases[0].hostnames[0]={platform.host}",
            "--set", "extraVolumes[0].name=platform-ca",
            "--set", "extraVolumes[0].configMap.name=platform-ca",
            "--set", "extraVolumeMounts[0].name=platform-ca",
            "--set", "extraVolumeMounts[0].mountPath=/etc/ssl/certs",
            "--set", "extraVolumeMounts[0].readOnly=true"]


def wait_operator_ready(replicas, timeout=180):
    kubectl("rollout", "status", f"deployment/{DEPLOYMENT}", "-n", OPERATOR_NS, f"--timeout={timeout}s")

    def probe():
        pods = [p for p in operator_pods() if not p["metadata"].get("deletionTimestamp")]
        return len(pods) == replicas and all(ready(p) for p in pods)
    wait_for(f"{replicas} Ready operator pod(s)", timeout, probe)
    wait_for("the Lease to have a holder", 60, lease_holder)


def apply_examples(namespace, files):
    kubectl("create", "namespace", namespace, check=False)
    for name in files:
        kubectl("apply", "--server-side", "-n", namespace, "-f", os.path.join(ROOT, "examples", name))


def scrape_metrics():
    """Reads /metrics through the operator pod's port with a token allowed to (the
    gpucloud-metrics-reader role), and checks that no token gets no metrics."""
    kubectl("create", "serviceaccount", "scraper", "-n", "default", check=False)
    kubectl("create", "clusterrolebinding", "node-test-scraper", "--clusterrole=gpucloud-metrics-reader",
            "--serviceaccount=default:scraper", check=False)
    token = kubectl("create", "token", "scraper", "-n", "default").strip()
    pod = next(p for p in operator_pods() if ready(p))
    url = f"https://{pod['status']['podIP']}:8080/metrics"
    body = wait_for("/metrics to answer the scraper", 30, lambda: run(
        "curl", "-sfk", "-H", f"Authorization: Bearer {token}", url, check=False))
    if "gpucloud_" not in body:
        raise Failed(f"/metrics of {url} has no gpucloud_ series")
    code = run("curl", "-sk", "-o", "/dev/null", "-w", "%{http_code}", url, check=False)
    if code != "401":
        raise Failed(f"/metrics without a token answered {code}, want 401")
    figure("metrics scraped through the pod's port", f"{len(body.splitlines())} lines")


def check_uninstall_kept(platform, namespaces, before_deletes):
    """After an uninstall: the CRDs and every object stay, and the platform got no delete."""
    for crd in ["pods.gpucloud.io", "networkvolumes.gpucloud.io"]:
        kubectl("get", "crd", crd)
    for ns in namespaces:
        if not gpucloud_objects(ns):
            raise Failed(f"the objects of {ns} are gone after the uninstall")
    deletes = platform.emulator.deletes()
    if deletes != before_deletes:
        raise Failed(f"the uninstall deleted remote objects: {deletes} (before: {before_deletes})")


def scenario_kustomize_base(work, platform, tag):
    log("== kustomize: the base, every namespace")
    prepare_operator_namespace(platform)
    overlay = kustomize_overlay(work, "kustomize-base", "deploy", platform, tag)
    start = time.monotonic()
    kubectl("apply", "--server-side", "-k", overlay)
    wait_operator_ready(1)
    figure("kustomize base: applied to Ready", f"{time.monotonic() - start:.1f} s")
    apply_examples("demo", EXAMPLES)
    start = time.monotonic()
    wait_all_ready("demo", timeout=180)
    figure("examples Ready", f"{len(gpucloud_objects('demo'))} objects in {time.monotonic() - start:.1f} s")
    scrape_metrics()
    deletes = platform.emulator.deletes()
    kubectl("delete", "-k", overlay, "--wait", "--timeout=120s")
    check_uninstall_kept(platform, ["demo"], deletes)
    kubectl("delete", "namespace", OPERATOR_NS, "--ignore-not-found", "--wait", "--timeout=120s")


def rollout(platform, name, action, replicas, new_object_ns):
    """Runs `action` (an upgrade or a rollback), applying a new object while it runs, and
    checks: the rollout completes, the Lease moves within the limit, the objects keep
    converging (the new one becomes Ready), nothing is created twice, and the conversion
    webhook answers throughout (the replica stopping still serves it while the Service
    moves to the other)."""
    creates = platform.emulator.creates()
    handover = Handover()
    conversions = Conversions(new_object_ns)
    obj = "during-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    obj = obj[:50].rstrip("-")
    manifest = f"""apiVersion: gpucloud.io/v1beta1
kind: Pod
metadata:
  name: {obj}
spec:
  image: ubuntu:24.04
  args: sleep infinity
  cpu:
    flavors: [cpu3c]
    vcpuCount: 2
"""
    applied = []

    def apply_new_object():
        try:
            kubectl("apply", "--server-side", "-n", new_object_ns, "-f", "-", input=manifest)
            applied.append(True)
        except Failed as err:
            applied.append(err)
    applier = threading.Timer(2.0, apply_new_object)
    applier.start()
    start = time.monotonic()
    action()
    wait_operator_ready(replicas)
    took = time.monotonic() - start
    applier.join()
    if applied != [True]:
        raise Failed(f"{name}: could not apply {obj}: {applied}")
    wait_for(f"{obj} to be Ready", 120, lambda: ready(kubectl_json("get", "pods.gpucloud.io", obj, "-n", new_object_ns)))
    wait_all_ready(new_object_ns, timeout=120)
    time.sleep(2)
    handover.stop()
    conversions.stop()
    after = platform.emulator.creates()
    grown = {k: after.get(k, 0) - creates.get(k, 0) for k in after if after.get(k, 0) != creates.get(k, 0)}
    if grown != {"POST /v2/pods": 1}:
        raise Failed(f"{name}: creates during the rollout were {grown}, want exactly the one new pod")
    moves = handover.measured()
    figure(f"{name}: rollout", f"{took:.1f} s")
    figure(f"{name}: v1alpha1 reads through the webhook", f"{conversions.done}, {len(conversions.failures)} failed")
    if conversions.failures:
        raise Failed(f"{name}: {len(conversions.failures)} of {conversions.done} v1alpha1 reads failed, "
                     f"first: {conversions.failures[0]}")
    if not moves:
        raise Failed(f"{name}: the Lease never changed holder")
    for old, new, seconds in moves:
        if seconds is None:
            raise Failed(f"{name}: the Lease went from {old} to {new} without {old} being stopped")
        figure(f"{name}: Lease handover {old} -> {new}", f"{seconds * 1000:.0f} ms")
        if seconds > HANDOVER_LIMIT_S:
            raise Failed(f"{name}: the new leader took {seconds:.1f} s after SIGTERM, want at most {HANDOVER_LIMIT_S} s")


def helm(helm_bin, *args, timeout=600):
    return run(helm_bin, *args, timeout=timeout)


def scenario_helm_cluster(platform, helm_bin, tags):
    log("== Helm: every namespace; upgrade and rollback with 1 and 2 replicas")
    prepare_operator_namespace(platform)
    chart = os.path.join(ROOT, "deploy", "helm", "gpucloud-operator")
    base = ["--namespace", OPERATOR_NS, *helm_values(platform)]
    start = time.monotonic()
    helm(helm_bin, "install", RELEASE, chart, *base, "--set", f"image.tag={tags[0]}", "--wait", "--timeout", "5m")
    wait_operator_ready(1)
    figure("helm install: to Ready", f"{time.monotonic() - start:.1f} s")
    # The objects the kustomize install left are taken over (same install name), not made again.
    wait_all_ready("demo", timeout=120)
    for replicas in (1, 2):
        if replicas == 2:
            helm(helm_bin, "upgrade", RELEASE, chart, *base, "--set", f"image.tag={tags[0]}",
                 "--set", "replicas=2", "--wait", "--timeout", "5m")
            wait_operator_ready(2)
            kubectl("get", "poddisruptionbudget", RELEASE, "-n", OPERATOR_NS)
        rollout(platform, f"helm upgrade to {tags[1]}, {replicas} replica(s)",
                lambda: helm(helm_bin, "upgrade", RELEASE, chart, *base, "--set", f"image.tag={tags[1]}",
                             "--set", f"replicas={replicas}", "--wait", "--timeout", "5m"),
                replicas, "demo")
        rollout(platform, f"kubectl rollout undo, {replicas} replica(s)",
                lambda: kubectl("rollout", "undo", f"deployment/{DEPLOYMENT}", "-n", OPERATOR_NS),
                replicas, "demo")
    deletes = platform.emulator.deletes()
    helm(helm_bin, "uninstall", RELEASE, "--namespace", OPERATOR_NS, "--wait")
    check_uninstall_kept(platform, ["demo"], deletes)
    kubectl("delete", "namespace", OPERATOR_NS, "--ignore-not-found", "--wait", "--timeout=120s")


def scenario_kustomize_single_namespace(work, platform, tag):
    log("== kustomize: the single-namespace overlay")
    prepare_operator_namespace(platform)
    kubectl("create", "namespace", "gpu-workloads", check=False)
    overlay = kustomize_overlay(work, "kustomize-single", "deploy/overlays/single-namespace", platform, tag)
    kubectl("apply", "--server-side", "-k", overlay)
    wait_operator_ready(1)
    apply_examples("gpu-workloads", ["cpu-pod.yaml", "grow-volume.yaml"])
    wait_all_ready("gpu-workloads")
    deletes = platform.emulator.deletes()
    kubectl("delete", "-k", overlay, "--wait", "--timeout=120s")
    check_uninstall_kept(platform, ["gpu-workloads"], deletes)
    kubectl("delete", "namespace", OPERATOR_NS, "--ignore-not-found", "--wait", "--timeout=120s")


def scenario_helm_namespaces(platform, helm_bin, tag):
    log("== Helm: namespaces: [team-x]")
    prepare_operator_namespace(platform)
    kubectl("create", "namespace", "team-x", check=False)
    chart = os.path.join(ROOT, "deploy", "helm", "gpucloud-operator")
    helm(helm_bin, "install", RELEASE, chart, "--namespace", OPERATOR_NS, *helm_values(platform),
         "--set", f"image.tag={tag}", "--set", "namespaces={team-x}", "--wait", "--timeout", "5m")
    wait_operator_ready(1)
    apply_examples("team-x", ["cpu-pod.yaml", "grow-volume.yaml"])
    wait_all_ready("team-x")
    deletes = platform.emulator.deletes()
    helm(helm_bin, "uninstall", RELEASE, "--namespace", OPERATOR_NS, "--wait")
    check_uninstall_kept(platform, ["team-x"], deletes)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--helm", required=True)
    p.add_argument("--tags", required=True, help="two image tags: installed, then upgraded to")
    p.add_argument("--platform-url", required=True)
    p.add_argument("--platform-admin-url", required=True)
    p.add_argument("--platform-host", required=True)
    p.add_argument("--platform-ip", required=True)
    p.add_argument("--platform-ca", required=True)
    p.add_argument("--ca-bundle", required=True)
    p.add_argument("--api-key", required=True)
    p.add_argument("--admin-token", required=True)
    args = p.parse_args()
    tags = args.tags.split(",")
    platform = Platform(args)
    work = tempfile.mkdtemp(prefix="node-scenarios.")
    kubectl("apply", "--server-side", "-k", os.path.join(ROOT, "deploy", "crds"))
    kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
    started = time.monotonic()
    try:
        scenario_kustomize_base(work, platform, tags[0])
        scenario_helm_cluster(platform, args.helm, tags)
        scenario_kustomize_single_namespace(work, platform, tags[0])
        scenario_helm_namespaces(platform, args.helm, tags[0])
    except Failed as err:
        print(kubectl("get", "pods,events", "-n", OPERATOR_NS, check=False))
        fail(str(err))
    figure("node scenarios", f"{time.monotonic() - started:.0f} s")
    print("\nNode scenario figures:")
    for name, value in figures:
        print(f"  {name}: {value}")


if __name__ == "__main__":
    main()
