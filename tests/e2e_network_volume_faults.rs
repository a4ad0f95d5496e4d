//! NetworkVolume end to end under crashes, faults and leader changes: a real
//! kube-apiserver, the emulator over real HTTP, and the operator in-process or as a child
//! process of the built binary (where it must really be killed). Run through
//! `scripts/test.sh` (they need `KUBECONFIG`).

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gpucloud_engine::marker::default_remote_name;
use gpucloud_operator::crd::NetworkVolume;
use gpucloud_operator::platform::NetworkVolumeCreate;
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use common::operator::{Env, OperatorProcess, free_port, is_ready, reason, total_calls, volume};

const TIMEOUT: Duration = Duration::from_secs(30);
fn create_route() -> &'static str {
    common::backend::routes().create_volume
}
const PENDING: &str = "gpucloud.io/external-create-pending";
const EXTERNAL_ID: &str = "gpucloud.io/external-id";
/// The platform time limit the crash tests give the operator: how long it waits before it
/// concludes that a create a crashed process may have sent made nothing.
const PLATFORM_TIMEOUT: &str = "--platform-timeout=5s";

/// The remote volume of a Ready object: exactly one on the platform carries its name, and
/// it is the one status names. The create marker stays (it is what finds the volume again
/// if status is ever lost); no external-id annotation is written.
async fn assert_exactly_one_remote(env: &Env, nv: &NetworkVolume) -> String {
    let status = nv.status.as_ref().expect("status");
    let id = status.common.id.clone().expect("status.id");
    let name = status.name.clone().expect("status.name");
    assert_eq!(name, default_remote_name(nv), "the deterministic name");
    let remote = env.remote_volumes(&name).await;
    assert_eq!(
        remote.len(),
        1,
        "{}: want exactly one remote volume named {name}, got {remote:#?}",
        nv.name_any()
    );
    assert_eq!(remote[0].id, id);
    assert!(!nv.annotations().contains_key(EXTERNAL_ID));
    assert!(
        nv.annotations().contains_key(PENDING),
        "the create marker is gone"
    );
    id
}

async fn has_reason_event(env: &Env, name: &str, wanted: &str) -> bool {
    env.events_about("NetworkVolume", name)
        .await
        .iter()
        .any(|e| e.reason.as_deref() == Some(wanted))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn killed_with_the_create_in_flight_leaves_exactly_one_volume() {
    let env = Env::start("nv-kill-create").await;
    let admin = env.emulator.admin();
    // The create stays in flight for 3 s: long enough to kill the operator under it.
    admin.add_latency(create_route(), 3_000).await.unwrap();
    let first = env.operator_process(&[PLATFORM_TIMEOUT]);
    let api: Api<NetworkVolume> = env.api();
    api.create(&PostParams::default(), &volume("inflight", 10, json!({})))
        .await
        .unwrap();
    env.wait_for::<NetworkVolume, _>("inflight", TIMEOUT, "the pending marker", |nv| {
        nv.annotations().contains_key(PENDING)
    })
    .await;
    let sent = common::wait_until(TIMEOUT, || async {
        admin.call_count(create_route()).await.unwrap() >= 1
    })
    .await;
    assert!(sent, "the create never reached the platform");
    // SIGKILL with the create in flight: no cleanup, no answer read, marker left behind.
    first.kill();
    let killed_at = Instant::now();
    admin.clear_faults().await.unwrap();
    let nv: NetworkVolume = api.get("inflight").await.unwrap();
    assert!(nv.annotations().contains_key(PENDING));
    assert!(status_id(&nv).is_none());

    let second = env.operator_process(&[PLATFORM_TIMEOUT]);
    let ready = env
        .wait_for("inflight", Duration::from_secs(60), "Ready", is_ready)
        .await;
    // Give a late create every chance to land before counting.
    tokio::time::sleep(Duration::from_secs(4).saturating_sub(killed_at.elapsed())).await;
    let id = assert_exactly_one_remote(&env, &ready).await;
    let adopted = has_reason_event(&env, "inflight", "AdoptedAfterInterruptedCreate").await;
    let creates = admin.call_count(create_route()).await.unwrap();
    println!(
        "killed with the create in flight: volume {id}, {} by the second operator, {creates} create calls in all",
        if adopted {
            "adopted (the first operator's create landed)"
        } else {
            "created (the first operator's create never ran)"
        }
    );
    assert_eq!(
        creates,
        if adopted { 1 } else { 2 },
        "a create that was adopted must not be repeated"
    );
    env.finish_process(second).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn states_a_crash_leaves_are_recovered_without_duplicates() {
    let env = Env::start("nv-crash-states").await;
    let api: Api<NetworkVolume> = env.api();
    let admin = env.emulator.admin();
    let marked = |name: &str| {
        let mut nv = volume(name, 10, json!({}));
        nv.annotations_mut()
            .insert(PENDING.into(), Timestamp::now().to_string());
        nv
    };
    // A: the marker was written, then the process died before the create was sent.
    api.create(&PostParams::default(), &marked("never-sent"))
        .await
        .unwrap();
    // B: the create happened, then the process died before it wrote the id.
    let landed = api
        .create(&PostParams::default(), &marked("landed"))
        .await
        .unwrap();
    let made = env
        .platform
        .rest()
        .create_network_volume(&NetworkVolumeCreate {
            name: default_remote_name(&landed),
            size: 10,
            data_center_id: "EU-RO-1".into(),
        })
        .await
        .unwrap();
    // C: the create is still in flight at the platform when the new process starts, and
    // lands after the new process first looked.
    let late = api
        .create(&PostParams::default(), &marked("lands-late"))
        .await
        .unwrap();
    admin.clear_calls().await.unwrap();

    let op = env.operator(&[PLATFORM_TIMEOUT]);
    env.wait_for::<NetworkVolume, _>("lands-late", TIMEOUT, "waiting for the create", |nv| {
        reason(nv, "Ready").as_deref() == Some("CreatePending")
    })
    .await;
    let late_made = env
        .platform
        .rest()
        .create_network_volume(&NetworkVolumeCreate {
            name: default_remote_name(&late),
            size: 10,
            data_center_id: "EU-RO-1".into(),
        })
        .await
        .unwrap();

    let never_sent = env.wait_for("never-sent", TIMEOUT, "Ready", is_ready).await;
    assert_exactly_one_remote(&env, &never_sent).await;
    let landed = env.wait_for("landed", TIMEOUT, "Ready", is_ready).await;
    assert_eq!(assert_exactly_one_remote(&env, &landed).await, made.id);
    let late = env.wait_for("lands-late", TIMEOUT, "Ready", is_ready).await;
    assert_eq!(assert_exactly_one_remote(&env, &late).await, late_made.id);
    assert!(has_reason_event(&env, "landed", "AdoptedAfterInterruptedCreate").await);
    assert!(has_reason_event(&env, "lands-late", "AdoptedAfterInterruptedCreate").await);
    // Since the count was cleared, the test made one create (the late one, over REST v1)
    // and the operator exactly one (for the volume whose create was never sent).
    let test_creates = 1;
    let seed_creates = admin.call_count("POST /v1/networkvolumes").await.unwrap();
    let v2_creates = admin.call_count("POST /v2/network-volumes").await.unwrap();
    assert_eq!(seed_creates + v2_creates - test_creates, 1);
    env.finish(op).await;
}

/// The id a NetworkVolume's status names.
fn status_id(nv: &NetworkVolume) -> Option<String> {
    nv.status.as_ref().and_then(|s| s.common.id.clone())
}

/// Refuses, in one namespace, every status write that records an id on a NetworkVolume:
/// the operator's create succeeds and its record of the id fails, which is the state a
/// crash right after the create leaves.
struct HoldStatusId {
    name: String,
}

impl HoldStatusId {
    async fn install(env: &Env) -> Self {
        let name = format!("{}-hold-status-id", env.ns.name());
        let policy: ValidatingAdmissionPolicy = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": ["gpucloud.io"],
                    "apiVersions": ["*"],
                    "operations": ["UPDATE"],
                    "resources": ["networkvolumes/status"]
                }]},
                "validations": [{
                    "expression": "!has(object.status) || !has(object.status.id)",
                    "message": "held by the test: the id is never recorded"
                }]
            }
        }))
        .unwrap();
        let binding: ValidatingAdmissionPolicyBinding = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {
                    "kubernetes.io/metadata.name": env.ns.name()
                }}}
            }
        }))
        .unwrap();
        let policies: Api<ValidatingAdmissionPolicy> = Api::all(env.client.clone());
        let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(env.client.clone());
        policies
            .create(&PostParams::default(), &policy)
            .await
            .unwrap();
        bindings
            .create(&PostParams::default(), &binding)
            .await
            .unwrap();
        Self { name }
    }

    async fn remove(self, env: &Env) {
        let policies: Api<ValidatingAdmissionPolicy> = Api::all(env.client.clone());
        let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(env.client.clone());
        bindings
            .delete(&self.name, &DeleteParams::default())
            .await
            .unwrap();
        policies
            .delete(&self.name, &DeleteParams::default())
            .await
            .unwrap();
    }
}

/// Whether the apiserver now refuses (`held`) or accepts a status write that records an
/// id on `name`, tried as a dry run.
async fn status_id_refused(api: &Api<NetworkVolume>, name: &str) -> bool {
    let params = PatchParams {
        dry_run: true,
        ..Default::default()
    };
    let patch = json!({"status": {"id": "probe"}});
    api.patch_status(name, &params, &Patch::Merge(patch))
        .await
        .is_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn killed_between_the_create_and_recording_the_id_adopts_the_volume() {
    let env = Env::start("nv-kill-record").await;
    let api: Api<NetworkVolume> = env.api();
    let admin = env.emulator.admin();
    let nv = api
        .create(&PostParams::default(), &volume("unrecorded", 10, json!({})))
        .await
        .unwrap();
    let remote_name = default_remote_name(&nv);
    let hold = HoldStatusId::install(&env).await;
    assert!(
        common::wait_until(TIMEOUT, || status_id_refused(&api, "unrecorded")).await,
        "the admission policy never took effect"
    );

    let first = env.operator_process(&[PLATFORM_TIMEOUT]);
    let created = common::wait_until(TIMEOUT, || async {
        !env.remote_volumes(&remote_name).await.is_empty()
    })
    .await;
    assert!(created, "the first operator never created the volume");
    // Its attempts to record the id are refused; it finds the volume again each time and
    // never creates a second one.
    let held = common::wait_until(TIMEOUT, || async {
        let log = first.log();
        log.contains("held by the test")
    })
    .await;
    assert!(held, "the id write was never refused");
    first.kill();
    let nv: NetworkVolume = api.get("unrecorded").await.unwrap();
    assert!(
        nv.annotations().contains_key(PENDING),
        "{:?}",
        nv.annotations()
    );
    assert!(status_id(&nv).is_none());
    assert!(!nv.annotations().contains_key(EXTERNAL_ID));
    assert_eq!(env.remote_volumes(&remote_name).await.len(), 1);

    hold.remove(&env).await;
    assert!(
        common::wait_until(TIMEOUT, || async {
            !status_id_refused(&api, "unrecorded").await
        })
        .await,
        "the admission policy never went away"
    );
    let second = env.operator_process(&[PLATFORM_TIMEOUT]);
    let ready = env
        .wait_for("unrecorded", Duration::from_secs(60), "Ready", is_ready)
        .await;
    assert_exactly_one_remote(&env, &ready).await;
    assert!(has_reason_event(&env, "unrecorded", "AdoptedAfterInterruptedCreate").await);
    assert_eq!(
        admin.call_count(create_route()).await.unwrap(),
        1,
        "the volume was created more than once"
    );
    env.finish_process(second).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_500_on_a_create_that_succeeded_is_adopted_not_repeated() {
    let env = Env::start("nv-500").await;
    let admin = env.emulator.admin();
    admin.fail_next_creates_on(create_route(), 1).await.unwrap();
    let op = env.operator(&[]);
    let api: Api<NetworkVolume> = env.api();
    api.create(&PostParams::default(), &volume("flaky", 10, json!({})))
        .await
        .unwrap();
    let ready = env.wait_for("flaky", TIMEOUT, "Ready", is_ready).await;
    assert_exactly_one_remote(&env, &ready).await;
    assert_eq!(
        admin.call_count(create_route()).await.unwrap(),
        1,
        "the create was sent again after its 500"
    );
    assert!(has_reason_event(&env, "flaky", "AdoptedAfterInterruptedCreate").await);
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn thirty_percent_faults_and_429_bursts_converge_with_bounded_calls() {
    const OBJECTS: usize = 20;
    let env = Env::start("nv-faults").await;
    let admin = env.emulator.admin();
    // Every route the operator uses for volumes: list, create, update, delete.
    admin
        .set_error_rate("* /v1/networkvolumes", 0.3, 500)
        .await
        .unwrap();
    admin
        .set_error_rate("* /v1/networkvolumes/{id}", 0.3, 503)
        .await
        .unwrap();
    admin.burst_429(None, 25).await.unwrap();
    admin.clear_calls().await.unwrap();
    let op = env.operator(&[]);
    let api: Api<NetworkVolume> = env.api();
    let names: Vec<String> = (0..OBJECTS).map(|i| format!("faulty-{i:02}")).collect();
    let started = Instant::now();
    for name in &names {
        api.create(
            &PostParams::default(),
            &volume(name, 10, json!({"deletionPolicy": "Delete"})),
        )
        .await
        .unwrap();
    }
    let all = |check: fn(&NetworkVolume) -> bool| {
        let api = api.clone();
        move || {
            let api = api.clone();
            async move {
                let list = api.list(&Default::default()).await.unwrap();
                list.items.len() == OBJECTS && list.items.iter().all(check)
            }
        }
    };
    assert!(
        common::wait_until(Duration::from_secs(180), all(is_ready)).await,
        "not every volume became Ready under faults"
    );
    let converged = started.elapsed();
    let prefix = format!("{}-faulty-", env.ns.name());
    let remote: Vec<_> = env
        .platform
        .rest()
        .list_network_volumes()
        .await
        .unwrap()
        .into_iter()
        .filter(|v| v.name.starts_with(&prefix))
        .collect();
    assert_eq!(remote.len(), OBJECTS, "duplicates or leaks: {remote:#?}");
    for nv in api.list(&Default::default()).await.unwrap() {
        assert_exactly_one_remote(&env, &nv).await;
    }
    let create_calls = admin.call_count(create_route()).await.unwrap();

    // Grow every volume, still under faults.
    for name in &names {
        api.patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"sizeGb": 20}})),
        )
        .await
        .unwrap();
    }
    assert!(
        common::wait_until(
            Duration::from_secs(180),
            all(|nv| { is_ready(nv) && nv.status.as_ref().unwrap().size_gb == Some(20) })
        )
        .await,
        "not every volume grew under faults"
    );

    // Delete them all (policy Delete), still under faults.
    for name in &names {
        api.delete(name, &DeleteParams::default()).await.unwrap();
    }
    assert!(
        common::wait_until(Duration::from_secs(180), || async {
            api.list(&Default::default())
                .await
                .unwrap()
                .items
                .is_empty()
        })
        .await,
        "not every volume was released under faults"
    );
    let left: Vec<_> = env
        .platform
        .rest()
        .list_network_volumes()
        .await
        .unwrap()
        .into_iter()
        .filter(|v| v.name.starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "leaked volumes: {left:#?}");

    let calls: BTreeMap<String, u64> = env.calls().await;
    let total = total_calls(&calls);
    println!(
        "30% faults + 429 burst, {OBJECTS} volumes: Ready in {converged:.1?} after {create_calls} create calls; create + grow + delete made {total} platform calls: {calls:?}"
    );
    // Bounded: a few attempts per object and step, not a storm.
    assert!(
        total <= (OBJECTS as u64) * 30,
        "{total} platform calls for {OBJECTS} volumes: {calls:?}"
    );
    env.finish(op).await;
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
    // B is up (it serves /metrics) but not ready: it waits for the Lease.
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
    assert!(!ready_b.is_success(), "a follower must not report ready");

    // With both running, the leader does all the work and the follower none.
    for name in ["first", "second"] {
        api.create(&PostParams::default(), &volume(name, 10, json!({})))
            .await
            .unwrap();
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
    api.create(&PostParams::default(), &volume("after", 10, json!({})))
        .await
        .unwrap();
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
async fn a_small_v2_quota_is_absorbed_without_429s() {
    if !common::backend::is_v2() {
        println!("REST v2 only: the seed API sends no RateLimit headers");
        return;
    }
    const OBJECTS: usize = 30;
    let quota = gpucloud_operator::emulator::v2::limits::Quota {
        minute: 10,
        hour: 1_000_000,
        day: 10_000_000,
    };
    // Twenty emulated minutes pass in one real minute: a window resets every 3 s.
    let config = gpucloud_operator::emulator::EmulatorConfig {
        v2_quota: quota,
        time_scale: 20.0,
        ..Default::default()
    };
    let env = Env::start_with("nv-quota", config).await;
    let port = free_port();
    let op = env.operator(&[&format!("--metrics-addr=127.0.0.1:{port}")]);
    let api: Api<NetworkVolume> = env.api();
    for i in 0..OBJECTS {
        api.create(
            &PostParams::default(),
            &volume(&format!("q{i:02}"), 10, json!({})),
        )
        .await
        .unwrap();
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
        api.create(&PostParams::default(), &nv).await.unwrap();
    }
    let mut ids = BTreeMap::new();
    let mut remote_names = Vec::new();
    for name in &names {
        let nv = env.wait_for(name, TIMEOUT, "Ready", is_ready).await;
        assert_eq!(owner(&nv).as_deref(), Some(me_a.as_str()), "{name}");
        ids.insert(name.clone(), assert_exactly_one_remote(&env, &nv).await);
        remote_names.push(default_remote_name(&nv));
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
    assert!(told, "install B did not report the objects it leaves alone");
    tokio::time::sleep(Duration::from_secs(5)).await;
    for name in &names {
        let nv: NetworkVolume = api.get(name).await.unwrap();
        assert_eq!(owner(&nv).as_deref(), Some(me_a.as_str()), "{name}");
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
    assert_eq!(owner(&grown).as_deref(), Some(me_b.as_str()));
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
    api.create(&PostParams::default(), &gold).await.unwrap();
    api.create(&PostParams::default(), &volume("plain", 10, json!({})))
        .await
        .unwrap();
    env.wait_for("gold", TIMEOUT, "Ready", is_ready).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
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
