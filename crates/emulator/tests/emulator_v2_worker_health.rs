//! Serverless workers' health as the REST v2 document reports it, end to end over HTTP: a
//! load-balancing endpoint's request URLs, and workers whose container cannot start (an
//! image or a registry login failed by the test) listed as INITIALIZING (never UNHEALTHY,
//! which the document keeps for a worker failing its health checks once up), taking no job,
//! and saying why only in their system log lines, once per attempt on the emulated clock.

mod common;

use common::serverless::*;
use common::*;
use gpucloud_emulator::StartFailure;
use serde_json::{Value, json};

/// The failure line's cadence, in emulated milliseconds.
const REPEAT_MS: u64 = 20_000;

/// The `line`s of a worker's log (`query` selects), oldest first.
async fn worker_log(e: &Emu, endpoint: &str, worker: &str, query: &str) -> Vec<String> {
    let url = format!(
        "{}/v2/serverless/{endpoint}/workers/{worker}/logs{query}",
        e.emu.base_url()
    );
    let r = e.http.get(url).bearer_auth(KEY).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| {
            let v: Value = serde_json::from_str(d).unwrap();
            v["line"].as_str().unwrap().to_string()
        })
        .collect()
}

async fn workers(e: &Emu, id: &str) -> Value {
    get(e, &format!("/serverless/{id}/workers")).await
}

#[tokio::test]
async fn a_load_balancer_whose_image_is_missing_has_its_workers_initializing() {
    let e = start_default().await;
    e.fail_image("acme/server:404", StartFailure::ImageNotFound)
        .await;
    let lb = |image: &str| {
        gpu_body(
            json!({"type": "LOAD_BALANCER", "image": image, "env": {"PORT": "8000", "PORT_HEALTH": "8001"},
                        "scaling": {"type": "REQUEST_COUNT", "requestCount": 1},
                        "workers": {"min": 1, "max": 2, "idleTimeout": 5}}),
        )
    };
    let broken = create(&e, lb("acme/server:404")).await;
    let fine = create(&e, lb("acme/server:200")).await;
    let id = broken["id"].as_str().unwrap().to_string();
    // One URL per endpoint; the ports stay inside the worker, the health path defaults.
    let base = format!("{}/lb/{id}", e.emu.base_url());
    assert_eq!(
        broken["requestUrls"],
        json!({"base": base, "health": format!("{base}/ping")})
    );
    assert_ne!(fine["requestUrls"]["base"], broken["requestUrls"]["base"]);

    let list = workers(&e, &id).await;
    assert_eq!(
        list["summary"],
        json!({"running": 0, "idle": 0, "initializing": 1, "throttled": 0, "unhealthy": 0, "total": 1})
    );
    let w = &list["workers"][0];
    assert_eq!(w["status"], "INITIALIZING");
    assert!(
        w["uptimeSeconds"].is_null() && w["startedAt"].is_null(),
        "{w}"
    );
    // It was placed all the same: the document nulls these only until placement.
    assert!(
        w["gpuTypeId"].is_string() && w["dataCenterId"].is_string(),
        "{w}"
    );
    let fine_list = workers(&e, fine["id"].as_str().unwrap()).await;
    assert_eq!(fine_list["workers"][0]["status"], "IDLE");
    assert!(fine_list["workers"][0]["uptimeSeconds"].is_u64());

    let worker = w["id"].as_str().unwrap();
    let wanted = "failed to pull image \"acme/server:404\": manifest unknown: manifest for acme/server:404 not found";
    let lines = worker_log(&e, &id, worker, "?source=system").await;
    assert_eq!(lines.last().map(String::as_str), Some(wanted), "{lines:?}");
    assert!(
        lines[1].contains("pulling image acme/server:404"),
        "{lines:?}"
    );
    assert!(
        worker_log(&e, &id, worker, "?source=container")
            .await
            .is_empty(),
        "a container that never started writes nothing"
    );
    // One more line per attempt while it keeps failing, and still not up.
    e.advance(2 * REPEAT_MS).await;
    let later = worker_log(&e, &id, worker, "?source=system").await;
    assert_eq!(
        later.iter().filter(|l| *l == wanted).count(),
        lines.iter().filter(|l| *l == wanted).count() + 2,
        "{later:?}"
    );
    assert_eq!(
        workers(&e, &id).await["workers"][0]["status"],
        "INITIALIZING"
    );
}

#[tokio::test]
async fn a_refused_registry_login_holds_the_jobs_until_the_endpoint_drops_it() {
    let e = start_default().await;
    let registry = e.registry_credential().await;
    let ep = create(
        &e,
        gpu_body(
            json!({"image": "ghcr.io/acme/worker:1", "registry": registry,
                        "workers": {"min": 0, "max": 1, "idleTimeout": 5}}),
        ),
    )
    .await;
    let id = ep["id"].as_str().unwrap().to_string();
    // Switched on after the create: the endpoint's workers from now on cannot log in.
    e.emu.admin().fail_registry_login(&registry).await.unwrap();
    let job = e.run(&id, json!({"input": {"n": 1}})).await;
    let list = loop {
        let list = workers(&e, &id).await;
        if list["summary"]["total"] == 1 {
            break list;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert_eq!(list["summary"]["initializing"], 1, "{list}");
    let worker = list["workers"][0]["id"].as_str().unwrap().to_string();
    let lines = worker_log(&e, &id, &worker, "?source=system").await;
    assert_eq!(
        lines.last().map(String::as_str),
        Some(
            "failed to pull image \"ghcr.io/acme/worker:1\": unauthorized: authentication required"
        ),
        "{lines:?}"
    );
    // The job waits: the health report (the seed spec's two counts) has no worker ready,
    // and the workers list says the one there is initializing.
    e.advance(REPEAT_MS).await;
    assert_eq!(e.status(&id, &job).await.body["status"], "IN_QUEUE");
    let health = e.health(&id).await;
    assert_eq!(
        health["workers"],
        json!({"idle": 0, "running": 0}),
        "{health}"
    );
    assert_eq!(workers(&e, &id).await["summary"]["initializing"], 1);

    // Without the credential the image pulls: the waiting worker takes the job.
    patch(&e, &id, json!({"registry": null})).await;
    let done = e.wait_final(&id, &job).await;
    assert_eq!(done["status"], "COMPLETED", "{done}");
    let list = workers(&e, &id).await;
    assert_eq!(list["summary"]["initializing"], 0, "{list}");
}

/// `"12.8"` as `(12, 8)`, to compare CUDA versions numerically.
fn cuda(v: &str) -> (u32, u32) {
    let (major, minor) = v.split_once('.').unwrap_or((v, "0"));
    (major.parse().unwrap(), minor.parse().unwrap())
}

#[tokio::test]
async fn a_worker_on_a_driver_too_old_names_a_cuda_above_every_host_of_its_type() {
    let e = start_default().await;
    e.fail_image("acme/cuda13:1", StartFailure::CudaTooOld)
        .await;
    let ep = create(
        &e,
        gpu_body(
            json!({"image": "acme/cuda13:1", "workers": {"min": 1, "max": 1, "idleTimeout": 5}}),
        ),
    )
    .await;
    let id = ep["id"].as_str().unwrap();
    let list = workers(&e, id).await;
    let w = &list["workers"][0];
    assert_eq!(w["status"], "INITIALIZING", "{list}");
    let gpu = w["gpuTypeId"].as_str().unwrap().to_string();
    let lines = worker_log(&e, id, w["id"].as_str().unwrap(), "?source=system").await;
    let line = lines.last().unwrap();
    let needed = line
        .strip_prefix("failed to start container: nvidia-container-cli: requirement error: unsatisfied condition: cuda>=")
        .and_then(|rest| rest.strip_suffix(", please update your driver to a newer version"))
        .unwrap_or_else(|| panic!("{line}"));
    let catalog = get(
        &e,
        &format!(
            "/catalog/gpus/{}?include=AVAILABILITY&product=SERVERLESS",
            gpu.replace(' ', "%20")
        ),
    )
    .await;
    let hosts: Vec<&str> = catalog["cudaVersions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert!(!hosts.is_empty(), "{catalog}");
    assert!(
        hosts.iter().all(|h| cuda(h) < cuda(needed)),
        "{needed} vs {hosts:?}"
    );
}
