//! Instant Clusters: the answer, the create and rename bodies, and the billing record.
//! A cluster's container configuration is the document's `BaseContainerConfig`: the
//! pod's without `registry` (clusters cannot pull private images).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use super::common::{Mounts, open_enum};
use super::container::{ContainerRequest, RegistryField};
use super::pods::PodStatus;

open_enum! {
    /// What a cluster runs.
    ClusterType {
        Application => "APPLICATION",
        Training => "TRAINING",
        Slurm => "SLURM",
        Ray => "RAY",
    }
}

/// The homogeneous shape of a cluster: `pod_count` pods of `gpu_count_per_pod` GPUs each.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCompute {
    pub gpu_type_id: String,
    pub gpu_count_per_pod: u32,
    pub pod_count: u32,
}

/// Member pods by status: how many there are, and how many in each status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPodsSummary {
    #[serde(default)]
    pub total: u32,
    #[serde(default)]
    pub by_status: BTreeMap<String, u32>,
}

/// The cluster's private overlay network.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterNetwork {
    pub cidr: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vxlan_id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vxlan_port: Option<i64>,
}

/// The cluster's primary (rank 0) node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPrimary {
    pub pod_id: String,
    pub status: PodStatus,
    /// `host:port`, once the primary runs with 22/tcp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_endpoint: Option<String>,
}

/// A cluster as the platform describes it; its members are read from
/// `GET /v2/clusters/{id}/pods` (or the pod list with `includeClusterPods`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cluster {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub cluster_type: ClusterType,
    pub compute: ClusterCompute,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_center_id: Option<String>,
    #[serde(default)]
    pub pods: ClusterPodsSummary,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<ClusterNetwork>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary: Option<ClusterPrimary>,
    #[serde(default)]
    pub created_at: String,
}

impl Default for ClusterType {
    fn default() -> Self {
        ClusterType::Other(String::new())
    }
}

/// The `registry` of a cluster body: there is none, and one sent back is refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NoRegistry;

impl RegistryField for NoRegistry {
    fn is_unset(&self) -> bool {
        true
    }

    fn read<'de, D: Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom(
            "clusters take no registry credential",
        ))
    }
}

/// The container settings of a cluster create: every member's.
pub type ClusterContainerConfig = ContainerRequest<Option<String>, NoRegistry>;

/// Body of `POST /v2/clusters`. Unset fields are not sent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateCluster {
    pub name: String,
    #[serde(rename = "type")]
    pub cluster_type: ClusterType,
    pub compute: ClusterCompute,
    /// `image`, `args`, `disk`, `ports` and `env`.
    #[serde(flatten)]
    pub container: ClusterContainerConfig,
    /// Preferred data centres; the whole cluster lands in one of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_center_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mounts: Option<Mounts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_jupyter: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ssh: Option<bool>,
}

/// Body of `PATCH /v2/clusters/{id}`: a rename, the only change a cluster takes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RenameCluster {
    pub name: String,
}

/// USD of clusters in one bucket (GPU-only: no CPU component).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClusterBillingAmounts {
    pub total_amount: f64,
    pub gpu_amount: f64,
    pub disk_amount: f64,
    pub networking_amount: f64,
}

/// One cluster in one bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterBillingRecord {
    pub start_time: String,
    pub end_time: String,
    pub cluster_id: String,
    #[serde(flatten)]
    pub amounts: ClusterBillingAmounts,
}

/// `GET /v2/billing/clusters`.
pub type ClusterBilling = super::BillingHistory<ClusterBillingRecord, ClusterBillingAmounts>;
