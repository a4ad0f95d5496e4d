//! Benchmark (not a test): N NetworkVolumes shared between two installs by a label
//! selector, the scale-out path when one install is not enough. Each install is an
//! operator child process with its own name (`--install NS/shard-a`) and share
//! (`--selector shard=a`); half the objects carry each label. A real kube-apiserver, the
//! emulator in this process.
//!
//!   eval "$(tests/control-plane/cp.sh up --dir /tmp/cp-bench)"
//!   cargo bench --bench operator_shards               # 10,000 objects
//!   cargo bench --bench operator_shards -- 2000       # or BENCH_OBJECTS=2000
//!
//! Prints: the time from the first apply to all Ready; apiserver writes per object;
//! platform creates (one per object: no object is made by both installs) and calls per
//! resync; each install's resident memory; every object's claim naming the install of its
//! share; the time to delete them all. Environment: BENCH_V2_QUOTA_PER_MINUTE (the
//! emulator's REST v2 quota), BENCH_POLL_SECONDS (resync interval, default 10).

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use gpucloud_crd::NetworkVolume;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};

use common::calls::total_calls;
use common::operator::{Env, OperatorProcess, volume};
use support::deletes::delete_all;
use support::{
    all_ready, apiserver_writes, env_number, mib, resident_kib, with_bench_quota, writes_since,
};

const SHARDS: [&str; 2] = ["a", "b"];

fn shard_of(i: usize) -> &'static str {
    SHARDS[i % SHARDS.len()]
}

/// Volume `i`, labelled with its share.
fn labelled(i: usize) -> NetworkVolume {
    let mut nv = volume(
        &format!("vol-{i:06}"),
        10,
        serde_json::json!({"deletionPolicy": "Delete"}),
    );
    nv.labels_mut().insert("shard".into(), shard_of(i).into());
    nv
}

/// Creates `objects`, 16 at a time (as fast as the apiserver takes them).
async fn create_all(api: &Api<NetworkVolume>, objects: Vec<NetworkVolume>) -> Duration {
    let started = Instant::now();
    futures::stream::iter(objects)
        .for_each_concurrent(16, |nv| async move {
            api.create(&PostParams::default(), &nv)
                .await
                .expect("create a NetworkVolume");
        })
        .await;
    started.elapsed()
}

/// How many objects' claims name the install of their share, and how many do not.
async fn claims_by_share(api: &Api<NetworkVolume>, ns: &str) -> (usize, usize) {
    let all = api.list(&ListParams::default()).await.expect("list");
    let (mut right, mut wrong) = (0, 0);
    for nv in &all.items {
        let shard = nv.labels().get("shard").cloned().unwrap_or_default();
        let owner = nv.annotations().get("gpucloud.io/owner").cloned();
        let want = format!("{ns}/shard-{shard}@");
        if owner.is_some_and(|o| o.starts_with(&want)) {
            right += 1;
        } else {
            wrong += 1;
        }
    }
    (right, wrong)
}

async fn run() {
    let n = support::objects(10_000);
    let poll = Duration::from_secs(env_number("BENCH_POLL_SECONDS").unwrap_or(10));
    println!(
        "operator_shards: {n} NetworkVolumes shared by two installs (--selector shard=a|b) on the {} backend, resync every {poll:?}",
        common::backend::backend()
    );
    let config = with_bench_quota(gpucloud_emulator::EmulatorConfig::default());
    let env = Env::start_with("bench-shards", config).await;
    let ns = env.ns.name().to_string();
    let poll_flag = format!("--poll-interval={}s", poll.as_secs());
    let installs: Vec<(String, OperatorProcess)> = SHARDS
        .iter()
        .map(|shard| {
            let install = format!("--install={ns}/shard-{shard}");
            let selector = format!("--selector=shard={shard}");
            let flags = [
                install.as_str(),
                selector.as_str(),
                poll_flag.as_str(),
                "--progress-interval=5s",
            ];
            (format!("shard-{shard}"), env.operator_process(&flags))
        })
        .collect();
    for (_, operator) in &installs {
        let up = common::wait_until(Duration::from_secs(30), || async {
            operator.log().contains("serving /metrics")
        })
        .await;
        assert!(up, "an install did not start");
    }
    let idle: Vec<u64> = installs
        .iter()
        .map(|(_, o)| resident_kib(o.pid()).0)
        .collect();

    let api: Api<NetworkVolume> = env.api();
    let timeout = Duration::from_secs(120 + n as u64 / 5);
    let watch = tokio::spawn(all_ready(api.clone(), n, timeout));
    let before = apiserver_writes(&env.client, false)
        .await
        .unwrap_or_default();
    let started = Instant::now();
    let applied = create_all(&api, (0..n).map(labelled).collect()).await;
    let Some(ready_at) = watch.await.expect("the watch task") else {
        support::report::fail(format!("NOT CONVERGED within {timeout:?}"));
        for (name, operator) in &installs {
            let log = operator.log();
            let lines: Vec<&str> = log.lines().collect();
            for line in &lines[lines.len().saturating_sub(20)..] {
                eprintln!("  {name} | {line}");
            }
        }
        return;
    };
    let after = apiserver_writes(&env.client, false)
        .await
        .unwrap_or_default();
    let writes: BTreeMap<String, u64> = writes_since(&before, &after);
    let total: u64 = writes.values().sum();
    println!(
        "  applies:                    {n} creates in {:.2} s",
        applied.as_secs_f64()
    );
    println!(
        "  first apply to all Ready:   {:.2} s ({:.2} s after the last apply); {total} apiserver writes ({:.2} per object)",
        ready_at.duration_since(started).as_secs_f64(),
        ready_at
            .duration_since(started)
            .saturating_sub(applied)
            .as_secs_f64(),
        total as f64 / n as f64
    );
    let admin = env.emulator.admin();
    let creates = admin
        .call_count(common::backend::routes().create_volume)
        .await
        .unwrap_or(0);
    println!("  platform creates:           {creates} for {n} objects");
    let report = support::report::figure;
    report(
        &format!("{n} volumes over two installs: first create to all Ready"),
        ready_at.duration_since(started).as_secs_f64(),
        "s",
    );
    report(
        "apiserver writes per object",
        total as f64 / n as f64,
        "writes",
    );
    if creates != n as u64 {
        support::report::fail(format!("{creates} platform creates for {n} objects"));
    }
    let (right, wrong) = claims_by_share(&api, &ns).await;
    println!(
        "  claims:                     {right} name the install of their share, {wrong} do not"
    );
    if wrong > 0 {
        support::report::fail(format!("{wrong} claims name the wrong install"));
    }

    tokio::time::sleep(poll).await;
    admin.clear_calls().await.expect("clear calls");
    let intervals = 3u32;
    tokio::time::sleep(poll * intervals).await;
    let calls = env.calls().await;
    println!(
        "  platform calls per resync:  {:.1} (both installs) over {intervals} intervals: {calls:?}",
        total_calls(&calls) as f64 / f64::from(intervals)
    );
    report(
        "platform calls per resync, both installs",
        total_calls(&calls) as f64 / f64::from(intervals),
        "calls",
    );
    for ((name, operator), idle) in installs.iter().zip(&idle) {
        let (rss, hwm) = resident_kib(operator.pid());
        println!(
            "  {name} memory:             VmRSS {:.1} MiB with {} objects (idle {:.1} MiB, peak {:.1} MiB)",
            mib(rss),
            n / SHARDS.len(),
            mib(*idle),
            mib(hwm)
        );
    }
    let deleted = delete_all(&env.client, &api, Duration::from_secs(120 + n as u64 / 5)).await;
    println!("  delete all (Delete):        {}", deleted.describe());
    deleted.report("Delete");
    let mut installs = installs.into_iter().map(|(_, o)| o);
    let last = installs.next_back().expect("two installs");
    for operator in installs {
        operator.terminate().await;
    }
    env.finish_process(last).await;
}

fn main() {
    support::main_with_control_plane("operator_shards", run);
}
