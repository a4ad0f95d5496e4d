//! NetworkVolume end to end: a real kube-apiserver, the emulator over real HTTP, and the
//! operator in-process. Run through `scripts/test.sh` (they need `KUBECONFIG`).

mod common;

use std::time::{Duration, Instant};

use gpucloud_crd::NetworkVolume;
use gpucloud_platform::NetworkVolumeCreate;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use common::calls::{calls_since, total_calls};
use common::operator::{
    API_KEY, Env, KEY_SECRET, free_port, is_ready, is_stalled_with, message, reason, volume,
};

const TIMEOUT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn apply_grow_rename_and_delete() {
    let env = Env::start("nv-life").await;
    let op = env.operator(&[]);
    let api: Api<NetworkVolume> = env.api();
    let nv = volume("data", 10, json!({"deletionPolicy": "Delete"}));
    env.create(&nv).await;

    let ready = env.wait_for("data", TIMEOUT, "Ready", is_ready).await;
    let status = ready.status.clone().unwrap();
    let id = status.common.id.clone().expect("status.id");
    assert_eq!(status.size_gb, Some(10));
    assert_eq!(status.data_center_id.as_deref(), Some("EU-RO-1"));
    // The id lives in status; metadata carries only the create marker and the finalizer,
    // written together before the create.
    assert!(!id.is_empty());
    assert!(!ready.annotations().contains_key("gpucloud.io/external-id"));
    assert!(
        ready
            .annotations()
            .contains_key("gpucloud.io/external-create-pending")
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
    assert_eq!(env.remote_volumes(&remote_name).await.len(), 1);

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
    assert_eq!(env.remote_volume(&id).await.unwrap().size, 25);

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
    assert_eq!(env.remote_volume(&id).await.unwrap().name, "renamed");

    // Delete with policy Delete removes the remote volume.
    api.delete("data", &DeleteParams::default()).await.unwrap();
    let gone = common::wait_gone(&api, "data", TIMEOUT).await;
    assert!(gone, "the object was not released by the finalizer");
    let err = env.remote_volume(&id).await.unwrap_err();
    assert_eq!(
        err.class(),
        gpucloud_platform::ErrorClass::NotFound,
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
    env.create(&volume("keep", 10, json!({}))).await;
    let ready = env.wait_for("keep", TIMEOUT, "Ready", is_ready).await;
    let id = ready.status.unwrap().common.id.unwrap();
    api.delete("keep", &DeleteParams::default()).await.unwrap();
    assert!(common::wait_gone(&api, "keep", TIMEOUT).await);
    let kept = env
        .remote_volume(&id)
        .await
        .expect("the orphaned volume is still there");
    assert_eq!(kept.size, 10);

    // Adopt it back by external-id under another object; its size and name follow the spec.
    let mut adopt = volume("adopted", 12, json!({"name": kept.name.clone()}));
    adopt
        .annotations_mut()
        .insert("gpucloud.io/external-id".into(), id.clone());
    env.create(&adopt).await;
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
        env.remote_volumes(&kept.name).await.len(),
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
    env.create(&paused).await;
    env.wait_for::<NetworkVolume, _>("paused", TIMEOUT, "Synced=False/Paused", |nv| {
        reason(nv, "Synced").as_deref() == Some("Paused")
    })
    .await;
    // Grown while paused: a pass reports the new generation (the sign that it looked),
    // and still calls nothing, where an unpaused volume would be resized.
    common::pods::patch_spec(&api, "paused", json!({"sizeGb": 20})).await;
    env.wait_for::<NetworkVolume, _>("paused", TIMEOUT, "generation 2 seen, Paused", |nv| {
        nv.status
            .as_ref()
            .is_some_and(|s| s.common.observed_generation == Some(2))
            && reason(nv, "Synced").as_deref() == Some("Paused")
    })
    .await;
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
    env.create(&observed).await;
    let seen = env.wait_for("observed", TIMEOUT, "Ready", is_ready).await;
    assert_eq!(seen.status.as_ref().unwrap().size_gb, Some(30));
    api.delete("observed", &DeleteParams::default())
        .await
        .unwrap();
    assert!(common::wait_gone(&api, "observed", TIMEOUT).await);
    let after = env.remote_volume(&existing.id).await.unwrap();
    assert_eq!(
        (after.name.as_str(), after.size),
        ("outside", 30),
        "ObserveOnly changed the volume"
    );

    env.finish(op).await;
}

fn create_route() -> &'static str {
    common::backend::routes().create_volume
}
fn list_route() -> &'static str {
    common::backend::routes().list_volumes
}
fn get_route() -> &'static str {
    common::backend::routes().get_volume
}

/// Asserts that exactly one `events.k8s.io/v1` Event with `reason` is about `name`, that
/// it is a Warning, and that it was published once (no series of repeats).
async fn assert_one_warning(env: &Env, name: &str, reason: &str) {
    let events = env.events_about("NetworkVolume", name).await;
    let matching: Vec<_> = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .collect();
    assert_eq!(
        matching.len(),
        1,
        "{name}: want one {reason} Event, got {events:#?}"
    );
    let event = matching[0];
    assert_eq!(event.type_.as_deref(), Some("Warning"), "{event:#?}");
    assert!(
        event.series.is_none(),
        "{name}: the {reason} Event was published more than once: {event:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn kstatus_fields_and_events() {
    let env = Env::start("nv-kstatus").await;
    let admin = env.emulator.admin();
    // A slow create, so that the first reconcile's status can be seen before it answers.
    admin.add_latency(create_route(), 3_000).await.unwrap();
    let op = env.operator(&[]);
    let api: Api<NetworkVolume> = env.api();
    env.create(&volume("watched", 10, json!({}))).await;

    // kstatus reads an object without conditions as Current. From its creation the object
    // reads observedGeneration 0 (the CRD's status default): not yet observed, so kstatus
    // says InProgress while the create is in flight, with no write of the operator's.
    // The operator's first pass may take a while to come (its start, the Lease, the
    // watch's first listing on a loaded machine); the marker stays from then on, and the
    // create's 3 s keeps the status unwritten while it is in flight.
    let early = env
        .wait_for::<NetworkVolume, _>("watched", TIMEOUT, "the create in flight", |nv| {
            nv.annotations()
                .contains_key("gpucloud.io/external-create-pending")
        })
        .await;
    let status = early.status.as_ref().expect("the status default");
    assert_eq!(status.common.observed_generation, Some(0), "{status:#?}");
    assert!(status.common.conditions.is_empty(), "{status:#?}");
    assert_eq!(
        early.metadata.generation,
        Some(1),
        "nothing may write the spec"
    );

    let ready = env.wait_for("watched", TIMEOUT, "Ready", is_ready).await;
    assert!(common::operator::is_true(&ready, "Synced"));
    assert!(!common::operator::is_true(&ready, "Reconciling"));
    assert!(!common::operator::is_true(&ready, "Stalled"));
    admin.clear_faults().await.unwrap();

    // observedGeneration follows metadata.generation.
    api.patch(
        "watched",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"sizeGb": 20}})),
    )
    .await
    .unwrap();
    let grown = env
        .wait_for::<NetworkVolume, _>("watched", TIMEOUT, "grown, generation 2", |nv| {
            is_ready(nv) && nv.status.as_ref().unwrap().size_gb == Some(20)
        })
        .await;
    assert_eq!(grown.metadata.generation, Some(2));
    assert_eq!(
        grown.status.as_ref().unwrap().common.observed_generation,
        Some(2)
    );

    // Every remote change has its Event, about this object.
    let has_events = common::wait_until(TIMEOUT, || async {
        let reasons: Vec<_> = env
            .events_about("NetworkVolume", "watched")
            .await
            .into_iter()
            .filter(|e| e.type_.as_deref() == Some("Normal"))
            .filter_map(|e| e.reason)
            .collect();
        reasons.iter().any(|r| r == "Created") && reasons.iter().any(|r| r == "Updated")
    })
    .await;
    let events = env.events_about("NetworkVolume", "watched").await;
    assert!(
        has_events,
        "want Created and Updated Events, got {events:#?}"
    );
    let uid = grown.uid().unwrap();
    for e in &events {
        let regarding = e.regarding.as_ref().unwrap();
        assert_eq!(regarding.uid.as_deref(), Some(uid.as_str()), "{e:#?}");
        assert!(e.note.as_deref().is_some_and(|n| !n.is_empty()), "{e:#?}");
    }

    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn wrong_api_key_stalls_quietly_and_a_fixed_secret_converges_without_restart() {
    let env = Env::start("nv-badkey").await;
    let secrets: Api<Secret> = env.api();
    secrets
        .patch(
            KEY_SECRET,
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"apiKey": "not-the-key"}})),
        )
        .await
        .unwrap();
    let admin = env.emulator.admin();
    admin.clear_calls().await.unwrap();
    let op = env.operator(&[]);
    let names = ["key-a", "key-b", "key-c"];
    // One at a time: passes that run together share one refused listing (one call per
    // burst, by design), which would make the count below depend on timing.
    for name in names {
        env.create(&volume(name, 10, json!({}))).await;
        let nv = env
            .wait_for::<NetworkVolume, _>(name, TIMEOUT, "Stalled/Unauthorized", |nv| {
                is_stalled_with(nv, "Unauthorized")
            })
            .await;
        let text = message(&nv, "Ready");
        assert!(
            text.contains(KEY_SECRET) && text.contains("API key"),
            "the message must name the Secret to fix: {text}"
        );
        assert!(!text.contains("not-the-key"), "the key leaked: {text}");
    }
    // No retry loop: the wrong key costs one call per pass, and a stalled object is passed
    // over again only when it changes. Each is touched once: one pass over each, and one
    // more refused call each (a refused key is not remembered, as a refused create is: a
    // pass made alone lists again with it), where a retry on a timer would add passes.
    let api: Api<NetworkVolume> = env.api();
    let since = op.passes("NetworkVolume").await;
    for name in names {
        op.pass_over(&api, name).await;
    }
    let passes = op.passes("NetworkVolume").await - since;
    let calls = env.calls().await;
    assert_eq!(passes, names.len() as u64, "a pass per touch, no more");
    assert_eq!(
        total_calls(&calls),
        2 * names.len() as u64,
        "one refused call per pass, no more: {calls:?}"
    );
    println!("platform calls with a wrong key, a pass over each later: {calls:?}");
    for name in names {
        assert_one_warning(&env, name, "Unauthorized").await;
    }

    // The fixed Secret is picked up by its next reading: no restart.
    secrets
        .patch(
            KEY_SECRET,
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"apiKey": API_KEY}})),
        )
        .await
        .unwrap();
    for name in names {
        env.wait_for(name, TIMEOUT, "Ready after the key was fixed", is_ready)
            .await;
    }
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn missing_credentials_secret_stalls_until_it_exists() {
    let env = Env::start("nv-nosecret").await;
    let admin = env.emulator.admin();
    admin.clear_calls().await.unwrap();
    let op = env.operator(&[]);
    env.create(&volume(
        "own-key",
        10,
        json!({"credentialsSecretRef": {"name": "team-key"}}),
    ))
    .await;
    let nv = env
        .wait_for::<NetworkVolume, _>("own-key", TIMEOUT, "Stalled/CredentialsNotFound", |nv| {
            is_stalled_with(nv, "CredentialsNotFound")
        })
        .await;
    let text = message(&nv, "Ready");
    assert!(text.contains("team-key"), "{text}");
    // A later pass (brought by a touch: it is stalled) makes no call either.
    op.pass_over(&env.api::<NetworkVolume>(), "own-key").await;
    let calls = env.calls().await;
    assert_eq!(
        total_calls(&calls),
        0,
        "no key, no platform calls: {calls:?}"
    );
    assert_one_warning(&env, "own-key", "CredentialsNotFound").await;

    let secrets: Api<Secret> = env.api();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "team-key"},
        "stringData": {"apiKey": API_KEY}
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let ready = env
        .wait_for("own-key", TIMEOUT, "Ready once the Secret exists", is_ready)
        .await;
    assert!(ready.status.unwrap().common.id.is_some());
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn unknown_data_center_stalls_with_one_event_and_no_retry_loop() {
    let env = Env::start("nv-baddc").await;
    let admin = env.emulator.admin();
    admin.clear_calls().await.unwrap();
    let op = env.operator(&[]);
    let api: Api<NetworkVolume> = env.api();
    env.create(&volume(
        "nowhere",
        10,
        json!({"dataCenterId": "XX-NOWHERE-1"}),
    ))
    .await;
    let nv = env
        .wait_for::<NetworkVolume, _>("nowhere", TIMEOUT, "Stalled/InvalidSpec", |nv| {
            is_stalled_with(nv, "InvalidSpec")
        })
        .await;
    let text = message(&nv, "Ready");
    assert!(
        text.contains("dataCenterId") && text.contains("XX-NOWHERE-1"),
        "the message must name the field: {text}"
    );
    // A later pass (brought by a touch: it is stalled) does not send the create again.
    op.pass_over(&api, "nowhere").await;
    let calls = env.calls().await;
    assert_eq!(
        calls.get(create_route()).copied(),
        Some(1),
        "the refused create was retried: {calls:?}"
    );
    assert!(total_calls(&calls) <= 3, "a retry loop: {calls:?}");
    assert_one_warning(&env, "nowhere", "InvalidSpec").await;
    let nv: NetworkVolume = api.get("nowhere").await.unwrap();
    assert!(
        !nv.annotations()
            .contains_key("gpucloud.io/external-create-pending"),
        "a refused create leaves no pending marker"
    );
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn metrics_endpoint_exposes_the_operator_series() {
    let env = Env::start("nv-metrics").await;
    let port = free_port();
    let op = env.operator(&[&format!("--metrics-addr=127.0.0.1:{port}")]);
    env.create(&volume("measured", 10, json!({}))).await;
    env.wait_for("measured", TIMEOUT, "Ready", is_ready).await;

    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    // The gauge follows the status write; wait for it rather than racing it.
    let last = std::sync::Mutex::new(String::new());
    let counted = common::wait_until(TIMEOUT, || {
        let (http, url, last) = (http.clone(), format!("{base}/metrics"), &last);
        async move {
            let Ok(resp) = http.get(&url).send().await else {
                return false;
            };
            let text = resp.text().await.unwrap_or_default();
            let found = text.lines().any(|l| {
                l.starts_with("gpucloud_managed_objects{")
                    && l.contains("kind=\"NetworkVolume\"")
                    && l.contains("ready=\"true\"")
                    && l.ends_with(" 1")
            });
            *last.lock().unwrap() = text;
            found
        }
    })
    .await;
    let text = last.into_inner().unwrap();
    assert!(counted, "no Ready NetworkVolume in the gauge:\n{text}");
    for series in [
        "gpucloud_reconciles_total{",
        "gpucloud_managed_objects{",
        "gpucloud_platform_calls_total{",
        "gpucloud_reconcile_duration_seconds_bucket{",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(series)),
            "{series} missing from /metrics:\n{text}"
        );
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("gpucloud_reconciles_total{")
                && l.contains("kind=\"NetworkVolume\"")
                && l.contains("result=\"ok\"")),
        "{text}"
    );
    assert!(!text.contains(API_KEY), "the API key is in /metrics");
    for path in ["healthz", "readyz"] {
        let status = http
            .get(format!("{base}/{path}"))
            .send()
            .await
            .unwrap()
            .status();
        assert!(status.is_success(), "/{path}: {status}");
    }
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn platform_calls_per_interval_do_not_grow_with_objects() {
    const OBJECTS: usize = 50;
    const POLL: Duration = Duration::from_secs(2);
    const INTERVALS: u32 = 3;
    let env = Env::start("nv-batch").await;
    let op = env.operator(&["--poll-interval=2s", "--concurrency=16"]);
    let api: Api<NetworkVolume> = env.api();
    let names: Vec<String> = (0..OBJECTS).map(|i| format!("batch-{i:02}")).collect();
    for name in &names {
        env.create(&volume(name, 10, json!({}))).await;
    }
    let all_ready = common::wait_until(Duration::from_secs(90), || async {
        let list = api.list(&Default::default()).await.unwrap();
        list.items.len() == OBJECTS && list.items.iter().all(is_ready)
    })
    .await;
    assert!(all_ready, "{OBJECTS} volumes did not all become Ready");
    // The passes that follow the creates are over once every volume has been passed over
    // once more: the periodic resync from then on.
    op.wait_more_passes("NetworkVolume", OBJECTS as u64).await;

    // A measurement: the calls over a span of resync intervals. The span lasts until every
    // volume has been passed over at least once in it (longer than planned on a loaded
    // machine), so the resync ran in it, and the bound follows the span measured.
    let before = env.calls().await;
    let since = op.passes("NetworkVolume").await;
    let started = Instant::now();
    tokio::time::sleep(POLL * INTERVALS).await;
    op.wait_passes("NetworkVolume", since, OBJECTS as u64).await;
    let calls = calls_since(&before, &env.calls().await);
    let intervals = (started.elapsed().as_secs_f64() / POLL.as_secs_f64()).ceil() as u64;
    println!(
        "platform calls over {intervals} resync intervals with {OBJECTS} Ready volumes: {calls:?}"
    );
    let lists = calls.get(list_route()).copied().unwrap_or(0);
    assert!(
        lists <= intervals + 2,
        "{lists} list calls in {intervals} intervals: {calls:?}"
    );
    assert!(lists >= 1, "the resync stopped looking: {calls:?}");
    assert_eq!(
        calls.get(get_route()).copied().unwrap_or(0),
        0,
        "per-object reads: {calls:?}"
    );
    assert_eq!(
        total_calls(&calls),
        lists,
        "nothing but list calls once converged: {calls:?}"
    );
    let list = api.list(&Default::default()).await.unwrap();
    assert!(list.items.iter().all(is_ready));
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_volume_whose_key_secret_went_first_is_still_deleted() {
    // Deleting a namespace takes the key Secret and the objects in an order of its own.
    let env = Env::start("nv-key-first").await;
    let op = env.operator(&[]);
    let api: Api<NetworkVolume> = env.api();
    let nv = volume("keyless", 10, json!({"deletionPolicy": "Delete"}));
    env.create(&nv).await;
    let ready = env.wait_for("keyless", TIMEOUT, "Ready", is_ready).await;
    let remote_name = ready.status.unwrap().name.unwrap();
    let secrets: Api<Secret> = env.api();
    secrets
        .delete(KEY_SECRET, &DeleteParams::default())
        .await
        .unwrap();
    api.delete("keyless", &DeleteParams::default())
        .await
        .unwrap();
    let gone = common::wait_gone(&api, "keyless", TIMEOUT).await;
    assert!(gone, "the object is still held by its finalizer");
    assert!(
        env.remote_volumes(&remote_name).await.is_empty(),
        "the remote volume was left behind"
    );
    env.finish(op).await;
}

/// An install that watches two namespaces: volumes applied in both before it starts, and
/// one applied later, all converge; a volume deleted while the operator was away is
/// deleted from the platform when it comes back. (One watch per namespace, merged: see
/// `gpucloud_engine::watch_merge`. Merged as they came, the second namespace's listing would
/// have replaced the first's in the operator's store.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn an_install_of_two_namespaces_manages_both() {
    let env = Env::start("nv-two-ns").await;
    let other = common::TestNamespace::create(&env.client, "nv-two-ns-b").await;
    let namespaces = format!("--namespaces={},{}", env.ns.name(), other.name());
    let here: Api<NetworkVolume> = env.api();
    let there: Api<NetworkVolume> = Api::namespaced(env.client.clone(), other.name());
    let delete = json!({"deletionPolicy": "Delete"});
    for (api, name) in [(&here, "a1"), (&here, "a2"), (&there, "b1"), (&there, "b2")] {
        api.create(&PostParams::default(), &volume(name, 10, delete.clone()))
            .await
            .unwrap();
    }
    let op = env.operator(&[&namespaces]);
    for name in ["a1", "a2"] {
        env.wait_for(name, TIMEOUT, "Ready", is_ready).await;
    }
    let ready_there = |name: &'static str| {
        let there = there.clone();
        async move {
            common::wait_until(TIMEOUT, || async {
                there.get(name).await.is_ok_and(|nv| is_ready(&nv))
            })
            .await
        }
    };
    assert!(
        ready_there("b1").await && ready_there("b2").await,
        "the second namespace's volumes"
    );
    there
        .create(&PostParams::default(), &volume("b3", 10, delete.clone()))
        .await
        .unwrap();
    assert!(
        ready_there("b3").await,
        "a volume applied later in the second namespace"
    );

    // Away, then back: the first listings again, with one deletion waiting.
    op.stop().await;
    there.delete("b2", &DeleteParams::default()).await.unwrap();
    let op = env.operator(&[&namespaces]);
    let b2_gone = common::wait_gone(&there, "b2", TIMEOUT).await;
    assert!(
        b2_gone,
        "b2 kept its finalizer: the restarted operator did not see it"
    );
    let names: Vec<String> = env
        .platform_volumes()
        .await
        .into_iter()
        .map(|v| v.name)
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with(&format!("{}-b2-", other.name()))),
        "b2's volume is still on the platform: {names:?}"
    );

    for name in ["b1", "b3"] {
        there.delete(name, &DeleteParams::default()).await.unwrap();
    }
    let emptied = common::wait_until(TIMEOUT, || async {
        there
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    })
    .await;
    assert!(
        emptied,
        "the second namespace's volumes kept their finalizers"
    );
    other.delete_and_wait(&env.client).await;
    env.finish(op).await;
}
