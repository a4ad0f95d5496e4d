"""The platform's official Python SDK (`runpod` from PyPI, unchanged) against the emulator.

Run by tests/python/run.sh, which starts the emulator and sets RUNPOD_API_BASE_URL,
RUNPOD_ENDPOINT_BASE_URL, EMULATOR_BASE_URL and EMULATOR_API_KEY before Python starts (the
SDK reads RUNPOD_ENDPOINT_BASE_URL at import time).
"""

import os
import time

import pytest
import requests
import runpod

BASE = os.environ["EMULATOR_BASE_URL"]
KEY = os.environ["EMULATOR_API_KEY"]
runpod.api_key = KEY

GPU = "NVIDIA A40"


def rest(method, path, body=None):
    resp = requests.request(
        method, f"{BASE}/v1{path}", json=body, headers={"Authorization": f"Bearer {KEY}"}, timeout=10
    )
    resp.raise_for_status()
    return resp.json() if resp.content else None


def new_endpoint(**extra):
    body = {
        "name": f"sdk-{time.monotonic_ns()}",
        "templateId": "tmpl-worker-base",
        "gpuTypeIds": [GPU],
        "workersMin": 0,
        "workersMax": 2,
    }
    body.update(extra)
    return rest("POST", "/endpoints", body)["id"]


@pytest.fixture(scope="module")
def endpoint():
    return runpod.Endpoint(new_endpoint())


# ------------------------------------------------------------------ GraphQL: GPUs


def test_get_gpus_lists_the_catalog():
    gpus = runpod.get_gpus()
    ids = {g["id"] for g in gpus}
    assert {"NVIDIA GeForce RTX 4090", "NVIDIA A40", "NVIDIA A100 80GB PCIe", "NVIDIA H100 80GB HBM3"} <= ids
    assert all(isinstance(g["memoryInGb"], int) and g["displayName"] for g in gpus)


def test_get_gpu_returns_one_type_with_prices():
    gpu = runpod.get_gpu(GPU)
    assert gpu["id"] == GPU
    assert gpu["memoryInGb"] == 48
    assert gpu["securePrice"] > 0
    assert gpu["lowestPrice"]["uninterruptablePrice"] > 0
    with pytest.raises(ValueError):
        runpod.get_gpu("NVIDIA Imaginary 9000")


# ------------------------------------------------------------------ GraphQL: pods


def test_pod_lifecycle():
    pod = runpod.create_pod(
        "sdk-pod", "runpod/pytorch:2.4", GPU, ports="8888/http,22/tcp", env={"HELLO": "world"}
    )
    pod_id = pod["id"]
    assert pod["imageName"] == "runpod/pytorch:2.4"
    assert "HELLO=world" in pod["env"]
    assert pod["machine"]["podHostId"].startswith(pod_id)

    listed = {p["id"]: p for p in runpod.get_pods()}
    assert pod_id in listed
    assert listed[pod_id]["desiredStatus"] == "RUNNING"
    assert listed[pod_id]["machine"]["gpuDisplayName"] == "A40"

    got = runpod.get_pod(pod_id)
    assert got["id"] == pod_id and got["name"] == "sdk-pod"
    assert got["ports"] == "8888/http,22/tcp"
    assert got["gpuCount"] == 1

    stopped = runpod.stop_pod(pod_id)
    assert stopped == {"id": pod_id, "desiredStatus": "EXITED"}
    assert runpod.get_pod(pod_id)["runtime"] is None

    resumed = runpod.resume_pod(pod_id, 1)
    assert resumed["id"] == pod_id and resumed["desiredStatus"] == "RUNNING"

    runpod.terminate_pod(pod_id)
    # As the spec's error table says, asking for a pod that is gone is an error the SDK
    # raises, not an empty answer.
    with pytest.raises(runpod.error.QueryError, match="pod not found"):
        runpod.get_pod(pod_id)
    assert pod_id not in {p["id"] for p in runpod.get_pods()}


def test_capacity_errors_reach_the_sdk_as_query_errors():
    requests.post(
        f"{BASE}/_emulator/stock", json={"gpuTypeId": "NVIDIA H100 80GB HBM3", "count": 0}, timeout=10
    ).raise_for_status()
    with pytest.raises(runpod.error.QueryError, match="no longer any instances available"):
        runpod.create_pod("none", "img", "NVIDIA H100 80GB HBM3")


def test_wrong_key_is_an_authentication_error():
    with pytest.raises(runpod.error.AuthenticationError):
        runpod.get_gpus(api_key="not-the-key")


# ------------------------------------------------------------------ job API


def test_run_sync_returns_the_output(endpoint):
    assert endpoint.run_sync({"output": {"answer": 42}}) == {"answer": 42}
    # Without `output`, the built-in handler echoes the input.
    assert endpoint.run_sync({"input": {"prompt": "hi"}}) == {"prompt": "hi"}


def test_run_status_output(endpoint):
    job = endpoint.run({"sleep_ms": 300, "output": "done"})
    assert job.status() in {"IN_QUEUE", "IN_PROGRESS", "COMPLETED"}
    assert job.output(timeout=30) == "done"
    assert job.status() == "COMPLETED"


def test_failed_job_status(endpoint):
    job = endpoint.run({"fail": "bad input"})
    deadline = time.time() + 20
    while job.status() not in {"FAILED", "COMPLETED"} and time.time() < deadline:
        time.sleep(0.2)
    assert job.status() == "FAILED"


def test_stream_yields_every_chunk_in_order(endpoint):
    job = endpoint.run({"stream": ["a", "b", {"c": 3}], "sleep_ms": 1500})
    assert list(job.stream()) == ["a", "b", {"c": 3}]


def test_cancel(endpoint):
    job = endpoint.run({"sleep_ms": 600000})
    result = job.cancel()
    assert result == {"id": job.job_id, "status": "CANCELLED"}
    assert job.status() == "CANCELLED"


def test_health(endpoint):
    health = endpoint.health()
    assert set(health["jobs"]) == {"completed", "failed", "inProgress", "inQueue", "retried"}
    assert set(health["workers"]) == {"idle", "running"}
    assert health["jobs"]["completed"] >= 1


def test_purge_queue():
    # No workers: jobs stay queued until purged.
    stuck = runpod.Endpoint(new_endpoint(workersMax=0))
    jobs = [stuck.run({"n": i}) for i in range(3)]
    assert all(j.status() == "IN_QUEUE" for j in jobs)
    assert stuck.purge_queue() == {"removed": 3, "status": "completed"}
    assert stuck.health()["jobs"]["inQueue"] == 0
