//! Tenancy end to end: a second team on the same cluster and key tries to take the first
//! team's remote objects by their ids, and two objects race to adopt one id. A real
//! kube-apiserver, the emulator over real HTTP, the operator in-process; run through
//! `scripts/test.sh` (both backends, and as the deploy/ ServiceAccount).

mod common;

use std::time::Duration;

use gpucloud_crd::pod::PodPhase;
use gpucloud_crd::{ManagedKind, NetworkVolume, Pod};
use gpucloud_platform::NetworkVolumeCreate;
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use common::TestNamespace;
use common::calls::writes;
use common::operator::{Env, stalled_now, volume};
use common::pods::{config, id_of, is_ready, pod, remote_status};

const TIMEOUT: Duration = Duration::from_secs(40);
const EXTERNAL_ID: &str = "gpucloud.io/external-id";
const REFUSED: &str = "AdoptionRefused";

/// Waits until `check` holds for object `name` read through `api`; the last one read.
async fn wait_in<K, F>(api: &Api<K>, name: &str, what: &str, check: F) -> K
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    F: Fn(&K) -> bool,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let obj = api.get_opt(name).await.ok().flatten();
        match obj {
            Some(obj) if check(&obj) => return obj,
            last if tokio::time::Instant::now() > deadline => {
                panic!("{name}: not {what} within {TIMEOUT:?}: {last:#?}")
            }
            _ => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

fn status_id<K: ManagedKind>(obj: &K) -> Option<String> {
    obj.current_status().and_then(|s| K::common(s).id.clone())
}

fn is_running(p: &Pod) -> bool {
    is_ready(p) && p.status.as_ref().and_then(|s| s.phase) == Some(PodPhase::Running)
}

/// Team B asks, by id, for team A's running pod: refused, and nothing reaches the
/// platform whatever B does to its object (another policy, an edit, ObserveOnly, delete).
async fn team_b_cannot_take_team_as_pod(env: &Env, team_b: &TestNamespace, holder_named: &str) {
    let team_a: Api<Pod> = env.api();
    let trainer = wait_in(&team_a, "trainer", "running", is_running).await;
    let id = id_of(&trainer);
    let before = env.calls().await;

    let team_b_pods: Api<Pod> = Api::namespaced(env.client.clone(), team_b.name());
    let mut thief = pod("thief", json!({"deletionPolicy": "Delete"}));
    thief
        .annotations_mut()
        .insert(EXTERNAL_ID.into(), id.clone());
    team_b_pods
        .create(&PostParams::default(), &thief)
        .await
        .unwrap();
    let refused = wait_in(&team_b_pods, "thief", "refused", |p| {
        stalled_now(p, REFUSED).is_some()
    })
    .await;
    let message = stalled_now(&refused, REFUSED).unwrap();
    assert!(
        message.contains(&id) && message.contains(holder_named),
        "the refusal names the pod and its holder: {message}"
    );
    assert_eq!(status_id(&refused), None, "a refused object records no id");

    // Whatever B does next, the answer stays: ObserveOnly (it would show B A's costs and
    // addresses), then an edit.
    let observe_only = json!({"spec": {"managementPolicy": "ObserveOnly"}});
    team_b_pods
        .patch(
            "thief",
            &PatchParams::default(),
            &Patch::Merge(&observe_only),
        )
        .await
        .unwrap();
    let observed = wait_in(&team_b_pods, "thief", "refused under ObserveOnly", |p| {
        stalled_now(p, REFUSED).is_some()
    })
    .await;
    assert_eq!(status_id(&observed), None);
    let edit = json!({"spec": {"managementPolicy": "Manage", "image": "ghcr.io/evil/miner:1"}});
    team_b_pods
        .patch("thief", &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .unwrap();
    wait_in(&team_b_pods, "thief", "refused after an edit", |p| {
        stalled_now(p, REFUSED).is_some()
    })
    .await;

    // Deleting B's object deletes nothing remote.
    team_b_pods
        .delete("thief", &DeleteParams::default())
        .await
        .unwrap();
    assert!(common::wait_gone(&team_b_pods, "thief", TIMEOUT).await);
    let written = writes(&before, &env.calls().await);
    assert!(
        written.is_empty(),
        "team B's object made platform writes: {written:?}"
    );
    assert_eq!(
        remote_status(env, &id).await.as_deref(),
        Some("RUNNING"),
        "team A's pod"
    );
    let trainer = team_a.get("trainer").await.unwrap();
    assert!(is_running(&trainer), "team A's object: {trainer:#?}");
    assert_eq!(status_id(&trainer).as_deref(), Some(id.as_str()));
    let events: Api<Event> = Api::namespaced(env.client.clone(), team_b.name());
    let told = events.list(&Default::default()).await.unwrap().items;
    assert!(
        told.iter().any(|e| e.reason.as_deref() == Some(REFUSED)
            && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("thief")),
        "an Event tells team B: {told:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn one_install_refuses_a_namespace_another_namespaces_pod() {
    let env = Env::start_with("tenancy-one", config()).await;
    let team_b = TestNamespace::create(&env.client, "tenancy-one-b").await;
    let watched = format!("--namespaces={},{}", env.ns.name(), team_b.name());
    let op = env.operator(&[&watched]);
    env.create(&pod("trainer", json!({}))).await;
    let holder = format!("{}/trainer", env.ns.name());
    team_b_cannot_take_team_as_pod(&env, &team_b, &holder).await;
    let client = env.client.clone();
    env.finish(op).await;
    team_b.delete_and_wait(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_single_namespace_install_refuses_a_pod_it_cannot_see_the_holder_of() {
    // Two installs on one key, each watching its own namespace (the single-namespace
    // overlay, twice): B's install cannot see A's object, only the pod's marker.
    let env = Env::start_with("tenancy-two", config()).await;
    let team_b = TestNamespace::create(&env.client, "tenancy-two-b").await;
    env.grant_operator_namespace(team_b.name()).await;
    let op_a = env.operator(&[]);
    let op_b = env.operator(&[
        &format!("--namespaces={}", team_b.name()),
        &format!("--leader-election-namespace={}", team_b.name()),
        &format!("--identity={}-operator", team_b.name()),
    ]);
    env.create(&pod("trainer", json!({}))).await;
    let trainer = wait_in(&env.api::<Pod>(), "trainer", "running", is_running).await;
    let uid = trainer.uid().unwrap();
    team_b_cannot_take_team_as_pod(&env, &team_b, &uid).await;
    op_b.stop().await;
    let client = env.client.clone();
    env.finish(op_a).await;
    team_b.delete_and_wait(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn two_objects_racing_for_one_volume_end_with_one_holder() {
    let env = Env::start("tenancy-race").await;
    let team_b = TestNamespace::create(&env.client, "tenancy-race-b").await;
    let watched = format!("--namespaces={},{}", env.ns.name(), team_b.name());
    let op = env.operator(&[&watched]);
    // A volume made outside the operator: no marker, free for the first to claim it.
    let outside = env
        .platform
        .rest()
        .create_network_volume(&NetworkVolumeCreate {
            name: "shared-outside".into(),
            size: 10,
            data_center_id: "EU-RO-1".into(),
        })
        .await
        .unwrap();
    let apis: [Api<NetworkVolume>; 2] = [
        env.api(),
        Api::namespaced(env.client.clone(), team_b.name()),
    ];
    let claim = |api: &Api<NetworkVolume>| {
        let mut nv = volume(
            "claim",
            10,
            json!({"name": "shared-outside", "deletionPolicy": "Delete"}),
        );
        nv.annotations_mut()
            .insert(EXTERNAL_ID.into(), outside.id.clone());
        let api = api.clone();
        async move { api.create(&PostParams::default(), &nv).await.unwrap() }
    };
    tokio::join!(claim(&apis[0]), claim(&apis[1]));

    let settled =
        |nv: &NetworkVolume| common::operator::is_ready(nv) || stalled_now(nv, REFUSED).is_some();
    let a = wait_in(&apis[0], "claim", "Ready or refused", settled).await;
    let b = wait_in(&apis[1], "claim", "Ready or refused", settled).await;
    let ready: Vec<_> = [&a, &b]
        .into_iter()
        .filter(|nv| common::operator::is_ready(nv))
        .collect();
    assert_eq!(ready.len(), 1, "exactly one holder: {a:#?} {b:#?}");
    let (winner, loser, loser_api) = if common::operator::is_ready(&a) {
        (&a, &b, &apis[1])
    } else {
        (&b, &a, &apis[0])
    };
    assert_eq!(status_id(winner).as_deref(), Some(outside.id.as_str()));
    assert_eq!(status_id(loser), None);
    let holder = format!("{}/claim", winner.namespace().unwrap());
    let message = stalled_now(loser, REFUSED).unwrap();
    assert!(message.contains(&holder), "{message}");
    // It stays that way: the loser's next pass still finds the winner's record. Stalled,
    // it is passed over again only when it changes: the touch is what brings that pass.
    op.pass_over(loser_api, "claim").await;
    let still = loser_api.get("claim").await.unwrap();
    assert!(stalled_now(&still, REFUSED).is_some(), "{still:#?}");
    let winner_api = if winner.namespace() == a.namespace() {
        &apis[0]
    } else {
        &apis[1]
    };
    let held = winner_api.get("claim").await.unwrap();
    assert!(common::operator::is_ready(&held), "{held:#?}");

    // The loser's delete (deletionPolicy Delete) leaves the volume to the winner.
    let before = env.calls().await;
    loser_api
        .delete("claim", &DeleteParams::default())
        .await
        .unwrap();
    assert!(common::wait_gone(loser_api, "claim", TIMEOUT).await);
    let written = writes(&before, &env.calls().await);
    assert!(written.is_empty(), "the loser's delete wrote: {written:?}");
    assert!(env.remote_volume(&outside.id).await.is_ok());
    // The holder's delete does delete it.
    winner_api
        .delete("claim", &DeleteParams::default())
        .await
        .unwrap();
    assert!(common::wait_gone(winner_api, "claim", TIMEOUT).await);
    assert!(env.remote_volume(&outside.id).await.is_err());

    let client = env.client.clone();
    env.finish(op).await;
    team_b.delete_and_wait(&client).await;
}
