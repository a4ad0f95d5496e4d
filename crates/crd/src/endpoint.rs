//! `Endpoint`: a queue-based serverless endpoint on the platform.

// Each `printcolumn(...)` repeats the same keys, which clippy takes for duplicates.
#![allow(clippy::duplicated_attributes)]

use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    CommonStatus, CredentialsSecretRef, DeletionPolicy, LocalObjectReference, ManagementPolicy,
};

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

/// A serverless endpoint on the GPU cloud: a template deployed on workers that scale with
/// the job queue.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq)]
#[kube(
    group = "gpucloud.io",
    version = "v1alpha1",
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
    validation = Rule::new("has(self.templateId) != has(self.templateRef)").message("set exactly one of templateId and templateRef")
)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSpec {
    /// Name of the endpoint on the platform. Defaults to `<namespace>-<name>` with a short
    /// suffix from the object's UID, so that the operator can find it again after a crash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    pub name: Option<String>,
    /// Id of a platform template to deploy on the workers. Exactly one of `templateId` and
    /// `templateRef`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 128))]
    pub template_id: Option<String>,
    /// A `Template` in this namespace to deploy on the workers: the endpoint waits until it
    /// is Ready and follows it when it is replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_ref: Option<LocalObjectReference>,
    /// GPU type ids in priority order: the first available one is allocated, otherwise the
    /// next.
    #[schemars(length(min = 1, max = 32))]
    pub gpu_type_ids: Vec<String>,
    /// GPUs per worker.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 8))]
    pub gpu_count: i32,
    /// Workers kept running even with an empty queue.
    #[serde(default)]
    #[schemars(range(min = 0, max = 1000))]
    pub workers_min: i32,
    /// Upper bound on workers.
    #[serde(default = "default_workers_max")]
    #[schemars(range(min = 0, max = 1000))]
    pub workers_max: i32,
    /// Seconds an idle worker is kept before it is stopped, 1 to 3600.
    #[serde(default = "default_idle_timeout")]
    #[schemars(range(min = 1, max = 3600))]
    pub idle_timeout_seconds: i32,
    /// How the platform decides to add workers.
    #[serde(default)]
    pub scaler_type: ScalerType,
    /// Threshold of the scaler: seconds of queue delay, or requests per worker.
    #[serde(default = "default_scaler_value")]
    #[schemars(range(min = 1, max = 10000))]
    pub scaler_value: i32,
    /// Default execution timeout of a job in milliseconds (5 seconds to 7 days); a job's
    /// own policy may override it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 5000, max = 604_800_000))]
    pub execution_timeout_ms: Option<i64>,
    /// Start workers from a cached snapshot to cut cold starts.
    #[serde(default)]
    pub flashboot: bool,
    /// A `NetworkVolume` in this namespace to attach; the endpoint waits until it is Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_volume_ref: Option<LocalObjectReference>,
    /// Id of a network volume on the platform to attach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 64))]
    pub network_volume_id: Option<String>,
    /// Name of a ConfigMap the operator writes with the endpoint's `id` and `url`, owned by
    /// this object, so applications in the cluster can call the endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub write_connection_to: Option<String>,
    /// What happens to the remote endpoint when this object is deleted.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    /// Manage the endpoint, or only observe it.
    #[serde(default)]
    pub management_policy: ManagementPolicy,
    /// Secret holding the API key for this object, instead of the operator's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EndpointStatus {
    #[serde(flatten)]
    pub common: CommonStatus,
    /// Base URL of the endpoint's job API, `<serverless URL>/<id>/`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Name of the endpoint on the platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Template the platform runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_id: Option<String>,
    /// GPU types as the platform has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_type_ids: Vec<String>,
    /// Worker limits as the platform has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers_min: Option<i32>,
    /// What the minimum workers cost per hour at the catalog's price: `workersMin` x
    /// `gpuCount` x the highest price per GPU of the endpoint's GPU types (REST v2: the
    /// serverless price; the seed API: the secure-cloud price, it has no serverless one).
    /// What a `Budget` counts for this endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_workers_cost_per_hour: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers_max: Option<i32>,
    /// Running workers over the maximum, for `kubectl get`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers: Option<String>,
    /// Queue and workers, refreshed every poll interval while the endpoint is Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<EndpointHealth>,
    /// How far workers have moved to the latest release after the last change that
    /// replaced them; followed on every pass while `inProgress`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<EndpointRollout>,
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
