//! Emulator throughput and latency, on loopback, bounded in count and time.
//!
//! Prints, at N objects (`BENCH_OBJECTS` or `-- N`, default 10,000; goal: every list in
//! <= 20 ms at 10,000 objects, issue #25):
//! - N network volumes created over REST v2 (the account's quota lifted over the admin
//!   surface): creates/s, a create's latency among the first and the last tenth (a create
//!   must cost the same at 100,000 volumes as at one), resident memory per 1,000 volumes;
//!   their listings (REST v2, v1, GraphQL) and a small call alone and among listings;
//! - every list route of every surface (REST v2 pods, network volumes, serverless,
//!   templates, clusters, registries; REST v1; registry delegations; GraphQL
//!   `myself { pods }` and `networkVolumes`) on a world of N objects of each kind: p50, p99
//!   and max over real HTTP, then `GET /v2/network-volumes/{id}` alone and while two callers
//!   list back to back;
//! - job API requests/s (goal >= 5,000 on 2 cores), GraphQL pod queries/s (goal >= 1,000)
//!   and the in-process split of the pod listings at 10,000 pods; `POST /v2/pods` creates/s.
//!
//!   cargo bench --bench emulator                      # 10,000
//!   BENCH_OBJECTS=100000 cargo bench --bench emulator

#[path = "support/report.rs"]
mod report;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use gpucloud_emulator::model::{
    Delegation, EndpointRecord, NetworkVolume, PodFixture, RegistryAuth, StockFixture, Template,
    VolumeType,
};
use gpucloud_emulator::v2::limits::Quota;
use gpucloud_emulator::{self as emulator, EmulatorConfig, Fixtures, RunningEmulator};
use serde_json::{Value, json};

const KEY: &str = "bench-key";
const RUN_FOR: Duration = Duration::from_secs(3);
const CLIENTS: usize = 48;
const PODS: usize = 10_000;
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
        // The registry delegations' own window (60 a minute by default): the listers of
        // `small_call_among` list them hundreds of times a minute.
        registry_requests_per_minute: 1_000_000_000,
        ..EmulatorConfig::default()
    }
}

/// Runs `op` from `CLIENTS` tasks for `RUN_FOR`; returns (requests of the rounds that
/// succeeded, failed rounds, seconds): a failed round counts as no work done.
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
                    if ok {
                        done.fetch_add(count, Ordering::Relaxed);
                    } else {
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
    throughput(
        "job API (/run + /status)",
        n,
        failed,
        secs,
        "requests per s",
    );
    emu.shutdown().await;
}

/// The built-in fixtures with `n` pods (one in ten stopped) on machines made for them.
fn many_pods(n: usize) -> Fixtures {
    let mut f = Fixtures::built_in();
    let a40 = f
        .gpu_types
        .iter_mut()
        .find(|g| g.id == "NVIDIA A40")
        .unwrap();
    a40.stock.push(StockFixture {
        data_center_id: "US-TX-3".into(),
        secure_cloud: true,
        machines: (n / 8) as u32 + 1,
        gpus_per_machine: 8,
    });
    f.pods = (0..n)
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
    let app = Emulator::new(config(Some(many_pods(PODS)))).unwrap();
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
        "  execute median {:.1} ms, serialize median {:.1} ms",
        exec[5].as_secs_f64() * 1e3,
        ser[5].as_secs_f64() * 1e3
    );
}

/// The GraphQL figures, on an emulator holding `PODS` pods.
async fn graphql(emu: &RunningEmulator) {
    let url = format!("{}?api_key={KEY}", emu.graphql_url());
    println!("myself {{ pods }} ({PODS} pods, the SDK's query), in process:");
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
    throughput(
        "GraphQL pod(input: {podId})",
        n,
        failed,
        secs,
        "queries per s",
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

/// The same listing without HTTP: what the handler does under the world's lock (a pointer
/// and the machine's facts per pod), then serializing the answer.
fn v2_listing_in_process() {
    use gpucloud_emulator::state::Emulator;
    use gpucloud_emulator::v2::pods::pods_listing;
    let app = Emulator::new(config(Some(many_pods(PODS)))).unwrap();
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
        "  under the lock median {:.1} ms, serialize median {:.1} ms",
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
    throughput("POST /v2/pods", created, failed, secs, "creates per s");
    emu.shutdown().await;
}

/// How many objects of each kind the scale runs hold: the first number among the
/// arguments (`cargo bench --bench emulator -- 100000`), else `BENCH_OBJECTS`, else 10,000.
fn objects() -> usize {
    std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .or_else(|| std::env::var("BENCH_OBJECTS").ok()?.parse().ok())
        .unwrap_or(10_000)
}

/// Clusters are created over HTTP, each placing two member pods on machines of their own:
/// more than this many would time the placement, not the listing.
const CLUSTERS_AT_MOST: usize = 10_000;

/// The process's resident memory (Linux), in MiB; 0 where it cannot be read.
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// One list call: a `GET` of `path`, or a GraphQL `query` when one is given, whose answer
/// holds `expect` records at the JSON pointer `items` (`""`: the whole answer).
#[derive(Clone)]
struct ListCall {
    path: &'static str,
    query: Option<&'static str>,
    items: &'static str,
    expect: usize,
}

impl ListCall {
    fn get(path: &'static str, items: &'static str, expect: usize) -> Self {
        Self {
            path,
            query: None,
            items,
            expect,
        }
    }

    fn graphql(query: &'static str, items: &'static str, expect: usize) -> Self {
        Self {
            path: "/graphql",
            query: Some(query),
            items,
            expect,
        }
    }

    fn label(&self) -> &'static str {
        self.query.unwrap_or(self.path)
    }

    /// Sends the call; the whole answer, as bytes.
    async fn send(&self, http: &reqwest::Client, base: &str) -> (u16, bytes::Bytes) {
        let r = match self.query {
            Some(q) => http
                .post(format!("{base}/graphql?api_key={KEY}"))
                .json(&json!({ "query": q })),
            None => http.get(format!("{base}{}", self.path)).bearer_auth(KEY),
        };
        let r = r.send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.bytes().await.unwrap())
    }

    /// `calls` sequential calls, each timed until the whole answer has arrived (checking
    /// it is not timed); prints p50, p99 and max.
    async fn time(&self, emu: &RunningEmulator, calls: usize) {
        let (http, base) = (reqwest::Client::new(), emu.base_url());
        let mut times = Vec::with_capacity(calls);
        let mut size = 0;
        for _ in 0..calls {
            let t = Instant::now();
            let (status, bytes) = self.send(&http, &base).await;
            times.push(t.elapsed());
            let body: Value = serde_json::from_slice(&bytes).unwrap();
            let listed = body.pointer(self.items).and_then(Value::as_array);
            assert_eq!(
                (status, listed.map(Vec::len)),
                (200, Some(self.expect)),
                "{}",
                self.label()
            );
            size = bytes.len();
        }
        times.sort();
        let name = format!("{} ({} listed)", self.label(), self.expect);
        report::figure(&format!("{name}: p50"), ms(quantile(&times, 0.5)), "ms");
        report::figure(&format!("{name}: p99"), ms(quantile(&times, 0.99)), "ms");
        println!(
            "  {:<28} {:>6} listed: p50 {:>7.1} ms, p99 {:>7.1} ms, max {:>7.1} ms ({calls} calls, {:.1} MB)",
            self.label(),
            self.expect,
            ms(quantile(&times, 0.5)),
            ms(quantile(&times, 0.99)),
            ms(times[calls - 1]),
            size as f64 / 1e6,
        );
    }
}

/// `GET /v2/network-volumes/{id}` for `RUN_FOR`, sequentially, first alone and then while
/// two callers run `lists` back to back: what one small call waits for a listing.
async fn small_call_among(emu: &RunningEmulator, volume_id: &str, lists: &[ListCall]) {
    let base = emu.base_url();
    let url = format!("{base}/v2/network-volumes/{volume_id}");
    let time_small = |url: String| async move {
        let http = reqwest::Client::new();
        let mut times = Vec::new();
        let start = Instant::now();
        while start.elapsed() < RUN_FOR {
            let t = Instant::now();
            let r = http.get(&url).bearer_auth(KEY).send().await.unwrap();
            assert_eq!(r.status().as_u16(), 200);
            r.bytes().await.unwrap();
            times.push(t.elapsed());
        }
        times.sort();
        times
    };
    let print = |what: &str, times: &[Duration], lists_done: u64| {
        let name = format!("GET /v2/network-volumes/{{id}} {}", what.trim());
        report::figure(&format!("{name}: p50"), ms(quantile(times, 0.5)), "ms");
        report::figure(&format!("{name}: p99"), ms(quantile(times, 0.99)), "ms");
        println!(
            "  GET /v2/network-volumes/{{id}} {what}: p50 {:>6.2} ms, p99 {:>6.2} ms, max {:>6.1} ms ({} calls{})",
            ms(quantile(times, 0.5)),
            ms(quantile(times, 0.99)),
            ms(times[times.len() - 1]),
            times.len(),
            if lists_done > 0 {
                format!(", {lists_done} lists answered meanwhile")
            } else {
                String::new()
            }
        );
    };
    print("alone          ", &time_small(url.clone()).await, 0);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let listed = Arc::new(AtomicU64::new(0));
    let listers: Vec<_> = (0..2)
        .map(|i| {
            let (lists, base) = (lists.to_vec(), base.clone());
            let (stop, listed) = (stop.clone(), listed.clone());
            tokio::spawn(async move {
                let http = reqwest::Client::new();
                for call in lists.iter().cycle().skip(i * lists.len() / 2) {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    assert_eq!(call.send(&http, &base).await.0, 200);
                    listed.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let times = time_small(url).await;
    stop.store(true, Ordering::Relaxed);
    for l in listers {
        l.await.unwrap();
    }
    print("while listing  ", &times, listed.load(Ordering::Relaxed));
}

/// `n` network volumes created over REST v2 by `CLIENTS` callers at once, on the account's
/// own quota lifted over the admin surface; then their listings on both surfaces and
/// GraphQL, a small call among them, and the resident memory they take. It runs first, so
/// that the process's memory is not that of the worlds after it.
async fn volumes_over_http(n: usize) {
    use futures::StreamExt;
    let before = rss_mib();
    let mut cfg = config(None);
    cfg.v2_quota = Quota::default();
    let emu = emulator::start(cfg, "127.0.0.1:0".parse::<SocketAddr>().unwrap())
        .await
        .unwrap();
    let lifted = 1_000_000_000;
    emu.admin()
        .set_v2_quota(Quota {
            minute: lifted,
            hour: lifted,
            day: lifted,
        })
        .await
        .unwrap();
    let (http, url) = (
        reqwest::Client::new(),
        format!("{}/v2/network-volumes", emu.base_url()),
    );
    let start = Instant::now();
    // (index, latency) of every create.
    let mut latencies: Vec<(usize, Duration)> = futures::stream::iter(0..n)
        .map(|i| {
            let (http, url) = (http.clone(), url.clone());
            async move {
                let t = Instant::now();
                let r = http
                    .post(&url)
                    .bearer_auth(KEY)
                    .json(&json!({"name": format!("bench-volume-{i}"), "size": 50, "dataCenter": "EU-RO-1"}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status().as_u16(), 201);
                r.bytes().await.unwrap();
                (i, t.elapsed())
            }
        })
        .buffer_unordered(CLIENTS)
        .collect()
        .await;
    let secs = start.elapsed().as_secs_f64();
    let held = rss_mib();
    latencies.sort_by_key(|(i, _)| *i);
    let tenth = n / 10;
    let median_of = |part: &[(usize, Duration)]| {
        let mut t: Vec<Duration> = part.iter().map(|(_, d)| *d).collect();
        t.sort();
        ms(quantile(&t, 0.5))
    };
    report::figure(
        &format!("{n} volumes created over POST /v2/network-volumes"),
        n as f64 / secs,
        "creates per s",
    );
    report::figure(
        &format!("emulator memory per 1,000 volumes, at {n}"),
        (held - before) / (n as f64 / 1000.0),
        "MiB",
    );
    println!(
        "{n} volumes created over POST /v2/network-volumes: {:.0} creates/s ({CLIENTS} clients); median create {:.2} ms among the first tenth, {:.2} ms among the last",
        n as f64 / secs,
        median_of(&latencies[..tenth]),
        median_of(&latencies[n - tenth..]),
    );
    println!(
        "  resident memory {held:.1} MiB, {:+.1} MiB since before the emulator started: {:.2} MiB per 1,000 volumes",
        held - before,
        (held - before) / (n as f64 / 1000.0)
    );
    let total = n + 1; // and the built-in fixtures' volume
    let lists = [
        ListCall::get("/v2/network-volumes", "/networkVolumes", total),
        ListCall::get("/v1/networkvolumes", "", total),
        ListCall::graphql(
            "{ myself { networkVolumes { id name size dataCenterId } } }",
            "/data/myself/networkVolumes",
            total,
        ),
    ];
    let calls = if n > 20_000 { 30 } else { 100 };
    for call in &lists {
        call.time(&emu, calls).await;
    }
    small_call_among(&emu, "nv-demo0001", &lists).await;
    emu.shutdown().await;
}

/// A world of `n` objects of every kind the account lists: pods, network volumes,
/// templates, serverless endpoints, registry credentials and delegations, from fixtures.
fn every_kind(n: usize) -> Fixtures {
    let mut f = many_pods(n);
    f.network_volumes = (0..n)
        .map(|i| NetworkVolume {
            id: format!("nv{i:08}"),
            name: format!("bench-volume-{i}"),
            size: 50,
            data_center_id: "EU-RO-1".into(),
            volume_type: VolumeType::Standard,
        })
        .collect();
    let (template, endpoint, delegation) = (
        f.templates[0].clone(),
        f.endpoints[0].clone(),
        f.delegations[0].clone(),
    );
    // The fixtures' own come first: an endpoint's template is found at once in the check.
    f.templates.truncate(1);
    f.templates.extend((1..n).map(|i| Template {
        id: format!("tmpl{i:08}"),
        name: format!("bench-template-{i}"),
        ..template.clone()
    }));
    f.endpoints = (0..n)
        .map(|i| EndpointRecord {
            id: format!("ep{i:08}"),
            name: format!("bench-endpoint-{i}"),
            ..endpoint.clone()
        })
        .collect();
    f.delegations = (0..n)
        .map(|i| Delegation {
            id: format!("dlg{i:08}"),
            name: format!("bench-delegation-{i}"),
            ..delegation.clone()
        })
        .collect();
    f.registries = (0..n)
        .map(|i| RegistryAuth {
            id: format!("reg{i:08}"),
            name: format!("bench-registry-{i}"),
            username: "bench".into(),
            password: "bench-password".into(),
        })
        .collect();
    f
}

/// Instant Clusters of two 8-GPU members each, created over REST v2 on machines made for
/// them.
async fn create_clusters(emu: &RunningEmulator, n: usize) {
    use futures::StreamExt;
    let gpu = "NVIDIA GeForce RTX 4090";
    emu.admin()
        .set_machines(gpu, "US-TX-3", 2 * n as u32 + 2, 8)
        .await
        .unwrap();
    let (http, url) = (
        reqwest::Client::new(),
        format!("{}/v2/clusters", emu.base_url()),
    );
    let created = futures::stream::iter(0..n)
        .map(|i| {
            let (http, url) = (http.clone(), url.clone());
            async move {
                let body = json!({
                    "name": format!("bench-cluster-{i}"), "type": "SLURM", "image": "runpod/pytorch:2.8",
                    "dataCenterIds": ["US-TX-3"],
                    "compute": {"gpuTypeId": gpu, "gpuCountPerPod": 8, "podCount": 2},
                });
                let r = http.post(&url).bearer_auth(KEY).json(&body).send().await.unwrap();
                r.status().as_u16() == 201
            }
        })
        .buffer_unordered(4)
        .filter(|ok| std::future::ready(*ok))
        .count()
        .await;
    assert_eq!(created, n);
}

/// Every list route of both surfaces on a world of `n` objects of each kind (clusters: at
/// most `CLUSTERS_AT_MOST`), and a small call while they run.
async fn every_list(n: usize) {
    let emu = emulator::start(
        config(Some(every_kind(n))),
        "127.0.0.1:0".parse::<SocketAddr>().unwrap(),
    )
    .await
    .unwrap();
    let clusters = n.min(CLUSTERS_AT_MOST);
    create_clusters(&emu, clusters).await;
    println!("every list route, on {n} objects of each kind ({clusters} clusters):");
    let lists = [
        ListCall::get("/v2/pods", "/pods", n),
        ListCall::get("/v2/network-volumes", "/networkVolumes", n),
        ListCall::get("/v2/serverless", "/endpoints", n),
        ListCall::get("/v2/templates", "/templates", n),
        ListCall::get("/v2/clusters", "/clusters", clusters),
        ListCall::get("/v2/registries", "/registries", n),
        ListCall::get("/v1/endpoints", "", n),
        ListCall::get("/v1/networkvolumes", "", n),
        ListCall::get("/v1/templates", "", n),
        ListCall::get("/v1/containerregistryauth", "", n),
        ListCall::get("/v2/registries/delegations", "/delegations", n),
        ListCall::graphql(SDK_PODS_QUERY, "/data/myself/pods", n),
        ListCall::graphql(
            "{ myself { networkVolumes { id name size dataCenterId } } }",
            "/data/myself/networkVolumes",
            n,
        ),
    ];
    let calls = if n > 20_000 { 20 } else { 50 };
    for call in &lists {
        call.time(&emu, calls).await;
    }
    small_call_among(&emu, "nv00000000", &lists).await;
    emu.shutdown().await;
}

/// Records a throughput figure of work that succeeded, and fails the run when any round
/// failed.
fn throughput(name: &str, done: u64, failed: u64, secs: f64, unit: &str) {
    report::figure(name, done as f64 / secs, unit);
    if failed > 0 {
        report::fail(format!("{name}: {failed} rounds failed"));
    }
}

fn main() {
    report::begin("emulator");
    let n = objects();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        volumes_over_http(n).await;
        every_list(n).await;
        job_api().await;
        let emu = emulator::start(
            config(Some(many_pods(PODS))),
            "127.0.0.1:0".parse::<SocketAddr>().unwrap(),
        )
        .await
        .unwrap();
        graphql(&emu).await;
        emu.shutdown().await;
        println!("GET /v2/pods ({PODS} pods), in process:");
        v2_listing_in_process();
        v2_pods_create().await;
    });
    report::finish();
}
