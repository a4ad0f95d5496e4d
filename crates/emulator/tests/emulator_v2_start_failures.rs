//! The failures a test switches on in the emulator, end to end over HTTP: a pod whose
//! container never starts (image not found, registry login refused, host CUDA too old)
//! stays STARTING and bills, and says why only on its system log stream, live; a stopped
//! pod whose host is full cannot start until the host is freed; a pod created above the
//! catalog's price bills what it was created at; CPU stock per data center.

mod common;

use std::time::Duration;

use common::*;
use futures::StreamExt;
use gpucloud_emulator::StartFailure;
use reqwest::Method;
use serde_json::{Value, json};

const RTX4090: &str = "NVIDIA GeForce RTX 4090";
const NO_CAPACITY: &str = "There are no longer any instances available with the requested specifications. Please refresh and try again.";
const HOST_FULL: &str = "There are not enough free GPUs on the host machine to start this pod";
/// The failure line's cadence, in emulated milliseconds.
const REPEAT_MS: u64 = 20_000;

fn pod(image: &str) -> Value {
    json!({"name": "p", "image": image, "gpu": {"id": RTX4090, "count": 1}})
}

async fn create(e: &Emu, body: Value) -> Value {
    let r = e.v2(Method::POST, "/pods", Some(body)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.body
}

async fn get_pod(e: &Emu, id: &str) -> Value {
    let r = e.v2(Method::GET, &format!("/pods/{id}"), None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

async fn act(e: &Emu, id: &str, action: &str) -> Resp {
    let body = json!({ "action": action });
    e.v2(Method::POST, &format!("/pods/{id}/action"), Some(body))
        .await
}

/// An open `?source=system` log stream of a pod, read event by event.
struct LogStream {
    bytes: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffered: String,
}

impl LogStream {
    async fn open(e: &Emu, id: &str) -> Self {
        let url = format!("{}/v2/pods/{id}/logs?source=system", e.emu.base_url());
        let r = e.http.get(url).bearer_auth(KEY).send().await.unwrap();
        assert_eq!(r.status(), 200);
        Self {
            bytes: r.bytes_stream().boxed(),
            buffered: String::new(),
        }
    }

    /// The next event's `line`, or `None` when the stream ends; panics after `within`.
    async fn next_line(&mut self, within: Duration) -> Option<String> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(end) = self.buffered.find("\n\n") {
                let event: String = self.buffered.drain(..end + 2).collect();
                let data = event
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .expect("every event has data");
                let data: Value = serde_json::from_str(data).unwrap();
                assert_eq!(data["source"], "system", "{data}");
                return Some(data["line"].as_str().unwrap().to_string());
            }
            let chunk = tokio::time::timeout_at(deadline, self.bytes.next())
                .await
                .expect("a log line within the time allowed");
            match chunk {
                Some(bytes) => self
                    .buffered
                    .push_str(std::str::from_utf8(&bytes.unwrap()).unwrap()),
                None => return None,
            }
        }
    }

    /// Every line up to and including the first equal to `wanted`.
    async fn until(&mut self, wanted: &str) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let line = self
                .next_line(Duration::from_secs(5))
                .await
                .unwrap_or_else(|| panic!("the stream ended before {wanted:?}; saw {seen:?}"));
            seen.push(line.clone());
            if line == wanted {
                return seen;
            }
        }
    }
}

/// The pod reads as one that keeps trying to start: STARTING with no runtime, billing.
fn assert_stuck_starting(p: &Value, cost: f64) {
    assert_eq!(p["status"], "STARTING", "{p}");
    assert_eq!(p["runtime"], Value::Null, "{p}");
    assert_eq!(p["startedAt"], Value::Null, "{p}");
    assert_eq!(p["cost"], cost, "{p}");
    assert_eq!(p["actions"], json!(["stop", "terminate"]), "{p}");
}

/// The failure of a pod of `image` shows on its open stream after the scheduling and pull
/// lines, and again on the same stream when the clock passes the next attempt; the pod
/// stays STARTING meanwhile, and a stop ends the stream after its own line.
async fn failure_shows_live(e: &Emu, id: &str, wanted: &str) {
    e.advance(60_000).await;
    assert_stuck_starting(&get_pod(e, id).await, 0.69);
    let mut stream = LogStream::open(e, id).await;
    let first = stream.until(wanted).await;
    assert!(first[0].contains("scheduled"), "{first:?}");
    assert!(first[1].starts_with("pulling image"), "{first:?}");
    // The backfill holds one attempt per 20 s; then the stream stays open.
    let mut backfill = 1;
    while backfill < 3 {
        let line = stream.next_line(Duration::from_secs(5)).await.unwrap();
        assert_eq!(line, wanted);
        backfill += 1;
    }
    e.advance(REPEAT_MS).await;
    let live = stream.next_line(Duration::from_secs(5)).await;
    assert_eq!(live.as_deref(), Some(wanted), "a new attempt arrives live");
    assert_stuck_starting(&get_pod(e, id).await, 0.69);
    // The failure is in no field of the pod: only the log says it.
    assert!(!get_pod(e, id).await.to_string().contains("failed to"));
    let stopped = act(e, id, "stop").await;
    assert_eq!(stopped.status, 200, "{}", stopped.body);
    assert_eq!(stopped.body["status"], "EXITED");
    // The stream sends what the stop wrote, then ends (a timeout panics).
    assert_eq!(
        stream.next_line(Duration::from_secs(5)).await.as_deref(),
        Some("container stopped")
    );
    assert_eq!(stream.next_line(Duration::from_secs(5)).await, None);
    assert_eq!(act(e, id, "terminate").await.status, 204);
}

#[tokio::test]
async fn an_image_that_is_not_found_keeps_the_pod_starting_and_says_so_in_its_log() {
    let e = start_default().await;
    e.fail_image("acme/missing:v1", StartFailure::ImageNotFound)
        .await;
    let other = create(&e, pod("acme/missing:v2")).await;
    let id = create(&e, pod("acme/missing:v1")).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    failure_shows_live(
        &e,
        &id,
        "failed to pull image \"acme/missing:v1\": manifest unknown: manifest for acme/missing:v1 not found",
    )
    .await;
    // Another tag is another image: it runs.
    assert_eq!(
        get_pod(&e, other["id"].as_str().unwrap()).await["status"],
        "RUNNING"
    );
}

#[tokio::test]
async fn a_refused_registry_login_fails_the_pull_of_every_pod_using_it() {
    let e = start_default().await;
    let registry = e.registry_credential().await;
    e.emu.admin().fail_registry_login(&registry).await.unwrap();
    let mut body = pod("ghcr.io/acme/private:1");
    body["registry"] = json!(registry);
    let id = create(&e, body).await["id"].as_str().unwrap().to_string();
    // Without the credential the same image pulls (it is the login that is refused).
    let public = create(&e, pod("ghcr.io/acme/private:1")).await;
    failure_shows_live(
        &e,
        &id,
        "failed to pull image \"ghcr.io/acme/private:1\": unauthorized: authentication required",
    )
    .await;
    assert_eq!(
        get_pod(&e, public["id"].as_str().unwrap()).await["status"],
        "RUNNING"
    );
}

#[tokio::test]
async fn a_host_driver_too_old_for_the_image_names_a_cuda_above_the_host() {
    let e = start_default().await;
    e.fail_image("acme/cuda13:1", StartFailure::CudaTooOld)
        .await;
    let p = create(&e, pod("acme/cuda13:1")).await;
    let id = p["id"].as_str().unwrap().to_string();
    let host: Vec<u32> = p["cudaVersion"]
        .as_str()
        .unwrap()
        .split('.')
        .map(|n| n.parse().unwrap())
        .collect();
    let needed = if host[1] + 4 <= 9 {
        format!("{}.{}", host[0], host[1] + 4)
    } else {
        format!("{}.0", host[0] + 1)
    };
    failure_shows_live(
        &e,
        &id,
        &format!(
            "failed to start container: nvidia-container-cli: requirement error: unsatisfied condition: cuda>={needed}, please update your driver to a newer version"
        ),
    )
    .await;
}

#[tokio::test]
async fn a_failing_pod_bills_while_it_tries() {
    let e = start_default().await;
    e.fail_image("acme/missing:v1", StartFailure::ImageNotFound)
        .await;
    create(&e, pod("acme/missing:v1")).await;
    e.advance(3_600_000).await;
    let r = e
        .v2(Method::GET, "/billing/pods?bucketSize=hour&lastN=2", None)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let gpu = r.body["metadata"]["totals"]["gpuAmount"].as_f64().unwrap();
    assert!((gpu - 0.69).abs() < 1e-3, "{}", r.body);
}

#[tokio::test]
async fn a_full_host_refuses_the_start_until_it_is_freed() {
    let e = start_default().await;
    let admin = e.emu.admin();
    let id = create(&e, pod("runpod/base:1")).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    e.advance(5_000).await;
    assert_eq!(act(&e, &id, "stop").await.status, 200);
    admin.fill_host(&id).await.unwrap();
    let refused = act(&e, &id, "start").await;
    assert_problem(&refused, 400, HOST_FULL);
    assert_eq!(get_pod(&e, &id).await["status"], "EXITED");
    admin.free_host(&id).await.unwrap();
    let started = act(&e, &id, "start").await;
    assert_eq!(started.status, 200, "{}", started.body);
    assert_eq!(started.body["status"], "STARTING");
    // An unknown pod is the admin call's error, not a silent no-op.
    assert!(admin.fill_host("nope").await.is_err());
}

#[tokio::test]
async fn a_marked_up_pod_costs_and_bills_more_than_the_catalog_quotes() {
    let e = start_default().await;
    e.emu.admin().set_price_markup(RTX4090, 1.5).await.unwrap();
    let quoted = e.v2(Method::GET, "/catalog/gpus", None).await;
    let rtx = quoted.body["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == RTX4090)
        .unwrap()
        .clone();
    assert_eq!(rtx["price"]["secure"], 0.69, "{rtx}");
    let p = create(&e, pod("runpod/base:1")).await;
    assert_eq!(p["cost"], 1.035, "{p}");
    let id = p["id"].as_str().unwrap().to_string();
    e.advance(3_600_000).await;
    assert_eq!(get_pod(&e, &id).await["cost"], 1.035);
    let r = e
        .v2(Method::GET, "/billing/pods?bucketSize=hour&lastN=2", None)
        .await;
    let gpu = r.body["metadata"]["totals"]["gpuAmount"].as_f64().unwrap();
    assert!((gpu - 1.035).abs() < 1e-3, "{}", r.body);
    // A CPU flavor takes a markup too; unknown ids and nonsense factors are refused.
    let admin = e.emu.admin();
    admin.set_price_markup("cpu3c", 2.0).await.unwrap();
    let cpu = create(
        &e,
        json!({"name": "c", "image": "i", "cpu": {"id": "cpu3c", "vcpuCount": 4}}),
    )
    .await;
    assert_eq!(cpu["cost"], 0.24, "{cpu}");
    assert!(admin.set_price_markup("nope", 2.0).await.is_err());
    assert!(admin.set_price_markup(RTX4090, -1.0).await.is_err());
}

#[tokio::test]
async fn cpu_stock_is_reported_and_enforced_per_data_center() {
    let e = start_default().await;
    let admin = e.emu.admin();
    admin.set_cpu_stock("cpu3c", "US-TX-3", 0).await.unwrap();
    admin.set_cpu_stock("cpu3c", "EU-RO-1", 8).await.unwrap();
    let r = e
        .v2(
            Method::GET,
            "/catalog/cpus/cpu3c?include=AVAILABILITY&product=POD&vcpuCount=8",
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["dataCenters"],
        json!([{"id": "EU-RO-1", "name": "Romania", "availability": "LOW"}]),
        "{}",
        r.body
    );
    let cpu_pod = |dc: &str, vcpus: u32| {
        json!({"name": "c", "image": "i", "cpu": {"id": "cpu3c", "vcpuCount": vcpus},
               "dataCenterIds": [dc]})
    };
    let r = e
        .v2(Method::POST, "/pods", Some(cpu_pod("US-TX-3", 2)))
        .await;
    assert_problem(&r, 400, NO_CAPACITY);
    let placed = create(&e, cpu_pod("EU-RO-1", 8)).await;
    assert_eq!(placed["dataCenterId"], "EU-RO-1");
    let r = e
        .v2(Method::POST, "/pods", Some(cpu_pod("EU-RO-1", 2)))
        .await;
    assert_problem(&r, 400, NO_CAPACITY);
    let r = e
        .v2(
            Method::GET,
            "/catalog/cpus/cpu3c?include=AVAILABILITY&product=POD&vcpuCount=2",
            None,
        )
        .await;
    assert_eq!(r.body["availability"], "NONE", "{}", r.body);
    assert!(admin.set_cpu_stock("cpu3c", "MARS-1", 1).await.is_err());
}

#[tokio::test]
async fn a_booting_pods_stream_stays_open_until_its_container_starts() {
    let e = start_default().await;
    let id = create(&e, pod("acme/serve:1")).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mut stream = LogStream::open(&e, &id).await;
    let first = stream.next_line(Duration::from_secs(5)).await.unwrap();
    assert!(first.contains("scheduled"), "{first}");
    let second = stream.next_line(Duration::from_secs(5)).await.unwrap();
    assert_eq!(second, "pulling image acme/serve:1");
    // Booted once the clock passes the boot time: the start's lines come on the same
    // stream, which then ends.
    e.advance(60_000).await;
    let mut rest = Vec::new();
    while let Some(line) = stream.next_line(Duration::from_secs(5)).await {
        rest.push(line);
    }
    assert_eq!(rest, ["image acme/serve:1 pulled", "container started"]);
    assert_eq!(get_pod(&e, &id).await["status"], "RUNNING");
}
