//! `Cluster` in `v1alpha1`: the GPUs and the node count in `compute`.

use serde::{Deserialize, Serialize};

use super::Object;
use crate::cluster::{BudgetStopPolicy, ClusterStatus, ClusterType};
use crate::common::{CredentialsSecretRef, DeletionPolicy, LocalObjectReference, ManagementPolicy};
use crate::container::EnvVar;
use crate::pod::UpdateStrategy;

/// A `v1alpha1` Cluster.
pub type Cluster = Object<ClusterSpec, ClusterStatus>;

/// The GPUs of each node and the number of nodes.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCompute {
    pub gpu_types: Vec<String>,
    pub gpu_count_per_pod: i32,
    pub pod_count: i32,
}

/// The spec of a `v1alpha1` Cluster.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    #[serde(rename = "type")]
    pub cluster_type: ClusterType,
    pub compute: ClusterCompute,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub data_center_ids: Vec<String>,
    pub name: Option<String>,
    pub image: Option<String>,
    pub template_ref: Option<LocalObjectReference>,
    pub registry_credential_ref: Option<LocalObjectReference>,
    pub args: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<String>,
    pub container_disk_gb: Option<i32>,
    pub network_volume_ref: Option<LocalObjectReference>,
    pub volume_mount_path: Option<String>,
    #[serde(default)]
    pub start_ssh: bool,
    pub max_price_per_hour: Option<f64>,
    pub max_runtime: Option<String>,
    #[serde(default)]
    pub update_strategy: UpdateStrategy,
    #[serde(default)]
    pub budget_stop_policy: BudgetStopPolicy,
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    #[serde(default)]
    pub management_policy: ManagementPolicy,
    pub credentials_secret_ref: Option<CredentialsSecretRef>,
}
