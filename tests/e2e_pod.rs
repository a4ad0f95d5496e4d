//! Pod end to end: a real kube-apiserver, the emulator over real HTTP, the operator
//! in-process. Run through `scripts/test.sh`.

mod common;

use std::time::Duration;

use gpucloud_crd::Pod;
use gpucloud_crd::pod::PodPhase;
use gpucloud_engine::marker::TAG_ENV;
use gpucloud_platform::{self as platform, DeployPodInput};
use k8s_openapi::api::core::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use common::operator::{Env, condition, reason, volume};
use common::pods::{A40, RTX4090, config, deploy, id_of, is_ready, patch_spec, pod, remote_pods};
use common::volumes::volume_id;

const TIMEOUT: Duration = Duration::from_secs(40);
const SECRET_VALUE: &str = "hunter2-very-secret";

fn cond(p: &Pod, type_: &str) -> Option<(String, String)> {
    p.status
        .as_ref()
        .and_then(|s| condition(&s.common.conditions, type_))
        .map(|c| (c.status.to_string(), c.reason.to_string()))
}

fn phase(p: &Pod) -> Option<PodPhase> {
    p.status.as_ref().and_then(|s| s.phase)
}

async fn remote(env: &Env, id: &str) -> Option<platform::Pod> {
    remote_pods(env).await.into_iter().find(|p| p.id == id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn deploy_stop_resume_drift_replace_and_delete() {
    let env = Env::start_with("pod-life", config()).await;
    common::templates::put_secret(&env, "hf", "Opaque", "token", SECRET_VALUE).await;
    let op = env.operator(&[]);
    let api: Api<Pod> = env.api();
    env.create(&pod(
        "train",
        json!({"env": [
            {"name": "MODE", "value": "fast"},
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}
        ]}),
    ))
    .await;

    // Deploy → Running with ports and cost.
    let ready = env.wait_for("train", TIMEOUT, "Ready", is_ready).await;
    let status = ready.status.clone().unwrap();
    assert_eq!(status.phase, Some(PodPhase::Running));
    assert_eq!(status.desired_status.as_deref(), Some("RUNNING"));
    assert_eq!(status.gpu_type_id.as_deref(), Some(RTX4090));
    assert_eq!(status.gpu_count, Some(1));
    assert!(status.cost_per_hour.unwrap() > 0.0);
    // REST v2 does not say which machine hosts a pod; the seed API does.
    if !common::backend::is_v2() {
        assert!(status.machine_id.is_some() && status.pod_host_id.is_some());
    }
    assert_eq!(status.ports.len(), 2, "{:?}", status.ports);
    let http = status
        .ports
        .iter()
        .find(|p| p.private_port == 8888)
        .unwrap();
    assert_eq!(http.type_, "http");
    let url = http.url.clone().expect("http port URL");
    assert!(
        url.ends_with(&format!(":{}", http.public_port.unwrap())),
        "{url}"
    );
    let first = id_of(&ready);
    let on_platform = remote(&env, &first).await.unwrap();
    assert_eq!(
        on_platform.name,
        format!("{}-train-{}", env.ns.name(), &ready.uid().unwrap()[..8])
    );
    assert_eq!(on_platform.cost_per_hr, status.cost_per_hour);

    // The Secret's value reaches the platform and nowhere else.
    assert_eq!(on_platform.env_value("HF_TOKEN"), Some(SECRET_VALUE));
    assert_eq!(on_platform.env_value("MODE"), Some("fast"));
    assert_eq!(
        on_platform.env_value(TAG_ENV),
        Some(ready.uid().unwrap().as_str())
    );
    let shown = serde_json::to_string(&api.get("train").await.unwrap()).unwrap();
    assert!(!shown.contains(SECRET_VALUE));
    let events: Api<Event> = env.api();
    let all = serde_json::to_string(&events.list(&ListParams::default()).await.unwrap()).unwrap();
    assert!(all.contains("created pod"), "no Created Event: {all}");
    assert!(!all.contains(SECRET_VALUE));

    // Stopped → EXITED, and back.
    patch_spec(&api, "train", json!({"desiredState": "Stopped"})).await;
    env.wait_for::<Pod, _>("train", TIMEOUT, "Stopped", |p| {
        is_ready(p) && phase(p) == Some(PodPhase::Stopped)
    })
    .await;
    assert_eq!(remote(&env, &first).await.unwrap().desired_status, "EXITED");
    patch_spec(&api, "train", json!({"desiredState": "Running"})).await;
    env.wait_for::<Pod, _>("train", TIMEOUT, "Running again", |p| {
        is_ready(p) && phase(p) == Some(PodPhase::Running)
    })
    .await;
    assert_eq!(
        remote(&env, &first).await.unwrap().desired_status,
        "RUNNING"
    );

    // Stopped out of band → resumed.
    env.platform.graphql().stop_pod(&first).await.unwrap();
    let resumed = env_wait_remote(&env, &first, |p| {
        p.desired_status == "RUNNING" && p.runtime.is_some()
    })
    .await;
    assert!(resumed, "pod stopped out of band was not resumed");

    // Terminated out of band → deployed again, with an Event.
    env.platform.graphql().terminate_pod(&first).await.unwrap();
    let again = env
        .wait_for::<Pod, _>("train", TIMEOUT, "redeployed", |p| {
            is_ready(p) && p.status.as_ref().unwrap().common.id.as_deref() != Some(&first)
        })
        .await;
    let second = id_of(&again);
    assert!(remote(&env, &first).await.is_none());
    assert_eq!(remote_pods(&env).await.len(), 1);
    let all = serde_json::to_string(&events.list(&ListParams::default()).await.unwrap()).unwrap();
    assert!(all.contains("ExternalDeleted"), "{all}");

    // An image change with Recreate: a new pod, the old one terminated.
    patch_spec(&api, "train", json!({"image": "ghcr.io/acme/train:2"})).await;
    let replaced = env
        .wait_for::<Pod, _>("train", TIMEOUT, "replaced", |p| {
            is_ready(p) && p.status.as_ref().unwrap().common.id.as_deref() != Some(&second)
        })
        .await;
    let third = id_of(&replaced);
    assert!(remote(&env, &second).await.is_none());
    let pods = remote_pods(&env).await;
    assert_eq!(pods.len(), 1);
    assert_eq!(pods[0].id, third);
    assert_eq!(pods[0].image_name, "ghcr.io/acme/train:2");

    // Delete → terminated.
    api.delete("train", &DeleteParams::default()).await.unwrap();
    let gone = common::wait_gone(&api, "train", TIMEOUT).await;
    assert!(gone);
    assert!(remote_pods(&env).await.is_empty());
    env.finish(op).await;
}

async fn env_wait_remote(env: &Env, id: &str, check: impl Fn(&platform::Pod) -> bool) -> bool {
    common::wait_until(TIMEOUT, || async {
        remote(env, id).await.is_some_and(|p| check(&p))
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn gpu_fallback_price_cap_and_no_capacity() {
    let env = Env::start_with("pod-gpu", config()).await;
    let admin = env.emulator.admin();
    let op = env.operator(&[]);

    // Price cap: on the secure cloud the 4090 costs 0.69/h and the A40 0.40/h.
    env.create(&pod(
            "capped",
            json!({"cloudType": "SECURE", "gpu": {"typeIds": [RTX4090, A40], "count": 1, "maxPricePerHour": 0.5}}),
        )).await;
    let capped = env.wait_for("capped", TIMEOUT, "Ready", is_ready).await;
    let s = capped.status.clone().unwrap();
    assert_eq!(s.gpu_type_id.as_deref(), Some(A40));
    assert!(s.cost_per_hour.unwrap() <= 0.5, "{:?}", s.cost_per_hour);

    // A cap below every price: said so, nothing deployed.
    env.create(&pod(
        "cheap",
        json!({"cloudType": "SECURE", "gpu": {"typeIds": [RTX4090, A40], "maxPricePerHour": 0.05}}),
    ))
    .await;
    let cheap = env
        .wait_for::<Pod, _>("cheap", TIMEOUT, "PriceAboveCap", |p| {
            cond(p, "Synced").is_some_and(|(s, r)| s == "False" && r == "PriceAboveCap")
        })
        .await;
    assert_eq!(cond(&cheap, "Ready").unwrap().0, "False");
    assert_eq!(phase(&cheap), Some(PodPhase::Pending));

    // First type out of stock → the second one.
    admin.set_stock(RTX4090, None, 0).await.unwrap();
    env.create(&pod("fallback", json!({}))).await;
    let fallback = env.wait_for("fallback", TIMEOUT, "Ready", is_ready).await;
    assert_eq!(fallback.status.unwrap().gpu_type_id.as_deref(), Some(A40));

    // No stock anywhere → NoCapacity (not Stalled); stock returns → converges.
    admin.set_stock(A40, None, 0).await.unwrap();
    env.create(&pod("waiting", json!({}))).await;
    let waiting = env
        .wait_for::<Pod, _>("waiting", TIMEOUT, "NoCapacity", |p| {
            cond(p, "Synced").is_some_and(|(s, r)| s == "False" && r == "NoCapacity")
        })
        .await;
    assert_eq!(cond(&waiting, "Ready").unwrap().0, "False");
    assert_eq!(cond(&waiting, "Stalled").unwrap().0, "False");
    let names: Vec<String> = remote_pods(&env)
        .await
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert!(!names.iter().any(|n| n.contains("-waiting-")), "{names:?}");
    admin.set_stock(A40, None, 2).await.unwrap();
    let converged = env.wait_for("waiting", TIMEOUT, "Ready", is_ready).await;
    assert_eq!(converged.status.unwrap().gpu_type_id.as_deref(), Some(A40));
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn never_strategy_blocks_and_orphan_keeps_the_pod() {
    let env = Env::start_with("pod-never", config()).await;
    let op = env.operator(&[]);
    let api: Api<Pod> = env.api();
    env.create(&pod(
        "pinned",
        json!({"updateStrategy": "Never", "deletionPolicy": "Orphan"}),
    ))
    .await;
    let ready = env.wait_for("pinned", TIMEOUT, "Ready", is_ready).await;
    let id = id_of(&ready);
    let deploys = env.emulator.admin().call_count(deploy()).await.unwrap();

    patch_spec(&api, "pinned", json!({"image": "ghcr.io/acme/train:2"})).await;
    let blocked = env
        .wait_for::<Pod, _>("pinned", TIMEOUT, "ImmutableFieldChanged", |p| {
            cond(p, "Synced").is_some_and(|(s, r)| s == "False" && r == "ImmutableFieldChanged")
        })
        .await;
    assert_eq!(phase(&blocked), Some(PodPhase::Failed));
    let still = remote(&env, &id).await.unwrap();
    assert_eq!(still.image_name, "ghcr.io/acme/train:1");
    assert_eq!(
        env.emulator.admin().call_count(deploy()).await.unwrap(),
        deploys
    );

    api.delete("pinned", &DeleteParams::default())
        .await
        .unwrap();
    let gone = common::wait_gone(&api, "pinned", TIMEOUT).await;
    assert!(gone);
    assert!(
        remote(&env, &id).await.is_some(),
        "Orphan must leave the pod"
    );
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn network_volume_ref_waits_then_attaches() {
    let env = Env::start_with("pod-nv", config()).await;
    let op = env.operator(&[]);
    env.create(&pod(
        "withvol",
        json!({"networkVolumeRef": {"name": "data"}, "volumeMountPath": "/workspace"}),
    ))
    .await;
    env.wait_for::<Pod, _>("withvol", TIMEOUT, "DependencyNotReady", |p| {
        cond(p, "Ready").is_some_and(|(_, r)| r == "DependencyNotReady")
    })
    .await;
    assert!(remote_pods(&env).await.is_empty());

    env.create(&volume("data", 10, json!({}))).await;
    let ready = env.wait_for("withvol", TIMEOUT, "Ready", is_ready).await;
    let volume_id = volume_id(&env, "data").await;
    let on_platform = remote(&env, &id_of(&ready)).await.unwrap();
    assert_eq!(on_platform.network_volume_id, Some(volume_id));
    env.finish(op).await;
}

/// A volume deleted before the Pod that attaches it (one `kubectl delete -f` of both, in
/// the file's order): the platform refuses while the pod exists, and the volume waits,
/// saying why, until the Pod is gone, then goes too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_volume_deleted_before_its_pod_goes_once_the_pod_has() {
    use gpucloud_crd::NetworkVolume;
    let env = Env::start_with("pod-nv-delete", config()).await;
    let op = env.operator(&[]);
    env.create(&volume("data", 10, json!({"deletionPolicy": "Delete"})))
        .await;
    env.create(&pod(
        "withvol",
        json!({"networkVolumeRef": {"name": "data"}, "volumeMountPath": "/workspace"}),
    ))
    .await;
    env.wait_for("withvol", TIMEOUT, "Ready", is_ready).await;
    let id = volume_id(&env, "data").await;

    let volumes: Api<NetworkVolume> = env.api();
    volumes
        .delete("data", &DeleteParams::default())
        .await
        .unwrap();
    env.wait_for::<NetworkVolume, _>("data", TIMEOUT, "DeleteVolumeInUse", |nv| {
        reason(nv, "Ready").as_deref() == Some("DeleteVolumeInUse")
    })
    .await;
    assert!(env.platform_volume_ids().await.contains(&id));

    env.api::<Pod>()
        .delete("withvol", &DeleteParams::default())
        .await
        .unwrap();
    let gone = common::wait_gone(&volumes, "data", TIMEOUT).await;
    assert!(gone, "the volume is still there once its pod is gone");
    assert!(!env.platform_volume_ids().await.contains(&id));
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn interrupted_deploys_are_adopted_never_duplicated() {
    let env = Env::start_with("pod-crash", config()).await;
    let admin = env.emulator.admin();
    let api: Api<Pod> = env.api();

    // The operator died after the platform deployed the pod but before it recorded the id:
    // the pending marker is set and the pod exists.
    let created = env.create(&pod("crashed", json!({}))).await;
    let uid = created.uid().unwrap();
    let name = format!("{}-crashed-{}", env.ns.name(), &uid.replace('-', "")[..8]);
    env.platform
        .graphql()
        .deploy_pod(&DeployPodInput {
            name: Some(name.clone()),
            image_name: Some("ghcr.io/acme/train:1".into()),
            gpu_type_id: Some(RTX4090.into()),
            gpu_count: Some(1),
            ports: Some("22/tcp,8888/http".into()),
            container_disk_in_gb: Some(20),
            volume_in_gb: Some(0),
            env: Some(vec![platform::EnvVar {
                key: TAG_ENV.into(),
                value: uid.clone(),
            }]),
            ..DeployPodInput::default()
        })
        .await
        .unwrap();
    api.patch(
        "crashed",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"annotations": {
            "gpucloud.io/external-create-pending": Timestamp::now().to_string()
        }}})),
    )
    .await
    .unwrap();
    admin.clear_calls().await.unwrap();

    // And the platform answers the next deploy with a 500 although it deployed the pod.
    admin.fail_next_creates_on(deploy(), 1).await.unwrap();
    let op = env.operator(&[]);
    env.create(&pod("flaky", json!({}))).await;

    let crashed = env.wait_for("crashed", TIMEOUT, "Ready", is_ready).await;
    let flaky = env.wait_for("flaky", TIMEOUT, "Ready", is_ready).await;
    let pods = remote_pods(&env).await;
    assert_eq!(pods.len(), 2, "{pods:?}");
    assert_eq!(pods.iter().filter(|p| p.name == name).count(), 1);
    assert!(pods.iter().any(|p| p.id == id_of(&crashed)));
    assert!(pods.iter().any(|p| p.id == id_of(&flaky)));
    // One deploy: the flaky one (answered 500); the crashed one was adopted.
    assert_eq!(admin.call_count(deploy()).await.unwrap(), 1);
    // Settled: no more deploys after both Pods are passed over twice more (each is polled
    // every 2 s).
    op.wait_more_passes("Pod", 2 * 2).await;
    assert_eq!(admin.call_count(deploy()).await.unwrap(), 1);
    assert_eq!(remote_pods(&env).await.len(), 2);
    env.finish(op).await;
}
