//! Cluster end to end when things go wrong, cost too much or belong to someone else: the
//! operator process killed three times in the middle of a create, `maxRuntime` on the
//! emulator's clock, a Budget with no room, a cluster made on the platform by hand and
//! observed, and a cluster whose object went while the operator was down, found by the
//! orphan sweep. A real kube-apiserver, the emulator over real HTTP,
//! the operator in-process or as a child process of the built binary (where it must really
//! be killed). Run through `scripts/test.sh`.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use gpucloud_crd::budget::Budget;
use gpucloud_crd::cluster::ClusterPhase;
use gpucloud_crd::{BudgetSpec, Cluster};
use gpucloud_engine::marker::{TAG_ENV, names_object};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::DeleteParams;
use kube::{Api, ResourceExt};
use serde_json::json;

use common::calls::calls_since;
use common::clusters::{
    CREATE, DELETE, RENAME, RTX4090_PRICE, cluster, cond, hand_made, id_of, is_running,
    member_pods, members, message, phase, remote_cluster, remote_clusters,
};
use common::merged;
use common::operator::Env;
use common::pods::{RTX4090, config, patch_spec};
use common::sweep::{delete_behind_its_back, orphans};
use common::volumes::{EXTERNAL_ID, PENDING};

const TIMEOUT: Duration = Duration::from_secs(90);
/// The platform time limit the crash test gives the operator: how long it waits before it
/// concludes that a create a killed process may have sent made nothing.
const PLATFORM_TIMEOUT: &str = "--platform-timeout=5s";
/// Two nodes of two 4090s: what the Budget and orphan tests' clusters cost per hour.
const PRICE: f64 = 2.0 * 2.0 * RTX4090_PRICE;

/// A Cluster that can only go on 4090s, so that it costs [`PRICE`].
fn priced(name: &str, extra: serde_json::Value) -> Cluster {
    let spec = merged(
        json!({"gpu": {"typeIds": [RTX4090], "count": 2}, "nodeCount": 2}),
        extra,
    );
    cluster(name, spec)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn v2_only_killed_three_times_during_the_create_leaves_exactly_one_cluster() {
    common::backend::require("v2");
    let env = Env::start_with("cluster-kill", config()).await;
    let admin = env.emulator.admin();
    let api: Api<Cluster> = env.api();
    let created = env.create(&priced("inflight", json!({}))).await;
    let uid = created.uid().unwrap();
    let ours = || async {
        remote_clusters(&env)
            .await
            .into_iter()
            .filter(|c| names_object(&created, &c.name))
            .collect::<Vec<_>>()
    };
    // Kills 1 and 2: the create is held before the platform serves it (and then refused,
    // so that it never lands whatever the server does once the caller is gone). Kill 3: the
    // create is served at once and its answer held: the cluster exists, and the operator
    // dies without hearing of it. From the second process on, each waits out the platform
    // time limit before it concludes that its predecessor's create made nothing.
    for round in 1..=3 {
        if round < 3 {
            admin.add_latency(CREATE, 3_000).await.unwrap();
            admin.set_error_rate(CREATE, 1.0, 500).await.unwrap();
        } else {
            admin.delay_answers(CREATE, 3_000).await.unwrap();
        }
        let sent_before = admin.call_count(CREATE).await.unwrap();
        let operator = env.operator_process(&[PLATFORM_TIMEOUT]);
        let sent = common::wait_until(TIMEOUT, || async {
            admin.call_count(CREATE).await.unwrap() > sent_before
        })
        .await;
        assert!(sent, "round {round}: the create never reached the platform");
        if round == 3 {
            let landed = common::wait_until(TIMEOUT, || async { !ours().await.is_empty() }).await;
            assert!(landed, "the held create never took effect");
        }
        // SIGKILL with the create in flight: no answer read, the marker left behind.
        operator.kill();
        admin.clear_faults().await.unwrap();
        let left = api.get("inflight").await.unwrap();
        assert!(left.annotations().contains_key(PENDING), "round {round}");
        assert!(
            left.status
                .as_ref()
                .and_then(|s| s.common.id.as_ref())
                .is_none(),
            "round {round}: {:?}",
            left.status
        );
        let made = ours().await;
        assert_eq!(
            made.len(),
            usize::from(round == 3),
            "round {round}: {made:#?}"
        );
    }

    // The fourth process finds the cluster the third one made, by its name, and adopts it.
    let creates = admin.call_count(CREATE).await.unwrap();
    let last = env.operator_process(&[PLATFORM_TIMEOUT]);
    let ready = env
        .wait_for("inflight", TIMEOUT, "Running", is_running)
        .await;
    let made = ours().await;
    assert_eq!(made.len(), 1, "duplicate or leaked clusters: {made:#?}");
    assert_eq!(made[0].id, id_of(&ready));
    assert_eq!(remote_clusters(&env).await.len(), 1);
    assert_eq!(
        admin.call_count(CREATE).await.unwrap(),
        creates,
        "the landed create was repeated"
    );
    for p in members(&env, &made[0].id).await {
        assert_eq!(p.container.env.get(TAG_ENV), Some(&uid), "{}", p.id);
    }
    // The id is in status; the marker stays as the way back if status is ever lost.
    assert!(!ready.annotations().contains_key(EXTERNAL_ID));
    assert!(ready.annotations().contains_key(PENDING));
    let adopted = env
        .events_about("Cluster", "inflight")
        .await
        .iter()
        .any(|e| e.reason.as_deref() == Some("AdoptedAfterInterruptedCreate"));
    assert!(adopted, "no AdoptedAfterInterruptedCreate Event");
    // Settled: two more passes (it is polled every 2 s) make nothing more.
    common::passes::wait_more_process_passes(&last, "Cluster", 2).await;
    assert_eq!(admin.call_count(CREATE).await.unwrap(), creates);
    assert_eq!(remote_clusters(&env).await.len(), 1);
    env.finish_process(last).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn v2_only_max_runtime_deletes_the_cluster_and_holds_it_until_the_spec_is_edited() {
    common::backend::require("v2");
    const MINUTE_MS: u64 = 60_000;
    let env = Env::start_with("cluster-runtime", config()).await;
    // The operator reads the emulator's clock, which the test moves on.
    let op = env.operator_on_emulator_clock(&[]);
    let api: Api<Cluster> = env.api();
    env.create(&priced("bounded", json!({"maxRuntime": "1h"})))
        .await;
    let running = env
        .wait_for("bounded", TIMEOUT, "Running", is_running)
        .await;
    let first = id_of(&running);
    let config_maps: Api<ConfigMap> = env.api();
    let written = common::wait_until(TIMEOUT, || async {
        config_maps
            .get_opt("bounded-cluster")
            .await
            .unwrap()
            .is_some()
    })
    .await;
    assert!(written, "the running cluster's ConfigMap");

    // 61 minutes after its creation on the platform: deleted, every node, and held so.
    let admin = env.emulator.admin();
    admin.advance_clock(61 * MINUTE_MS).await.unwrap();
    let held = env
        .wait_for::<Cluster, _>("bounded", TIMEOUT, "Held", |c| {
            phase(c) == Some(ClusterPhase::Held)
        })
        .await;
    let hold = held
        .status
        .as_ref()
        .and_then(|s| s.guardrails.as_ref())
        .and_then(|g| g.hold.as_ref())
        .expect("status.guardrails.hold");
    assert!(hold.message.contains("maxRuntime"), "{}", hold.message);
    assert!(remote_cluster(&env, &first).await.is_none());
    assert!(member_pods(&env).await.is_empty());
    // The deleted cluster's addresses are not left for a Job to read.
    let gone = common::wait_until(TIMEOUT, || async {
        config_maps
            .get_opt("bounded-cluster")
            .await
            .unwrap()
            .is_none()
    })
    .await;
    assert!(gone, "the ConfigMap of the deleted cluster is still there");
    // Held: more passes (and more time) create nothing.
    let creates = admin.call_count(CREATE).await.unwrap();
    admin.advance_clock(MINUTE_MS).await.unwrap();
    op.pass_over(&api, "bounded").await;
    assert_eq!(admin.call_count(CREATE).await.unwrap(), creates);
    assert!(remote_clusters(&env).await.is_empty());

    // An edit of the spec is the user's move: a new cluster.
    patch_spec(&api, "bounded", json!({"maxRuntime": "2h"})).await;
    let again = env
        .wait_for::<Cluster, _>("bounded", TIMEOUT, "Running again", |c| {
            is_running(c) && c.status.as_ref().and_then(|s| s.common.id.as_deref()) != Some(&first)
        })
        .await;
    let all = remote_clusters(&env).await;
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0].id, id_of(&again));
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn v2_only_a_budget_with_no_room_holds_the_cluster_until_it_is_raised() {
    common::backend::require("v2");
    let env = Env::start_with("cluster-budget", config()).await;
    let op = env.operator(&[]);
    let budgets: Api<Budget> = env.api();
    let spec: BudgetSpec =
        serde_json::from_value(json!({"maxCostPerHour": 2.0, "action": "Deny"})).unwrap();
    env.create(&Budget::new("team", spec)).await;
    env.wait_budget("team", TIMEOUT, "Budget status", |_| true)
        .await;

    // 2.76 per hour does not fit in 2.00: held, nothing created.
    env.create(&priced("big", json!({}))).await;
    let held = env
        .wait_for::<Cluster, _>("big", TIMEOUT, "held by the Budget", |c| {
            cond(c, "Ready") == Some(("False".into(), "BudgetExceeded".into()))
        })
        .await;
    // Waiting before creating, as for a dependency or capacity.
    assert_eq!(phase(&held), Some(ClusterPhase::Pending));
    let why = message(&held, "Ready");
    assert!(
        why.contains("Budget team") && why.contains("maxCostPerHour 2.0000"),
        "{why}"
    );
    env.wait_budget("team", TIMEOUT, "the Cluster held", |b| {
        b.status.as_ref().unwrap().held == vec!["Cluster/big".to_string()]
    })
    .await;
    // A pass over it after the Budget listed it as held creates nothing either.
    op.pass_over(&env.api::<Cluster>(), "big").await;
    let calls = env.calls().await;
    assert_eq!(calls.get(CREATE), None, "{calls:?}");
    assert!(remote_clusters(&env).await.is_empty());

    // Raised to 3.00: the cluster is created by itself, and counted at its cost.
    patch_spec(&budgets, "team", json!({"maxCostPerHour": 3.0})).await;
    let running = env.wait_for("big", TIMEOUT, "Running", is_running).await;
    let cost = running.status.unwrap().cost_per_hour.unwrap();
    assert!((cost - PRICE).abs() < 1e-6, "{cost}");
    let b = env
        .wait_budget("team", TIMEOUT, "the Cluster counted", |b| {
            let s = b.status.as_ref().unwrap();
            s.held.is_empty() && (s.cost_per_hour - PRICE).abs() < 1e-6
        })
        .await;
    let s = b.status.unwrap();
    assert!((s.headroom_per_hour - (3.0 - PRICE)).abs() < 1e-6, "{s:?}");
    assert_eq!(remote_clusters(&env).await.len(), 1);
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn v2_only_observe_only_adopts_a_cluster_made_by_hand_and_never_writes() {
    common::backend::require("v2");
    let env = Env::start_with("cluster-observe", config()).await;
    let id = hand_made(&env, "console-made", RTX4090, &[("OWNER", "research")]).await;
    let before = env.calls().await;
    let op = env.operator(&[]);
    let api: Api<Cluster> = env.api();
    // Even deletionPolicy Delete: ObserveOnly never writes to the platform.
    let mut observed = priced(
        "observed",
        json!({"managementPolicy": "ObserveOnly", "deletionPolicy": "Delete"}),
    );
    observed.metadata.annotations = Some(BTreeMap::from([(EXTERNAL_ID.into(), id.clone())]));
    env.create(&observed).await;
    let seen = env
        .wait_for("observed", TIMEOUT, "Running", is_running)
        .await;
    let status = seen.status.clone().unwrap();
    assert_eq!(status.common.id.as_deref(), Some(id.as_str()));
    assert_eq!(status.remote_name.as_deref(), Some("console-made"));
    assert_eq!(status.gpu_type_id.as_deref(), Some(RTX4090));
    assert_eq!(status.nodes.as_deref(), Some("2/2"));
    let nodes = members(&env, &id).await;
    let ids: Vec<&str> = nodes.iter().map(|p| p.id.as_str()).collect();
    let shown: Vec<&str> = status.members.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(shown, ids);
    assert!((status.cost_per_hour.unwrap() - PRICE).abs() < 1e-6);

    api.delete("observed", &DeleteParams::default())
        .await
        .unwrap();
    assert!(common::wait_gone(&api, "observed", TIMEOUT).await);
    let calls = calls_since(&before, &env.calls().await);
    for write in [CREATE, RENAME, DELETE] {
        assert_eq!(calls.get(write), None, "{write}: {calls:?}");
    }
    let kept = remote_cluster(&env, &id).await.expect("the cluster stays");
    assert_eq!(kept.name, "console-made");
    assert_eq!(members(&env, &id).await.len(), 2);
    env.platform.clusters().delete(&id).await.unwrap();
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn v2_only_a_cluster_whose_object_went_is_an_orphan_a_released_one_is_not() {
    common::backend::require("v2");
    let env = Env::start_with("cluster-orphans", config()).await;
    let api: Api<Cluster> = env.api();
    let first = env.operator_process(&[]);

    // Released on purpose: deletionPolicy Orphan.
    env.create(&priced("kept", json!({"deletionPolicy": "Orphan"})))
        .await;
    let kept_id = id_of(&env.wait_for("kept", TIMEOUT, "Running", is_running).await);
    api.delete("kept", &DeleteParams::default()).await.unwrap();
    assert!(
        common::wait_gone(&api, "kept", TIMEOUT).await,
        "the kept Cluster was not released"
    );

    // Created, then the operator dies and the object goes without it.
    env.create(&priced("lost", json!({}))).await;
    let lost = env.wait_for("lost", TIMEOUT, "Running", is_running).await;
    let lost_id = id_of(&lost);
    let lost_members: Vec<String> = members(&env, &lost_id)
        .await
        .into_iter()
        .map(|p| p.id)
        .collect();
    first.kill();
    delete_behind_its_back::<Cluster>(&env, "lost").await;

    let (listed, ok) = orphans(&env, &["--kind=cluster"]);
    assert!(ok, "{listed}");
    assert!(listed.contains(&lost_id), "{listed}");
    assert!(
        !listed.contains(&kept_id),
        "a released cluster is no orphan: {listed}"
    );
    assert!(
        listed.contains(&format!("1 orphan(s), {PRICE:.3} per hour")),
        "{listed}"
    );

    let (deleted, ok) = orphans(&env, &["--kind=cluster", "--delete", "--yes"]);
    assert!(ok && deleted.contains(&lost_id), "{deleted}");
    assert!(remote_cluster(&env, &lost_id).await.is_none());
    let left: Vec<String> = member_pods(&env).await.into_iter().map(|p| p.id).collect();
    assert!(
        lost_members.iter().all(|m| !left.contains(m)),
        "the orphan's members are still on the platform: {left:?}"
    );
    assert!(
        remote_cluster(&env, &kept_id).await.is_some(),
        "the released cluster must stay"
    );
    let (after, ok) = orphans(&env, &["--kind=cluster"]);
    assert!(ok && after.contains("0 orphan(s)"), "{after}");

    env.platform.clusters().delete(&kept_id).await.unwrap();
    let operator = env.operator(&[]);
    env.finish(operator).await;
}
