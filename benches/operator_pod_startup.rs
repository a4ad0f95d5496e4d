//! Benchmark (not a test): what reading the system logs of starting pods costs. N Pods
//! (default 100) are applied at once and boot slowly, so that all of them are starting
//! together; the operator (a child process) reads the system log of each while it starts.
//!
//!   eval "$(tests/control-plane/cp.sh up --dir /tmp/cp-bench)"
//!   cargo bench --bench operator_pod_startup            # 100 Pods
//!   cargo bench --bench operator_pod_startup -- 300     # or BENCH_OBJECTS=300
//!
//! Prints: log streams opened (calls of `GET /v2/pods/{id}/logs`) and the most open at once
//! (`gpucloud_log_streams_open`, sampled every 100 ms) while the pods start; the platform
//! calls per resync while they start and once they run; the streams still open once every
//! pod runs (0 when they are closed after); the operator's memory.
//! Environment: BENCH_OBJECTS, BENCH_BOOT_MS (emulated boot time, default 20000),
//! BENCH_POLL_SECONDS (resync interval, default 10), BENCH_PROGRESS_SECONDS (default 2).
//! REST v2 only: the seed API has no log stream.

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gpucloud_crd::{Pod, PodSpec};
use kube::api::{Api, PostParams};

use common::calls::calls_since;
use common::operator::{Env, OperatorProcess};
use support::{by_operation, env_number, mib, steady_resync};

const GPU: &str = "NVIDIA GeForce RTX 4090";
const GPUS_PER_MACHINE: u32 = 8;
const LOGS: &str = "GET /v2/pods/{id}/logs";

struct Options {
    objects: usize,
    boot_ms: u64,
    poll: Duration,
    progress: Duration,
}

fn options() -> Options {
    Options {
        objects: support::objects(100),
        boot_ms: env_number("BENCH_BOOT_MS").unwrap_or(20_000),
        poll: Duration::from_secs(env_number("BENCH_POLL_SECONDS").unwrap_or(10)),
        progress: Duration::from_secs(env_number("BENCH_PROGRESS_SECONDS").unwrap_or(2)),
    }
}

fn pod(i: usize) -> Pod {
    let spec: PodSpec = serde_json::from_value(serde_json::json!({
        "image": "ghcr.io/acme/serve:1",
        "gpu": {"types": [GPU], "count": 1},
    }))
    .expect("a Pod spec");
    Pod::new(&format!("boot-{i:04}"), spec)
}

/// `gpucloud_log_streams_open{kind="Pod"}` from the operator's `/metrics`.
async fn open_streams(operator: &OperatorProcess) -> Option<u64> {
    let text = operator.metrics().await?;
    text.lines()
        .find(|l| l.starts_with("gpucloud_log_streams_open{kind=\"Pod\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

async fn run(opts: Options) {
    support::quiet_logs();
    if !common::backend::is_v2() {
        support::report::fail("REST v2 only: the seed API has no pod log stream");
        return;
    }
    let n = opts.objects;
    println!(
        "operator_pod_startup: {n} Pods booting for {} ms each, resync every {:?}, progress every {:?}",
        opts.boot_ms, opts.poll, opts.progress
    );
    let machines = (n as u32).div_ceil(GPUS_PER_MACHINE) + 2;
    let config = support::emulator_with_stock(GPU, machines, GPUS_PER_MACHINE, opts.boot_ms);
    let env = Env::start_with("bench-boot", config).await;
    let poll = format!("--poll-interval={}s", opts.poll.as_secs());
    let progress = format!("--progress-interval={}s", opts.progress.as_secs());
    let operator: OperatorProcess = env.operator_process_serving_metrics(&[&poll, &progress]);
    let api: Api<Pod> = env.api();
    env.emulator.admin().clear_calls().await.unwrap();

    let started = Instant::now();
    for i in 0..n {
        api.create(&PostParams::default(), &pod(i))
            .await
            .expect("create a Pod");
    }
    // Sample the open streams until every pod runs.
    let mut peak = 0;
    let mut all_open_at = None;
    let mut starting_calls: Option<(Instant, BTreeMap<String, u64>)> = None;
    let deadline = started + Duration::from_secs(120) + Duration::from_millis(opts.boot_ms * 2);
    let ready_at = loop {
        let open = open_streams(&operator).await.unwrap_or(0);
        peak = peak.max(open);
        if open as usize >= n && all_open_at.is_none() {
            all_open_at = Some(started.elapsed());
            starting_calls = Some((Instant::now(), env.calls().await));
        }
        let pods = api
            .list(&Default::default())
            .await
            .expect("list Pods")
            .items;
        if pods.len() == n && pods.iter().all(common::operator::ready_now) {
            break started.elapsed();
        }
        if Instant::now() > deadline {
            support::report::fail(format!("NOT CONVERGED: {n} Pods not all Ready in time"));
            env.finish_process(operator).await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let calls = by_operation(&env.calls().await);
    let report = support::report::figure;
    report(
        &format!("{n} Pods: first create to all Ready"),
        ready_at.as_secs_f64(),
        "s",
    );
    if let Some(open) = all_open_at {
        report(
            &format!("{n} Pods: every log stream open"),
            open.as_secs_f64(),
            "s",
        );
    }
    let streams = calls.get(LOGS).copied().unwrap_or(0);
    report(
        "log streams opened per Pod",
        streams as f64 / n as f64,
        "streams",
    );
    report("log streams open at once, most", peak as f64, "streams");
    println!(
        "  all {n} Pods Ready after {:.1} s; every stream open after {}",
        ready_at.as_secs_f64(),
        all_open_at.map_or("never".to_string(), |d| format!("{:.1} s", d.as_secs_f64()))
    );
    println!(
        "  log streams opened:           {} ({:.2} per Pod); most open at once: {peak}",
        calls.get(LOGS).copied().unwrap_or(0),
        calls.get(LOGS).copied().unwrap_or(0) as f64 / n as f64
    );
    if let Some((since, before)) = starting_calls {
        let now = env.calls().await;
        let secs = since.elapsed().as_secs_f64().max(0.001);
        let per_interval: BTreeMap<String, f64> = by_operation(&calls_since(&before, &now))
            .into_iter()
            .map(|(k, v)| (k, v as f64 * opts.poll.as_secs_f64() / secs))
            .collect();
        println!(
            "  platform calls per resync while all {n} start: {per_interval:?} (over {secs:.1} s)"
        );
    }
    // Closed after: the next listing shows them running.
    tokio::time::sleep(opts.poll + opts.progress).await;
    let after = open_streams(&operator).await.unwrap_or(u64::MAX);
    println!("  log streams open once all run: {after}");
    report("log streams open once all run", after as f64, "streams");
    let steady = steady_resync(&env, opts.poll).await;
    steady.report();
    println!(
        "  platform calls per resync once all run: {:?} (over {} intervals)",
        steady.calls_per_interval, steady.intervals
    );
    let (rss, hwm) = support::resident_reported(operator.pid());
    println!(
        "  operator memory:              peak VmHWM {:.1} MiB; steady VmRSS {:.1} MiB",
        mib(hwm),
        mib(rss)
    );
    env.finish_process(operator).await;
}

fn main() {
    support::main_with_control_plane("operator_pod_startup", || run(options()));
}
