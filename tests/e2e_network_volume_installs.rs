//! NetworkVolume end to end across replicas and installs: only the leader of two replicas
//! acts and the other takes over, a small REST v2 quota is absorbed without 429s, two
//! installs on one namespace give each object one owner, and a label selector splits the
//! objects between installs. A real kube-apiserver, the emulator over real HTTP, operators
//! as child processes of the built binary. Run through `scripts/test.sh` (they need
//! `KUBECONFIG`).

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gpucloud_crd::NetworkVolume;
use gpucloud_engine::credentials::AccountId;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use common::calls::total_calls;
use common::operator::{Env, OperatorProcess, free_port, is_ready, volume};
use common::volumes::{assert_exactly_one_remote, has_reason_event};

const TIMEOUT: Duration = Duration::from_secs(30);
fn create_route() -> &'static str {
    common::backend::routes().create_volume
}

/// The Lease the replicas elect a leader with, and how long it stays valid.
async fn lease_holder(env: &Env) -> Option<(String, Duration)> {
    let leases: Api<Lease> = env.api();
    let lease = leases.get_opt("gpucloud-operator").await.unwrap()?;
    let spec = lease.spec?;
    let holder = spec.holder_identity?;
    let renewed = spec.renew_time?.0;
    let valid_for = Duration::from_secs(spec.lease_duration_seconds.unwrap_or(0) as u64);
    let left = (renewed + valid_for)
        .duration_since(Timestamp::now())
        .try_into()
        .unwrap_or(Duration::ZERO);
    Some((holder, left))
}

/// One scrape of a replica's `/metrics`, or nothing if it does not answer.
async fn scrape(port: u16) -> String {
    let url = format!("http://127.0.0.1:{port}/metrics");
    match reqwest::get(&url).await {
        Ok(resp) => resp.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// The sum of the samples of `metric` in a scrape (0 when there are none).
fn metric_sum(text: &str, metric: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(metric) && l[metric.len()..].starts_with(['{', ' ']))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn replica(env: &Env, identity: &str, port: u16) -> OperatorProcess {
    let ns = env.ns.name().to_string();
    env.operator_process(&[
        "--leader-election",
        &format!("--leader-election-namespace={ns}"),
        &format!("--identity={identity}"),
        &format!("--metrics-addr=127.0.0.1:{port}"),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn two_replicas_only_the_leader_acts_and_the_other_takes_over() {
    let env = Env::start("nv-leader").await;
    let api: Api<NetworkVolume> = env.api();
    let admin = env.emulator.admin();
    let (port_a, port_b) = (free_port(), free_port());
    let a = replica(&env, "replica-a", port_a);
    let led = common::wait_until(TIMEOUT, || async {
        lease_holder(&env)
            .await
            .is_some_and(|(h, _)| h == "replica-a")
    })
    .await;
    assert!(led, "replica-a never took the Lease");
    let b = replica(&env, "replica-b", port_b);
    // B is up (it serves /metrics) and ready, though it waits for the Lease: a rolling
    // update must be able to stop the leader once the new replica is Ready.
    assert!(
        common::wait_until(TIMEOUT, || async {
            reqwest::get(format!("http://127.0.0.1:{port_b}/healthz"))
                .await
                .is_ok_and(|r| r.status().is_success())
        })
        .await,
        "replica-b never came up"
    );
    let ready_b = reqwest::get(format!("http://127.0.0.1:{port_b}/readyz"))
        .await
        .unwrap()
        .status();
    assert!(
        ready_b.is_success(),
        "a follower must report ready: {ready_b}"
    );

    // With both running, the leader does all the work and the follower none.
    for name in ["first", "second"] {
        env.create(&volume(name, 10, json!({}))).await;
    }
    for name in ["first", "second"] {
        env.wait_for(name, TIMEOUT, "Ready", is_ready).await;
    }
    let (text_a, text_b) = (scrape(port_a).await, scrape(port_b).await);
    assert!(
        metric_sum(&text_a, "gpucloud_reconciles_total") > 0.0,
        "{text_a}"
    );
    assert!(
        metric_sum(&text_a, "gpucloud_platform_calls_total") > 0.0,
        "{text_a}"
    );
    assert_eq!(
        metric_sum(&text_b, "gpucloud_reconciles_total"),
        0.0,
        "the follower reconciled:\n{text_b}"
    );
    assert_eq!(
        metric_sum(&text_b, "gpucloud_platform_calls_total"),
        0.0,
        "the follower called the platform:\n{text_b}"
    );

    // Kill the leader: its Lease stays valid until it expires, and until then the follower,
    // now alone, must not act.
    a.kill();
    let killed_at = Instant::now();
    admin.clear_calls().await.unwrap();
    env.create(&volume("after", 10, json!({}))).await;
    let (holder, left) = lease_holder(&env).await.expect("a Lease");
    assert_eq!(holder, "replica-a");
    let quiet = left.saturating_sub(Duration::from_secs(1));
    tokio::time::sleep(quiet).await;
    let untouched: NetworkVolume = api.get("after").await.unwrap();
    assert!(
        untouched.finalizers().is_empty()
            && untouched
                .status
                .as_ref()
                .is_none_or(|s| s.common.conditions.is_empty() && s.common.id.is_none()),
        "the follower acted while the dead leader's Lease was valid: {untouched:#?}"
    );
    let calls = env.calls().await;
    assert_eq!(
        total_calls(&calls),
        0,
        "the follower called the platform while not leading: {calls:?}"
    );

    // Then it takes over and converges what was created meanwhile.
    let after = env
        .wait_for(
            "after",
            Duration::from_secs(45),
            "Ready under the new leader",
            is_ready,
        )
        .await;
    let took = killed_at.elapsed();
    println!(
        "replica-b took over and converged a new volume {took:.1?} after replica-a was killed (Lease valid {left:.1?} more at the kill)"
    );
    assert!(took < Duration::from_secs(35), "took {took:?} to take over");
    assert_eq!(
        lease_holder(&env).await.map(|(h, _)| h).as_deref(),
        Some("replica-b")
    );
    assert_exactly_one_remote(&env, &after).await;
    let text_b = scrape(port_b).await;
    assert!(
        metric_sum(&text_b, "gpucloud_reconciles_total") > 0.0,
        "{text_b}"
    );
    env.finish_process(b).await;
}

/// The sum of `gpucloud_platform_calls_total` series on `/metrics` whose labels contain
/// every one of `labels`.
async fn platform_calls(metrics: &str, labels: &[&str]) -> u64 {
    let text = reqwest::get(metrics).await.unwrap().text().await.unwrap();
    text.lines()
        .filter(|l| l.starts_with("gpucloud_platform_calls_total{"))
        .filter(|l| labels.iter().all(|want| l.contains(want)))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// REST v2 states its quota on every answer (`RateLimit`, `RateLimit-Policy`): with a
/// quota far below what 30 volumes need at once, the operator slows down before the
/// platform refuses, so everything converges with no 429 at all. (The seed API states no
/// quota; its limits are exercised by the 429-burst test above.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn v2_only_a_small_v2_quota_is_absorbed_without_429s() {
    common::backend::require("v2");
    const OBJECTS: usize = 30;
    let quota = gpucloud_emulator::v2::limits::Quota {
        minute: 10,
        hour: 1_000_000,
        day: 10_000_000,
    };
    // Twenty emulated minutes pass in one real minute: a window resets every 3 s.
    let config = gpucloud_emulator::EmulatorConfig {
        v2_quota: quota,
        time_scale: 20.0,
        ..Default::default()
    };
    let env = Env::start_with("nv-quota", config).await;
    let port = free_port();
    let op = env.operator(&[&format!("--metrics-addr=127.0.0.1:{port}")]);
    for i in 0..OBJECTS {
        env.create(&volume(&format!("q{i:02}"), 10, json!({})))
            .await;
    }
    let started = Instant::now();
    for i in 0..OBJECTS {
        env.wait_for(
            &format!("q{i:02}"),
            Duration::from_secs(120),
            "Ready",
            is_ready,
        )
        .await;
    }
    let metrics = format!("http://127.0.0.1:{port}/metrics");
    let refused = platform_calls(&metrics, &["surface=\"rest_v2\"", "status=\"429\""]).await;
    let served = platform_calls(&metrics, &["surface=\"rest_v2\""]).await;
    println!(
        "{OBJECTS} volumes under a quota of {}/emulated minute: Ready in {:.1?}, {served} v2 calls, {refused} answered 429",
        quota.minute,
        started.elapsed()
    );
    assert_eq!(
        refused, 0,
        "the operator waited for the quota, not for 429s"
    );
    env.finish(op).await;
}

fn owner(nv: &NetworkVolume) -> Option<String> {
    nv.annotations().get("gpucloud.io/owner").cloned()
}

/// The claim `install` writes with the tests' key: its name and the key's account.
fn claim_of(install: &str) -> String {
    let key = gpucloud_platform::ApiKey::new(common::operator::API_KEY).unwrap();
    format!("{install}@{}", AccountId::of(&key))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn two_installs_on_one_namespace_give_each_object_one_owner() {
    const OBJECTS: usize = 12;
    let env = Env::start("nv-owners").await;
    let api: Api<NetworkVolume> = env.api();
    let admin = env.emulator.admin();
    let ns = env.ns.name().to_string();
    // Install A runs leader election (its Lease says whether it is alive); install B is a
    // second install on the same namespace, ready to take over once A's Lease expires.
    let (me_a, me_b) = (format!("{ns}/gpucloud-operator"), format!("{ns}/install-b"));
    let (port_a, port_b) = (free_port(), free_port());
    let a = env.operator_process(&[
        "--leader-election",
        &format!("--leader-election-namespace={ns}"),
        "--identity=install-a-0",
        &format!("--metrics-addr=127.0.0.1:{port_a}"),
    ]);
    let names: Vec<String> = (0..OBJECTS).map(|i| format!("shared-{i:02}")).collect();
    for name in &names {
        let nv = volume(name, 10, json!({"deletionPolicy": "Delete"}));
        env.create(&nv).await;
    }
    let mut ids = BTreeMap::new();
    let mut remote_names = Vec::new();
    for name in &names {
        let nv = env.wait_for(name, TIMEOUT, "Ready", is_ready).await;
        assert_eq!(owner(&nv), Some(claim_of(&me_a)), "{name}");
        ids.insert(name.clone(), assert_exactly_one_remote(&env, &nv).await);
        let status = nv.status.as_ref().expect("status");
        remote_names.push(status.name.clone().expect("status.name"));
    }
    let b = env.operator_process(&[
        &format!("--install={me_b}"),
        "--takeover-after=5s",
        &format!("--metrics-addr=127.0.0.1:{port_b}"),
    ]);
    // B leaves every object alone and says so once per object.
    let told = common::wait_until(TIMEOUT, || async {
        metric_sum(
            &scrape(port_b).await,
            "gpucloud_objects_claimed_elsewhere_total",
        ) == OBJECTS as f64
    })
    .await;
    // The sign: B has passed over every object and left it alone (it counts each in that
    // pass, where it would otherwise claim it). Its next pass over one comes with the
    // recheck, 10 s at the least, and is not counted on /metrics: none to wait for.
    assert!(told, "install B did not report the objects it leaves alone");
    for name in &names {
        let nv: NetworkVolume = api.get(name).await.unwrap();
        assert_eq!(owner(&nv), Some(claim_of(&me_a)), "{name}");
        assert_eq!(
            nv.status.and_then(|s| s.common.id).as_ref(),
            ids.get(name),
            "{name}: the id changed"
        );
    }
    assert_eq!(
        admin.call_count(create_route()).await.unwrap(),
        OBJECTS as u64,
        "an object was created by both installs"
    );
    assert!(has_reason_event(&env, "shared-00", "ClaimedByAnotherInstall").await);

    // Install A goes away for good: once its Lease has expired for the takeover time, B
    // manages A's objects (a spec change goes through).
    a.kill();
    api.patch(
        "shared-00",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"sizeGb": 11}})),
    )
    .await
    .unwrap();
    let grown = env
        .wait_for::<NetworkVolume, _>("shared-00", Duration::from_secs(90), "grown by B", |nv| {
            is_ready(nv) && nv.status.as_ref().and_then(|s| s.size_gb) == Some(11)
        })
        .await;
    assert_eq!(owner(&grown), Some(claim_of(&me_b)));
    assert!(has_reason_event(&env, "shared-00", "TakenOver").await);

    // Deleting the objects leaves nothing behind on the platform.
    for name in &names {
        api.delete(name, &DeleteParams::default()).await.unwrap();
    }
    let gone = common::wait_until(Duration::from_secs(90), || async {
        api.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    })
    .await;
    assert!(gone, "objects still held by their finalizers");
    for remote in &remote_names {
        assert!(
            env.remote_volumes(remote).await.is_empty(),
            "{remote} left behind"
        );
    }
    env.finish_process(b).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_label_selector_splits_objects_between_installs() {
    let env = Env::start("nv-selector").await;
    let api: Api<NetworkVolume> = env.api();
    let op = env.operator(&["--selector=tier=gold"]);
    let mut gold = volume("gold", 10, json!({}));
    gold.labels_mut().insert("tier".into(), "gold".into());
    env.create(&gold).await;
    env.create(&volume("plain", 10, json!({}))).await;
    env.wait_for("gold", TIMEOUT, "Ready", is_ready).await;
    // The outside object changes, then the inside one: the pass over the inside one is the
    // sign that the watch delivered both, had it let the outside one through.
    common::passes::touch(&api, "plain").await;
    op.pass_over(&api, "gold").await;
    let plain: NetworkVolume = api.get("plain").await.unwrap();
    let status = plain.status.clone().unwrap_or_default();
    assert!(
        status.common.conditions.is_empty() && status.common.id.is_none(),
        "an object outside the selector was touched: {status:#?}"
    );
    assert!(owner(&plain).is_none());
    api.delete("plain", &DeleteParams::default()).await.unwrap();
    env.finish(op).await;
}
