//! The orphan sweep end to end. An operator process deploys a pod and is killed, the Pod
//! object is then deleted from the cluster (its finalizer removed by hand, as after a lost
//! install), and `gpucloud-operator orphans` (the real binary, with a kubeconfig and a key)
//! finds the pod and, with `--delete --yes`, terminates it; a pod released on purpose
//! (`deletionPolicy: Orphan`) is left alone. The same for every swept kind (pod, endpoint,
//! template, network volume), with the operator's `gpucloud_orphans` metric counting them
//! and a hand-made volume left alone. Run through `scripts/test.sh`.

mod common;

use std::time::Duration;

use gpucloud_crd::ManagedKind;
use gpucloud_crd::{Endpoint, NetworkVolume, Pod, Template};
use gpucloud_platform::domain::{NewVolume, VolumeType};
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use serde_json::{Value, json};

use common::operator::{Env, free_port, ready_now};
use common::pods::{config, id_of, is_ready, pod, remote_pods};
use common::sweep::{delete_behind_its_back, orphans};

const TIMEOUT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_pod_left_by_a_killed_operator_is_listed_and_deleted_a_released_one_is_not() {
    let env = Env::start_with("orphans", config()).await;
    let api: Api<Pod> = env.api();
    let first = env.operator_process(&[]);

    // Released on purpose: deletionPolicy Orphan.
    env.create(&pod("kept", json!({"deletionPolicy": "Orphan"})))
        .await;
    let kept = env.wait_for("kept", TIMEOUT, "Ready", is_ready).await;
    let kept_id = id_of(&kept);
    api.delete("kept", &DeleteParams::default()).await.unwrap();
    let released = common::wait_gone(&api, "kept", TIMEOUT).await;
    assert!(released, "the kept Pod was not released");

    // Deployed, then the operator dies and the object goes without it.
    env.create(&pod("lost", json!({}))).await;
    let lost = env.wait_for("lost", TIMEOUT, "Ready", is_ready).await;
    let lost_id = id_of(&lost);
    let lost_cost = lost.status.as_ref().unwrap().cost_per_hour.unwrap();
    first.kill();
    delete_behind_its_back::<Pod>(&env, "lost").await;

    let (listed, ok) = orphans(&env, &[]);
    assert!(ok, "{listed}");
    assert!(listed.contains(&lost_id), "{listed}");
    assert!(
        !listed.contains(&kept_id),
        "a released pod is no orphan: {listed}"
    );
    assert!(
        listed.contains(&format!("1 orphan(s), {lost_cost:.3} per hour")),
        "{listed}"
    );

    let (deleted, ok) = orphans(&env, &["--delete", "--yes"]);
    assert!(ok, "{deleted}");
    assert!(
        deleted.contains(&format!("terminated pod {lost_id}")),
        "{deleted}"
    );
    let remote = remote_pods(&env).await;
    assert!(
        remote
            .iter()
            .all(|p| p.id != lost_id || p.desired_status == "TERMINATED"),
        "the orphan is still on the platform"
    );
    assert!(
        remote
            .iter()
            .any(|p| p.id == kept_id && p.desired_status == "RUNNING"),
        "the released pod must stay"
    );
    let (after, ok) = orphans(&env, &[]);
    assert!(ok && after.contains("0 orphan(s)"), "{after}");

    let operator = env.operator(&[]);
    env.finish(operator).await;
}

/// Applies `manifest` (kind `K`) in the test's namespace and waits for it to be Ready; its id.
async fn ready<K>(env: &Env, manifest: Value) -> String
where
    K: ManagedKind,
{
    let obj: K = serde_json::from_value(manifest).expect("a manifest of the kind");
    let name = obj.meta().name.clone().unwrap();
    env.api::<K>()
        .create(&PostParams::default(), &obj)
        .await
        .unwrap();
    let obj: K = env.wait_for(&name, TIMEOUT, "Ready", ready_now).await;
    obj.current_status()
        .and_then(|s| K::common(s).id.clone())
        .expect("status.id")
}

/// The operator's `gpucloud_orphans` by kind, from its `/metrics`.
async fn orphan_gauges(metrics_port: u16) -> std::collections::BTreeMap<String, i64> {
    let Ok(resp) = reqwest::get(format!("http://127.0.0.1:{metrics_port}/metrics")).await else {
        return Default::default();
    };
    let text = resp.text().await.unwrap_or_default();
    text.lines()
        .filter_map(|l| l.strip_prefix("gpucloud_orphans{kind=\""))
        .filter_map(|l| {
            let (kind, value) = l.split_once("\"} ")?;
            Some((kind.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

const SWEPT: [&str; 4] = ["Endpoint", "NetworkVolume", "Pod", "Template"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn every_swept_kind_is_counted_listed_and_deleted_in_order() {
    let env = Env::start_with("orphans-kinds", config()).await;
    let operator = env.operator(&[]);
    let template_id = ready::<Template>(
        &env,
        json!({
            "apiVersion": "gpucloud.io/v1beta1", "kind": "Template",
            "metadata": {"name": "worker"},
            "spec": {"image": "registry.example.com/acme/worker:1", "serverless": true},
        }),
    )
    .await;
    let endpoint_id = ready::<Endpoint>(
        &env,
        json!({
            "apiVersion": "gpucloud.io/v1beta1", "kind": "Endpoint",
            "metadata": {"name": "infer"},
            "spec": {"templateRef": {"name": "worker"}, "gpu": {"typeIds": ["NVIDIA A40"]},
                     "workersMin": 0, "workersMax": 1, "idleTimeout": "5s"},
        }),
    )
    .await;
    let volume_id = ready::<NetworkVolume>(
        &env,
        json!({
            "apiVersion": "gpucloud.io/v1beta1", "kind": "NetworkVolume",
            "metadata": {"name": "data"},
            "spec": {"sizeGb": 10, "dataCenterId": "EU-RO-1", "deletionPolicy": "Delete"},
        }),
    )
    .await;
    let pod_id = ready::<Pod>(&env, serde_json::to_value(pod("train", json!({}))).unwrap()).await;
    // Made by hand on the platform: no marker, never an orphan.
    let hand_made = env
        .platform
        .volumes()
        .create(&NewVolume {
            name: "scratch".into(),
            size_gb: 10,
            data_center_id: "EU-RO-1".into(),
            volume_type: VolumeType::Standard,
        })
        .await
        .unwrap();
    operator.stop().await;

    delete_behind_its_back::<Pod>(&env, "train").await;
    delete_behind_its_back::<Endpoint>(&env, "infer").await;
    delete_behind_its_back::<Template>(&env, "worker").await;
    delete_behind_its_back::<NetworkVolume>(&env, "data").await;

    // The operator counts them: every kind, once two censuses agree.
    let port = free_port();
    let operator = env.operator(&[
        &format!("--metrics-addr=127.0.0.1:{port}"),
        "--orphan-census-interval=2s",
    ]);
    let one_each =
        |g: &std::collections::BTreeMap<String, i64>| SWEPT.iter().all(|k| g.get(*k) == Some(&1));
    let counted =
        common::wait_until(TIMEOUT, || async { one_each(&orphan_gauges(port).await) }).await;
    assert!(counted, "gpucloud_orphans: {:?}", orphan_gauges(port).await);

    let (listed, ok) = orphans(&env, &[]);
    assert!(ok, "{listed}");
    for id in [&pod_id, &endpoint_id, &template_id, &volume_id] {
        assert!(listed.contains(id.as_str()), "{id} not listed: {listed}");
    }
    assert!(
        !listed.contains(&hand_made.id),
        "a hand-made volume is no orphan: {listed}"
    );
    assert!(listed.contains("4 orphan(s)"), "{listed}");
    let (only_volumes, ok) = orphans(&env, &["--kind=network-volume"]);
    assert!(
        ok && only_volumes.contains("1 orphan(s)") && only_volumes.contains(&volume_id),
        "{only_volumes}"
    );

    // Deleted in an order the platform accepts: the template and the volume after their users.
    let (deleted, ok) = orphans(&env, &["--delete", "--yes"]);
    assert!(ok, "{deleted}");
    let lines: Vec<&str> = deleted
        .lines()
        .filter(|l| !l.contains("orphan(s)"))
        .collect();
    let position = |what: &str| {
        lines
            .iter()
            .position(|l| l.starts_with(what))
            .unwrap_or_else(|| panic!("no {what:?} in {deleted}"))
    };
    assert!(
        position("terminated pod") < position("deleted endpoint"),
        "{deleted}"
    );
    assert!(
        position("deleted endpoint") < position("deleted template"),
        "{deleted}"
    );
    assert!(
        position("deleted template") < position("deleted network volume"),
        "{deleted}"
    );
    let volumes = env.platform_volume_ids().await;
    assert!(
        !volumes.contains(&volume_id) && volumes.contains(&hand_made.id),
        "the orphan volume goes, the hand-made one stays: {volumes:?}"
    );
    let endpoints = env.platform.endpoints().list().await.unwrap();
    assert!(endpoints.iter().all(|e| e.id != endpoint_id));
    let templates = env.platform.templates().list().await.unwrap();
    assert!(templates.iter().all(|t| t.id != template_id));
    let (after, ok) = orphans(&env, &[]);
    assert!(ok && after.contains("0 orphan(s)"), "{after}");
    let cleared = common::wait_until(TIMEOUT, || async {
        let g = orphan_gauges(port).await;
        SWEPT.iter().all(|k| g.get(*k) == Some(&0))
    })
    .await;
    assert!(cleared, "gpucloud_orphans: {:?}", orphan_gauges(port).await);

    env.platform.volumes().delete(&hand_made.id).await.unwrap();
    env.finish(operator).await;
}

/// Two clusters whose installs use one API key: each install tags what it makes, and never
/// calls the other's remote objects orphans. The other cluster is stood in for by volumes
/// made on the platform with its install's tag, for objects this cluster never had.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn another_installs_remote_objects_on_the_same_key_are_never_orphans() {
    let env = Env::start("orphans-installs").await;
    let api: Api<NetworkVolume> = env.api();
    let operator = env.operator_process(&[]);
    env.create(&common::operator::volume("lost", 10, json!({})))
        .await;
    let lost = env
        .wait_for("lost", TIMEOUT, "Ready", common::operator::is_ready)
        .await;
    let lost_status = lost.status.clone().unwrap();
    let lost_id = lost_status.common.id.clone().unwrap();
    let mine = env.install_tag().await;
    let lost_name = lost_status.name.clone().unwrap();
    assert!(
        lost_name.ends_with(&format!("-i{}", mine.as_str())),
        "{lost_name}: the volume carries its install's tag"
    );
    operator.kill();
    delete_behind_its_back::<NetworkVolume>(&env, "lost").await;
    assert!(common::wait_gone(&api, "lost", TIMEOUT).await);

    // The other cluster's: same namespace name, an object this cluster never had.
    let other = if mine.as_str() == "0badf0" {
        "0badf1"
    } else {
        "0badf0"
    };
    let theirs = env
        .platform
        .volumes()
        .create(&NewVolume {
            name: format!("{}-data-0a0b0c0d-i{other}", env.ns.name()),
            size_gb: 10,
            data_center_id: "EU-RO-1".into(),
            volume_type: VolumeType::Standard,
        })
        .await
        .unwrap();

    let (listed, ok) = orphans(&env, &["--kind=network-volume"]);
    assert!(ok, "{listed}");
    assert!(listed.contains(&lost_id), "this install's orphan: {listed}");
    assert!(
        !listed.contains(&theirs.id),
        "another install's volume is no orphan here: {listed}"
    );
    // Judged as that other install (its Lease is not in this cluster): it cannot tell
    // its own tag, so it judges no tagged volume at all.
    let as_other = format!("--install={}/other-install", env.ns.name());
    let (listed, ok) = orphans(&env, &["--kind=network-volume", &as_other]);
    assert!(ok, "{listed}");
    assert!(
        !listed.contains(&lost_id) && !listed.contains(&theirs.id),
        "{listed}"
    );

    let (deleted, ok) = orphans(&env, &["--kind=network-volume", "--delete", "--yes"]);
    assert!(ok, "{deleted}");
    let left = env.platform_volume_ids().await;
    assert!(
        !left.contains(&lost_id) && left.contains(&theirs.id),
        "the orphan goes, the other install's volume stays: {left:?}"
    );
    env.platform.volumes().delete(&theirs.id).await.unwrap();
}
