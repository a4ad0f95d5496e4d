//! Serverless endpoints: the answer, create and update bodies, workers and releases.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::{CpuConfig, CreateCpuConfig, CudaVersions, open_enum};
use super::container::{ContainerConfig, CreateContainerConfig, UpdateContainerConfig};

open_enum! {
    /// How requests reach the workers.
    EndpointType { Queue => "QUEUE", LoadBalancer => "LOAD_BALANCER" }
}

open_enum! {
    /// Fast cold starts.
    FlashBoot {
        Off => "OFF",
        Flashboot => "FLASHBOOT",
        PriorityFlashboot => "PRIORITY_FLASHBOOT",
    }
}

open_enum! {
    /// State of one worker.
    WorkerStatus {
        Running => "RUNNING",
        Idle => "IDLE",
        Initializing => "INITIALIZING",
        Throttled => "THROTTLED",
        Unhealthy => "UNHEALTHY",
    }
}

open_enum! {
    /// What produced a release.
    ReleaseSource { GitBuild => "GIT_BUILD", Manual => "MANUAL" }
}

/// A serverless endpoint as the platform describes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub id: String,
    pub name: String,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub endpoint_type: Option<EndpointType>,
    /// Where to send jobs (queue endpoints) or traffic (load balancers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_urls: Option<RequestUrls>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<EndpointGpuConfig>,
    /// Eligible CPU configurations, for CPU endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Vec<CpuConfig>>,
    #[serde(default)]
    pub workers: EndpointWorkers,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling: Option<EndpointScaling>,
    #[serde(default)]
    pub data_center_ids: Vec<String>,
    /// Network volume ids.
    #[serde(default)]
    pub network_volumes: Vec<String>,
    /// Per-request execution limit, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flashboot: Option<FlashBoot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// `image` (none when a template supplies it), `args`, `disk`, `ports`, `env` and
    /// `registry`.
    #[serde(flatten)]
    pub container: ContainerConfig<Option<String>>,
}

/// The endpoint's URLs: `run` .. `health` for queue endpoints, `base` and `health` for
/// load balancers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestUrls {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_sync: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purge_queue: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<String>,
}

/// GPUs of an endpoint, as answered.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointGpuConfig {
    /// Serverless GPU pool ids (the catalog's `pool`).
    #[serde(default)]
    pub pools: Vec<String>,
    /// GPU type ids taken out of the pools.
    #[serde(default)]
    pub excluded_types: Vec<String>,
    /// GPUs per worker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Empty: any.
    #[serde(default)]
    pub allowed_cuda_versions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cuda_version: Option<String>,
}

/// GPUs asked for on create. `pools` is required.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateEndpointGpuConfig {
    pub pools: Vec<String>,
    #[serde(flatten)]
    pub options: EndpointGpuOptions,
}

/// GPU changes of an update; what is unset stays. `excluded_types` needs `pools`; an empty
/// `allowed_cuda_versions` or `min_cuda_version: ""` clears the constraint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateEndpointGpuConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pools: Option<Vec<String>>,
    #[serde(flatten)]
    pub options: EndpointGpuOptions,
}

/// What a create and an update say of an endpoint's GPUs besides the pools, each only
/// when set: the types left out of the pools, the GPUs per worker and the hosts' CUDA.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointGpuOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_types: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// `allowedCudaVersions` and `minCudaVersion`.
    #[serde(flatten)]
    pub cuda: CudaVersions,
}

/// Worker bounds of an endpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointWorkers {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<u32>,
    /// Seconds before an idle worker goes (not for request-count scaling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<u32>,
}

/// The autoscaler's rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "SCREAMING_SNAKE_CASE",
    rename_all_fields = "camelCase"
)]
pub enum EndpointScaling {
    /// Scale on how long requests wait in the queue (seconds, at least 0.5).
    QueueDelay { queue_delay: f64 },
    /// Scale on requests in flight (the only rule of load balancers).
    RequestCount { request_count: u32 },
    /// A rule this client does not know; not to be sent back.
    #[serde(other)]
    Unknown,
}

/// Body of `POST /v2/serverless`. `name`, `endpoint_type` and `scaling` are required, and
/// exactly one of `gpu` or `cpu`; `image` unless `template_id` supplies it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateEndpoint {
    pub name: String,
    #[serde(rename = "type")]
    pub endpoint_type: EndpointType,
    pub scaling: EndpointScaling,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<CreateEndpointGpuConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Vec<CreateCpuConfig>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<EndpointWorkers>,
    /// `dataCenterIds`, `networkVolumes`, `timeout`, `flashboot` and `templateId`.
    #[serde(flatten)]
    pub settings: EndpointSettings,
    /// `image`, `args`, `disk`, `ports`, `env` and `registry`.
    #[serde(flatten)]
    pub container: CreateContainerConfig,
}

/// What a create sets and an update changes alike, each only when set: the data centers,
/// the network volumes, a job's time limit, FlashBoot and the template.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_center_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_volumes: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flashboot: Option<FlashBoot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_id: Option<String>,
}

/// Body of `PATCH /v2/serverless/{id}`: only what is set changes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateEndpoint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<UpdateEndpointGpuConfig>,
    /// Replaces the whole CPU selection of a CPU endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Vec<CreateCpuConfig>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<EndpointWorkers>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaling: Option<EndpointScaling>,
    /// `dataCenterIds`, `networkVolumes`, `timeout`, `flashboot` and `templateId`.
    #[serde(flatten)]
    pub settings: EndpointSettings,
    /// `image`, `args`, `disk`, `ports`, `env` and `registry`.
    #[serde(flatten)]
    pub container: UpdateContainerConfig,
}

/// `GET /v2/serverless/{id}/workers`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerList {
    #[serde(default)]
    pub workers: Vec<Worker>,
    #[serde(default)]
    pub summary: WorkerSummary,
    /// The endpoint's configuration version; a worker on another one is stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_version: Option<i64>,
}

/// One active worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Worker {
    pub id: String,
    pub status: WorkerStatus,
    /// Runs an older configuration than the endpoint's current one.
    #[serde(default)]
    pub is_stale: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    #[serde(default)]
    pub gpu_count: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uptime_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_type_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_center_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
}

/// Workers by status.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerSummary {
    #[serde(default)]
    pub running: u32,
    #[serde(default)]
    pub idle: u32,
    #[serde(default)]
    pub initializing: u32,
    #[serde(default)]
    pub throttled: u32,
    #[serde(default)]
    pub unhealthy: u32,
    #[serde(default)]
    pub total: u32,
}

/// `GET /v2/serverless/{id}/releases`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseList {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_version: Option<i64>,
    #[serde(default)]
    pub rollout: RolloutSummary,
    /// Newest first.
    #[serde(default)]
    pub releases: Vec<Release>,
}

/// How far the current version has rolled out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutSummary {
    #[serde(default)]
    pub in_progress: bool,
    #[serde(default)]
    pub workers_on_latest: u32,
    #[serde(default)]
    pub workers_total: u32,
    #[serde(default)]
    pub percent_on_latest: u32,
}

/// A configuration version of an endpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Release {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    pub source: ReleaseSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by_user_id: Option<String>,
    #[serde(default)]
    pub worker_count: u32,
    #[serde(default)]
    pub created_at: String,
    #[serde(default)]
    pub diff: Vec<ReleaseDiffEntry>,
}

/// One changed field of a release, old and new values as raw JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseDiffEntry {
    pub field: String,
    #[serde(default)]
    pub old: Value,
    #[serde(default)]
    pub new: Value,
}
