"""What the node scenarios share: kubectl and helm, waits, the emulator's admin view, and
watches that stamp what they see with this machine's clock (the operator's pods run on the
same machine, so the stamps and the Lease's times compare)."""

import json
import os
import ssl
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPERATOR_NS = "gpucloud-system"
LEASE = "gpucloud-operator"
DEPLOYMENT = "gpucloud-operator"
GPUCLOUD_KINDS = ["pods.gpucloud.io", "clusters.gpucloud.io", "endpoints.gpucloud.io",
                  "networkvolumes.gpucloud.io"]


def log(msg):
    print(f"[node] {msg}", flush=True)


class Failed(Exception):
    pass


def run(*args, check=True, input=None, timeout=300):
    proc = subprocess.run(args, capture_output=True, text=True, input=input, timeout=timeout)
    if check and proc.returncode != 0:
        raise Failed(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def kubectl(*args, **kw):
    return run("kubectl", *args, **kw)


def kubectl_json(*args):
    return json.loads(kubectl(*args, "-o", "json"))


def wait_for(what, timeout, probe, every=0.5):
    """Calls `probe` until it returns something truthy; fails naming `what` after `timeout`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            got = probe()
            if got:
                return got
        except Failed as err:
            last = err
        time.sleep(every)
    raise Failed(f"timed out after {timeout} s waiting for {what}" + (f": {last}" if last else ""))


def ready(obj):
    """Whether an object (a gpucloud.io kind, or a Pod) has condition Ready True."""
    conds = obj.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


def gpucloud_objects(namespace):
    """Every gpucloud.io Pod, Cluster, Endpoint and NetworkVolume of `namespace`."""
    items = kubectl_json("get", ",".join(GPUCLOUD_KINDS), "-n", namespace)["items"]
    return items


def wait_all_ready(namespace, timeout=120):
    def probe():
        items = gpucloud_objects(namespace)
        waiting = [f"{o['kind']}/{o['metadata']['name']}" for o in items if not ready(o)]
        return bool(items) and not waiting
    wait_for(f"every gpucloud.io object of {namespace} to be Ready", timeout, probe, every=1)


def operator_pods():
    return kubectl_json("get", "pods", "-n", OPERATOR_NS,
                        "-l", "app.kubernetes.io/name=gpucloud-operator")["items"]


def lease_holder():
    out = kubectl("get", "lease", LEASE, "-n", OPERATOR_NS, "-o",
                  "jsonpath={.spec.holderIdentity}", check=False)
    return out.strip() or None


class Emulator:
    """The platform: the emulator on this machine, over HTTPS with a test CA."""

    def __init__(self, admin_url, admin_token, ca_file):
        self.base = admin_url
        self.token = admin_token
        # Reached by address (this machine does not resolve the platform's test host name);
        # the certificate still has to chain to the test CA.
        self.ctx = ssl.create_default_context(cafile=ca_file)
        self.ctx.check_hostname = False

    def get(self, path):
        req = urllib.request.Request(self.base + path,
                                     headers={"x-emulator-admin-token": self.token})
        with urllib.request.urlopen(req, context=self.ctx, timeout=10) as resp:
            return json.loads(resp.read())

    def calls(self):
        return self.get("/_emulator/calls")

    def creates(self):
        """Create calls so far, by route."""
        return {k: v for k, v in self.calls().items() if k.startswith("POST /v2/")
                and k.count("/") == 2}

    def deletes(self):
        return {k: v for k, v in self.calls().items() if k.startswith("DELETE ")}


class Watch:
    """`kubectl get --watch` of one query, each line stamped with time.time() as read."""

    def __init__(self, *args):
        self.lines = []
        self.proc = subprocess.Popen(["kubectl", "get", "--watch", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append((time.time(), line.rstrip("\n")))

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


class Conversions:
    """Reads the gpucloud Pods of `namespace` in v1alpha1, the version they are not stored
    in, over and over until stopped: each read is a call of the conversion webhook, so a
    failed one is a moment when the apiserver found no replica serving it."""

    def __init__(self, namespace, every=0.25):
        self.namespace = namespace
        self.every = every
        self.done = 0
        self.failures = []
        self.running = True
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while self.running:
            try:
                kubectl("get", "pods.v1alpha1.gpucloud.io", "-n", self.namespace, "-o", "name", timeout=30)
            except (Failed, subprocess.TimeoutExpired) as err:
                self.failures.append(str(err).strip().splitlines()[-1])
            self.done += 1
            time.sleep(self.every)

    def stop(self):
        self.running = False
        self.thread.join()


class Handover:
    """Watches the operator's pods and its Lease through a rollout, and measures each Lease
    handover: from the moment the leading pod is told to stop (its deletionTimestamp
    appears, which is when the kubelet sends SIGTERM) to the Lease's new holder acquiring it
    (the Lease's acquireTime, written by the new leader)."""

    def __init__(self):
        self.pods = Watch("pods", "-n", OPERATOR_NS, "-l", "app.kubernetes.io/name=gpucloud-operator",
                          "-o", "jsonpath={.metadata.name} {.metadata.deletionTimestamp}{\"\\n\"}")
        self.lease = Watch("lease", LEASE, "-n", OPERATOR_NS, "-o",
                           "jsonpath={.spec.holderIdentity} {.spec.acquireTime}{\"\\n\"}")

    def stop(self):
        self.pods.stop()
        self.lease.stop()

    def measured(self):
        """[(old pod, new holder, seconds)] for each change of holder seen."""
        terminating = {}
        for stamp, line in self.pods.lines:
            parts = line.split()
            if len(parts) == 2 and parts[0] not in terminating:
                terminating[parts[0]] = stamp
        out = []
        previous = None
        for _, line in self.lease.lines:
            parts = line.split()
            holder = parts[0] if parts else None
            if not holder or holder == previous:
                continue
            if previous is not None:
                old_pod = previous if previous in terminating else pod_of(previous)
                acquired = parse_time(parts[1]) if len(parts) > 1 else None
                if old_pod in terminating and acquired is not None:
                    out.append((old_pod, holder, acquired - terminating[old_pod]))
                else:
                    out.append((old_pod, holder, None))
            previous = holder
        return out


def pod_of(identity):
    """The pod of a Lease holder identity that is not the pod's name (`POD-NAME-xxxxxxxx`)."""
    return identity.rsplit("-", 1)[0]


def parse_time(text):
    """An RFC 3339 time with microseconds (a Lease's MicroTime) as a Unix time."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def fail(msg):
    print(f"[node] FAILED: {msg}", file=sys.stderr, flush=True)
    sys.exit(1)
