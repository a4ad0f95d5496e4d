//! Emulator throughput and latency, on loopback, bounded in count and time.
//!
//! Prints: job API requests/s (goal >= 5,000 on 2 cores), GraphQL pod queries/s
//! (goal >= 1,000), and `myself { pods }` latency with 10,000 pods (goal < 200 ms); for
//! REST v2, `GET /v2/pods` latency (median and p99) with the same 10,000 pods and
//! `POST /v2/pods` creates/s; then, on worlds of 10,000 and 100,000 network volumes,
//! `GET /v2/network-volumes` and `GET /v1/networkvolumes` latency (median, p99), a create's
//! latency among them and the process's resident memory (goal: lists in <= 20 ms at 10,000
//! objects, issue #25).
//!
//!   cargo bench --bench emulator

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use gpucloud_emulator::model::{NetworkVolume, PodFixture, StockFixture, VolumeType};
use gpucloud_emulator::v2::limits::Quota;
use gpucloud_emulator::{self as emulator, EmulatorConfig, Fixtures, RunningEmulator};
use serde_json::{Value, json};

const KEY: &str = "bench-key";
const RUN_FOR: Duration = Duration::from_secs(3);
const CLIENTS: usize = 48;
const PODS: usize = 10_000;
/// `GET /v2/pods` calls timed: enough for a p99 that is not simply the slowest call.
const V2_LIST_CALLS: usize = 100;
/// Free A40 GPUs in the secure cloud before the create run: far more than 48 clients create
/// in `RUN_FOR`, so every create finds room and none is a capacity refusal.
const CREATE_STOCK: u32 = 400_000;
const CREATE_GPU: &str = "NVIDIA A40";

/// The query the official SDK's get_pods() sends.
const SDK_PODS_QUERY: &str = "query myPods { myself { pods { id containerDiskInGb costPerHr desiredStatus dockerArgs dockerId env gpuCount imageName lastStatusChange machineId memoryInGb name podType port ports uptimeSeconds vcpuCount volumeInGb volumeMountPath runtime { ports { ip isIpPublic privatePort publicPort type } } machine { gpuDisplayName } } } }";

fn config(fixtures: Option<Fixtures>) -> EmulatorConfig {
    EmulatorConfig {
        api_keys: vec![KEY.parse().unwrap()],
        // The dynamic rate-limit rule: a few running workers lift the limits far above
        // what the benchmark sends, so it measures the server, not 429s.
        requests_per_worker: 10_000_000,
        pod_boot_ms: 0,
        fixtures,
        // REST v2's per-key quotas (600 a minute by default) would otherwise answer most
        // of the benchmark's calls with 429.
        v2_quota: Quota {
            minute: 1_000_000_000,
            hour: 1_000_000_000,
            day: 1_000_000_000,
        },
        ..EmulatorConfig::default()
    }
}

/// Runs `op` from `CLIENTS` tasks for `RUN_FOR`; returns (requests, failures, seconds).
async fn hammer<F, Fut>(op: F) -> (u64, u64, f64)
where
    F: Fn(reqwest::Client, u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = (u64, bool)> + Send,
{
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(CLIENTS)
        .build()
        .unwrap();
    let op = Arc::new(op);
    let done = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..CLIENTS as u64)
        .map(|i| {
            let (http, op, done, failed) = (http.clone(), op.clone(), done.clone(), failed.clone());
            tokio::spawn(async move {
                let mut n = 0u64;
                while start.elapsed() < RUN_FOR {
                    let (count, ok) = op(http.clone(), i * 1_000_000 + n).await;
                    done.fetch_add(count, Ordering::Relaxed);
                    if !ok {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                    n += 1;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    (
        done.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64(),
    )
}

async fn job_api() {
    let emu = emulator::start(config(None), "127.0.0.1:0".parse::<SocketAddr>().unwrap())
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let ep: Value = http
        .post(format!("{}/endpoints", emu.rest_url()))
        .bearer_auth(KEY)
        .json(&json!({"name": "bench", "templateId": "tmpl-worker-base", "gpuTypeIds": ["NVIDIA A40"], "workersMin": 4, "workersMax": 4}))
        .send().await.unwrap().json().await.unwrap();
    let base = format!("{}/{}", emu.serverless_url(), ep["id"].as_str().unwrap());
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Each round: submit a job, read its status.
    let (n, failed, secs) = hammer(move |http, i| {
        let base = base.clone();
        async move {
            let run = http
                .post(format!("{base}/run"))
                .header("authorization", KEY)
                .json(&json!({"input": {"i": i}}))
                .send()
                .await;
            let Ok(run) = run else { return (1, false) };
            let ok = run.status().is_success();
            let body: Value = run.json().await.unwrap_or(Value::Null);
            let Some(id) = body["id"].as_str() else {
                return (1, false);
            };
            let st = http
                .get(format!("{base}/status/{id}"))
                .header("authorization", KEY)
                .send()
                .await;
            (2, ok && st.is_ok_and(|r| r.status().is_success()))
        }
    })
    .await;
    println!(
        "job API (/run + /status):      {:>8.0} requests/s  ({n} requests, {failed} failed rounds, {CLIENTS} clients)   goal >= 5,000",
        n as f64 / secs
    );
    emu.shutdown().await;
}

fn many_pods() -> Fixtures {
    let mut f = Fixtures::built_in();
    let a40 = f
        .gpu_types
        .iter_mut()
        .find(|g| g.id == "NVIDIA A40")
        .unwrap();
    a40.stock.push(StockFixture {
        data_center_id: "US-TX-3".into(),
        secure_cloud: true,
        machines: (PODS / 8) as u32 + 1,
        gpus_per_machine: 8,
    });
    f.pods = (0..PODS)
        .map(|i| PodFixture {
            id: Some(format!("pod{i:010}")),
            name: format!("bench-{i}"),
            image_name: "runpod/pytorch:2.4".into(),
            gpu_type_id: "NVIDIA A40".into(),
            gpu_count: 1,
            secure_cloud: Some(true),
            stopped: i % 10 == 0,
        })
        .collect();
    f
}

/// The same listing without HTTP: executing the query, then serializing the answer.
async fn listing_in_process() {
    use gpucloud_emulator::state::Emulator;
    let app = Emulator::new(config(Some(many_pods()))).unwrap();
    let mut exec = Vec::new();
    let mut ser = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let resp = gpucloud_emulator::graphql::schema()
            .execute(async_graphql::Request::new(SDK_PODS_QUERY).data(app.clone()))
            .await;
        exec.push(t.elapsed());
        let t = Instant::now();
        let bytes = serde_json::to_vec(&resp).unwrap();
        ser.push(t.elapsed());
        assert!(resp.errors.is_empty() && bytes.len() > PODS * 100);
    }
    exec.sort();
    ser.sort();
    println!(
        "  of which, in process:        execute median {:.1} ms, serialize median {:.1} ms",
        exec[5].as_secs_f64() * 1e3,
        ser[5].as_secs_f64() * 1e3
    );
}

/// The whole answer to one GraphQL `query`, as bytes (not parsed: parsing is not timed).
async fn graphql_query(http: &reqwest::Client, url: &str, query: &str) -> bytes::Bytes {
    let response = http.post(url).json(&json!({ "query": query })).send().await;
    response.unwrap().bytes().await.unwrap()
}

/// The GraphQL figures, on an emulator holding `PODS` pods.
async fn graphql(emu: &RunningEmulator) {
    let url = format!("{}?api_key={KEY}", emu.graphql_url());
    let http = reqwest::Client::new();

    // Only ids: the fixed cost of listing, for comparison.
    let t = Instant::now();
    let ids = graphql_query(&http, &url, "{ myself { pods { id } } }").await;
    println!(
        "myself {{ pods {{ id }} }} ({PODS} pods): {:>6.1} ms ({} bytes)",
        t.elapsed().as_secs_f64() * 1e3,
        ids.len()
    );

    // myself { pods } with 10,000 pods, the SDK's own query. Timed until the whole response
    // has arrived; parsing it on the client is not counted.
    let mut times = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let bytes = graphql_query(&http, &url, SDK_PODS_QUERY).await;
        times.push(t.elapsed());
        let resp: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            resp["data"]["myself"]["pods"].as_array().map(Vec::len),
            Some(PODS),
            "{}",
            resp.to_string().chars().take(300).collect::<String>()
        );
    }
    times.sort();
    println!(
        "myself {{ pods }} ({PODS} pods):  median {:>6.1} ms, min {:.1} ms, max {:.1} ms (10 calls, full SDK query)   goal < 200 ms",
        times[5].as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        times[9].as_secs_f64() * 1e3
    );

    listing_in_process().await;

    let query = "query P($id: String!) { pod(input: {podId: $id}) { id name desiredStatus imageName machineId costPerHr machine { podHostId } runtime { uptimeInSeconds ports { ip publicPort } } } }";
    let (n, failed, secs) = hammer(move |http, i| {
        let url = url.clone();
        async move {
            let id = format!("pod{:010}", i % PODS as u64);
            let r = http
                .post(&url)
                .json(&json!({"query": query, "variables": {"id": id}}))
                .send()
                .await;
            let ok = match r {
                Ok(r) if r.status().is_success() => r
                    .json::<Value>()
                    .await
                    .is_ok_and(|v| v["data"]["pod"]["id"] == id.as_str()),
                _ => false,
            };
            (1, ok)
        }
    })
    .await;
    println!(
        "GraphQL pod(input: {{podId}}):   {:>8.0} queries/s   ({n} queries, {failed} failed, {CLIENTS} clients)   goal >= 1,000",
        n as f64 / secs
    );
}

/// The `q`-quantile of sorted samples, nearest rank.
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `GET /v2/pods` on the same world of `PODS` pods that `myself { pods }` lists, timed like
/// it: until the whole answer has arrived, parsing it on the client not counted.
async fn v2_pods_listing(emu: &RunningEmulator) {
    let url = format!("{}/v2/pods", emu.base_url());
    let http = reqwest::Client::new();
    let mut times = Vec::with_capacity(V2_LIST_CALLS);
    let mut size = 0;
    for _ in 0..V2_LIST_CALLS {
        let t = Instant::now();
        let r = http.get(&url).bearer_auth(KEY).send().await.unwrap();
        let status = r.status();
        let bytes = r.bytes().await.unwrap();
        times.push(t.elapsed());
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(
            (status.as_u16(), body["pods"].as_array().map(Vec::len)),
            (200, Some(PODS)),
            "{}",
            body.to_string().chars().take(300).collect::<String>()
        );
        size = bytes.len();
    }
    times.sort();
    println!(
        "GET /v2/pods ({PODS} pods):      median {:>6.1} ms, p99 {:.1} ms, min {:.1} ms, max {:.1} ms ({V2_LIST_CALLS} calls, {size} bytes)",
        ms(quantile(&times, 0.5)),
        ms(quantile(&times, 0.99)),
        ms(times[0]),
        ms(times[V2_LIST_CALLS - 1]),
    );
    v2_listing_in_process();
}

/// The same listing without HTTP: what the handler does under the world's lock (a pointer
/// and the machine's facts per pod), then serializing the answer.
fn v2_listing_in_process() {
    use gpucloud_emulator::state::Emulator;
    use gpucloud_emulator::v2::pods::pods_listing;
    let app = Emulator::new(config(Some(many_pods()))).unwrap();
    let mut build = Vec::new();
    let mut ser = Vec::new();
    for _ in 0..10 {
        let t = Instant::now();
        let answer = pods_listing(&app);
        build.push(t.elapsed());
        let t = Instant::now();
        let bytes = answer.to_json();
        ser.push(t.elapsed());
        assert!(bytes.len() > PODS * 100);
    }
    build.sort();
    ser.sort();
    println!(
        "  of which, in process:        under the lock median {:.1} ms, serialize median {:.1} ms",
        ms(build[5]),
        ms(ser[5])
    );
}

/// `POST /v2/pods` from `CLIENTS` tasks: one 1-GPU pod per call, kept (nothing is
/// terminated), on stock raised over the admin surface first.
async fn v2_pods_create() {
    let emu = emulator::start(config(None), "127.0.0.1:0".parse::<SocketAddr>().unwrap())
        .await
        .unwrap();
    emu.admin()
        .set_stock(CREATE_GPU, Some(true), CREATE_STOCK)
        .await
        .unwrap();
    let url = format!("{}/v2/pods", emu.base_url());
    let created = Arc::new(AtomicU64::new(0));
    let counted = created.clone();
    let (n, failed, secs) = hammer(move |http, i| {
        let (url, created) = (url.clone(), counted.clone());
        async move {
            let r = http
                .post(&url)
                .bearer_auth(KEY)
                .json(&json!({
                    "name": format!("bench-{i}"),
                    "image": "runpod/pytorch:2.4",
                    "gpu": {"id": CREATE_GPU, "count": 1},
                }))
                .send()
                .await;
            let ok = match r {
                Ok(r) if r.status().as_u16() == 201 => r
                    .json::<Value>()
                    .await
                    .is_ok_and(|v| v["id"].is_string() && v["gpu"]["count"] == 1),
                _ => false,
            };
            if ok {
                created.fetch_add(1, Ordering::Relaxed);
            }
            (1, ok)
        }
    })
    .await;
    // Every create the run counted is a pod of the world.
    let listed: Value = reqwest::Client::new()
        .get(format!("{}/v2/pods", emu.base_url()))
        .bearer_auth(KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let created = created.load(Ordering::Relaxed);
    let listed = listed["pods"].as_array().map_or(0, Vec::len) as u64;
    assert!(listed >= created, "{listed} pods listed, {created} created");
    println!(
        "POST /v2/pods:                 {:>8.0} creates/s     ({n} creates, {failed} failed, {CLIENTS} clients, stock {CREATE_STOCK} GPUs)",
        created as f64 / secs
    );
    emu.shutdown().await;
}

/// A world of `n` network volumes, seeded from fixtures: creating them over HTTP would time
/// the creates (and the quota), not the listings.
fn many_volumes(n: usize) -> Fixtures {
    let mut f = Fixtures::built_in();
    f.network_volumes = (0..n)
        .map(|i| NetworkVolume {
            id: format!("nv{i:08}"),
            name: format!("bench-volume-{i}"),
            size: 50,
            data_center_id: "EU-RO-1".into(),
            volume_type: VolumeType::Standard,
        })
        .collect();
    f
}

/// The process's resident memory (Linux), in MiB; 0 where it cannot be read.
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// `calls` sequential `GET`s of `path` that must list `expect` records under `field` (the
/// v1 list is a bare array: `field` empty). Prints median and p99, timed until the whole
/// answer has arrived.
async fn time_listing(emu: &RunningEmulator, path: &str, field: &str, expect: usize, calls: usize) {
    let url = format!("{}{path}", emu.base_url());
    let http = reqwest::Client::new();
    let mut times = Vec::with_capacity(calls);
    let mut size = 0;
    for _ in 0..calls {
        let t = Instant::now();
        let r = http.get(&url).bearer_auth(KEY).send().await.unwrap();
        let status = r.status();
        let bytes = r.bytes().await.unwrap();
        times.push(t.elapsed());
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        let listed = if field.is_empty() {
            &body
        } else {
            &body[field]
        };
        assert_eq!(
            (status.as_u16(), listed.as_array().map(Vec::len)),
            (200, Some(expect)),
            "{path}"
        );
        size = bytes.len();
    }
    times.sort();
    println!(
        "GET {path:<22} ({expect} volumes): median {:>6.1} ms, p99 {:>6.1} ms, max {:.1} ms ({calls} calls, {size} bytes)",
        ms(quantile(&times, 0.5)),
        ms(quantile(&times, 0.99)),
        ms(times[calls - 1]),
    );
}

/// Sequential `POST /v2/network-volumes` among `existing` volumes: what one more volume
/// costs when the world already holds many.
async fn time_volume_creates(emu: &RunningEmulator, existing: usize, calls: usize) {
    let url = format!("{}/v2/network-volumes", emu.base_url());
    let http = reqwest::Client::new();
    let mut times = Vec::with_capacity(calls);
    for i in 0..calls {
        let t = Instant::now();
        let r = http
            .post(&url)
            .bearer_auth(KEY)
            .json(&json!({"name": format!("more-{i}"), "size": 10, "dataCenter": "EU-RO-1"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 201);
        r.bytes().await.unwrap();
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "POST /v2/network-volumes      (among {existing}): median {:>6.2} ms, p99 {:>6.2} ms ({calls} calls)",
        ms(quantile(&times, 0.5)),
        ms(quantile(&times, 0.99)),
    );
}

/// `n` volumes created over REST v2 by `CLIENTS` callers at once; returns the creates per
/// second.
async fn create_volumes(emu: &RunningEmulator, n: usize) -> f64 {
    use futures::StreamExt;
    let url = format!("{}/v2/network-volumes", emu.base_url());
    let http = reqwest::Client::new();
    let start = Instant::now();
    let created = futures::stream::iter(0..n)
        .map(|i| {
            let (http, url) = (http.clone(), url.clone());
            async move {
                let r = http
                    .post(&url)
                    .bearer_auth(KEY)
                    .json(&json!({"name": format!("bench-volume-{i}"), "size": 50, "dataCenter": "EU-RO-1"}))
                    .send()
                    .await
                    .unwrap();
                r.status().as_u16() == 201
            }
        })
        .buffer_unordered(CLIENTS)
        .filter(|ok| std::future::ready(*ok))
        .count()
        .await;
    assert_eq!(created, n);
    n as f64 / start.elapsed().as_secs_f64()
}

/// The network volume listings of both surfaces at 100,000 and 10,000 volumes, and the
/// memory 100,000 volumes take. It runs first, so that the process's resident memory is
/// not that of the pod worlds before it: 100,000 volumes are created over HTTP on an
/// emulator started with the built-in fixtures (one volume); then worlds seeded with
/// 100,000 and 10,000 volumes.
async fn volume_listings() {
    const MANY: usize = 100_000;
    let before = rss_mib();
    let emu = emulator::start(config(None), "127.0.0.1:0".parse::<SocketAddr>().unwrap())
        .await
        .unwrap();
    let per_s = create_volumes(&emu, MANY).await;
    let held = rss_mib();
    println!(
        "POST /v2/network-volumes x {MANY}: {per_s:>8.0} creates/s ({CLIENTS} clients); resident memory {held:.1} MiB, {:+.1} MiB over the process before the emulator started",
        held - before
    );
    let total = MANY + 1; // and the built-in fixtures' volume
    time_listing(&emu, "/v2/network-volumes", "networkVolumes", total, 50).await;
    time_listing(&emu, "/v1/networkvolumes", "", total, 50).await;
    time_volume_creates(&emu, total, 200).await;
    emu.shutdown().await;

    // Seeded worlds: their records lie together in memory, where records created one by
    // one among other requests' allocations are spread out; listings read them faster.
    for (n, calls) in [(MANY, 50), (10_000, 100)] {
        let emu = emulator::start(
            config(Some(many_volumes(n))),
            "127.0.0.1:0".parse::<SocketAddr>().unwrap(),
        )
        .await
        .unwrap();
        println!("seeded with {n} volumes:");
        time_listing(&emu, "/v2/network-volumes", "networkVolumes", n, calls).await;
        time_listing(&emu, "/v1/networkvolumes", "", n, calls).await;
        time_volume_creates(&emu, n, 200).await;
        emu.shutdown().await;
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        volume_listings().await;
        job_api().await;
        let emu = emulator::start(
            config(Some(many_pods())),
            "127.0.0.1:0".parse::<SocketAddr>().unwrap(),
        )
        .await
        .unwrap();
        graphql(&emu).await;
        v2_pods_listing(&emu).await;
        emu.shutdown().await;
        v2_pods_create().await;
    });
}
