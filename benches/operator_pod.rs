//! Benchmark (not a test): N GPU Pods applied at once to a real kube-apiserver, the
//! emulator in this process with stock for all of them, the operator binary as a child
//! process.
//!
//!   eval "$(tests/control-plane/cp.sh up --dir /tmp/cp-bench)"
//!   cargo bench --bench operator_pod              # 1,000 Pods
//!   cargo bench --bench operator_pod -- 5000      # or BENCH_OBJECTS=5000
//!
//! Prints: the time from the first `kubectl apply` to all Ready, over the same apply with no
//! operator running, and the apiserver writes that took;
//! platform calls per resync interval once converged, by operation (batched observation
//! means one pod listing per interval whatever N is, and no catalog read once nothing
//! needs deploying), and the apiserver writes over the same intervals; the operator's
//! resident memory at its peak and once steady.
//! Environment: GPUCLOUD_TEST_PLATFORM_API (`v2`, the default, or `seed`),
//! BENCH_V2_QUOTA_PER_MINUTE (the emulator's REST v2 quota per key and route group), BENCH_OBJECTS (default 1000), BENCH_POLL_SECONDS (resync interval, default
//! 10), BENCH_PROGRESS_SECONDS (look-again interval while a pod boots, default 1),
//! BENCH_BOOT_MS (emulated boot time of a pod, default 500), BENCH_CONCURRENCY (operator
//! reconciles at once, default the operator's own).

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use std::time::{Duration, Instant};

use gpucloud_crd::{Pod, PodSpec};
use gpucloud_emulator::EmulatorConfig;
use kube::api::Api;

use common::operator::{Env, OperatorProcess};
use support::{apply_until_ready, by_operation, env_number, report};

const GPU: &str = "NVIDIA GeForce RTX 4090";
const GPUS_PER_MACHINE: u32 = 8;

struct Options {
    objects: usize,
    poll: Duration,
    progress: Duration,
    boot_ms: u64,
    concurrency: Option<u64>,
}

fn options() -> Options {
    Options {
        objects: support::objects(1000),
        poll: Duration::from_secs(env_number("BENCH_POLL_SECONDS").unwrap_or(10)),
        progress: Duration::from_secs(env_number("BENCH_PROGRESS_SECONDS").unwrap_or(1)),
        boot_ms: env_number("BENCH_BOOT_MS").unwrap_or(500),
        concurrency: env_number("BENCH_CONCURRENCY"),
    }
}

/// Enough 4090 machines for `n` pods and some to spare.
fn emulator_config(n: usize, boot_ms: u64) -> EmulatorConfig {
    let machines = (n as u32).div_ceil(GPUS_PER_MACHINE) + 2;
    support::emulator_with_stock(GPU, machines, GPUS_PER_MACHINE, boot_ms)
}

fn pod(i: usize) -> Pod {
    let spec: PodSpec = serde_json::from_value(serde_json::json!({
        "image": "ghcr.io/acme/serve:1",
        "ports": ["8888/http"],
        "gpu": {"types": [GPU], "count": 1},
    }))
    .expect("a Pod spec");
    Pod::new(&format!("pod-{i:05}"), spec)
}

async fn run(opts: Options) {
    support::quiet_logs();
    let n = opts.objects;
    println!(
        "operator_pod: {n} Pods on the {} backend, resync every {:?}, progress every {:?}, pods boot in {} ms",
        common::backend::backend(),
        opts.poll,
        opts.progress,
        opts.boot_ms
    );
    let env = Env::start_with("bench-pod", emulator_config(n, opts.boot_ms)).await;

    let objects: Vec<Pod> = (0..n).map(pod).collect();
    let baseline = support::kubectl::baseline(&env.client, &format!("{n} Pods"), &objects).await;

    let poll = format!("--poll-interval={}s", opts.poll.as_secs());
    let progress = format!("--progress-interval={}s", opts.progress.as_secs());
    let concurrency = opts.concurrency.map(|c| format!("--concurrency={c}"));
    let mut flags = vec![poll.as_str(), progress.as_str()];
    flags.extend(concurrency.as_deref());
    let operator: OperatorProcess = env.operator_process_serving_metrics(&flags);
    let api: Api<Pod> = env.api();
    let timeout = Duration::from_secs(120 + n as u64 / 5);
    let Some(c) = apply_until_ready(&env, &operator, &api, objects, timeout, opts.progress).await
    else {
        return;
    };
    support::report_converged(&c, n, "Pods");
    support::kubectl::report_ratio(c.converged, baseline);
    println!(
        "  kubectl apply, operator:      {n} creates in {:.2} s",
        c.applied.as_secs_f64()
    );
    println!(
        "  first apply to all Ready:     {:.2} s ({:.2} s per 1,000 Pods)",
        c.converged.as_secs_f64(),
        c.converged.as_secs_f64() * 1000.0 / n as f64,
    );
    println!(
        "  apiserver writes meanwhile:   {} ({:.1} per Pod): {:?}",
        c.total_writes,
        c.total_writes as f64 / n as f64,
        c.writes
    );
    let converge_calls = by_operation(&env.calls().await);
    println!("  platform calls to converge:   {converge_calls:?}");
    let remote = env
        .platform
        .graphql()
        .my_pods()
        .await
        .expect("list the platform's pods")
        .len();
    println!("  pods on the platform:         {remote}");
    support::expect_on_platform(remote, n, "pods");

    support::resync_costs(&env, opts.poll).await;
    support::report_memory(&c, n, "Pods");

    // Deleting the namespace makes the operator terminate every pod before the finalizers
    // let go.
    let cleanup = Instant::now();
    env.finish_process(operator).await;
    println!(
        "  namespace deleted (every pod terminated) in {:.2} s",
        cleanup.elapsed().as_secs_f64()
    );
    report::figure(
        "namespace deleted, every pod terminated",
        cleanup.elapsed().as_secs_f64(),
        "s",
    );
}

fn main() {
    support::main_with_control_plane("operator_pod", || run(options()));
}
