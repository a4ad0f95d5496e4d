//! NetworkVolume end to end: a real kube-apiserver, the emulator over real HTTP, and the
//! operator in-process. Run through `scripts/test.sh` (they need `KUBECONFIG`).

mod common;

use std::time::Duration;

use gpucloud_operator::crd::{NetworkVolume, NetworkVolumeSpec};
use gpucloud_operator::platform::NetworkVolumeCreate;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use common::operator::{Env, condition};

const TIMEOUT: Duration = Duration::from_secs(30);

fn volume(name: &str, size: i32, extra: serde_json::Value) -> NetworkVolume {
    let mut spec = json!({"sizeGb": size, "dataCenterId": "EU-RO-1"});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    let spec: NetworkVolumeSpec = serde_json::from_value(spec).unwrap();
    NetworkVolume::new(name, spec)
}

fn is_ready(nv: &NetworkVolume) -> bool {
    nv.status.as_ref().is_some_and(|s| {
        condition(&s.common.conditions, "Ready").is_some_and(|c| c.status == "True")
            && s.common.observed_generation == nv.metadata.generation
    })
}

fn reason(nv: &NetworkVolume, type_: &str) -> Option<String> {
    nv.status
        .as_ref()
        .and_then(|s| condition(&s.common.conditions, type_))
        .map(|c| c.reason.clone())
}

async fn remote_volumes(env: &Env, name: &str) -> Vec<gpucloud_operator::platform::NetworkVolume> {
    let all = env.platform.rest().list_network_volumes().await.unwrap();
    all.into_iter().filter(|v| v.name == name).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn apply_grow_rename_and_delete() {
    let env = Env::start("nv-life").await;
    let op = env.operator(&[]);
    let api: Api<NetworkVolume> = env.api();
    let nv = volume("data", 10, json!({"deletionPolicy": "Delete"}));
    api.create(&PostParams::default(), &nv).await.unwrap();

    let ready = env.wait_for("data", TIMEOUT, "Ready", is_ready).await;
    let status = ready.status.clone().unwrap();
    let id = status.common.id.clone().expect("status.id");
    assert_eq!(status.size_gb, Some(10));
    assert_eq!(status.data_center_id.as_deref(), Some("EU-RO-1"));
    assert_eq!(
        ready.annotations().get("gpucloud.io/external-id"),
        Some(&id)
    );
    assert!(
        ready
            .finalizers()
            .contains(&"gpucloud.io/finalizer".to_string())
    );
    let remote_name = status.name.clone().unwrap();
    assert!(
        remote_name.starts_with(&format!("{}-data-", env.ns.name())),
        "{remote_name}"
    );
    assert_eq!(remote_volumes(&env, &remote_name).await.len(), 1);

    // Grow: the remote follows and so does status.
    api.patch(
        "data",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"sizeGb": 25}})),
    )
    .await
    .unwrap();
    env.wait_for::<NetworkVolume, _>("data", TIMEOUT, "grown to 25", |nv| {
        is_ready(nv) && nv.status.as_ref().unwrap().size_gb == Some(25)
    })
    .await;
    assert_eq!(
        env.platform
            .rest()
            .get_network_volume(&id)
            .await
            .unwrap()
            .size,
        25
    );

    // Shrink: refused by the apiserver with the CEL message, nothing changes.
    let err = api
        .patch(
            "data",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"sizeGb": 5}})),
        )
        .await
        .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("sizeGb may only grow"), "{message}");

    // Rename.
    api.patch(
        "data",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"name": "renamed"}})),
    )
    .await
    .unwrap();
    env.wait_for::<NetworkVolume, _>("data", TIMEOUT, "renamed", |nv| {
        is_ready(nv) && nv.status.as_ref().unwrap().name.as_deref() == Some("renamed")
    })
    .await;
    assert_eq!(
        env.platform
            .rest()
            .get_network_volume(&id)
            .await
            .unwrap()
            .name,
        "renamed"
    );

    // Delete with policy Delete removes the remote volume.
    api.delete("data", &DeleteParams::default()).await.unwrap();
    let gone = common::wait_until(TIMEOUT, || async {
        api.get_opt("data").await.unwrap().is_none()
    })
    .await;
    assert!(gone, "the object was not released by the finalizer");
    let err = env
        .platform
        .rest()
        .get_network_volume(&id)
        .await
        .unwrap_err();
    assert_eq!(
        err.class(),
        gpucloud_operator::platform::ErrorClass::NotFound,
        "{err}"
    );

    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn orphan_keeps_the_volume_and_adoption_finds_it_again() {
    let env = Env::start("nv-orphan").await;
    let op = env.operator(&[]);
    let api: Api<NetworkVolume> = env.api();
    // Orphan is the default for volumes.
    api.create(&PostParams::default(), &volume("keep", 10, json!({})))
        .await
        .unwrap();
    let ready = env.wait_for("keep", TIMEOUT, "Ready", is_ready).await;
    let id = ready.status.unwrap().common.id.unwrap();
    api.delete("keep", &DeleteParams::default()).await.unwrap();
    assert!(
        common::wait_until(TIMEOUT, || async {
            api.get_opt("keep").await.unwrap().is_none()
        })
        .await
    );
    let kept = env
        .platform
        .rest()
        .get_network_volume(&id)
        .await
        .expect("the orphaned volume is still there");
    assert_eq!(kept.size, 10);

    // Adopt it back by external-id under another object; its size and name follow the spec.
    let mut adopt = volume("adopted", 12, json!({"name": kept.name.clone()}));
    adopt
        .annotations_mut()
        .insert("gpucloud.io/external-id".into(), id.clone());
    api.create(&PostParams::default(), &adopt).await.unwrap();
    let adopted = env
        .wait_for::<NetworkVolume, _>("adopted", TIMEOUT, "adopted and grown", |nv| {
            is_ready(nv) && nv.status.as_ref().unwrap().size_gb == Some(12)
        })
        .await;
    assert_eq!(
        adopted.status.unwrap().common.id.as_deref(),
        Some(id.as_str())
    );
    assert_eq!(
        remote_volumes(&env, &kept.name).await.len(),
        1,
        "adoption created nothing new"
    );

    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn paused_and_observe_only_make_no_writes() {
    let env = Env::start("nv-hands-off").await;
    let op = env.operator(&[]);
    let api: Api<NetworkVolume> = env.api();
    let existing = env
        .platform
        .rest()
        .create_network_volume(&NetworkVolumeCreate {
            name: "outside".into(),
            size: 30,
            data_center_id: "EU-RO-1".into(),
        })
        .await
        .unwrap();

    // Paused: not even a listing.
    let admin = env.emulator.admin();
    admin.clear_calls().await.unwrap();
    let mut paused = volume("paused", 10, json!({}));
    paused
        .annotations_mut()
        .insert("gpucloud.io/paused".into(), "true".into());
    api.create(&PostParams::default(), &paused).await.unwrap();
    env.wait_for::<NetworkVolume, _>("paused", TIMEOUT, "Synced=False/Paused", |nv| {
        reason(nv, "Synced").as_deref() == Some("Paused")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let calls: u64 = admin.calls().await.unwrap().values().sum();
    assert_eq!(calls, 0, "a paused object caused platform calls");

    // ObserveOnly: status from the remote object, which is left exactly as it is.
    let mut observed = volume(
        "observed",
        10,
        json!({"managementPolicy": "ObserveOnly", "deletionPolicy": "Delete"}),
    );
    observed
        .annotations_mut()
        .insert("gpucloud.io/external-id".into(), existing.id.clone());
    api.create(&PostParams::default(), &observed).await.unwrap();
    let seen = env.wait_for("observed", TIMEOUT, "Ready", is_ready).await;
    assert_eq!(seen.status.as_ref().unwrap().size_gb, Some(30));
    api.delete("observed", &DeleteParams::default())
        .await
        .unwrap();
    assert!(
        common::wait_until(TIMEOUT, || async {
            api.get_opt("observed").await.unwrap().is_none()
        })
        .await
    );
    let after = env
        .platform
        .rest()
        .get_network_volume(&existing.id)
        .await
        .unwrap();
    assert_eq!(
        (after.name.as_str(), after.size),
        ("outside", 30),
        "ObserveOnly changed the volume"
    );

    env.finish(op).await;
}
