//! Benchmark (not a test): N Instant Clusters of 4 nodes applied at once to a real
//! kube-apiserver, the emulator in this process with whole machines for all of them, the
//! operator binary as a child process. REST v2 only (the seed API has no clusters).
//!
//!   eval "$(tests/control-plane/cp.sh up --dir /tmp/cp-bench)"
//!   cargo bench --bench operator_cluster              # 100 Clusters
//!   cargo bench --bench operator_cluster -- 500       # or BENCH_OBJECTS=500
//!
//! Prints: the time from the first `kubectl apply` to all Ready (every node of every
//! cluster running, its ConfigMap written), over the same apply with no operator running, and the apiserver writes that took, per Cluster
//! (status, Events and the ConfigMap); platform calls to converge and per resync interval
//! once converged, by operation (batched observation means one cluster listing and one
//! member listing per interval whatever N is); the operator's resident memory at its peak
//! and once steady.
//! Environment: BENCH_V2_QUOTA_PER_MINUTE (the emulator's REST v2 quota per key and route
//! group), BENCH_OBJECTS (default 100), BENCH_NODES (nodes per cluster, default 4),
//! BENCH_POLL_SECONDS (resync interval, default 10), BENCH_PROGRESS_SECONDS (look-again
//! interval while nodes boot, default 1), BENCH_BOOT_MS (emulated boot time of a node,
//! default 500).

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use std::time::{Duration, Instant};

use gpucloud_crd::{Cluster, ClusterSpec};
use gpucloud_emulator::EmulatorConfig;
use kube::api::Api;

use common::operator::{Env, OperatorProcess};
use support::{apply_until_ready, by_operation, env_number};

const GPU: &str = "NVIDIA GeForce RTX 4090";
/// Every node takes a whole machine, as training clusters do.
const GPUS_PER_NODE: u32 = 8;

struct Options {
    objects: usize,
    nodes: u32,
    poll: Duration,
    progress: Duration,
    boot_ms: u64,
}

fn options() -> Options {
    Options {
        objects: support::objects(100),
        nodes: env_number("BENCH_NODES").unwrap_or(4) as u32,
        poll: Duration::from_secs(env_number("BENCH_POLL_SECONDS").unwrap_or(10)),
        progress: Duration::from_secs(env_number("BENCH_PROGRESS_SECONDS").unwrap_or(1)),
        boot_ms: env_number("BENCH_BOOT_MS").unwrap_or(500),
    }
}

/// A whole 4090 machine for every node and some to spare.
fn emulator_config(opts: &Options) -> EmulatorConfig {
    let machines = opts.objects as u32 * opts.nodes + 4;
    support::emulator_with_stock(GPU, machines, GPUS_PER_NODE, opts.boot_ms)
}

fn cluster(i: usize, nodes: u32) -> Cluster {
    let spec: ClusterSpec = serde_json::from_value(serde_json::json!({
        "type": "TRAINING",
        "image": "ghcr.io/acme/train:1",
        "ports": ["22/tcp"],
        "compute": {"gpuTypes": [GPU], "gpuCountPerPod": GPUS_PER_NODE, "podCount": nodes},
    }))
    .expect("a Cluster spec");
    Cluster::new(&format!("cluster-{i:04}"), spec)
}

async fn run(opts: Options) {
    support::quiet_logs();
    if !common::backend::is_v2() {
        support::report::fail("REST v2 only: the seed API has no Instant Clusters");
        return;
    }
    let n = opts.objects;
    println!(
        "operator_cluster: {n} Clusters of {} nodes ({GPUS_PER_NODE} GPUs each) on REST v2, resync every {:?}, progress every {:?}, nodes boot in {} ms",
        opts.nodes, opts.poll, opts.progress, opts.boot_ms
    );
    let env = Env::start_with("bench-cluster", emulator_config(&opts)).await;
    let objects: Vec<Cluster> = (0..n).map(|i| cluster(i, opts.nodes)).collect();
    let baseline =
        support::kubectl::baseline(&env.client, &format!("{n} Clusters"), &objects).await;

    let poll = format!("--poll-interval={}s", opts.poll.as_secs());
    let progress = format!("--progress-interval={}s", opts.progress.as_secs());
    let operator: OperatorProcess =
        env.operator_process_serving_metrics(&[poll.as_str(), progress.as_str()]);
    let api: Api<Cluster> = env.api();
    let timeout = Duration::from_secs(120 + n as u64);
    let Some(c) = apply_until_ready(&env, &operator, &api, objects, timeout, opts.progress).await
    else {
        return;
    };
    support::report_converged(&c, n, "Clusters");
    support::kubectl::report_ratio(c.converged, baseline);
    println!(
        "  kubectl apply, operator:      {n} creates in {:.2} s",
        c.applied.as_secs_f64()
    );
    println!(
        "  first apply to all Ready:     {:.2} s ({:.1} ms per Cluster)",
        c.converged.as_secs_f64(),
        c.converged.as_secs_f64() * 1000.0 / n as f64
    );
    println!(
        "  apiserver writes meanwhile:   {} ({:.1} per Cluster): {:?}",
        c.total_writes,
        c.total_writes as f64 / n as f64,
        c.writes
    );
    let converge_calls = by_operation(&env.calls().await);
    println!("  platform calls to converge:   {converge_calls:?}");
    let remote = env.platform.clusters().list().await.expect("list clusters");
    let nodes: usize = remote.iter().map(|c| c.members.len()).sum();
    println!(
        "  on the platform:              {} clusters, {nodes} member pods",
        remote.len()
    );
    support::expect_on_platform(remote.len(), n, "clusters");

    support::resync_costs(&env, opts.poll).await;
    support::report_memory(&c, n, "Clusters");

    // Deleting the namespace makes the operator delete every cluster before the
    // finalizers let go.
    let cleanup = Instant::now();
    env.finish_process(operator).await;
    println!(
        "  namespace deleted (every cluster deleted) in {:.2} s",
        cleanup.elapsed().as_secs_f64()
    );
    support::report::figure(
        "namespace deleted, every cluster deleted",
        cleanup.elapsed().as_secs_f64(),
        "s",
    );
}

fn main() {
    support::main_with_control_plane("operator_cluster", || run(options()));
}
