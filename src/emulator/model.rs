//! Records the emulator keeps, in the shapes the platform shows them (camelCase JSON).
//! The same types are read from fixture files, so a fixture may omit any field that has a
//! platform default.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How an endpoint scales its workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ScalerType {
    #[default]
    QueueDelay,
    RequestCount,
}

impl ScalerType {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "QUEUE_DELAY" => Some(Self::QueueDelay),
            "REQUEST_COUNT" => Some(Self::RequestCount),
            _ => None,
        }
    }
}

pub const DEFAULT_IDLE_TIMEOUT_S: u32 = 5;
pub const DEFAULT_SCALER_VALUE: u32 = 4;
pub const DEFAULT_EXECUTION_TIMEOUT_MS: u64 = 600_000;
pub const DEFAULT_WORKERS_MAX: u32 = 3;

fn one() -> u32 {
    1
}
fn default_workers_max() -> u32 {
    DEFAULT_WORKERS_MAX
}
fn default_idle_timeout() -> u32 {
    DEFAULT_IDLE_TIMEOUT_S
}
fn default_scaler_value() -> u32 {
    DEFAULT_SCALER_VALUE
}
fn default_execution_timeout() -> u64 {
    DEFAULT_EXECUTION_TIMEOUT_MS
}

/// A serverless endpoint (REST v1 record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndpointRecord {
    pub id: String,
    pub name: String,
    pub template_id: String,
    pub gpu_type_ids: Vec<String>,
    #[serde(default = "one")]
    pub gpu_count: u32,
    #[serde(default)]
    pub workers_min: u32,
    #[serde(default = "default_workers_max")]
    pub workers_max: u32,
    /// Seconds, 1..=3600.
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout: u32,
    #[serde(default)]
    pub scaler_type: ScalerType,
    #[serde(default = "default_scaler_value")]
    pub scaler_value: u32,
    #[serde(default = "default_execution_timeout")]
    pub execution_timeout_ms: u64,
    #[serde(default)]
    pub flashboot: bool,
    #[serde(default)]
    pub network_volume_id: Option<String>,
}

/// A network volume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkVolume {
    pub id: String,
    pub name: String,
    /// Gigabytes.
    pub size: u32,
    pub data_center_id: String,
}

fn default_container_disk() -> u32 {
    10
}
fn default_mount_path() -> String {
    "/workspace".into()
}

/// A pod or serverless template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Template {
    pub id: String,
    pub name: String,
    pub image_name: String,
    #[serde(default)]
    pub is_serverless: bool,
    #[serde(default = "default_container_disk")]
    pub container_disk_in_gb: u32,
    #[serde(default)]
    pub volume_in_gb: u32,
    #[serde(default = "default_mount_path")]
    pub volume_mount_path: String,
    #[serde(default)]
    pub ports: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub docker_start_cmd: Vec<String>,
}

/// A container registry delegation (every field of the spec's table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Delegation {
    pub id: String,
    pub delegator_user_id: String,
    pub cloud_user: String,
    pub repository: String,
    pub tag: String,
    pub cloud_region: String,
    pub created_at: String,
    pub name: String,
    pub docker_registry_uri: String,
}

/// A data center.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DataCenter {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub location: String,
}

/// Machines of one GPU type in one data center and cloud.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StockFixture {
    pub data_center_id: String,
    pub secure_cloud: bool,
    pub machines: u32,
    #[serde(default = "default_gpus_per_machine")]
    pub gpus_per_machine: u32,
}

fn default_gpus_per_machine() -> u32 {
    8
}

/// One GPU type of the catalog, with its stock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GpuTypeFixture {
    pub id: String,
    pub display_name: String,
    #[serde(default = "default_manufacturer")]
    pub manufacturer: String,
    pub memory_in_gb: u32,
    #[serde(default)]
    pub cuda_cores: u32,
    #[serde(default = "default_gpus_per_machine")]
    pub max_gpu_count: u32,
    /// Hourly price per GPU; absent when the type is not offered in the secure cloud.
    #[serde(default)]
    pub secure_price: Option<f64>,
    #[serde(default)]
    pub community_price: Option<f64>,
    #[serde(default)]
    pub secure_spot_price: Option<f64>,
    #[serde(default)]
    pub community_spot_price: Option<f64>,
    #[serde(default)]
    pub one_week_price: Option<f64>,
    #[serde(default)]
    pub one_month_price: Option<f64>,
    #[serde(default)]
    pub three_month_price: Option<f64>,
    /// CUDA versions the machines of this type offer.
    #[serde(default = "default_cuda")]
    pub cuda_versions: Vec<String>,
    #[serde(default)]
    pub stock: Vec<StockFixture>,
}

fn default_manufacturer() -> String {
    "Nvidia".into()
}
fn default_cuda() -> Vec<String> {
    vec!["12.4".into(), "12.6".into(), "12.8".into()]
}

/// A pod to deploy when the emulator starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodFixture {
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    pub image_name: String,
    pub gpu_type_id: String,
    #[serde(default = "one")]
    pub gpu_count: u32,
    #[serde(default)]
    pub secure_cloud: Option<bool>,
    #[serde(default)]
    pub stopped: bool,
}
