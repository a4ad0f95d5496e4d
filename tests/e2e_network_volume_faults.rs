//! NetworkVolume end to end under crashes and faults (replicas and installs:
//! `e2e_network_volume_installs.rs`): a real
//! kube-apiserver, the emulator over real HTTP, and the operator in-process or as a child
//! process of the built binary (where it must really be killed). Run through
//! `scripts/test.sh` (they need `KUBECONFIG`).

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use gpucloud_crd::NetworkVolume;
use gpucloud_engine::marker::{default_remote_name, names_object};
use gpucloud_platform::NetworkVolumeCreate;
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use common::calls::total_calls;
use common::operator::{Env, is_ready, reason, volume};
use common::volumes::{EXTERNAL_ID, PENDING, assert_exactly_one_remote, has_reason_event};

const TIMEOUT: Duration = Duration::from_secs(30);
fn create_route() -> &'static str {
    common::backend::routes().create_volume
}
/// The platform time limit the crash tests give the operator: how long it waits before it
/// concludes that a create a crashed process may have sent made nothing.
const PLATFORM_TIMEOUT: &str = "--platform-timeout=5s";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn killed_with_the_create_in_flight_leaves_exactly_one_volume() {
    let env = Env::start("nv-kill-create").await;
    let admin = env.emulator.admin();
    // The create stays in flight for 3 s: long enough to kill the operator under it.
    admin.add_latency(create_route(), 3_000).await.unwrap();
    let first = env.operator_process(&[PLATFORM_TIMEOUT]);
    let api: Api<NetworkVolume> = env.api();
    env.create(&volume("inflight", 10, json!({}))).await;
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
    let admin = env.emulator.admin();
    let marked = |name: &str| {
        let mut nv = volume(name, 10, json!({}));
        nv.annotations_mut()
            .insert(PENDING.into(), Timestamp::now().to_string());
        nv
    };
    // A: the marker was written, then the process died before the create was sent.
    env.create(&marked("never-sent")).await;
    // B: the create happened, then the process died before it wrote the id.
    let landed = env.create(&marked("landed")).await;
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
    let late = env.create(&marked("lands-late")).await;
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
    let nv = env.create(&volume("unrecorded", 10, json!({}))).await;
    let ours = |name: &str| names_object(&nv, name);
    let hold = HoldStatusId::install(&env).await;
    assert!(
        common::wait_until(TIMEOUT, || status_id_refused(&api, "unrecorded")).await,
        "the admission policy never took effect"
    );

    let first = env.operator_process(&[PLATFORM_TIMEOUT]);
    let created = common::wait_until(TIMEOUT, || async {
        !env.remote_volumes_where(ours).await.is_empty()
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
    assert_eq!(env.remote_volumes_where(ours).await.len(), 1);

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
    env.create(&volume("flaky", 10, json!({}))).await;
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
        env.create(&volume(name, 10, json!({"deletionPolicy": "Delete"})))
            .await;
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
    let remote: Vec<_> = env.remote_volumes_where(|n| n.starts_with(&prefix)).await;
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
    let left: Vec<_> = env.remote_volumes_where(|n| n.starts_with(&prefix)).await;
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
