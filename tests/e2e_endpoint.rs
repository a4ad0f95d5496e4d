//! Endpoint end to end: a real kube-apiserver, the emulator over real HTTP, the operator
//! in-process. Run through `scripts/test.sh`.

mod common;

use std::time::Duration;

use gpucloud_crd::Endpoint;
use gpucloud_platform::ErrorClass;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use common::endpoints;
use common::merged;
use common::operator::{Env, condition, ready_now, volume};
use common::volumes::volume_id;

const TIMEOUT: Duration = Duration::from_secs(30);

/// An Endpoint on an A40 or else an L40S, `extra` on top.
fn endpoint(name: &str, extra: serde_json::Value) -> Endpoint {
    let gpus = json!({"gpu": {"typeIds": ["NVIDIA A40", "NVIDIA L40S"]}});
    endpoints::endpoint(name, merged(gpus, extra))
}

fn is_ready(ep: &Endpoint) -> bool {
    ready_now(ep)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn create_update_health_connection_and_delete() {
    let env = Env::start("ep-life").await;
    let op = env.operator(&[]);
    let api: Api<Endpoint> = env.api();
    env.create(&endpoint(
        "infer",
        json!({"writeConnectionTo": "infer-conn"}),
    ))
    .await;

    let ready = env.wait_for("infer", TIMEOUT, "Ready", is_ready).await;
    let status = ready.status.clone().unwrap();
    let id = status.common.id.clone().expect("status.id");
    let url = status.url.clone().expect("status.url");
    assert_eq!(url, format!("{}/v2/{id}/", env.emulator.base_url()));
    assert_eq!(status.workers_max, Some(2));
    let remote = env.platform.rest().get_endpoint(&id).await.unwrap();
    assert_eq!(remote.gpu_type_ids, vec!["NVIDIA A40", "NVIDIA L40S"]);

    // The connection ConfigMap, owned by the Endpoint.
    let config_maps: Api<ConfigMap> = env.api();
    let cm = env
        .wait_for::<ConfigMap, _>("infer-conn", TIMEOUT, "written", |_| true)
        .await;
    let data = cm.data.clone().unwrap();
    assert_eq!(
        (data["id"].as_str(), data["url"].as_str()),
        (id.as_str(), url.as_str())
    );
    assert_eq!(cm.owner_references()[0].uid, ready.uid().unwrap());

    // Worker limits follow the spec.
    api.patch(
        "infer",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"workersMin": 1, "workersMax": 4}})),
    )
    .await
    .unwrap();
    env.wait_for::<Endpoint, _>("infer", TIMEOUT, "workers 1..4", |ep| {
        is_ready(ep) && ep.status.as_ref().unwrap().workers_max == Some(4)
    })
    .await;
    let remote = env.platform.rest().get_endpoint(&id).await.unwrap();
    assert_eq!((remote.workers_min, remote.workers_max), (Some(1), Some(4)));

    // Jobs submitted through the job API show in status.health.
    endpoints::run_minute_jobs(&env, &id, 3).await;
    env.wait_for::<Endpoint, _>("infer", TIMEOUT, "health shows the jobs", |ep| {
        ep.status
            .as_ref()
            .and_then(|s| s.health.as_ref())
            .is_some_and(|h| h.jobs.in_queue + h.jobs.in_progress == 3)
    })
    .await;

    // Renaming the connection ConfigMap moves it.
    api.patch(
        "infer",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"writeConnectionTo": "infer-conn2"}})),
    )
    .await
    .unwrap();
    env.wait_for::<ConfigMap, _>("infer-conn2", TIMEOUT, "written", |_| true)
        .await;
    assert!(
        common::wait_gone(&config_maps, "infer-conn", TIMEOUT).await,
        "the old connection ConfigMap was left behind"
    );

    // Delete (default policy Delete) removes the endpoint.
    api.delete("infer", &DeleteParams::default()).await.unwrap();
    assert!(common::wait_gone(&api, "infer", TIMEOUT).await);
    let err = env.platform.rest().get_endpoint(&id).await.unwrap_err();
    assert_eq!(err.class(), ErrorClass::NotFound, "{err}");
    // The connection ConfigMap goes with its owner (garbage collection).
    assert!(
        common::wait_gone(&config_maps, "infer-conn2", TIMEOUT).await,
        "the connection ConfigMap outlived the Endpoint"
    );

    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn waits_for_its_network_volume_then_attaches_it() {
    let env = Env::start("ep-volume").await;
    let op = env.operator(&[]);
    let endpoints: Api<Endpoint> = env.api();
    endpoints
        .create(
            &PostParams::default(),
            &endpoint("with-data", json!({"networkVolumeRef": {"name": "models"}})),
        )
        .await
        .unwrap();
    env.wait_for::<Endpoint, _>("with-data", TIMEOUT, "DependencyNotReady", |ep| {
        ep.status
            .as_ref()
            .and_then(|s| condition(&s.common.conditions, "Ready"))
            .is_some_and(|c| c.reason == "DependencyNotReady")
    })
    .await;

    env.create(&volume("models", 50, json!({"deletionPolicy": "Delete"})))
        .await;
    let ready = env
        .wait_for("with-data", Duration::from_secs(45), "Ready", is_ready)
        .await;
    let volume_id = volume_id(&env, "models").await;
    let remote = env
        .platform
        .rest()
        .get_endpoint(&ready.status.unwrap().common.id.unwrap())
        .await
        .unwrap();
    assert_eq!(
        remote.network_volume_id.as_deref(),
        Some(volume_id.as_str())
    );

    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn unknown_template_stalls_with_one_event_and_orphan_keeps_the_endpoint() {
    let env = Env::start("ep-bad").await;
    let op = env.operator(&[]);
    let api: Api<Endpoint> = env.api();
    env.emulator.admin().clear_calls().await.unwrap();
    env.create(&endpoint("bad", json!({"templateId": "no-such-template"})))
        .await;
    let stalled = env
        .wait_for::<Endpoint, _>("bad", TIMEOUT, "Stalled", |ep| {
            ep.status
                .as_ref()
                .and_then(|s| condition(&s.common.conditions, "Stalled"))
                .is_some_and(|c| c.status == "True")
        })
        .await;
    let stalled_condition = condition(
        &stalled.status.as_ref().unwrap().common.conditions,
        "Stalled",
    )
    .unwrap()
    .clone();
    assert_eq!(stalled_condition.reason, "InvalidSpec");
    assert!(
        stalled_condition.message.contains("templateId"),
        "{}",
        stalled_condition.message
    );
    // No retry loop: a later pass does not try the create again. Stalled, it is passed
    // over again only when it changes: the touch is what brings that pass.
    op.pass_over(&api, "bad").await;
    assert_eq!(
        env.emulator
            .admin()
            .call_count(common::backend::routes().create_endpoint)
            .await
            .unwrap(),
        1
    );
    let warnings: Vec<_> = env
        .events_about("Endpoint", "bad")
        .await
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("InvalidSpec"))
        .collect();
    assert_eq!(
        warnings.len(),
        1,
        "one Event for the refusal, not one per pass"
    );

    // Orphan: the endpoint stays on the platform.
    env.create(&endpoint("kept", json!({"deletionPolicy": "Orphan"})))
        .await;
    let ready = env.wait_for("kept", TIMEOUT, "Ready", is_ready).await;
    let id = ready.status.unwrap().common.id.unwrap();
    api.delete("kept", &DeleteParams::default()).await.unwrap();
    assert!(common::wait_gone(&api, "kept", TIMEOUT).await);
    env.platform
        .rest()
        .get_endpoint(&id)
        .await
        .expect("the orphaned endpoint is still there");

    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_create_that_answers_500_is_adopted_not_repeated() {
    let env = Env::start("ep-500").await;
    let admin = env.emulator.admin();
    // The platform creates the endpoint but answers 500, as it has been seen to do.
    admin
        .fail_next_creates_on(common::backend::routes().create_endpoint, 1)
        .await
        .unwrap();
    let op = env.operator(&[]);
    env.create(&endpoint("once", json!({}))).await;
    let ready = env.wait_for("once", TIMEOUT, "Ready", is_ready).await;
    let name = ready.status.as_ref().unwrap().name.clone().unwrap();
    let same_name: Vec<_> = env
        .platform
        .rest()
        .list_endpoints()
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.name == name)
        .collect();
    assert_eq!(same_name.len(), 1, "a duplicate endpoint was created");
    assert_eq!(same_name[0].id, ready.status.unwrap().common.id.unwrap());
    assert_eq!(
        admin
            .call_count(common::backend::routes().create_endpoint)
            .await
            .unwrap(),
        1,
        "the create was retried blindly"
    );
    let events: Api<k8s_openapi::api::events::v1::Event> = env.api();
    let reasons: Vec<String> = events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    assert!(
        reasons.iter().any(|r| r == "AdoptedAfterInterruptedCreate"),
        "{reasons:?}"
    );
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn adopts_an_existing_endpoint_and_converges_through_faults() {
    let env = Env::start("ep-adopt").await;
    let admin = env.emulator.admin();
    let existing = env
        .platform
        .rest()
        .create_endpoint(&gpucloud_platform::EndpointCreate {
            name: "made-elsewhere".into(),
            template_id: "tmpl-worker-base".into(),
            gpu_type_ids: vec!["NVIDIA A40".into()],
            workers_min: 0,
            workers_max: 1,
            idle_timeout: 5,
            ..Default::default()
        })
        .await
        .unwrap();
    // 30 % of the operator's platform calls fail; it must still converge.
    for route in [
        common::backend::routes().list_endpoints,
        common::backend::routes().update_endpoint,
        common::backend::routes().create_endpoint,
        "GET /v2/{endpoint_id}/health",
    ] {
        admin.set_error_rate(route, 0.3, 503).await.unwrap();
    }
    let op = env.operator(&[]);
    let mut adopt = endpoint(
        "adopted",
        json!({"name": "made-elsewhere", "workersMax": 3}),
    );
    adopt
        .annotations_mut()
        .insert("gpucloud.io/external-id".into(), existing.id.clone());
    env.create(&adopt).await;
    for i in 0..5 {
        env.create(&endpoint(&format!("many-{i}"), json!({}))).await;
    }
    let adopted = env
        .wait_for::<Endpoint, _>(
            "adopted",
            Duration::from_secs(60),
            "adopted with 3 workers",
            |ep| is_ready(ep) && ep.status.as_ref().unwrap().workers_max == Some(3),
        )
        .await;
    assert_eq!(
        adopted.status.unwrap().common.id.as_deref(),
        Some(existing.id.as_str())
    );
    for i in 0..5 {
        env.wait_for(
            &format!("many-{i}"),
            Duration::from_secs(60),
            "Ready",
            is_ready,
        )
        .await;
    }
    let all = env.platform.rest().list_endpoints().await.unwrap();
    let ours = all
        .iter()
        .filter(|e| e.name.starts_with(&format!("{}-many-", env.ns.name())))
        .count();
    assert_eq!(ours, 5, "faults led to duplicates or missing endpoints");
    admin.clear_faults().await.unwrap();
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_key_without_write_access_stalls_with_forbidden() {
    // The key in the Secret may read but not write: every create answers 403.
    let config = gpucloud_emulator::EmulatorConfig {
        api_keys: vec![gpucloud_emulator::ApiKey {
            key: common::operator::API_KEY.into(),
            read_only: true,
        }],
        ..Default::default()
    };
    let env = Env::start_with("ep-403", config).await;
    let op = env.operator(&[]);
    env.create(&endpoint("denied", json!({}))).await;
    let stalled = env
        .wait_for::<Endpoint, _>("denied", TIMEOUT, "Stalled", |ep| {
            ep.status
                .as_ref()
                .and_then(|s| condition(&s.common.conditions, "Stalled"))
                .is_some_and(|c| c.status == "True")
        })
        .await;
    let ready = condition(&stalled.status.as_ref().unwrap().common.conditions, "Ready")
        .unwrap()
        .clone();
    assert_eq!(ready.reason, "Forbidden");
    assert!(ready.message.contains("permission"), "{}", ready.message);
    // A later pass (brought by a touch: it is stalled) does not send the create again.
    op.pass_over(&env.api::<Endpoint>(), "denied").await;
    let creates = env
        .emulator
        .admin()
        .call_count(common::backend::routes().create_endpoint)
        .await
        .unwrap();
    assert_eq!(creates, 1, "the refused create was retried");
    env.finish(op).await;
}

/// A change of what workers run: on REST v2 it rolls out as a release, and the Endpoint is
/// Reconciling (RollingOut) until no worker is stale, then Ready; the rollout costs calls
/// only while it lasts. The seed API applies it at once: Ready with no rollout at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_worker_change_rolls_out_before_ready() {
    const RELEASES: &str = "GET /v2/serverless/{id}/releases";
    let env = Env::start("ep-rollout").await;
    let admin = env.emulator.admin();
    let op = env.operator(&[]);
    let api: Api<Endpoint> = env.api();
    env.create(&endpoint(
        "rolling",
        json!({"workersMin": 2, "workersMax": 2}),
    ))
    .await;
    env.wait_for("rolling", TIMEOUT, "Ready", is_ready).await;
    assert_eq!(
        admin.call_count(RELEASES).await.unwrap(),
        0,
        "no rollout yet"
    );

    // Fewer GPU types: the workers must move to a new release.
    api.patch(
        "rolling",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"gpu": {"typeIds": ["NVIDIA A40"]}}})),
    )
    .await
    .unwrap();
    if common::backend::is_v2() {
        let rolling = env
            .wait_for::<Endpoint, _>("rolling", TIMEOUT, "Reconciling/RollingOut", |ep| {
                let s = ep.status.as_ref();
                s.is_some_and(|s| s.common.observed_generation == ep.metadata.generation)
                    && s.and_then(|s| condition(&s.common.conditions, "Reconciling"))
                        .is_some_and(|c| c.status == "True" && c.reason == "RollingOut")
            })
            .await;
        let status = rolling.status.unwrap();
        let progress = status.rollout.clone().expect("status.rollout");
        assert!(
            progress.in_progress && progress.workers_total == 2,
            "{progress:?}"
        );
        let ready = condition(&status.common.conditions, "Ready")
            .unwrap()
            .clone();
        assert_eq!(ready.status, "False", "not Ready while workers are stale");
        assert!(ready.message.contains("of 2 workers"), "{}", ready.message);
        // The emulator replaces one stale worker every 30 emulated seconds.
        admin.advance_clock(61_000).await.unwrap();
    }
    let done = env
        .wait_for("rolling", TIMEOUT, "Ready after the rollout", is_ready)
        .await;
    if common::backend::is_v2() {
        let progress = done.status.and_then(|s| s.rollout).expect("status.rollout");
        assert!(
            !progress.in_progress && progress.workers_on_latest == 2,
            "{progress:?}"
        );
    }
    let after_rollout = admin.call_count(RELEASES).await.unwrap();
    if common::backend::is_v2() {
        assert!(after_rollout >= 1, "the rollout was followed");
    } else {
        assert_eq!(after_rollout, 0, "the seed API has no releases");
    }
    // Once rolled out, no more rollout calls: three passes later (it is polled every 2 s),
    // the same count.
    op.wait_more_passes("Endpoint", 3).await;
    assert_eq!(admin.call_count(RELEASES).await.unwrap(), after_rollout);
    env.finish(op).await;
}
