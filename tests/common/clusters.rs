//! What the Cluster suites share: the shape they ask for, a Cluster manifest, the
//! platform's side of a cluster (the cluster, its member pods), and the ConfigMap checked
//! key by key against the members the platform reports.

use std::time::Duration;

use gpucloud_crd::cluster::{ClusterPhase, ClusterSpec};
use gpucloud_crd::{Cluster, ManagedKind};
use gpucloud_platform::domain::{self, ClusterRequest, NodeContainer};
use gpucloud_platform::v2;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{Api, ResourceExt};
use serde_json::json;

use super::merged;
use super::operator::{Env, condition, ready_now};
use super::pods::{A40, RTX4090};

/// The emulator's route names of the calls the operator makes for clusters.
pub const CREATE: &str = "POST /v2/clusters";
pub const RENAME: &str = "PATCH /v2/clusters/{id}";
pub const DELETE: &str = "DELETE /v2/clusters/{id}";
/// The emulator's secure-cloud price of one GPU per hour, which clusters are billed at.
pub const RTX4090_PRICE: f64 = 0.69;
pub const A40_PRICE: f64 = 0.40;
pub const IMAGE: &str = "ghcr.io/acme/train:1";

/// A TRAINING Cluster of two nodes of two GPUs, an RTX 4090 or else an A40, with `extra`
/// merged into its spec.
pub fn cluster(name: &str, extra: serde_json::Value) -> Cluster {
    let spec = merged(
        json!({
            "type": "TRAINING",
            "image": IMAGE,
            "ports": ["22/tcp"],
            "gpu": {"typeIds": [RTX4090, A40], "count": 2}, "nodeCount": 2,
        }),
        extra,
    );
    let spec: ClusterSpec = serde_json::from_value(spec).expect("a Cluster spec");
    Cluster::new(name, spec)
}

/// Ready=True for the object's current generation.
pub fn is_ready(c: &Cluster) -> bool {
    ready_now(c)
}

/// Ready, and every node running as status says.
pub fn is_running(c: &Cluster) -> bool {
    is_ready(c) && phase(c) == Some(ClusterPhase::Running)
}

pub fn phase(c: &Cluster) -> Option<ClusterPhase> {
    c.status.as_ref().and_then(|s| s.phase)
}

pub fn id_of(c: &Cluster) -> String {
    c.status
        .as_ref()
        .and_then(|s| s.common.id.clone())
        .expect("status.id")
}

/// (status, reason) of condition `type_`, for the object's current generation only.
pub fn cond(c: &Cluster, type_: &str) -> Option<(String, String)> {
    let s = c.status.as_ref()?;
    if s.common.observed_generation != c.metadata.generation {
        return None;
    }
    condition(&s.common.conditions, type_).map(|c| (c.status.to_string(), c.reason.to_string()))
}

/// Stalled=True and Ready=False, both with `reason`, for the current generation.
pub fn is_stalled_with(c: &Cluster, reason: &str) -> bool {
    cond(c, "Stalled") == Some(("True".into(), reason.into()))
        && cond(c, "Ready") == Some(("False".into(), reason.into()))
}

/// The message of condition `type_`, if present.
pub fn message(c: &Cluster, type_: &str) -> String {
    c.current_status()
        .and_then(|s| condition(&s.common.conditions, type_))
        .map(|c| c.message.to_string())
        .unwrap_or_default()
}

/// Every cluster of the account with its members, as the operator's client reads them.
pub async fn remote_clusters(env: &Env) -> Vec<domain::Cluster> {
    env.platform.clusters().list().await.expect("list clusters")
}

/// The platform's cluster `id`, if it exists.
pub async fn remote_cluster(env: &Env, id: &str) -> Option<domain::Cluster> {
    remote_clusters(env).await.into_iter().find(|c| c.id == id)
}

/// The members of cluster `id`: `GET /v2/clusters/{id}/pods`, by rank.
pub async fn members(env: &Env, id: &str) -> Vec<v2::Pod> {
    let mut pods = env
        .platform
        .v2()
        .cluster_pods(id)
        .await
        .expect("the cluster's pods");
    pods.sort_by_key(|p| p.cluster.as_ref().and_then(|m| m.rank));
    pods
}

/// Every cluster member pod of the account: `GET /v2/pods?includeClusterPods=true`.
pub async fn member_pods(env: &Env) -> Vec<v2::Pod> {
    env.platform
        .v2()
        .all_cluster_members()
        .await
        .expect("list pods with the cluster members")
}

/// A member's address on the cluster's private network.
pub fn address(p: &v2::Pod) -> String {
    p.cluster
        .as_ref()
        .and_then(|m| m.ip.clone())
        .unwrap_or_else(|| panic!("member {} has no overlay address", p.id))
}

/// Creates a cluster on the platform directly, as someone with the console would.
pub async fn hand_made(env: &Env, name: &str, gpu: &str, env_vars: &[(&str, &str)]) -> String {
    let request = ClusterRequest {
        name: name.into(),
        cluster_type: "TRAINING".into(),
        gpu_type_id: gpu.into(),
        gpu_count_per_pod: 2,
        pod_count: 2,
        data_center_id: None,
        container: NodeContainer {
            image: IMAGE.into(),
            env: env_vars
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..NodeContainer::default()
        },
        volume_mount_path: "/workspace".into(),
        start_ssh: false,
    };
    env.platform
        .clusters()
        .create(&request)
        .await
        .expect("create a cluster on the platform")
        .id
}

/// The ConfigMap of a Ready Cluster, checked key by key against the members the platform
/// reports for the cluster that status names; its data.
pub async fn assert_config_map_follows(
    env: &Env,
    c: &Cluster,
) -> std::collections::BTreeMap<String, String> {
    let status = c.status.as_ref().expect("status");
    let id = id_of(c);
    let name = format!("{}-cluster", c.name_any());
    assert_eq!(status.config_map.as_deref(), Some(name.as_str()));
    // The operator writes the ConfigMap after the status that shows the cluster running.
    let config_maps: Api<ConfigMap> = env.api();
    let written = super::wait_until(Duration::from_secs(60), || async {
        config_maps
            .get_opt(&name)
            .await
            .expect("read the ConfigMap")
            .and_then(|cm| cm.data)
            .is_some_and(|d| d.get("CLUSTER_ID") == Some(&id))
    })
    .await;
    assert!(written, "ConfigMap {name} does not describe cluster {id}");
    let cm = config_maps
        .get(&name)
        .await
        .expect("the cluster's ConfigMap");
    let owner = cm
        .metadata
        .owner_references
        .clone()
        .unwrap_or_default()
        .into_iter()
        .find(|o| o.kind == "Cluster")
        .expect("owned by the Cluster");
    assert_eq!(
        (owner.name.as_str(), Some(owner.uid.as_str())),
        (c.name_any().as_str(), c.uid().as_deref())
    );
    let data = cm.data.unwrap_or_default();
    let nodes = members(env, &id).await;
    let pods = c.spec.node_count;
    let per_pod = c.spec.gpu.count;
    assert_eq!(nodes.len(), pods as usize, "{nodes:#?}");
    let ranks: Vec<Option<u32>> = nodes
        .iter()
        .map(|p| p.cluster.as_ref().and_then(|m| m.rank))
        .collect();
    let want_ranks: Vec<Option<u32>> = (0..pods as u32).map(Some).collect();
    assert_eq!(ranks, want_ranks, "one member per rank");
    let addresses: Vec<String> = nodes.iter().map(address).collect();
    let hostfile: Vec<String> = addresses
        .iter()
        .map(|a| format!("{a} slots={per_pod}"))
        .collect();
    let key = |k: &str| {
        data.get(k)
            .cloned()
            .unwrap_or_else(|| panic!("ConfigMap {name} has no {k}: {data:?}"))
    };
    assert_eq!(key("CLUSTER_ID"), id);
    assert_eq!(key("MASTER_ADDR"), addresses[0]);
    assert_eq!(key("NNODES"), pods.to_string());
    assert_eq!(key("NPROC_PER_NODE"), per_pod.to_string());
    assert_eq!(key("WORLD_SIZE"), (pods * per_pod).to_string());
    assert_eq!(key("NODE_ADDRS"), addresses.join(" "));
    assert_eq!(key("hostfile").lines().collect::<Vec<_>>(), hostfile);
    assert_eq!(status.primary_address.as_ref(), Some(&addresses[0]));
    data
}
