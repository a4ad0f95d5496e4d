//! Client throughput against the in-process emulator, and the client's own overhead per
//! call compared with bare `reqwest` on the same routes. Loopback only, fixed call counts.
//!
//! `cargo bench --bench client` (add `-- --quick` for a smaller run).

#[path = "support/report.rs"]
mod report;

use std::time::{Duration, Instant};

use futures::StreamExt;
use gpucloud_emulator::{self as emulator, EmulatorConfig};
use gpucloud_platform::{
    ApiKey, BaseUrls, EndpointCreate, JobRequest, PlatformClient, PlatformConfig, RateLimits,
};
use serde_json::json;

const KEY: &str = "bench-key";

/// One row of the table: the case, how many calls, and calls per second.
fn row(case: &str, calls: usize, took: Duration) {
    let per_second = calls as f64 / took.as_secs_f64();
    println!("{case:<44} {calls:>10} {per_second:>12.0}");
    report::figure(case, per_second, "calls per s");
}

/// How long `n` job submissions to `endpoint` take, `concurrency` at a time.
async fn run_jobs(
    client: &PlatformClient,
    endpoint: &str,
    n: usize,
    concurrency: usize,
) -> Duration {
    timed(n, concurrency, |i| {
        let jobs = client.jobs();
        async move {
            let job = JobRequest::new(json!({ "i": i }));
            jobs.run(endpoint, &job).await.unwrap();
        }
    })
    .await
}

/// The job's status with bare reqwest, parsed as the client would parse it.
async fn raw_status(raw: &reqwest::Client, url: &str) -> serde_json::Value {
    let response = raw.get(url).bearer_auth(KEY).send().await.unwrap();
    serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
}

async fn timed<F, Fut>(n: usize, concurrency: usize, f: F) -> Duration
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let started = Instant::now();
    futures::stream::iter(0..n)
        .map(&f)
        .buffer_unordered(concurrency)
        .collect::<Vec<()>>()
        .await;
    started.elapsed()
}

#[tokio::main]
async fn main() {
    report::begin("client");
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 2_000 } else { 10_000 };
    let seq_n = if quick { 500 } else { 2_000 };

    let config = EmulatorConfig {
        api_keys: vec![emulator::ApiKey {
            key: KEY.into(),
            read_only: false,
        }],
        // One live worker lifts the job API limit out of the way: we measure the client.
        requests_per_worker: 100_000_000,
        ..EmulatorConfig::default()
    };
    let emu = emulator::start(config, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let urls = BaseUrls::single_host(&emu.base_url()).unwrap();
    let mut cfg = PlatformConfig::new(urls, ApiKey::new(KEY).unwrap());
    cfg.rate_limits = RateLimits::unlimited();
    let client = PlatformClient::new(cfg).unwrap();

    let ep = client
        .rest()
        .create_endpoint(&EndpointCreate {
            name: "bench".into(),
            template_id: "tmpl-worker-base".into(),
            gpu_type_ids: vec!["NVIDIA A40".into()],
            workers_min: 1,
            workers_max: 1,
            idle_timeout: 60,
            ..Default::default()
        })
        .await
        .unwrap();
    let job = client
        .jobs()
        .runsync(&ep.id, &JobRequest::new(json!({"x": 1})), None)
        .await
        .unwrap();
    let job_id = job.id.clone().unwrap();
    let status_url = format!("{}/{}/status/{}", emu.serverless_url(), ep.id, job_id);
    // Same socket settings as the client's pool, so the comparison is of the client's work.
    let raw = reqwest::Client::builder()
        .tcp_nodelay(true)
        .build()
        .unwrap();

    // Warm the pools.
    for _ in 0..50 {
        client.jobs().status(&ep.id, &job_id, None).await.unwrap();
        raw_status(&raw, &status_url).await;
    }

    println!("platform client benchmark (emulator on loopback, client limits off)");
    println!("{:<44} {:>10} {:>12}", "case", "calls", "calls/s");

    // Sequential: latency per call, client vs bare reqwest, interleaved in rounds so that
    // drift (emulator state, CPU frequency) falls on both alike.
    let rounds = 4;
    let per_round = seq_n / rounds;
    let mut client_seq = Duration::ZERO;
    let mut raw_seq = Duration::ZERO;
    for _ in 0..rounds {
        let started = Instant::now();
        for _ in 0..per_round {
            std::hint::black_box(raw_status(&raw, &status_url).await);
        }
        raw_seq += started.elapsed();
        let started = Instant::now();
        for _ in 0..per_round {
            let j = client.jobs().status(&ep.id, &job_id, None).await.unwrap();
            std::hint::black_box(j);
        }
        client_seq += started.elapsed();
    }
    let seq_n = per_round * rounds;
    row("jobs.status sequential (client)", seq_n, client_seq);
    row("GET /status sequential (bare reqwest)", seq_n, raw_seq);

    // Concurrent (64 in flight).
    let c = 64;
    let client_par = timed(n, c, |_| {
        let jobs = client.jobs();
        let (ep, id) = (ep.id.clone(), job_id.clone());
        async move {
            jobs.status(&ep, &id, None).await.unwrap();
        }
    })
    .await;
    let raw_par = timed(n, c, |_| {
        let (raw, url) = (raw.clone(), status_url.clone());
        async move {
            std::hint::black_box(raw_status(&raw, &url).await);
        }
    })
    .await;
    row("jobs.status x64 concurrent (client)", n, client_par);
    row("GET /status x64 concurrent (bare reqwest)", n, raw_par);

    let runs = run_jobs(&client, &ep.id, n, c).await;
    row("jobs.run x64 concurrent (client)", n, runs);

    let m = n / 5;
    let rest = timed(m, c, |_| {
        let rest = client.rest();
        async move {
            rest.list_network_volumes().await.unwrap();
        }
    })
    .await;
    row("rest.list_network_volumes x64 (client)", m, rest);
    let gql = timed(m, c, |_| {
        let gql = client.graphql();
        async move {
            gql.my_pods().await.unwrap();
        }
    })
    .await;
    row("graphql.my_pods x64 (client)", m, gql);

    let per_call_seq = (client_seq.as_secs_f64() - raw_seq.as_secs_f64()) / seq_n as f64 * 1e6;
    let per_call_par = (client_par.as_secs_f64() - raw_par.as_secs_f64()) / n as f64 * 1e6;
    println!();
    println!("client overhead per call over bare reqwest (same route, same decoding):");
    println!(
        "  sequential: {per_call_seq:+.1} us/call (client {:.1} us, bare {:.1} us)",
        client_seq.as_secs_f64() / seq_n as f64 * 1e6,
        raw_seq.as_secs_f64() / seq_n as f64 * 1e6
    );
    println!("  64 concurrent: {per_call_par:+.1} us/call of wall time");
    report::figure(
        "client overhead per call over bare reqwest, sequential",
        per_call_seq,
        "us",
    );
    report::figure(
        "client overhead per call over bare reqwest, 64 concurrent",
        per_call_par,
        "us",
    );

    // With the spec's limits on, the client paces itself: a burst of /run per endpoint.
    let mut cfg = PlatformConfig::new(
        BaseUrls::single_host(&emu.base_url()).unwrap(),
        ApiKey::new(KEY).unwrap(),
    );
    cfg.rate_limits = RateLimits::default();
    let paced = PlatformClient::new(cfg).unwrap();
    let burst = 300;
    let d = run_jobs(&paced, &ep.id, burst, burst).await;
    println!();
    println!(
        "with the spec's limits (1000 /run per 10 s, 0.9 headroom): {burst} /run in {:.2} s ({:.0}/s)",
        d.as_secs_f64(),
        burst as f64 / d.as_secs_f64()
    );
    report::figure(
        "jobs.run with the spec's limits, a burst of 300",
        burst as f64 / d.as_secs_f64(),
        "calls per s",
    );
    emu.shutdown().await;
    report::finish();
}
