//! A watch whose version etcd compacted, with no outage: it lists again once, at once.
//!
//! The control plane is this suite's own (its apiserver's flags are not the shared one's):
//! the apiserver compacts etcd every 2 s (`--etcd-compaction-interval`), and serves watches
//! from etcd rather than from its watch cache (`--watch-cache=false`; the cache would serve
//! a compacted version from its own history). Writes in another namespace move etcd's
//! revision on, so that a watch of a quiet namespace, which the apiserver ends every few
//! seconds (`--watch-timeout 3s`), asks to go on from a version compacted meanwhile and is
//! answered 410 Expired.
//! - The engine's watch ([`gpucloud_engine::watch_loop`]): after each 410 the next thing it
//!   tells is a new listing, within 100 ms (its first retry delay is 160 ms or more), that
//!   listing completes with the namespace's object, and it lists once per 410, never more.
//! - The operator on the same control plane: its NetworkVolume watch expires again and
//!   again, and a volume grown meanwhile still reaches the platform within seconds.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use gpucloud_emulator::EmulatorConfig;
use gpucloud_engine::metrics::Metrics;
use gpucloud_engine::watch_health::WatchHealth;
use gpucloud_engine::watch_loop::{watch_config, watch_loop};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::watcher::{Error, Event};
use kube::{Client, ResourceExt};
use serde_json::json;

use common::TestNamespace;
use common::calls::watch_listings;
use common::control_plane::OwnControlPlane;
use common::http::port_answer;
use common::operator::{Env, free_port, is_ready, volume};
use common::volumes::volume_id;

const WINDOW: Duration = Duration::from_secs(25);

/// ConfigMap writes in namespace `ns` every 50 ms until `stop`: etcd's revision moves on.
fn churn(client: Client, ns: String, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let api: Api<ConfigMap> = Api::namespaced(client, &ns);
        let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "churn"}})).unwrap();
        let _ = api.create(&PostParams::default(), &cm).await;
        let mut writes = 0;
        while !stop.load(Ordering::SeqCst) {
            let patch = Patch::Merge(json!({"data": {"n": writes.to_string()}}));
            if api
                .patch("churn", &PatchParams::default(), &patch)
                .await
                .is_ok()
            {
                writes += 1;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        writes
    })
}

fn is_expiry(error: &Error) -> bool {
    match error {
        Error::WatchError(status) => status.code == 410,
        Error::WatchStartFailed(kube::Error::Api(status))
        | Error::InitialListFailed(kube::Error::Api(status)) => status.code == 410,
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane binaries: run scripts/test.sh"]
async fn own_control_plane_a_compacted_watch_lists_again_once_and_at_once() {
    let cp = OwnControlPlane::up_with(
        "compaction",
        &["--etcd-compaction-interval=2s", "--watch-cache=false"],
    );
    let client = cp.client().await;
    let quiet_ns = TestNamespace::create(&client, "quiet").await;
    let busy = TestNamespace::create(&client, "busy").await;
    let quiet: Api<ConfigMap> = Api::namespaced(client.clone(), quiet_ns.name());
    let cm: ConfigMap = serde_json::from_value(json!({"metadata": {"name": "kept"}})).unwrap();
    quiet
        .create(&PostParams::default(), &cm)
        .await
        .expect("ConfigMap");

    let stop = Arc::new(AtomicBool::new(false));
    let writer = churn(client.clone(), busy.name().into(), stop.clone());
    let metrics = Arc::new(Metrics::new());
    let health = WatchHealth::new(metrics.clone(), "ConfigMap", "ConfigMap", quiet_ns.name());
    let config = watch_config(None, Duration::from_secs(3));
    let mut events = watch_loop(quiet.clone(), config, health).boxed();

    // What the watch tells, timed, for WINDOW.
    let began = Instant::now();
    let mut told: Vec<(Instant, Result<Event<ConfigMap>, Error>)> = Vec::new();
    while began.elapsed() < WINDOW {
        let left = WINDOW.saturating_sub(began.elapsed());
        match tokio::time::timeout(left, events.next()).await {
            Ok(Some(item)) => told.push((Instant::now(), item)),
            _ => break,
        }
    }
    stop.store(true, Ordering::SeqCst);
    let writes = writer.await.unwrap();

    let listings = told
        .iter()
        .filter(|(_, e)| matches!(e, Ok(Event::Init)))
        .count();
    let expiries: Vec<usize> = told
        .iter()
        .enumerate()
        .filter(|(_, (_, e))| e.as_ref().err().is_some_and(is_expiry))
        .map(|(i, _)| i)
        .collect();
    let other_errors: Vec<String> = told
        .iter()
        .filter_map(|(_, e)| e.as_ref().err().filter(|e| !is_expiry(e)))
        .map(ToString::to_string)
        .collect();
    eprintln!(
        "COMPACTION {writes} writes in {WINDOW:?}: {} expiries, {listings} listings, other errors {other_errors:?}",
        expiries.len()
    );
    assert!(
        expiries.len() >= 2,
        "the watch should have met compaction (410) at least twice in {WINDOW:?}"
    );
    assert!(
        other_errors.is_empty(),
        "errors other than 410: {other_errors:?}"
    );
    assert_eq!(
        listings,
        1 + expiries.len(),
        "one listing at start, one per 410"
    );
    // From a 410 to the end of the listing that follows it (its request included).
    let mut longest = Duration::ZERO;
    for &i in &expiries {
        // The 410 at `i`: then, at once, a whole listing holding the object.
        let (at, _) = &told[i];
        let next: Vec<&Result<Event<ConfigMap>, Error>> =
            told[i + 1..].iter().map(|(_, e)| e).take(3).collect();
        if next.len() < 3 {
            continue; // the window closed on it
        }
        let (relisted_at, _) = &told[i + 1];
        assert!(
            matches!(next[0], Ok(Event::Init)),
            "after a 410, a listing: {:?}",
            next[0]
        );
        let waited = *relisted_at - *at;
        longest = longest.max(told[i + 3].0 - *at);
        assert!(
            waited < Duration::from_millis(100),
            "the listing waited {waited:?} after the 410"
        );
        assert!(
            matches!(next[1], Ok(Event::InitApply(cm)) if cm.name_any() == "kept")
                && matches!(next[2], Ok(Event::InitDone)),
            "the listing is whole: {next:?}"
        );
    }
    eprintln!("COMPACTION the longest time from a 410 to the end of its listing: {longest:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane binaries: run scripts/test.sh"]
async fn own_control_plane_the_operator_converges_while_its_watch_keeps_expiring() {
    let cp = OwnControlPlane::up_with(
        "compaction-operator",
        &["--etcd-compaction-interval=2s", "--watch-cache=false"],
    );
    let client = cp.client().await;
    let env = Env::start_on(
        client.clone(),
        client.clone(),
        "compaction",
        EmulatorConfig::default(),
    )
    .await;
    let busy = TestNamespace::create(&client, "busy").await;
    let port = free_port();
    let operator = env.operator(&[
        &format!("--metrics-addr=127.0.0.1:{port}"),
        "--watch-timeout=3s",
    ]);
    env.create(&volume("data", 10, json!({}))).await;
    env.wait_for("data", Duration::from_secs(60), "Ready", is_ready)
        .await;
    let id = volume_id(&env, "data").await;

    let stop = Arc::new(AtomicBool::new(false));
    let writer = churn(client.clone(), busy.name().into(), stop.clone());
    let listings = || async {
        let (_, text) = port_answer(port, "/metrics").await.expect("/metrics");
        watch_listings(&text)
            .into_iter()
            .find(|((kind, resource, _), _)| kind == "NetworkVolume" && resource == "NetworkVolume")
            .map(|(_, n)| n)
            .unwrap_or(0)
    };
    let relisted =
        common::wait_until(Duration::from_secs(30), || async { listings().await >= 3 }).await;
    assert!(relisted, "the operator's watch never met compaction");

    let grown_at = Instant::now();
    let volumes: Api<gpucloud_crd::NetworkVolume> = env.api();
    volumes
        .patch(
            "data",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"sizeGb": 20}})),
        )
        .await
        .expect("grow");
    let reached = common::wait_until(Duration::from_secs(20), || async {
        env.remote_volume(&id).await.is_ok_and(|v| v.size == 20)
    })
    .await;
    let took = grown_at.elapsed();
    stop.store(true, Ordering::SeqCst);
    let writes = writer.await.unwrap();
    let relistings = listings().await;
    eprintln!(
        "COMPACTION operator: {writes} writes, {relistings} listings of NetworkVolume, the grown volume on the platform after {:.1} s",
        took.as_secs_f64()
    );
    assert!(reached, "the grown volume did not reach the platform");
    env.finish(operator).await;
}
