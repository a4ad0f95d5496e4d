//! Cluster end to end: a real kube-apiserver, the emulator's Instant Clusters over real
//! HTTP, the operator in-process. Create to Ready with the ConfigMap, rename, replace on a
//! shape change, delete with every member, placement over GPU types and data centers, the
//! price cap, the seed backend, and what admission refuses. Crashes, Budgets, adoption and
//! orphans: `e2e_cluster_faults.rs`. Run through `scripts/test.sh`.

mod common;

use std::time::Duration;

use gpucloud_crd::Cluster;
use gpucloud_crd::cluster::{ClusterMemberStatus, ClusterPhase};
use gpucloud_engine::marker::{INSTALL_TAG_ENV, TAG_ENV};
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use common::calls::calls_since;
use common::clusters::{
    A40_PRICE, CREATE, DELETE, IMAGE, RENAME, RTX4090_PRICE, address, assert_config_map_follows,
    cluster, cond, id_of, is_ready, is_running, is_stalled_with, member_pods, members, message,
    phase, remote_cluster, remote_clusters,
};
use common::operator::Env;
use common::pods::{A40, RTX4090, config, patch_spec};

const TIMEOUT: Duration = Duration::from_secs(90);
const SECRET_VALUE: &str = "hunter2-cluster-secret";
const NO_INSTANCES: &str = "no longer any instances available";

/// The `PlacementRefused` Events about the Cluster `name`: their notes, and how many
/// refusals they stand for. Events of one reason about one object within minutes fold into
/// the first one's series (as kube's Recorder does), so a refusal after the first shows as
/// a count, not a note.
async fn placement_refused(env: &Env, name: &str) -> (Vec<String>, i32) {
    let refused: Vec<_> = env
        .events_about("Cluster", name)
        .await
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("PlacementRefused"))
        .collect();
    let total = refused
        .iter()
        .map(|e| e.series.as_ref().map_or(1, |s| s.count))
        .sum();
    (refused.into_iter().filter_map(|e| e.note).collect(), total)
}

/// Waits a little for the `PlacementRefused` Events of a pass where nothing fitted
/// (published beside the status), and says what is missing: at least `at_least` refusals,
/// the first note naming a GPU type of `types` and carrying `why`.
async fn nothing_fits_events(
    env: &Env,
    name: &str,
    types: &[&str],
    why: &str,
    at_least: i32,
) -> Option<String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let (notes, total) = placement_refused(env, name).await;
        let named = notes
            .iter()
            .any(|n| types.iter().any(|t| n.starts_with(&format!("{t} in "))) && n.contains(why));
        if named && total >= at_least {
            return None;
        }
        if tokio::time::Instant::now() >= deadline {
            return Some(format!(
                "want PlacementRefused Events for {at_least} refusals ({why}), got {total}: {notes:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// What the operator promises of a Cluster that nothing fits, checked against `c` when it
/// says `reason` (Ready False): Stalled True with the same reason, and a refusal of each
/// of `refused` (GPU types) in `status.refusals`. What does not hold, so that a test can
/// assert it after checking what follows (the retry).
fn nothing_fits_problems(c: &Cluster, reason: &str, refused: &[&str]) -> Vec<String> {
    let mut problems = Vec::new();
    let stalled = cond(c, "Stalled");
    if stalled != Some(("True".into(), reason.into())) {
        problems.push(format!("Stalled is {stalled:?}, not True with {reason}"));
    }
    let refusals = c
        .status
        .as_ref()
        .map(|s| s.refusals.clone())
        .unwrap_or_default();
    for gpu in refused {
        if !refusals.iter().any(|r| r.candidate.starts_with(gpu)) {
            problems.push(format!("{gpu} not in status.refusals: {refusals:?}"));
        }
    }
    problems
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn v2_only_create_ready_with_the_config_map_then_rename_and_delete_every_member() {
    common::backend::require("v2");
    let env = Env::start_with("cluster-life", config()).await;
    common::templates::put_secret(&env, "hf", "Opaque", "token", SECRET_VALUE).await;
    let op = env.operator(&[]);
    let api: Api<Cluster> = env.api();
    env.create(&cluster(
        "train",
        json!({"env": [
            {"name": "MODE", "value": "fast"},
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}
        ]}),
    ))
    .await;

    // Create → every node running, and status says what the platform says.
    let ready = env.wait_for("train", TIMEOUT, "Running", is_running).await;
    let status = ready.status.clone().unwrap();
    let id = id_of(&ready);
    let uid = ready.uid().unwrap();
    let remote = remote_cluster(&env, &id).await.expect("the cluster exists");
    // Namespace, name, the UID's first 8 hex digits, and the install's tag (from the UID of
    // the Lease the install holds): another cluster's install on the same key leaves it be.
    let tag = env.install_tag().await;
    assert_eq!(
        remote.name,
        format!(
            "{}-train-{}-i{}",
            env.ns.name(),
            &uid.replace('-', "")[..8],
            tag.as_str()
        )
    );
    assert_eq!(status.remote_name.as_deref(), Some(remote.name.as_str()));
    assert_eq!(remote.cluster_type, "TRAINING");
    assert_eq!(remote.gpu_type_id, RTX4090);
    assert_eq!((remote.gpu_count_per_pod, remote.pod_count), (2, 2));
    assert_eq!(status.gpu_type_id.as_deref(), Some(RTX4090));
    assert!(remote.data_center_id.is_some());
    assert_eq!(status.data_center_id, remote.data_center_id);
    assert_eq!(status.pod_count, Some(2));
    assert_eq!(status.nodes.as_deref(), Some("2/2"));
    assert_eq!(status.ready_nodes, Some(2));
    assert!(remote.cidr.is_some());
    assert_eq!(status.cidr, remote.cidr);
    assert_eq!(status.ssh_endpoint, remote.ssh_endpoint);
    assert!(status.refusals.is_empty(), "{:?}", status.refusals);

    // The members, by rank, as GET /v2/clusters/{id}/pods reports them.
    let nodes = members(&env, &id).await;
    let want: Vec<ClusterMemberStatus> = nodes
        .iter()
        .enumerate()
        .map(|(rank, p)| ClusterMemberStatus {
            id: p.id.clone(),
            rank: Some(i32::try_from(rank).unwrap()),
            role: if rank == 0 { "primary" } else { "worker" }.into(),
            address: Some(address(p)),
            status: "RUNNING".into(),
        })
        .collect();
    assert_eq!(status.members, want);
    let cost: f64 = nodes.iter().map(|p| p.cost).sum();
    assert!((cost - 2.0 * 2.0 * RTX4090_PRICE).abs() < 1e-6, "{cost}");
    let shown = status.cost_per_hour.expect("status.costPerHour");
    assert!((shown - cost).abs() < 1e-9, "{shown} is not {cost}");

    // Every member runs the image with the env, the Secret's value, and the marker.
    for p in &nodes {
        assert_eq!(p.container.image, IMAGE);
        let env_of = |k: &str| p.container.env.get(k).map(String::as_str);
        assert_eq!(env_of("MODE"), Some("fast"), "{}", p.id);
        assert_eq!(env_of("HF_TOKEN"), Some(SECRET_VALUE), "{}", p.id);
        assert_eq!(env_of(TAG_ENV), Some(uid.as_str()), "{}", p.id);
        assert_eq!(env_of(INSTALL_TAG_ENV), Some(tag.as_str()), "{}", p.id);
    }
    // The Secret's value reaches the platform and nowhere else.
    let shown = serde_json::to_string(&api.get("train").await.unwrap()).unwrap();
    assert!(!shown.contains(SECRET_VALUE));
    let all_events = Api::<Event>::namespaced(env.client.clone(), env.ns.name());
    let all = serde_json::to_string(&all_events.list(&ListParams::default()).await.unwrap());
    assert!(!all.unwrap().contains(SECRET_VALUE));

    let data = assert_config_map_follows(&env, &ready).await;
    assert!(
        !serde_json::to_string(&data).unwrap().contains(SECRET_VALUE),
        "{data:?}"
    );

    // Rename: the same cluster and members, under the new name; nothing created or deleted.
    let before = env.calls().await;
    patch_spec(&api, "train", json!({"name": "llm-pretrain"})).await;
    let renamed = env
        .wait_for::<Cluster, _>("train", TIMEOUT, "renamed", |c| {
            is_ready(c)
                && c.status.as_ref().and_then(|s| s.remote_name.as_deref()) == Some("llm-pretrain")
        })
        .await;
    assert_eq!(id_of(&renamed), id);
    let all = remote_clusters(&env).await;
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(
        (all[0].id.as_str(), all[0].name.as_str()),
        (id.as_str(), "llm-pretrain")
    );
    let ids =
        |ps: &[gpucloud_platform::v2::Pod]| ps.iter().map(|p| p.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&members(&env, &id).await), ids(&nodes));
    let calls = calls_since(&before, &env.calls().await);
    assert!(calls.get(RENAME).is_some_and(|n| *n >= 1), "{calls:?}");
    assert_eq!(
        (calls.get(CREATE), calls.get(DELETE)),
        (None, None),
        "{calls:?}"
    );

    // Delete: the cluster goes, and every member pod with it.
    api.delete("train", &DeleteParams::default()).await.unwrap();
    assert!(common::wait_gone(&api, "train", TIMEOUT).await);
    assert!(env.calls().await.get(DELETE).is_some_and(|n| *n >= 1));
    assert!(remote_clusters(&env).await.is_empty());
    let left: Vec<String> = ids(&member_pods(&env).await);
    assert!(
        ids(&nodes).iter().all(|m| !left.contains(m)),
        "members left on the platform: {left:?}"
    );
    // The ConfigMap goes with its owner (the garbage collector follows the ownerReference).
    let config_maps: Api<ConfigMap> = env.api();
    assert!(common::wait_gone(&config_maps, "train-cluster", TIMEOUT).await);
    env.finish(op).await;
}

/// Slurm and Ray clusters: the platform gives each node its role (the controller or head
/// on rank 0), and status reports the platform's word rather than primary/worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn v2_only_slurm_and_ray_clusters_report_the_roles_the_platform_gives() {
    common::backend::require("v2");
    let env = Env::start_with("cluster-roles", config()).await;
    let op = env.operator(&[]);
    let kinds = [
        ("slurm", "SLURM", "SLURM_CONTROLLER", "SLURM_COMPUTE"),
        ("ray", "RAY", "RAY_HEAD", "RAY_WORKER"),
    ];
    for (name, kind, _, _) in kinds {
        env.create(&cluster(name, json!({"type": kind}))).await;
    }
    for (name, kind, head, worker) in kinds {
        let c = env.wait_for(name, TIMEOUT, "Running", is_running).await;
        let remote = remote_cluster(&env, &id_of(&c)).await.expect("the cluster");
        assert_eq!(remote.cluster_type, kind);
        let roles: Vec<(Option<i32>, &str)> = c
            .status
            .as_ref()
            .unwrap()
            .members
            .iter()
            .map(|m| (m.rank, m.role.as_str()))
            .collect();
        assert_eq!(roles, [(Some(0), head), (Some(1), worker)], "{name}");
        // The head or controller is where programs meet: MASTER_ADDR.
        assert_config_map_follows(&env, &c).await;
    }
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn v2_only_a_shape_change_replaces_the_cluster_with_recreate_and_is_refused_with_never() {
    common::backend::require("v2");
    let env = Env::start_with("cluster-shape", config()).await;
    let op = env.operator(&[]);
    let api: Api<Cluster> = env.api();
    env.create(&cluster("grow", json!({"updateStrategy": "Recreate"})))
        .await;
    env.create(&cluster("pinned", json!({"updateStrategy": "Never"})))
        .await;
    let grow = env.wait_for("grow", TIMEOUT, "Running", is_running).await;
    let pinned = env.wait_for("pinned", TIMEOUT, "Running", is_running).await;
    let (first, pinned_id) = (id_of(&grow), id_of(&pinned));
    let before = assert_config_map_follows(&env, &grow).await;
    assert_eq!(before["NNODES"], "2");

    // Recreate: a third node means a new cluster; the old one is deleted, and the
    // ConfigMap follows the new one.
    patch_spec(&api, "grow", json!({"nodeCount": 3})).await;
    let grown = env
        .wait_for::<Cluster, _>("grow", TIMEOUT, "replaced", |c| {
            is_running(c) && c.status.as_ref().and_then(|s| s.common.id.as_deref()) != Some(&first)
        })
        .await;
    let second = id_of(&grown);
    assert!(
        remote_cluster(&env, &first).await.is_none(),
        "the old cluster is left"
    );
    let grow_name = grown.status.as_ref().unwrap().remote_name.clone().unwrap();
    let named: Vec<_> = remote_clusters(&env)
        .await
        .into_iter()
        .filter(|c| c.name == grow_name)
        .collect();
    assert_eq!(
        named.len(),
        1,
        "exactly one cluster for the object: {named:#?}"
    );
    assert_eq!(
        (named[0].id.as_str(), named[0].pod_count),
        (second.as_str(), 3)
    );
    let status = grown.status.clone().unwrap();
    assert_eq!(
        (status.pod_count, status.nodes.as_deref()),
        (Some(3), Some("3/3"))
    );
    assert_eq!(status.members.len(), 3);
    let after = assert_config_map_follows(&env, &grown).await;
    assert_eq!(after["CLUSTER_ID"], second);
    assert_eq!(after["NNODES"], "3");
    assert_eq!(after["WORLD_SIZE"], "6");
    assert_eq!(after["hostfile"].lines().count(), 3);

    // Never: reported, nothing touched on the platform.
    let calls_before = env.calls().await;
    patch_spec(&api, "pinned", json!({"nodeCount": 3})).await;
    let blocked = env
        .wait_for::<Cluster, _>("pinned", TIMEOUT, "ImmutableFieldChanged", |c| {
            cond(c, "Synced") == Some(("False".into(), "ImmutableFieldChanged".into()))
        })
        .await;
    assert_eq!(id_of(&blocked), pinned_id);
    // A few more passes over both Clusters change nothing either.
    op.wait_more_passes("Cluster", 2 * 2).await;
    let calls = calls_since(&calls_before, &env.calls().await);
    assert_eq!(
        (calls.get(CREATE), calls.get(DELETE)),
        (None, None),
        "{calls:?}"
    );
    let still = remote_cluster(&env, &pinned_id).await.expect("still there");
    assert_eq!(still.pod_count, 2);
    assert_eq!(remote_clusters(&env).await.len(), 2);
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn v2_only_no_whole_machines_of_the_first_type_falls_back_then_waits_for_capacity() {
    common::backend::require("v2");
    let env = Env::start_with("cluster-place", config()).await;
    let admin = env.emulator.admin();
    // The 4090s: one free machine of 8 GPUs in each of their two data centers. Sixteen GPUs
    // are free, but two nodes need two machines in one data center: the catalog shows
    // stock in both, and the platform refuses the create in each.
    const PLACES: [&str; 2] = ["EU-RO-1", "US-TX-3"];
    for dc in PLACES {
        admin.set_machines(RTX4090, dc, 1, 8).await.unwrap();
    }
    admin.clear_calls().await.unwrap();
    let op = env.operator(&[]);
    env.create(&cluster("fallback", json!({}))).await;
    let ready = env
        .wait_for("fallback", TIMEOUT, "Running", is_running)
        .await;
    let status = ready.status.clone().unwrap();
    assert_eq!(status.gpu_type_id.as_deref(), Some(A40));
    // The emulator's A40s of the secure cloud are all in US-TX-3.
    assert_eq!(status.data_center_id.as_deref(), Some("US-TX-3"));
    for dc in PLACES {
        let refused = format!("{RTX4090} in {dc}");
        let refusal = status
            .refusals
            .iter()
            .find(|r| r.candidate == refused)
            .unwrap_or_else(|| panic!("no refusal of {refused}: {:?}", status.refusals));
        assert!(refusal.reason.contains(NO_INSTANCES), "{refusal:?}");
    }
    // One Event per refusal: the first one's note, the others in its series.
    let (notes, total) = placement_refused(&env, "fallback").await;
    assert_eq!(total as usize, status.refusals.len(), "{notes:?}");
    let first = status
        .refusals
        .iter()
        .map(|r| format!("{}: {}", r.candidate, r.reason))
        .collect::<Vec<_>>();
    assert!(
        notes.iter().any(|n| first.contains(n)),
        "the Event names no refusal of status: {notes:?} / {first:?}"
    );
    let remote = remote_clusters(&env).await;
    assert_eq!(remote.len(), 1, "{remote:#?}");
    assert_eq!(
        (remote[0].id.clone(), remote[0].gpu_type_id.as_str()),
        (id_of(&ready), A40)
    );
    // Every refusal with the platform's capacity answer is a create it refused, and then
    // the one it made; nothing else was sent.
    let answered = status
        .refusals
        .iter()
        .filter(|r| r.reason.contains(NO_INSTANCES))
        .count();
    assert_eq!(
        admin.call_count(CREATE).await.unwrap(),
        answered as u64 + 1,
        "{:?}",
        status.refusals
    );
    assert_config_map_follows(&env, &ready).await;

    // Only 4090s, and never two machines of them in one place: nothing fits, said so,
    // nothing made.
    env.create(&cluster(
        "waiting",
        json!({"gpu": {"typeIds": [RTX4090], "count": 2}, "nodeCount": 2}),
    ))
    .await;
    let waiting = env
        .wait_for::<Cluster, _>("waiting", TIMEOUT, "NoCapacity", |c| {
            cond(c, "Ready") == Some(("False".into(), "NoCapacity".into()))
        })
        .await;
    // The rest of what nothing fitting means is asserted last, once the retry is checked.
    let mut problems = nothing_fits_problems(&waiting, "NoCapacity", &[RTX4090]);
    // Both data centers refused: two refusals at least (more once it retries).
    problems.extend(nothing_fits_events(&env, "waiting", &[RTX4090], NO_INSTANCES, 2).await);
    assert!(
        message(&waiting, "Ready").contains(RTX4090),
        "{}",
        message(&waiting, "Ready")
    );
    assert_eq!(remote_clusters(&env).await.len(), 1);
    // A second 4090 machine frees up in EU-RO-1: it is retried, by itself.
    admin.set_machines(RTX4090, "EU-RO-1", 2, 8).await.unwrap();
    let converged = env
        .wait_for("waiting", TIMEOUT, "Running", is_running)
        .await;
    let s = converged.status.unwrap();
    assert_eq!(s.gpu_type_id.as_deref(), Some(RTX4090));
    assert_eq!(s.data_center_id.as_deref(), Some("EU-RO-1"));
    assert_eq!(remote_clusters(&env).await.len(), 2);
    assert!(problems.is_empty(), "when nothing fit: {problems:#?}");
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn v2_only_a_price_cap_for_the_whole_cluster_refuses_without_a_call() {
    common::backend::require("v2");
    let env = Env::start_with("cluster-price", config()).await;
    let admin = env.emulator.admin();
    let op = env.operator(&[]);
    let api: Api<Cluster> = env.api();
    // Two nodes of two GPUs: 2.76 per hour on 4090s, 1.60 on A40s; both above 1.50.
    let four = 2.0 * 2.0;
    assert!(four * A40_PRICE > 1.5 && four * RTX4090_PRICE > four * A40_PRICE);
    env.create(&cluster("capped", json!({"maxPricePerHour": 1.5})))
        .await;
    let capped = env
        .wait_for::<Cluster, _>("capped", TIMEOUT, "PriceAboveCap", |c| {
            cond(c, "Ready") == Some(("False".into(), "PriceAboveCap".into()))
        })
        .await;
    // The rest of what nothing fitting means is asserted last, once the raise is checked.
    let mut problems = nothing_fits_problems(&capped, "PriceAboveCap", &[RTX4090, A40]);
    // Both GPU types refused: two refusals at least.
    problems.extend(
        nothing_fits_events(&env, "capped", &[RTX4090, A40], "above maxPricePerHour", 2).await,
    );
    assert_eq!(phase(&capped), Some(ClusterPhase::Pending));
    let why = message(&capped, "Ready");
    for gpu in [RTX4090, A40] {
        assert!(why.contains(gpu), "{gpu} not named: {why}");
    }
    assert_eq!(admin.call_count(CREATE).await.unwrap(), 0);
    assert!(remote_clusters(&env).await.is_empty());

    // Room for the A40s (1.60) but not the 4090s (2.76): the 4090s are still refused
    // without a call, the A40 cluster is the one create.
    patch_spec(&api, "capped", json!({"maxPricePerHour": 2.0})).await;
    let ready = env.wait_for("capped", TIMEOUT, "Running", is_running).await;
    let status = ready.status.unwrap();
    assert_eq!(status.gpu_type_id.as_deref(), Some(A40));
    assert!(
        status.cost_per_hour.unwrap() <= 2.0,
        "{:?}",
        status.cost_per_hour
    );
    assert!(
        status
            .refusals
            .iter()
            .any(|r| r.candidate.starts_with(RTX4090)),
        "{:?}",
        status.refusals
    );
    assert_eq!(admin.call_count(CREATE).await.unwrap(), 1);
    assert!(problems.is_empty(), "when nothing fit: {problems:#?}");
    env.finish(op).await;
}

/// The seed API has no Instant Clusters: the Cluster says so, and the operator makes no
/// call for it. (On the REST v2 lane the other tests run instead.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn seed_only_a_cluster_is_unsupported_and_calls_nothing() {
    common::backend::require("seed");
    let env = Env::start_with("cluster-seed", config()).await;
    let op = env.operator(&[]);
    let api: Api<Cluster> = env.api();
    env.create(&cluster("unsupported", json!({}))).await;
    let stalled = env
        .wait_for::<Cluster, _>("unsupported", TIMEOUT, "UnsupportedByBackend", |c| {
            is_stalled_with(c, "UnsupportedByBackend")
        })
        .await;
    assert!(stalled.status.as_ref().unwrap().common.id.is_none());
    // A later pass, still no call about clusters of any kind. Stalled, it is passed over
    // again only when it changes: the touch is what brings that pass.
    op.pass_over(&api, "unsupported").await;
    let calls = env.calls().await;
    assert!(
        calls.keys().all(|route| !route.contains("clusters")),
        "{calls:?}"
    );
    // Nothing was made, so nothing holds the object when it is deleted.
    api.delete("unsupported", &DeleteParams::default())
        .await
        .unwrap();
    assert!(common::wait_gone(&api, "unsupported", TIMEOUT).await);
    assert!(remote_clusters(&env).await.is_empty());
    env.finish(op).await;
}

/// What the schema and its CEL rules refuse never reaches the operator: the apiserver
/// answers 422 naming the field. Needs no operator, so it runs the same on both lanes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn bad_cluster_shapes_are_refused_at_admission_naming_the_field() {
    use kube::api::{ApiResource, DynamicObject};
    let client = common::kube_client().await;
    common::operator::install_crds(&client).await;
    let ns = common::TestNamespace::create(&client, "admission-cluster").await;
    let resource = ApiResource::erase::<Cluster>(&());
    let clusters: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns.name(), &resource);
    let object = |name: &str, spec: serde_json::Value| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "gpucloud.io/v1beta1", "kind": "Cluster",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap()
    };
    let good = || {
        json!({"type": "TRAINING", "image": IMAGE,
               "gpu": {"typeIds": [RTX4090], "count": 2}, "nodeCount": 2})
    };
    clusters
        .create(&PostParams::default(), &object("fine", good()))
        .await
        .expect("a well-formed Cluster is admitted");
    let with = |pointer: &str, value: serde_json::Value| {
        let mut spec = good();
        *spec.pointer_mut(pointer).unwrap() = value;
        spec
    };
    let mut no_image = good();
    no_image.as_object_mut().unwrap().remove("image");
    let mut private = good();
    private["registryCredentialRef"] = json!({"name": "ghcr"});
    for (name, spec, field) in [
        ("one-node", with("/nodeCount", json!(1)), "spec.nodeCount"),
        ("too-many", with("/nodeCount", json!(251)), "spec.nodeCount"),
        (
            "no-types",
            with("/gpu/typeIds", json!([])),
            "spec.gpu.typeIds",
        ),
        ("no-gpus", with("/gpu/count", json!(0)), "spec.gpu.count"),
        ("kind", with("/type", json!("BATCH")), "spec.type"),
        ("private", private, "spec.registryCredentialRef"),
        ("no-image", no_image, "spec.image"),
    ] {
        common::assert_refused(&clusters, name, &object(name, spec), field).await;
        assert!(
            clusters.get_opt(name).await.unwrap().is_none(),
            "{name} was stored"
        );
    }
    ns.delete_and_wait(&client).await;
}
