//! `Cluster`: an Instant Cluster on the platform, 2 to 250 identical GPU pods in one data
//! center on a private overlay network, for distributed training, Slurm, Ray or any
//! multi-node application.

// Each `printcolumn(...)` repeats the same keys, which clippy takes for duplicates.
#![allow(clippy::duplicated_attributes)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    CommonStatus, CredentialsSecretRef, DeletionPolicy, LocalObjectReference, ManagementPolicy,
};
use super::guardrails::{DURATION_MESSAGE, DURATION_RULE, GuardrailStatus};
use super::pod::UpdateStrategy;
use crate::container::ContainerSettings;
use crate::gpu::{Gpu, type_ids_required};

/// What the cluster runs: the platform's four cluster types.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "UPPERCASE")]
pub enum ClusterType {
    /// A general distributed-training cluster (torchrun, DeepSpeed, MPI).
    #[default]
    Training,
    /// A managed Slurm controller (rank 0) and compute nodes.
    Slurm,
    /// A managed Ray head (rank 0) and workers.
    Ray,
    /// A general multi-node application.
    Application,
}

impl ClusterType {
    /// The platform's word: `TRAINING`, `SLURM`, `RAY`, `APPLICATION`.
    pub fn as_str(self) -> &'static str {
        match self {
            ClusterType::Training => "TRAINING",
            ClusterType::Slurm => "SLURM",
            ClusterType::Ray => "RAY",
            ClusterType::Application => "APPLICATION",
        }
    }
}

/// What the Budget's `StopNewest` may do to this cluster when it is the newest over the
/// cap. A cluster cannot be stopped, only deleted, so deleting it is opt-in.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum BudgetStopPolicy {
    /// Keep the cluster running; the Budget reports that it is over and why.
    #[default]
    Keep,
    /// Delete the remote cluster; it is created again once the Budget has room.
    Delete,
}

/// An Instant Cluster on the GPU cloud.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq)]
#[kube(
    group = "gpucloud.io",
    version = "v1beta1",
    kind = "Cluster",
    namespaced,
    status = "ClusterStatus",
    shortname = "gcl",
    category = "gpucloud",
    doc = "An Instant Cluster on the GPU cloud: 2 to 250 identical GPU pods in one data center on a private network, with every node's address in a ConfigMap.",
    printcolumn(name = "TYPE", type_ = "string", json_path = ".spec.type"),
    printcolumn(name = "NODES", type_ = "string", json_path = ".status.nodes"),
    printcolumn(name = "GPU", type_ = "string", json_path = ".status.gpuTypeId"),
    printcolumn(name = "COST/HR", type_ = "number", json_path = ".status.costPerHour")
)]
#[x_kube(
    validation = Rule::new("has(self.image) || has(self.templateRef)").message("set image or templateRef: the nodes need a container image").field_path(".image"),
    validation = Rule::new("!has(self.registryCredentialRef)").message("registryCredentialRef: clusters cannot pull private images, the platform's cluster create takes no registry credential; use a public image").field_path(".registryCredentialRef"),
    validation = Rule::new("!has(self.volumeMountPath) || has(self.networkVolumeRef)").message("volumeMountPath needs networkVolumeRef").field_path(".volumeMountPath")
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// The cluster type: `TRAINING`, `SLURM`, `RAY` or `APPLICATION`. Fixed at creation.
    #[serde(rename = "type")]
    pub cluster_type: ClusterType,
    /// GPU types in priority order (the first with `nodeCount` whole machines free in one
    /// data center, within the price cap, is used) and GPUs on each node.
    #[schemars(transform = type_ids_required)]
    pub gpu: Gpu,
    /// Nodes in the cluster, 2 to 250.
    #[schemars(range(min = 2, max = 250))]
    pub node_count: i32,
    /// Data centers in priority order, such as `US-TX-3`, at most 32; any when empty. The
    /// whole cluster is always in one data center (the network volume's, when one is
    /// mounted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub data_center_ids: Vec<String>,
    /// Name of the cluster on the platform, 1 to 191 characters;
    /// `<namespace>-<name>-<uid8>` (the first eight hex digits of the object's UID) when
    /// unset. Changing it renames the cluster in place.
    #[schemars(length(min = 1, max = 191))]
    pub name: Option<String>,
    /// Container image of every node, 1 to 512 characters; the Template's with
    /// `templateRef`. Set `image` or `templateRef`.
    #[schemars(length(min = 1, max = 512))]
    pub image: Option<String>,
    /// A `Template` in this namespace whose container settings every node starts from
    /// (image, env, ports, args, disk); the fields here win. The cluster waits until it
    /// is Ready.
    pub template_ref: Option<LocalObjectReference>,
    /// Refused at admission: the platform's clusters cannot pull private images.
    pub registry_credential_ref: Option<LocalObjectReference>,
    /// Arguments, ports and environment of every node's container.
    #[serde(flatten)]
    pub container: ContainerSettings,
    /// Container disk of each node in gigabytes, 1 to 10,000; the Template's or the
    /// platform's default when unset.
    #[schemars(range(min = 1, max = 10000))]
    pub container_disk_gb: Option<i32>,
    /// A `NetworkVolume` in this namespace mounted on every node (for checkpoints and
    /// datasets); the cluster waits until it is Ready, and is placed in its data center.
    pub network_volume_ref: Option<LocalObjectReference>,
    /// Where the network volume is mounted: an absolute path of at most 255 characters;
    /// `/workspace` when unset. Needs `networkVolumeRef`.
    #[schemars(regex(pattern = r"^/.*"), length(max = 255))]
    pub volume_mount_path: Option<String>,
    /// Provision SSH on every node with the account's registered public key; false when
    /// unset.
    #[serde(default)]
    pub start_ssh: bool,
    /// Highest acceptable price of the whole cluster per hour, in US dollars (every
    /// node's GPUs together), at least 0; no cap when unset.
    #[schemars(range(min = 0.0))]
    pub max_price_per_hour: Option<f64>,
    /// Delete the cluster once it has run this long, such as `12h` (units `h`, `m`, `s`,
    /// longer than zero); no limit when unset. It stays deleted until the spec is edited.
    #[schemars(regex(pattern = r"^([0-9]+[hms])+$"), length(max = 32))]
    #[x_kube(validation = Rule::new(DURATION_RULE).message(DURATION_MESSAGE))]
    pub max_runtime: Option<String>,
    /// What to do when a field changes that the platform cannot change on a live
    /// cluster (all but `name`): `Recreate` (the default) replaces the cluster, `Never`
    /// reports it.
    #[serde(default)]
    pub update_strategy: UpdateStrategy,
    /// Whether a Budget's `StopNewest` may delete this cluster: `Keep` (the default) or
    /// `Delete`.
    #[serde(default)]
    pub budget_stop_policy: BudgetStopPolicy,
    /// What happens to the remote cluster when this object is deleted: `Delete` (the
    /// default) or `Orphan`.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    /// `Manage` the cluster (the default), or `ObserveOnly` (adopted by
    /// `gpucloud.io/external-id`).
    #[serde(default)]
    pub management_policy: ManagementPolicy,
    /// Secret holding the API key for this object; the operator's default key when unset.
    pub credentials_secret_ref: Option<CredentialsSecretRef>,
}

/// Where the cluster is in its life, as the operator sees it.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum ClusterPhase {
    /// Waiting for something (a dependency, capacity, a Budget) before creating.
    #[default]
    Pending,
    /// A create was sent.
    Creating,
    /// Created; not every node runs yet.
    Provisioning,
    /// Every node runs.
    Running,
    /// Deleted by `maxRuntime` or a Budget, and held so.
    Held,
    /// Cannot reach the spec without a change to it.
    Failed,
}

/// One node of the cluster.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterMemberStatus {
    /// The node's pod id on the platform.
    pub id: String,
    /// NODE_RANK; 0 is the primary.
    pub rank: Option<i32>,
    /// `primary` for rank 0, else `worker`; the platform's role (`SLURM_CONTROLLER`,
    /// `RAY_HEAD`...) for Slurm and Ray clusters.
    pub role: String,
    /// Address on the cluster's private network.
    pub address: Option<String>,
    /// The platform's state of the node's pod, such as RUNNING.
    pub status: String,
}

/// A candidate placement the operator tried and why it was refused.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PlacementRefusal {
    /// `<GPU type> in <data center>`, or the GPU type alone.
    pub candidate: String,
    pub reason: String,
}

/// What the platform reports about the cluster.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    #[serde(flatten)]
    pub common: CommonStatus,
    pub phase: Option<ClusterPhase>,
    /// Name of the cluster on the platform.
    pub remote_name: Option<String>,
    pub data_center_id: Option<String>,
    /// The GPU type chosen.
    pub gpu_type_id: Option<String>,
    /// Nodes running / nodes asked for, such as `3/4`.
    pub nodes: Option<String>,
    pub ready_nodes: Option<i32>,
    pub pod_count: Option<i32>,
    /// Every node, by rank.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<ClusterMemberStatus>,
    /// The private network's CIDR.
    pub cidr: Option<String>,
    /// The primary's address on the private network.
    pub primary_address: Option<String>,
    /// The primary's public SSH endpoint (`host:port`), once it runs with 22/tcp.
    pub ssh_endpoint: Option<String>,
    /// What the whole cluster costs per hour, in US dollars (the sum of its nodes').
    pub cost_per_hour: Option<f64>,
    /// The ConfigMap with the nodes' addresses, hostfile and world size.
    pub config_map: Option<String>,
    /// The placements tried for the last create and why each was refused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refusals: Vec<PlacementRefusal>,
    /// When the cluster was created on the platform (it bills from then).
    pub started_at: Option<Time>,
    /// What `maxRuntime` sees and holds.
    pub guardrails: Option<GuardrailStatus>,
}

crate::managed::managed_kind!(Cluster, ClusterStatus);
