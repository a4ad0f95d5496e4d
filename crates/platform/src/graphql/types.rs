//! GraphQL inputs and results, with the schema's field names.

use serde::{Deserialize, Serialize};

/// `CloudTypeEnum`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum CloudType {
    #[default]
    All,
    Secure,
    Community,
}

/// `EnvironmentVariableInput`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvVar {
    pub key: String,
    pub value: String,
}

/// `PodFindAndDeployOnDemandInput`: the spec's fields plus the optional ones of the schema
/// the operator needs (data center, network volume, template).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeployPodInput {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cloud_type: Option<CloudType>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_count: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_in_gb: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_disk_in_gb: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_vcpu_count: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_memory_in_gb: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_type_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docker_args: Option<String>,
    /// Comma-separated `<port>/<type>` entries, e.g. `8888/http,22/tcp`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ports: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_mount_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_cuda_versions: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_center_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_volume_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub support_public_ip: Option<bool>,
}

/// `PodResumeInput`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumePodInput {
    pub pod_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_count: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_cuda_versions: Option<Vec<String>>,
}

/// The answer of a deploy: the spec's selectable fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeployedPod {
    pub id: String,
    #[serde(default)]
    pub image_name: String,
    #[serde(default)]
    pub env: Vec<String>,
    #[serde(default)]
    pub machine_id: String,
    #[serde(default)]
    pub machine: Option<PodMachine>,
}

/// The answer of resume and stop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodState {
    pub id: String,
    pub desired_status: String,
    #[serde(default)]
    pub image_name: Option<String>,
}

/// A pod as `pod` and `myself { pods }` report it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pod {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub image_name: String,
    /// `KEY=value` entries.
    #[serde(default)]
    pub env: Vec<String>,
    #[serde(default)]
    pub machine_id: String,
    #[serde(default)]
    pub machine: Option<PodMachine>,
    /// RUNNING, EXITED, ...
    pub desired_status: String,
    #[serde(default)]
    pub runtime: Option<PodRuntime>,
    #[serde(default)]
    pub gpu_count: Option<i64>,
    #[serde(default)]
    pub vcpu_count: Option<f64>,
    #[serde(default)]
    pub memory_in_gb: Option<f64>,
    #[serde(default)]
    pub container_disk_in_gb: Option<i64>,
    #[serde(default)]
    pub volume_in_gb: Option<i64>,
    #[serde(default)]
    pub volume_mount_path: Option<String>,
    #[serde(default)]
    pub docker_args: Option<String>,
    #[serde(default)]
    pub ports: Option<String>,
    #[serde(default)]
    pub cost_per_hr: Option<f64>,
    #[serde(default)]
    pub last_status_change: Option<String>,
    #[serde(default)]
    pub network_volume_id: Option<String>,
    #[serde(default)]
    pub template_id: Option<String>,
    /// CPU flavor of a CPU pod (REST v2 only: the seed API has no CPU pods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_flavor_id: Option<String>,
    /// The pod's address on the private cross-data-center network, when it has one
    /// (REST v2 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_networking: Option<PodGlobalAddress>,
}

/// Where other globally networked pods of the account reach a pod.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGlobalAddress {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    /// `<podId>.runpod.internal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_dns: Option<String>,
}

impl Pod {
    /// The value of one `KEY=value` env entry.
    pub fn env_value(&self, key: &str) -> Option<&str> {
        self.env
            .iter()
            .find_map(|e| e.strip_prefix(key)?.strip_prefix('='))
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodMachine {
    #[serde(default)]
    pub pod_host_id: String,
    #[serde(default)]
    pub gpu_type_id: Option<String>,
    #[serde(default)]
    pub gpu_display_name: Option<String>,
    #[serde(default)]
    pub data_center_id: Option<String>,
    #[serde(default)]
    pub secure_cloud: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodRuntime {
    #[serde(default)]
    pub uptime_in_seconds: i64,
    #[serde(default)]
    pub ports: Vec<PodRuntimePort>,
    #[serde(default)]
    pub gpus: Vec<PodRuntimeGpu>,
    #[serde(default)]
    pub container: Option<PodRuntimeContainer>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodRuntimePort {
    pub ip: String,
    pub is_ip_public: bool,
    pub private_port: i64,
    pub public_port: i64,
    #[serde(rename = "type")]
    pub kind: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodRuntimeGpu {
    pub id: String,
    pub gpu_util_percent: f64,
    pub memory_util_percent: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodRuntimeContainer {
    pub cpu_percent: f64,
    pub memory_percent: f64,
}

/// `GpuLowestPriceInput`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LowestPriceInput {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_count: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secure_cloud: Option<bool>,
}

/// A GPU type with its price and stock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GpuType {
    pub id: String,
    #[serde(default)]
    pub display_name: String,
    #[serde(default)]
    pub manufacturer: Option<String>,
    #[serde(default)]
    pub memory_in_gb: i64,
    #[serde(default)]
    pub max_gpu_count: Option<i64>,
    #[serde(default)]
    pub secure_cloud: bool,
    #[serde(default)]
    pub community_cloud: bool,
    #[serde(default)]
    pub secure_price: Option<f64>,
    #[serde(default)]
    pub community_price: Option<f64>,
    #[serde(default)]
    pub lowest_price: Option<LowestPrice>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LowestPrice {
    /// Hourly price of one GPU on demand; absent when not offered.
    #[serde(default)]
    pub uninterruptable_price: Option<f64>,
    /// High, Medium, Low or None.
    #[serde(default)]
    pub stock_status: Option<String>,
    #[serde(default)]
    pub available_gpu_counts: Vec<i64>,
}
