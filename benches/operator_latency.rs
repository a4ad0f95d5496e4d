//! Benchmark (not a test): how soon a spec change reaches the platform. A NetworkVolume's
//! `sizeGb` grows by one through the Kubernetes API (a merge patch, as `kubectl patch`
//! sends), and the clock stops when the emulator, in this process, receives the update
//! call for that volume. Measured with the volume alone, then with N other volumes present
//! and converged; the operator binary runs as a child process against a real apiserver.
//!
//!   eval "$(tests/control-plane/cp.sh up --dir /tmp/cp-bench)"
//!   BENCH_V2_QUOTA_PER_MINUTE=100000 cargo bench --bench operator_latency
//!
//! Prints p50, p99 and max of each phase (the design's bar: p99 at most 100 ms with the
//! volume alone), the share of that the apiserver's answer to the patch took, and how many
//! samples needed a new listing of the platform's volumes before the update.
//! Environment: GPUCLOUD_TEST_PLATFORM_API (`v2`, the default, or `seed`),
//! BENCH_V2_QUOTA_PER_MINUTE (the emulator's REST v2 quota per key and route group),
//! BENCH_OBJECTS (the other volumes, default 1000), BENCH_SAMPLES (per phase, default 60),
//! BENCH_POLL_SECONDS (resync interval, default 10).

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use std::time::{Duration, Instant};

use gpucloud_crd::NetworkVolume;
use gpucloud_emulator::faults::CallSeen;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use tokio::sync::broadcast;

use common::operator::{Env, ready_now, volume};
use support::{all_ready, env_number, with_bench_quota};

const TARGET: &str = "latency-target";

struct Options {
    others: usize,
    samples: usize,
    poll: Duration,
}

fn options() -> Options {
    Options {
        others: env_number("BENCH_OBJECTS").unwrap_or(1000) as usize,
        samples: env_number("BENCH_SAMPLES").unwrap_or(60) as usize,
        poll: Duration::from_secs(env_number("BENCH_POLL_SECONDS").unwrap_or(10)),
    }
}

/// One spec change and what followed it.
struct Sample {
    /// From sending the patch to the emulator receiving the update call.
    to_call: Duration,
    /// From sending the patch to the apiserver's answer.
    patch_answered: Duration,
    /// Whether the operator listed the volumes between the patch and the update.
    listed_first: bool,
}

/// The `p`th percentile (nearest rank) of sorted `values`.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

fn describe(phase: &str, samples: &[Sample]) {
    let mut to_call: Vec<Duration> = samples.iter().map(|s| s.to_call).collect();
    let mut answered: Vec<Duration> = samples.iter().map(|s| s.patch_answered).collect();
    to_call.sort();
    answered.sort();
    let listed = samples.iter().filter(|s| s.listed_first).count();
    let report = |what: &str, d: Duration| {
        support::report::figure(
            &format!("{phase}: spec change to platform call, {what}"),
            d.as_secs_f64() * 1000.0,
            "ms",
        );
    };
    report("p50", percentile(&to_call, 50.0));
    report("p99", percentile(&to_call, 99.0));
    report("max", *to_call.last().expect("samples"));
    println!(
        "  {phase}: spec change to platform call over {} samples: p50 {}, p99 {}, max {} (bar: p99 <= 100 ms idle)",
        samples.len(),
        ms(percentile(&to_call, 50.0)),
        ms(percentile(&to_call, 99.0)),
        ms(*to_call.last().expect("samples")),
    );
    println!(
        "  {phase}: the apiserver answered the patch in p50 {}, p99 {}; {listed} of {} samples listed the volumes before the update",
        ms(percentile(&answered, 50.0)),
        ms(percentile(&answered, 99.0)),
        samples.len(),
    );
}

/// Grows the target by one GB and waits for the update call the change causes.
async fn one_sample(
    api: &Api<NetworkVolume>,
    calls: &mut broadcast::Receiver<CallSeen>,
    list_route: &str,
    remote_id: &str,
    size: i64,
) -> Sample {
    // Calls from before this change (resyncs, the last sample's) are not its effect.
    while !matches!(calls.try_recv(), Err(broadcast::error::TryRecvError::Empty)) {}
    let patch = Patch::Merge(serde_json::json!({"spec": {"sizeGb": size}}));
    let sent = Instant::now();
    api.patch(TARGET, &PatchParams::default(), &patch)
        .await
        .expect("patch the target's spec");
    let patch_answered = sent.elapsed();
    let mut listed_first = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let call = match tokio::time::timeout_at(deadline, calls.recv()).await {
            Ok(Ok(call)) => call,
            Ok(Err(broadcast::error::RecvError::Lagged(missed))) => {
                eprintln!("  missed {missed} calls; continuing");
                continue;
            }
            Ok(Err(broadcast::error::RecvError::Closed)) | Err(_) => {
                panic!("no update call for {remote_id} within 60 s of the spec change")
            }
        };
        if call.route == list_route {
            listed_first = true;
        }
        if !call.route.starts_with("GET ") && call.path.contains(remote_id) {
            return Sample {
                to_call: call.at.duration_since(sent),
                patch_answered,
                listed_first,
            };
        }
    }
}

/// `samples` spec changes of the target, one at a time: each waits until the previous one
/// is Ready, then a moment more, so that it starts from a settled object.
async fn measure(
    env: &Env,
    calls: &mut broadcast::Receiver<CallSeen>,
    samples: usize,
) -> Vec<Sample> {
    let api: Api<NetworkVolume> = env.api();
    let target = api.get(TARGET).await.expect("the target");
    let remote_id = target
        .status
        .as_ref()
        .and_then(|s| s.common.id.clone())
        .expect("a Ready target has its id in status");
    let mut size = i64::from(target.spec.size_gb);
    let list_route = common::backend::routes().list_volumes;
    let mut out = Vec::with_capacity(samples);
    for _ in 0..samples {
        size += 1;
        out.push(one_sample(&api, calls, list_route, &remote_id, size).await);
        env.wait_for::<NetworkVolume, _>(TARGET, Duration::from_secs(60), "Ready", ready_now)
            .await;
        // Not in step with the resync: a pause between 200 and 700 ms.
        let pause = 200 + rand::random_range(0..500);
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
    out
}

/// Creates `n` other volumes one after another on one connection.
async fn create_others(api: &Api<NetworkVolume>, n: usize) {
    for i in 0..n {
        api.create(
            &PostParams::default(),
            &volume(&format!("vol-{i:05}"), 10, serde_json::json!({})),
        )
        .await
        .expect("create a NetworkVolume");
    }
}

async fn run(opts: Options) {
    println!(
        "operator_latency: {} samples alone and with {} other NetworkVolumes, {} backend, resync every {:?}",
        opts.samples,
        opts.others,
        common::backend::backend(),
        opts.poll
    );
    let env = Env::start_with(
        "bench-lat",
        with_bench_quota(gpucloud_emulator::EmulatorConfig::default()),
    )
    .await;
    let poll = format!("--poll-interval={}s", opts.poll.as_secs());
    let operator = env.operator_process(&[poll.as_str(), "--progress-interval=5s"]);
    let up = common::wait_until(Duration::from_secs(30), || async {
        operator.log().contains("serving /metrics")
    })
    .await;
    assert!(up, "the operator did not start");
    let api: Api<NetworkVolume> = env.api();
    let mut calls = env.emulator.subscribe_calls();

    api.create(
        &PostParams::default(),
        &volume(TARGET, 10, serde_json::json!({})),
    )
    .await
    .expect("create the target");
    all_ready(api.clone(), 1, Duration::from_secs(60))
        .await
        .expect("the target Ready");
    let alone = measure(&env, &mut calls, opts.samples).await;
    describe("alone", &alone);

    if opts.others > 0 {
        create_others(&api, opts.others).await;
        let timeout = Duration::from_secs(120 + opts.others as u64 / 5);
        all_ready(api.clone(), opts.others + 1, timeout)
            .await
            .expect("every volume Ready");
        let loaded = measure(&env, &mut calls, opts.samples).await;
        describe(&format!("with {} others", opts.others), &loaded);
    }

    // Clean up: the operator releases every object (Orphan: the volumes stay remote).
    if let Err(e) = api
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
    {
        eprintln!("  deletecollection answered {e}; the namespace's deletion goes on");
    }
    env.finish_process(operator).await;
}

fn main() {
    support::main_with_control_plane("operator_latency", || run(options()));
}
