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
pub const DEFAULT_SCALER_VALUE: u64 = 4;
pub const DEFAULT_EXECUTION_TIMEOUT_MS: u64 = 600_000;
pub const DEFAULT_WORKERS_MAX: u64 = 3;

fn one() -> u32 {
    1
}
fn one_u64() -> u64 {
    1
}
fn default_workers_max() -> u64 {
    DEFAULT_WORKERS_MAX
}
fn default_idle_timeout() -> u32 {
    DEFAULT_IDLE_TIMEOUT_S
}
fn default_scaler_value() -> u64 {
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
    // The counts and the scaler value are 64-bit: REST v2 bounds them only from below, and
    // its integers are read as i64 (v1 checks its own, narrower, ranges).
    #[serde(default = "one_u64")]
    pub gpu_count: u64,
    #[serde(default)]
    pub workers_min: u64,
    #[serde(default = "default_workers_max")]
    pub workers_max: u64,
    /// Seconds, 1..=3600.
    #[serde(default = "default_idle_timeout")]
    pub idle_timeout: u32,
    #[serde(default)]
    pub scaler_type: ScalerType,
    #[serde(default = "default_scaler_value")]
    pub scaler_value: u64,
    #[serde(default = "default_execution_timeout")]
    pub execution_timeout_ms: u64,
    #[serde(default)]
    pub flashboot: bool,
    #[serde(default)]
    pub network_volume_id: Option<String>,
    // The fields below are what REST v2 shows beyond v1. A fixture may omit them: they are
    // derived from the v1 fields and the template when the emulator loads it
    // (`endpoints::hydrate`).
    /// Request routing; v1 endpoints are queue-based.
    #[serde(default, rename = "type")]
    pub endpoint_type: EndpointType,
    /// The container settings workers run, a snapshot of the template taken when the
    /// endpoint was created (later template edits do not reach it).
    #[serde(default)]
    pub container: ContainerSettings,
    /// Serverless GPU pools the GPU types are chosen from (REST v2 `gpu.pools`).
    #[serde(default)]
    pub gpu_pools: Vec<String>,
    /// GPU types subtracted from the pools (REST v2 `gpu.excludedTypes`).
    #[serde(default)]
    pub excluded_gpu_types: Vec<String>,
    #[serde(default)]
    pub allowed_cuda_versions: Vec<String>,
    #[serde(default)]
    pub min_cuda_version: Option<String>,
    /// CPU flavors of a CPU endpoint (empty for GPU endpoints).
    #[serde(default)]
    pub cpu: Vec<CpuSelection>,
    /// The queue delay in seconds when set over REST v2 (which takes fractions); v1's
    /// `scalerValue` is its rounded value.
    #[serde(default)]
    pub queue_delay: Option<f64>,
    #[serde(default)]
    pub data_center_ids: Vec<String>,
    /// Every attached network volume; v1's `networkVolumeId` is the first.
    #[serde(default)]
    pub network_volume_ids: Vec<String>,
    /// REST v2 `flashboot: PRIORITY_FLASHBOOT` (v1 shows `flashboot: true`).
    #[serde(default)]
    pub priority_flashboot: bool,
    /// Emulated milliseconds since the emulator started.
    #[serde(default)]
    pub created_at_ms: u64,
    /// Configuration versions, oldest first; the last one is the current version.
    #[serde(default)]
    pub releases: Vec<Release>,
}

impl EndpointRecord {
    /// A queue endpoint with the platform's v1 defaults and nothing else set.
    pub fn with_defaults(id: String) -> Self {
        Self {
            id,
            name: String::new(),
            template_id: String::new(),
            gpu_type_ids: Vec::new(),
            gpu_count: 1,
            workers_min: 0,
            workers_max: DEFAULT_WORKERS_MAX,
            idle_timeout: DEFAULT_IDLE_TIMEOUT_S,
            scaler_type: ScalerType::QueueDelay,
            scaler_value: DEFAULT_SCALER_VALUE,
            execution_timeout_ms: DEFAULT_EXECUTION_TIMEOUT_MS,
            flashboot: false,
            network_volume_id: None,
            endpoint_type: EndpointType::Queue,
            container: ContainerSettings::default(),
            gpu_pools: Vec::new(),
            excluded_gpu_types: Vec::new(),
            allowed_cuda_versions: Vec::new(),
            min_cuda_version: None,
            cpu: Vec::new(),
            queue_delay: None,
            data_center_ids: Vec::new(),
            network_volume_ids: Vec::new(),
            priority_flashboot: false,
            created_at_ms: 0,
            releases: Vec::new(),
        }
    }

    /// The current configuration version (1 for a new endpoint).
    pub fn version(&self) -> u64 {
        self.releases.last().map_or(1, |r| r.version)
    }
}

/// How requests reach an endpoint's workers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EndpointType {
    #[default]
    Queue,
    LoadBalancer,
}

/// What an endpoint's workers run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerSettings {
    #[serde(default)]
    pub image: String,
    #[serde(default)]
    pub args: String,
    /// Container disk in GB (64-bit: REST v2 gives it no upper bound).
    #[serde(default)]
    pub disk: u64,
    #[serde(default)]
    pub ports: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Id of a container registry credential.
    #[serde(default)]
    pub registry: Option<String>,
}

/// One CPU flavor a CPU endpoint's workers may run on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CpuSelection {
    pub id: String,
    pub vcpu_count: u32,
    /// GB, derived from the flavor's RAM per vCPU.
    pub memory: u32,
}

/// One configuration version of an endpoint: what changed and what its workers run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Release {
    pub id: String,
    pub version: u64,
    pub created_at_ms: u64,
    /// The image workers of this version run.
    pub image: String,
    pub diff: Vec<ReleaseChange>,
}

/// One changed field of a release (`old` is null when the field was added).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseChange {
    pub field: String,
    pub old: serde_json::Value,
    pub new: serde_json::Value,
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
    /// Storage tier (REST v2 only; fixed at creation).
    #[serde(default = "standard_tier", rename = "type")]
    pub volume_type: VolumeType,
}

fn standard_tier() -> VolumeType {
    VolumeType::Standard
}

fn default_container_disk() -> u64 {
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
    pub container_disk_in_gb: u64,
    #[serde(default)]
    pub volume_in_gb: u64,
    #[serde(default = "default_mount_path")]
    pub volume_mount_path: String,
    #[serde(default)]
    pub ports: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The container's arguments; REST v2 shows them joined by spaces as `args`.
    #[serde(default)]
    pub docker_start_cmd: Vec<String>,
    // REST v2 fields (v1 does not show them).
    /// Id of a container registry credential; cleared when the credential is deleted.
    #[serde(default)]
    pub registry: Option<String>,
    #[serde(default)]
    pub public: bool,
    #[serde(default)]
    pub category: TemplateCategory,
    #[serde(default = "yes")]
    pub start_ssh: bool,
    #[serde(default = "yes")]
    pub start_jupyter: bool,
    #[serde(default)]
    pub allowed_cuda_versions: Vec<String>,
    /// Set on the template the emulator made for an endpoint created over REST v2 without a
    /// template: it follows that endpoint's container settings and goes with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_endpoint: Option<String>,
}

fn yes() -> bool {
    true
}

/// A container registry credential. The password is write-only: it is never serialized
/// (API answers, the state dump) nor shown by `Debug`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegistryAuth {
    pub id: String,
    pub name: String,
    pub username: String,
    #[serde(skip_serializing)]
    pub password: String,
}

impl std::fmt::Debug for RegistryAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryAuth")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
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
    /// ISO 3166-1 alpha-2, upper case (`RO`, `US`); the catalog's `countryCodes` filter.
    #[serde(default)]
    pub country_code: Option<String>,
    /// Continental region; derived from `location` when absent.
    #[serde(default)]
    pub region: Option<DataCenterRegion>,
    #[serde(default)]
    pub compliance: Vec<Compliance>,
    #[serde(default = "default_volume_types")]
    pub network_volume_types: Vec<VolumeType>,
    #[serde(default)]
    pub global_network: bool,
}

impl DataCenter {
    pub fn region(&self) -> DataCenterRegion {
        self.region.unwrap_or(match self.location.as_str() {
            "EU" => DataCenterRegion::Europe,
            "US" | "CA" => DataCenterRegion::NorthAmerica,
            _ => DataCenterRegion::Unknown,
        })
    }
}

fn default_volume_types() -> Vec<VolumeType> {
    vec![VolumeType::Standard]
}

/// Continental region of a data center, spelled as REST v2 spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DataCenterRegion {
    NorthAmerica,
    SouthAmerica,
    Europe,
    Asia,
    MiddleEast,
    Africa,
    Oceania,
    Antarctica,
    Unknown,
}

/// A compliance certification of a data center.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Compliance {
    #[serde(rename = "GDPR")]
    Gdpr,
    #[serde(rename = "ISO_IEC_27001")]
    IsoIec27001,
    #[serde(rename = "ISO_14001")]
    Iso14001,
    #[serde(rename = "PCI_DSS")]
    PciDss,
    #[serde(rename = "HITRUST")]
    Hitrust,
    #[serde(rename = "SOC_1_TYPE_2")]
    Soc1Type2,
    #[serde(rename = "SOC_2_TYPE_2")]
    Soc2Type2,
    #[serde(rename = "SOC_3_TYPE_2")]
    Soc3Type2,
    #[serde(rename = "ITAR")]
    Itar,
    #[serde(rename = "FISMA_HIGH")]
    FismaHigh,
    #[serde(rename = "HIPAA")]
    Hipaa,
    #[serde(rename = "RENEWABLE")]
    Renewable,
}

/// Network volume storage tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum VolumeType {
    Standard,
    HighPerformance,
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
    /// Serverless GPU pool (`AMPERE_80`, `ADA_24`, ...); none when not offered serverless.
    #[serde(default)]
    pub pool: Option<String>,
    /// Serverless hourly price per GPU, from the pool.
    #[serde(default)]
    pub serverless_price: Option<f64>,
    #[serde(default)]
    pub stock: Vec<StockFixture>,
}

/// Machines of one CPU flavor in one data center (CPU pods run in the secure cloud only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CpuStockFixture {
    pub data_center_id: String,
    pub machines: u32,
    #[serde(default = "default_vcpus_per_machine")]
    pub vcpus_per_machine: u32,
}

fn default_vcpus_per_machine() -> u32 {
    64
}

/// One CPU flavor of the catalog, with its stock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CpuTypeFixture {
    pub id: String,
    pub name: String,
    pub group: String,
    pub vcpu_min: u32,
    pub vcpu_max: u32,
    pub ram_gb_per_vcpu: f64,
    /// Hourly price per vCPU of a secure-cloud pod.
    pub secure_price_per_vcpu: f64,
    pub serverless_price_per_vcpu: f64,
    #[serde(default)]
    pub stock: Vec<CpuStockFixture>,
}

/// Which slice of the public template catalog a template belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum TemplateSource {
    #[default]
    Official,
    Verified,
    Community,
}

/// Hardware family a template is grouped under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "UPPERCASE")]
pub enum TemplateCategory {
    Cpu,
    #[default]
    Nvidia,
    Amd,
}

/// A template of the public catalog (not owned by the account).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PublicTemplate {
    pub id: String,
    pub name: String,
    pub image_name: String,
    #[serde(default)]
    pub source: TemplateSource,
    #[serde(default)]
    pub category: TemplateCategory,
    #[serde(default)]
    pub is_serverless: bool,
    #[serde(default = "default_container_disk")]
    pub container_disk_in_gb: u64,
    #[serde(default)]
    pub volume_in_gb: u64,
    #[serde(default = "default_mount_path")]
    pub volume_mount_path: String,
    #[serde(default)]
    pub ports: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub docker_args: String,
    #[serde(default)]
    pub start_ssh: bool,
    #[serde(default)]
    pub start_jupyter: bool,
    #[serde(default)]
    pub allowed_cuda_versions: Vec<String>,
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
