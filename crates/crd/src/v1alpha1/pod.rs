//! `Pod` in `v1alpha1`: `dockerArgs` where `v1beta1` says `args`, and `gpu.types` where it
//! says `gpu.typeIds`.

use serde::{Deserialize, Serialize};

use super::Object;
use crate::common::{CredentialsSecretRef, DeletionPolicy, LocalObjectReference, ManagementPolicy};
use crate::container::EnvVar;
use crate::guardrails::{IdleStop, PodSchedule};
use crate::pod::{CloudType, CpuRequirements, DesiredState, PodStatus, UpdateStrategy};
use crate::pod_startup::{OnStartupFailure, ResumePolicy};

/// A `v1alpha1` Pod.
pub type Pod = Object<PodSpec, PodStatus>;

/// A GPU pod's GPUs: `types` in priority order, the count and a price cap.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GpuRequirements {
    pub types: Vec<String>,
    #[serde(default = "one")]
    pub count: i32,
    pub max_price_per_hour: Option<f64>,
}

fn one() -> i32 {
    1
}

/// The spec of a `v1alpha1` Pod.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    #[serde(default)]
    pub desired_state: DesiredState,
    pub image: String,
    pub docker_args: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    #[serde(default = "default_container_disk")]
    pub container_disk_gb: i32,
    #[serde(default)]
    pub volume_gb: i32,
    pub volume_mount_path: Option<String>,
    pub min_vcpu_count: Option<i32>,
    pub min_memory_gb: Option<i32>,
    #[serde(default)]
    pub cloud_type: CloudType,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_cuda_versions: Vec<String>,
    pub data_center_id: Option<String>,
    pub gpu: Option<GpuRequirements>,
    pub cpu: Option<CpuRequirements>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub global_networking: bool,
    pub network_volume_ref: Option<LocalObjectReference>,
    pub network_volume_id: Option<String>,
    pub template_ref: Option<LocalObjectReference>,
    pub registry_credential_ref: Option<LocalObjectReference>,
    #[serde(default)]
    pub update_strategy: UpdateStrategy,
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    #[serde(default)]
    pub management_policy: ManagementPolicy,
    pub credentials_secret_ref: Option<CredentialsSecretRef>,
    pub schedule: Option<PodSchedule>,
    pub max_runtime: Option<String>,
    pub idle_stop: Option<IdleStop>,
    #[serde(default)]
    pub resume_policy: ResumePolicy,
    pub resume_timeout: Option<String>,
    pub startup_timeout: Option<String>,
    #[serde(default)]
    pub on_startup_failure: OnStartupFailure,
}

fn default_container_disk() -> i32 {
    20
}
