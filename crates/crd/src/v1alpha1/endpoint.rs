//! `Endpoint` in `v1alpha1`: the shorthand `gpuTypeIds` + `gpuCount` beside the `gpu` block,
//! and the timeouts in numbers (`idleTimeoutSeconds`, `executionTimeoutMs`).

use serde::{Deserialize, Serialize};

use super::Object;
use crate::common::{CredentialsSecretRef, DeletionPolicy, LocalObjectReference, ManagementPolicy};
use crate::endpoint::{EndpointCpu, EndpointStatus, EndpointType, LoadBalancerSpec, ScalerType};

/// A `v1alpha1` Endpoint.
pub type Endpoint = Object<EndpointSpec, EndpointStatus>;

/// A worker's GPUs: by pools, or by `typeIds` (as the shorthand `gpuTypeIds` also says).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EndpointGpu {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded_types: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub type_ids: Vec<String>,
    #[serde(default = "one")]
    pub count: i32,
}

/// The spec of a `v1alpha1` Endpoint.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSpec {
    pub name: Option<String>,
    pub template_id: Option<String>,
    pub template_ref: Option<LocalObjectReference>,
    #[serde(default, rename = "type")]
    pub endpoint_type: EndpointType,
    pub load_balancer: Option<LoadBalancerSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_type_ids: Vec<String>,
    pub gpu_count: Option<i32>,
    pub gpu: Option<EndpointGpu>,
    pub cpu: Option<EndpointCpu>,
    #[serde(default)]
    pub workers_min: i32,
    #[serde(default = "default_workers_max")]
    pub workers_max: i32,
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout_seconds: i32,
    pub scaler_type: Option<ScalerType>,
    #[serde(default = "default_scaler_value")]
    pub scaler_value: i32,
    pub execution_timeout_ms: Option<i64>,
    #[serde(default)]
    pub flashboot: bool,
    pub network_volume_ref: Option<LocalObjectReference>,
    pub network_volume_id: Option<String>,
    pub write_connection_to: Option<String>,
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    #[serde(default)]
    pub management_policy: ManagementPolicy,
    pub credentials_secret_ref: Option<CredentialsSecretRef>,
}

fn one() -> i32 {
    1
}

fn default_workers_max() -> i32 {
    3
}

fn default_idle_timeout() -> i32 {
    5
}

fn default_scaler_value() -> i32 {
    4
}
