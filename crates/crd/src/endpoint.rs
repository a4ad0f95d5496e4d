//! `Endpoint`: a serverless endpoint on the platform, behind a job queue or a load
//! balancer, on GPU or CPU workers.

// Each `printcolumn(...)` repeats the same keys, which clippy takes for duplicates.
#![allow(clippy::duplicated_attributes)]

use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    CommonStatus, CredentialsSecretRef, DeletionPolicy, LocalObjectReference, ManagementPolicy,
};
use crate::gpu::Gpu;

/// How the platform decides to add workers.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum ScalerType {
    /// Add workers when jobs wait in the queue longer than `scalerValue` seconds.
    #[default]
    #[serde(rename = "QUEUE_DELAY")]
    QueueDelay,
    /// Add a worker for every `scalerValue` requests in the queue.
    #[serde(rename = "REQUEST_COUNT")]
    RequestCount,
}

/// How requests reach an endpoint's workers.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum EndpointType {
    /// Jobs go through the platform's queue (`/run`, `/runsync`, `/status`, ...).
    #[default]
    Queue,
    /// Requests go straight to the workers' own HTTP server, behind the platform's load
    /// balancer. Scales on request count only.
    LoadBalancer,
}

/// `idleTimeout` is from 1 second to 1 hour (the platform's bounds).
pub const IDLE_TIMEOUT_RULE: &str =
    "duration(self) >= duration('1s') && duration(self) <= duration('1h')";
pub const IDLE_TIMEOUT_MESSAGE: &str =
    "idleTimeout must be a duration from 1s to 1h with units h, m and s, such as 5s";
/// `executionTimeout` is from 5 seconds to 7 days (the platform's bounds of a job's timeout).
pub const EXECUTION_TIMEOUT_RULE: &str =
    "duration(self) >= duration('5s') && duration(self) <= duration('168h')";
pub const EXECUTION_TIMEOUT_MESSAGE: &str = "executionTimeout must be a duration from 5s to 168h (7 days) with units h, m and s, such as 10m";

/// The GPUs of each worker: the shared GPU block by type ids, or the catalog's serverless
/// pools instead of type ids.
#[derive(Clone, Debug, Default, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[x_kube(
    validation = Rule::new("has(self.pools) != has(self.typeIds)").message("gpu: set exactly one of pools and typeIds"),
    validation = Rule::new("!has(self.excludedTypes) || has(self.pools)").message("gpu.excludedTypes narrows pools: set it only with gpu.pools").field_path(".excludedTypes")
)]
pub struct EndpointGpu {
    /// `typeIds` (exactly one of `typeIds` and `pools`) and `count`, GPUs per worker.
    #[serde(flatten)]
    pub gpu: Gpu,
    /// Serverless GPU pools (the catalog's `pool` of each GPU type, such as `ADA_24`),
    /// 1 to 16: workers go to whichever pool has room. Exactly one of `pools` and `typeIds`.
    /// REST v2 only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 16), inner(length(min = 1, max = 64)))]
    pub pools: Vec<String>,
    /// GPU type ids taken out of `pools`, at most 32; none when empty. Only with `pools`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32), inner(length(min = 1, max = 128)))]
    pub excluded_types: Vec<String>,
}

/// CPU workers: the eligible flavours, and the vCPUs of each worker.
#[derive(Clone, Debug, Default, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EndpointCpu {
    /// CPU flavour ids (`GET /v2/catalog/cpus`, such as `cpu5c`) in priority order.
    #[schemars(length(min = 1, max = 8), inner(length(min = 1, max = 64)))]
    #[x_kube(validation = Rule::new("self.all(f, self.exists_one(g, g == f))").message("cpu.flavors must not repeat a flavour"))]
    pub flavors: Vec<String>,
    /// vCPUs per worker: a power of two from 2 to 128, valid for the flavours.
    #[x_kube(validation = Rule::new("self in [2, 4, 8, 16, 32, 64, 128]").message("cpu.vcpuCount must be a power of two from 2 to 128"))]
    pub vcpu_count: i32,
}

/// Where a load-balancing endpoint's workers serve, and how the platform checks them.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerSpec {
    /// Port of the workers' HTTP server (the platform's `PORT`, 80 when unset).
    #[serde(default = "http_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// The health check the load balancer runs against each worker.
    #[serde(default)]
    pub health_check: HealthCheck,
}

/// A worker's health check.
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct HealthCheck {
    /// Port the check calls (the platform's `PORT_HEALTH`, 80 when unset).
    #[serde(default = "http_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// Path the check calls (the platform's `HEALTH_CHECK_PATH`, `/ping` when unset).
    #[serde(default = "ping")]
    #[schemars(length(min = 1, max = 256))]
    #[x_kube(validation = Rule::new("self.startsWith('/')").message("loadBalancer.healthCheck.path must start with /"))]
    pub path: String,
}

impl Default for HealthCheck {
    fn default() -> Self {
        Self {
            port: http_port(),
            path: ping(),
        }
    }
}

fn http_port() -> i32 {
    80
}

fn ping() -> String {
    "/ping".into()
}

/// A serverless endpoint on the GPU cloud: a template deployed on workers that the platform
/// scales with a job queue or behind a load balancer.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq)]
#[kube(
    group = "gpucloud.io",
    version = "v1beta1",
    kind = "Endpoint",
    namespaced,
    status = "EndpointStatus",
    shortname = "gep",
    category = "gpucloud",
    doc = "A serverless endpoint on the GPU cloud, with its queue and worker health in status.",
    printcolumn(
        name = "WORKERS",
        type_ = "string",
        json_path = ".status.workers",
        description = "Running workers / workersMax"
    ),
    printcolumn(
        name = "QUEUE",
        type_ = "integer",
        json_path = ".status.health.jobs.inQueue"
    ),
    printcolumn(
        name = "READY",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(name = "URL", type_ = "string", json_path = ".status.url")
)]
#[x_kube(
    validation = Rule::new("self.workersMin <= self.workersMax").message("workersMin must not exceed workersMax").field_path(".workersMin"),
    validation = Rule::new("!(has(self.networkVolumeRef) && has(self.networkVolumeId))").message("set networkVolumeRef or networkVolumeId, not both"),
    validation = Rule::new("has(self.templateId) != has(self.templateRef)").message("set exactly one of templateId and templateRef"),
    validation = Rule::new("has(self.gpu) != has(self.cpu)").message("set exactly one of gpu and cpu: gpu for GPU workers, cpu for CPU workers"),
    validation = Rule::new("!has(self.loadBalancer) || self.type == 'LoadBalancer'").message("loadBalancer is only for an endpoint of type LoadBalancer").field_path(".loadBalancer"),
    validation = Rule::new("self.type != 'LoadBalancer' || !has(self.scalerType) || self.scalerType == 'REQUEST_COUNT'").message("a LoadBalancer endpoint scales on request count: scalerType must be REQUEST_COUNT").field_path(".scalerType"),
    validation = Rule::new("self.type == oldSelf.type").message("type is immutable: the platform cannot change how requests reach an endpoint").field_path(".type"),
    validation = Rule::new("has(self.cpu) == has(oldSelf.cpu)").message("cpu: an endpoint cannot move between GPU and CPU workers").field_path(".cpu")
)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSpec {
    /// Name of the endpoint on the platform, 1 to 128 characters;
    /// `<namespace>-<name>-<uid8>` (the first eight hex digits of the object's UID) when
    /// unset. Changing it renames the endpoint.
    #[schemars(length(min = 1, max = 128))]
    pub name: Option<String>,
    /// Id of a platform template to deploy on the workers. Exactly one of `templateId` and
    /// `templateRef`.
    #[schemars(length(min = 1, max = 128))]
    pub template_id: Option<String>,
    /// A `Template` in this namespace to deploy on the workers: the endpoint waits until it
    /// is Ready and follows it when it is replaced. Exactly one of `templateId` and
    /// `templateRef`.
    pub template_ref: Option<LocalObjectReference>,
    /// How requests reach the workers: `Queue` (the default) or `LoadBalancer`. Cannot
    /// change once set.
    #[serde(default, rename = "type")]
    pub endpoint_type: EndpointType,
    /// A `LoadBalancer` endpoint's serving port and health check; the defaults are the
    /// platform's (port 80, health check on port 80 at `/ping`). Only with
    /// `type: LoadBalancer`.
    pub load_balancer: Option<LoadBalancerSpec>,
    /// GPU workers: GPU type ids (or pools) and GPUs per worker. Exactly one of `gpu` and
    /// `cpu`.
    pub gpu: Option<EndpointGpu>,
    /// CPU workers (REST v2 only). Exactly one of `gpu` and `cpu`; cannot be added or
    /// removed once set.
    pub cpu: Option<EndpointCpu>,
    /// Workers kept running even with an empty queue, 0 to 1,000, at most `workersMax`; 0
    /// when unset.
    #[serde(default)]
    #[schemars(range(min = 0, max = 1000))]
    pub workers_min: i32,
    /// Upper bound on workers, 0 to 1,000; 3 when unset.
    #[serde(default = "default_workers_max")]
    #[schemars(range(min = 0, max = 1000))]
    pub workers_max: i32,
    /// How long an idle worker is kept before it is stopped, a duration from 1s to 1h
    /// (units `h`, `m`, `s`, such as `5s` or `1m30s`); 5s when unset.
    #[serde(default = "default_idle_timeout")]
    #[schemars(regex(pattern = r"^([0-9]+[hms])+$"), length(max = 32))]
    #[x_kube(validation = Rule::new(IDLE_TIMEOUT_RULE).message(IDLE_TIMEOUT_MESSAGE))]
    pub idle_timeout: String,
    /// How the platform decides to add workers: `QUEUE_DELAY` by default for a queue,
    /// `REQUEST_COUNT` (the only one it takes) for a load balancer.
    pub scaler_type: Option<ScalerType>,
    /// Threshold of the scaler: seconds of queue delay, or requests per worker, 1 to
    /// 10,000; 4 when unset.
    #[serde(default = "default_scaler_value")]
    #[schemars(range(min = 1, max = 10000))]
    pub scaler_value: i32,
    /// Default execution timeout of a job, a duration in whole seconds from 5s to 168h
    /// (7 days), such as `10m`; a job's own policy may override it. The platform's default
    /// when unset.
    #[schemars(regex(pattern = r"^([0-9]+[hms])+$"), length(max = 32))]
    #[x_kube(validation = Rule::new(EXECUTION_TIMEOUT_RULE).message(EXECUTION_TIMEOUT_MESSAGE))]
    pub execution_timeout: Option<String>,
    /// Start workers from a cached snapshot to cut cold starts; false when unset.
    #[serde(default)]
    pub flashboot: bool,
    /// A `NetworkVolume` in this namespace to attach; the endpoint waits until it is Ready.
    /// Not with `networkVolumeId`.
    pub network_volume_ref: Option<LocalObjectReference>,
    /// Id of a network volume on the platform to attach, 1 to 64 characters. Not with
    /// `networkVolumeRef`.
    #[schemars(length(min = 1, max = 64))]
    pub network_volume_id: Option<String>,
    /// Name of a ConfigMap the operator writes with the endpoint's `id`, `type` and `url`
    /// (and `healthUrl` for a load balancer), owned by this object, so applications in the
    /// cluster can call the endpoint; none when unset.
    #[schemars(length(min = 1, max = 253))]
    pub write_connection_to: Option<String>,
    /// What happens to the remote endpoint when this object is deleted: `Delete` (the
    /// default) or `Orphan`.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    /// `Manage` the endpoint (the default), or `ObserveOnly`.
    #[serde(default)]
    pub management_policy: ManagementPolicy,
    /// Secret holding the API key for this object; the operator's default key when unset.
    pub credentials_secret_ref: Option<CredentialsSecretRef>,
}

fn default_workers_max() -> i32 {
    3
}

fn default_idle_timeout() -> String {
    "5s".into()
}

fn default_scaler_value() -> i32 {
    4
}

/// Job counts from the job API's `/health`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct JobCounts {
    pub completed: i64,
    pub failed: i64,
    pub in_progress: i64,
    pub in_queue: i64,
    pub retried: i64,
}

/// Worker counts from the job API's `/health`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct WorkerCounts {
    pub idle: i64,
    pub running: i64,
}

/// Queue and worker health of the endpoint.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EndpointHealth {
    pub jobs: JobCounts,
    pub workers: WorkerCounts,
}

/// What the platform reports about the endpoint.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EndpointStatus {
    #[serde(flatten)]
    pub common: CommonStatus,
    /// Base URL of the endpoint: its job API (`<serverless URL>/<id>/`) for a queue, the
    /// load balancer's base (`requestUrls.base`) for a load balancer.
    pub url: Option<String>,
    /// How requests reach the workers, as the platform has it.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub endpoint_type: Option<EndpointType>,
    /// A load balancer's health-check URL (`requestUrls.health`).
    pub health_url: Option<String>,
    /// GPU pools as the platform has them (REST v2).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<String>,
    /// CPU flavours as the platform has them, for a CPU endpoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_flavors: Vec<String>,
    /// A load balancer's workers by state (`GET /v2/serverless/{id}/workers`), read on
    /// every pass of a load-balancing endpoint.
    pub worker_states: Option<WorkerStates>,
    /// Name of the endpoint on the platform.
    pub name: Option<String>,
    /// Template the platform runs.
    pub template_id: Option<String>,
    /// GPU types as the platform has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_type_ids: Vec<String>,
    /// Worker limits as the platform has them.
    pub workers_min: Option<i32>,
    /// What the workers cost per hour now: the workers the platform reports (running and
    /// idle; at least `workersMin`) at the price of one, as `minWorkersCostPerHour`
    /// prices them. What a `Budget` counts for this endpoint once known.
    pub workers_cost_per_hour: Option<f64>,
    /// What the minimum workers cost per hour at the catalog's price: `workersMin` x
    /// `gpuCount` x the highest price per GPU of the endpoint's GPU types (REST v2: the
    /// serverless price; the seed API: the secure-cloud price, it has no serverless one).
    /// What a `Budget` counts for this endpoint until `workersCostPerHour` is known.
    pub min_workers_cost_per_hour: Option<f64>,
    pub workers_max: Option<i32>,
    /// Running workers over the maximum, for `kubectl get`.
    pub workers: Option<String>,
    /// Queue and workers, refreshed every poll interval while the endpoint is Ready.
    pub health: Option<EndpointHealth>,
    /// How far workers have moved to the latest release after the last change that
    /// replaced them; followed on every pass while `inProgress`.
    pub rollout: Option<EndpointRollout>,
}

/// Workers of an endpoint by state, as the platform's workers list sums them.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct WorkerStates {
    pub running: i64,
    pub idle: i64,
    pub initializing: i64,
    pub throttled: i64,
    pub unhealthy: i64,
    pub total: i64,
}

/// Progress of a rollout of a new release to an endpoint's workers.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EndpointRollout {
    /// Some workers still run an older release.
    pub in_progress: bool,
    /// Workers on the latest release.
    pub workers_on_latest: i64,
    /// All workers.
    pub workers_total: i64,
}

crate::managed::managed_kind!(Endpoint, EndpointStatus);
