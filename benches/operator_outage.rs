//! Benchmark (not a test): how soon the operator catches up after the apiserver was away.
//! The operator binary runs as child processes (two replicas with leader election, or
//! one) against a control plane of the benchmark's own, with N NetworkVolumes converged.
//! For each outage length, the apiserver is stopped (SIGTERM; it closes its watches within
//! 2 s) and started again with the same command line (the clock starts when its /readyz
//! answers 200); at once a new volume is created and one is grown, and the benchmark
//! prints how long until the apiserver took them, until the platform has the new volume
//! and the grown size, and until every object is Ready again.
//!
//!   cargo bench --bench operator_outage
//!
//! Needs the control plane's binaries (`tests/control-plane/cp.sh build`), not a running
//! control plane. Environment: GPUCLOUD_TEST_PLATFORM_API (`v2`, the default, or `seed`),
//! BENCH_OBJECTS (volumes, default 100), BENCH_REPLICAS (1 or 2, default 2),
//! BENCH_OUTAGES (seconds, comma separated, default `20,120,600`).

#[path = "../tests/common/mod.rs"]
mod common;
mod support;

use std::time::{Duration, Instant};

use gpucloud_crd::NetworkVolume;
use gpucloud_engine::marker::names_object;
use kube::api::{Api, Patch, PatchParams, PostParams};

use common::control_plane::OwnControlPlane;
use common::operator::{Env, OperatorProcess, free_port, volume};
use common::volumes::volume_id;
use support::{all_ready, env_number, with_bench_quota};

struct Options {
    objects: usize,
    replicas: usize,
    outages: Vec<Duration>,
}

fn options() -> Options {
    let outages = std::env::var("BENCH_OUTAGES")
        .unwrap_or_else(|_| "20,120,600".into())
        .split(',')
        .map(|s| Duration::from_secs(s.trim().parse().expect("BENCH_OUTAGES: seconds")))
        .collect();
    Options {
        objects: env_number("BENCH_OBJECTS").unwrap_or(100) as usize,
        replicas: env_number("BENCH_REPLICAS").unwrap_or(2).clamp(1, 2) as usize,
        outages,
    }
}

/// Seconds from `from` to `to`, one decimal.
fn secs(from: Instant, to: Option<Instant>) -> String {
    to.map(|t| format!("{:.1} s", (t - from).as_secs_f64()))
        .unwrap_or_else(|| "never (120 s)".into())
}

async fn run(cp: OwnControlPlane, opts: Options) {
    println!(
        "operator_outage: {} NetworkVolumes, {} replica(s), {} backend, outages of {:?}",
        opts.objects,
        opts.replicas,
        common::backend::backend(),
        opts.outages
    );
    let client = cp.client().await;
    let env = Env::start_on(
        client.clone(),
        client.clone(),
        "bench-outage",
        with_bench_quota(gpucloud_emulator::EmulatorConfig::default()),
    )
    .await;
    let operators: Vec<OperatorProcess> = (0..opts.replicas)
        .map(|i| {
            let metrics = format!("--metrics-addr=127.0.0.1:{}", free_port());
            let identity = format!("--identity=bench-outage-{i}");
            let mut flags = vec![metrics.as_str(), identity.as_str()];
            if opts.replicas > 1 {
                flags.push("--leader-election");
            }
            env.operator_process_on(&cp.kubeconfig, &flags)
        })
        .collect();
    let api: Api<NetworkVolume> = env.api();
    for i in 0..opts.objects {
        api.create(
            &PostParams::default(),
            &volume(&format!("vol-{i}"), 10, serde_json::json!({})),
        )
        .await
        .expect("create a volume");
    }
    let mut count = opts.objects;
    all_ready(
        api.clone(),
        count,
        Duration::from_secs(120 + opts.objects as u64 / 5),
    )
    .await
    .expect("every volume Ready");
    let grown_id = volume_id(&env, "vol-0").await;

    for (round, down) in opts.outages.iter().enumerate() {
        cp.stop("kube-apiserver");
        tokio::time::sleep(*down).await;
        cp.start("kube-apiserver");
        let back = Instant::now();
        // Timed from the apiserver taking the changes (once back: its /readyz).
        let new = common::retrying("create the new volume", || {
            let object = volume(&format!("after-{round}"), 10, serde_json::json!({}));
            let api = api.clone();
            async move { api.create(&PostParams::default(), &object).await }
        })
        .await;
        count += 1;
        let size = 11 + round as i64;
        common::retrying("grow vol-0", || {
            let api = api.clone();
            async move {
                let patch = Patch::Merge(serde_json::json!({"spec": {"sizeGb": size}}));
                api.patch("vol-0", &PatchParams::default(), &patch).await
            }
        })
        .await;
        let taken = Instant::now();
        let (mut created, mut grown) = (None, None);
        let deadline = back + Duration::from_secs(120);
        while (created.is_none() || grown.is_none()) && Instant::now() < deadline {
            if created.is_none()
                && !env
                    .remote_volumes_where(|n| names_object(&new, n))
                    .await
                    .is_empty()
            {
                created = Some(Instant::now());
            }
            if grown.is_none()
                && env
                    .remote_volume(&grown_id)
                    .await
                    .is_ok_and(|v| v.size == size)
            {
                grown = Some(Instant::now());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let ready = all_ready(api.clone(), count, Duration::from_secs(120)).await;
        if created.is_none() || grown.is_none() || ready.is_none() {
            support::report::fail(format!(
                "apiserver away {} s: NOT CONVERGED within 120 s of the return",
                down.as_secs()
            ));
        }
        let away = down.as_secs();
        let after_return = |what: &str, at: Option<Instant>| {
            if let Some(at) = at {
                support::report::figure(
                    &format!("apiserver away {away} s: {what} after the return"),
                    at.duration_since(back).as_secs_f64(),
                    "s",
                );
            }
        };
        after_return("changes taken", Some(taken));
        after_return("new volume on the platform", created);
        after_return("grown volume on the platform", grown);
        after_return(&format!("all {count} Ready"), ready);
        println!(
            "  apiserver away {} s: changes taken {} after the return; new volume on the platform {}, grown volume {}, all {count} Ready {}",
            down.as_secs(),
            secs(back, Some(taken)),
            secs(back, created),
            secs(back, grown),
            secs(back, ready),
        );
    }
    for operator in operators {
        operator.terminate().await;
    }
    env.emulator.shutdown().await;
}

fn main() {
    support::report::begin("operator_outage");
    let opts = options();
    let cp = OwnControlPlane::up_with(
        "bench-outage",
        &["--shutdown-watch-termination-grace-period=2s"],
    );
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(run(cp, opts));
    support::report::finish();
}
