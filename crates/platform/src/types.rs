//! Request and response types of the job API, the REST management API and the registry
//! delegation API. Field names are the spec's; records keep fields the spec does not list
//! in `extra`, so nothing the platform adds is lost or breaks decoding.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

// ---------------------------------------------------------------------------------------
// Job API
// ---------------------------------------------------------------------------------------

/// State of a job. Unknown states are kept verbatim rather than failing the decode.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum JobStatus {
    InQueue,
    InProgress,
    Completed,
    Failed,
    Cancelled,
    TimedOut,
    Other(String),
}

impl JobStatus {
    pub fn as_str(&self) -> &str {
        match self {
            JobStatus::InQueue => "IN_QUEUE",
            JobStatus::InProgress => "IN_PROGRESS",
            JobStatus::Completed => "COMPLETED",
            JobStatus::Failed => "FAILED",
            JobStatus::Cancelled => "CANCELLED",
            JobStatus::TimedOut => "TIMED_OUT",
            JobStatus::Other(s) => s,
        }
    }

    /// Finished: no further state change will happen by itself.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            JobStatus::Completed | JobStatus::Failed | JobStatus::Cancelled | JobStatus::TimedOut
        )
    }
}

impl From<String> for JobStatus {
    fn from(s: String) -> Self {
        match s.as_str() {
            "IN_QUEUE" => JobStatus::InQueue,
            "IN_PROGRESS" => JobStatus::InProgress,
            "COMPLETED" => JobStatus::Completed,
            "FAILED" => JobStatus::Failed,
            "CANCELLED" => JobStatus::Cancelled,
            "TIMED_OUT" => JobStatus::TimedOut,
            _ => JobStatus::Other(s),
        }
    }
}

impl From<JobStatus> for String {
    fn from(s: JobStatus) -> Self {
        s.as_str().to_owned()
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Body of `/run` and `/runsync`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobRequest {
    /// Parameters of the worker's handler; must be a JSON object.
    pub input: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<JobPolicy>,
    #[serde(rename = "s3Config", skip_serializing_if = "Option::is_none")]
    pub s3_config: Option<S3Config>,
}

impl JobRequest {
    /// A request with just an input.
    pub fn new(input: Value) -> Self {
        Self {
            input,
            ..Self::default()
        }
    }
}

/// Per-job policy; all durations in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobPolicy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execution_timeout: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low_priority: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
}

/// Object-storage settings handed to the worker. `access_secret` is masked in `Debug`.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct S3Config {
    pub access_id: String,
    pub access_secret: String,
    pub bucket_name: String,
    pub endpoint_url: String,
}

impl fmt::Debug for S3Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Config")
            .field("access_id", &self.access_id)
            .field("access_secret", &"***")
            .field("bucket_name", &self.bucket_name)
            .field("endpoint_url", &self.endpoint_url)
            .finish()
    }
}

/// `{id, status}`: the answer of `/run`, `/cancel` and `/retry`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobHandle {
    pub id: String,
    pub status: JobStatus,
}

/// A job as `/status` and `/runsync` report it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    #[serde(default)]
    pub id: Option<String>,
    pub status: JobStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_time: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_time: Option<i64>,
    /// Fields the spec does not list (for example an `error` text of a failed job).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One chunk of streamed output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamChunk {
    /// Worker-defined; see [`TextGenerationOutput`] for the shape the spec shows.
    #[serde(default)]
    pub output: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Value>,
}

impl StreamChunk {
    /// The output read as the spec's text-generation shape, when it is one.
    pub fn text_generation(&self) -> Option<TextGenerationOutput> {
        serde_json::from_value(self.output.clone()).ok()
    }

    /// The metrics read as the spec's text-generation shape, when they are one.
    pub fn text_generation_metrics(&self) -> Option<TextGenerationMetrics> {
        serde_json::from_value(self.metrics.clone()?).ok()
    }
}

/// The spec's text-generation chunk output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TextGenerationOutput {
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub text: Vec<String>,
}

/// The spec's text-generation chunk metrics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TextGenerationMetrics {
    pub avg_gen_throughput: f64,
    pub avg_prompt_throughput: f64,
    pub cpu_kv_cache_usage: f64,
    pub gpu_kv_cache_usage: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub pending: i64,
    pub running: i64,
    pub swapped: i64,
    pub stream_index: i64,
    pub scenario: String,
}

/// One answer of `/stream/{job_id}`: the spec's bare array of chunks, or the
/// `{status, stream}` object the official SDKs read. Both decode to this.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StreamBatch {
    /// Present in the object form only.
    pub status: Option<JobStatus>,
    pub chunks: Vec<StreamChunk>,
}

impl<'de> Deserialize<'de> for StreamBatch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Shape {
            Array(Vec<StreamChunk>),
            Object {
                #[serde(default)]
                status: Option<JobStatus>,
                #[serde(default)]
                stream: Vec<StreamChunk>,
            },
        }
        Ok(match Shape::deserialize(d)? {
            Shape::Array(chunks) => StreamBatch {
                status: None,
                chunks,
            },
            Shape::Object { status, stream } => StreamBatch {
                status,
                chunks: stream,
            },
        })
    }
}

/// `/health`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Health {
    #[serde(default)]
    pub jobs: HealthJobs,
    #[serde(default)]
    pub workers: HealthWorkers,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HealthJobs {
    pub completed: i64,
    pub failed: i64,
    pub in_progress: i64,
    pub in_queue: i64,
    pub retried: i64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HealthWorkers {
    pub idle: i64,
    pub running: i64,
    /// Other counters the platform may add (initializing, throttled, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `/purge-queue`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeResult {
    pub removed: i64,
    pub status: String,
}

// ---------------------------------------------------------------------------------------
// REST management API
// ---------------------------------------------------------------------------------------

/// A network volume.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkVolume {
    pub id: String,
    #[serde(default)]
    pub name: String,
    /// Gigabytes.
    #[serde(default)]
    pub size: i64,
    #[serde(default)]
    pub data_center_id: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `NetworkVolumeUpdateInput`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkVolumeUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Gigabytes after the update: 0..=4000 and larger than the current size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
}

/// Creation of a network volume (not in the spec; as the public platform takes it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkVolumeCreate {
    pub name: String,
    pub size: i64,
    pub data_center_id: String,
}

/// The spec's endpoint creation input, plus optional fields of the public platform.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointCreate {
    pub name: String,
    pub template_id: String,
    /// Priority order: the first available type is allocated.
    pub gpu_type_ids: Vec<String>,
    pub workers_min: i64,
    pub workers_max: i64,
    /// Seconds (the public platform: 1..=3600).
    pub idle_timeout: i64,
    /// `gpuCount`, `networkVolumeId`, `executionTimeoutMs`, `scalerType`, `scalerValue`.
    #[serde(flatten)]
    pub options: EndpointOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_center_ids: Option<Vec<String>>,
    /// Start workers from a cached snapshot (not in the spec; as the public platform has it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flashboot: Option<bool>,
}

/// Partial update of an endpoint: only the fields set are sent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub template_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_type_ids: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers_min: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers_max: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<i64>,
    /// `gpuCount`, `networkVolumeId`, `executionTimeoutMs`, `scalerType`, `scalerValue`.
    #[serde(flatten)]
    pub options: EndpointOptions,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flashboot: Option<bool>,
}

/// The optional fields an endpoint's create and update both take, each sent only when set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_count: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_volume_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_timeout_ms: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaler_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scaler_value: Option<i64>,
}

/// An endpoint record. The spec does not show it; these are the public platform's fields.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub template_id: Option<String>,
    #[serde(default)]
    pub gpu_type_ids: Vec<String>,
    #[serde(default)]
    pub workers_min: Option<i64>,
    #[serde(default)]
    pub workers_max: Option<i64>,
    #[serde(default)]
    pub idle_timeout: Option<i64>,
    #[serde(default)]
    pub gpu_count: Option<i64>,
    #[serde(default)]
    pub network_volume_id: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A template record (public platform fields; unknown ones kept in `extra`). `Debug`
/// shows the env keys only: values may be secrets.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Template {
    pub id: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub image_name: Option<String>,
    #[serde(default)]
    pub is_serverless: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_disk_in_gb: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_in_gb: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mount_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docker_start_cmd: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_registry_auth_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl std::fmt::Debug for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Template")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("image_name", &self.image_name)
            .field("env_keys", &env_keys(self.env.as_ref()))
            .finish_non_exhaustive()
    }
}

fn env_keys(env: Option<&Map<String, Value>>) -> Vec<&str> {
    env.map(|e| e.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// Creation of a template. `Debug` shows the env keys only.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateCreate {
    pub name: String,
    pub image_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_serverless: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_disk_in_gb: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_in_gb: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_mount_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub docker_start_cmd: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_registry_auth_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
}

impl std::fmt::Debug for TemplateCreate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateCreate")
            .field("name", &self.name)
            .field("image_name", &self.image_name)
            .field("env_keys", &env_keys(self.env.as_ref()))
            .finish_non_exhaustive()
    }
}

/// Partial update of a template (`TemplateUpdateInput`). `Debug` shows the env keys only.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_disk_in_gb: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_in_gb: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mount_path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub env: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docker_start_cmd: Option<Vec<String>>,
    /// `Some("")` removes the credential.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_registry_auth_id: Option<String>,
}

impl std::fmt::Debug for TemplateUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateUpdate")
            .field("name", &self.name)
            .field("image_name", &self.image_name)
            .field("env_keys", &env_keys(self.env.as_ref()))
            .finish_non_exhaustive()
    }
}

/// A container registry credential (`ContainerRegistryAuth`): its name only, the platform
/// never answers the username or password.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRegistryAuth {
    pub id: String,
    #[serde(default)]
    pub name: String,
}

/// Creation of a container registry credential. `Debug` masks the username and password.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRegistryAuthCreate {
    pub name: String,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for ContainerRegistryAuthCreate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContainerRegistryAuthCreate")
            .field("name", &self.name)
            .field("username", &"***")
            .field("password", &"***")
            .finish()
    }
}

/// A listing: a bare JSON array, or one wrapped in `data` / `items`.
pub(crate) struct Listing<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Listing<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Shape<T> {
            Array(Vec<T>),
            Data { data: Vec<T> },
            Items { items: Vec<T> },
        }
        Ok(Listing(match Shape::deserialize(d)? {
            Shape::Array(v) | Shape::Data { data: v } | Shape::Items { items: v } => v,
        }))
    }
}

// ---------------------------------------------------------------------------------------
// Registry delegation API
// ---------------------------------------------------------------------------------------

/// A registry delegation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delegation {
    pub id: String,
    pub delegator_user_id: String,
    pub cloud_user: String,
    pub repository: String,
    pub tag: String,
    pub cloud_region: String,
    /// ISO 8601; kept as sent (see [`Delegation::created_at_parsed`]).
    pub created_at: String,
    pub name: String,
    pub docker_registry_uri: String,
}

impl Delegation {
    /// The creation instant, when `created_at` is RFC 3339 (its offset is not kept).
    pub fn created_at_parsed(&self) -> Option<jiff::Timestamp> {
        self.created_at.parse().ok()
    }
}

#[derive(Deserialize)]
pub(crate) struct DelegationList {
    pub delegations: Vec<Delegation>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn job_status_round_trips_and_keeps_unknown() {
        let s: JobStatus = serde_json::from_value(json!("TIMED_OUT")).unwrap();
        assert_eq!(s, JobStatus::TimedOut);
        assert!(s.is_terminal());
        let s: JobStatus = serde_json::from_value(json!("WARMING")).unwrap();
        assert_eq!(s, JobStatus::Other("WARMING".into()));
        assert!(!s.is_terminal());
        assert_eq!(
            serde_json::to_value(JobStatus::InQueue).unwrap(),
            json!("IN_QUEUE")
        );
    }

    #[test]
    fn job_request_uses_spec_names() {
        let req = JobRequest {
            input: json!({"prompt": "hi"}),
            webhook: Some("https://example.com/hook".into()),
            policy: Some(JobPolicy {
                execution_timeout: Some(60_000),
                low_priority: Some(true),
                ttl: None,
            }),
            s3_config: Some(S3Config {
                access_id: "id".into(),
                access_secret: "hush".into(),
                bucket_name: "b".into(),
                endpoint_url: "https://s3.example".into(),
            }),
        };
        let v = serde_json::to_value(&req).unwrap();
        assert_eq!(
            v["policy"],
            json!({"executionTimeout": 60000, "lowPriority": true})
        );
        assert_eq!(v["s3Config"]["accessSecret"], "hush");
        assert_eq!(v["s3Config"]["endpointUrl"], "https://s3.example");
        assert!(!format!("{req:?}").contains("hush"));
    }

    #[test]
    fn status_example_of_the_notes_decodes() {
        let j: Job = serde_json::from_value(json!({
            "delayTime": 31618, "executionTime": 1437, "id": "abc",
            "output": {"x": 1}, "status": "COMPLETED", "error": null
        }))
        .unwrap();
        assert_eq!(j.delay_time, Some(31618));
        assert_eq!(j.status, JobStatus::Completed);
        assert!(j.extra.contains_key("error"));
    }

    #[test]
    fn health_example_of_the_notes_decodes() {
        let h: Health = serde_json::from_value(json!({
            "jobs": {"completed": 1, "failed": 5, "inProgress": 0, "inQueue": 2, "retried": 0},
            "workers": {"idle": 0, "running": 0, "throttled": 1}
        }))
        .unwrap();
        assert_eq!(h.jobs.failed, 5);
        assert_eq!(h.jobs.in_queue, 2);
        assert_eq!(h.workers.extra["throttled"], 1);
    }

    #[test]
    fn stream_batch_reads_both_shapes() {
        let chunk = json!({"output": {"input_tokens": 1, "output_tokens": 2, "text": ["a"]},
            "metrics": {"avg_gen_throughput": 1.0, "avg_prompt_throughput": 2.0,
            "cpu_kv_cache_usage": 0.0, "gpu_kv_cache_usage": 0.5, "input_tokens": 1,
            "output_tokens": 2, "pending": 0, "running": 1, "swapped": 0, "stream_index": 0,
            "scenario": "stream"}});
        let a: StreamBatch = serde_json::from_value(json!([chunk])).unwrap();
        assert_eq!(a.status, None);
        assert_eq!(a.chunks.len(), 1);
        assert_eq!(a.chunks[0].text_generation().unwrap().text, vec!["a"]);
        assert_eq!(a.chunks[0].text_generation_metrics().unwrap().running, 1);
        let o: StreamBatch =
            serde_json::from_value(json!({"status": "IN_PROGRESS", "stream": [chunk]})).unwrap();
        assert_eq!(o.status, Some(JobStatus::InProgress));
        assert_eq!(o.chunks.len(), 1);
        assert!(serde_json::from_value::<StreamBatch>(json!(5)).is_err());
    }

    #[test]
    fn listings_accept_wrapped_shapes() {
        let v = json!([{"id": "v1", "name": "a", "size": 10, "dataCenterId": "EU-RO-1"}]);
        let Listing(l): Listing<NetworkVolume> = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(l[0].data_center_id, "EU-RO-1");
        let Listing(l): Listing<NetworkVolume> =
            serde_json::from_value(json!({"data": v.clone()})).unwrap();
        assert_eq!(l.len(), 1);
        let Listing(l): Listing<NetworkVolume> =
            serde_json::from_value(json!({"items": v})).unwrap();
        assert_eq!(l.len(), 1);
    }

    #[test]
    fn endpoint_create_skips_unset_optionals() {
        let v = serde_json::to_value(EndpointCreate {
            name: "e".into(),
            template_id: "t".into(),
            gpu_type_ids: vec!["NVIDIA A40".into()],
            workers_min: 0,
            workers_max: 3,
            idle_timeout: 5,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            v,
            json!({"name": "e", "templateId": "t", "gpuTypeIds": ["NVIDIA A40"],
                   "workersMin": 0, "workersMax": 3, "idleTimeout": 5})
        );
    }

    #[test]
    fn delegation_decodes() {
        let d: DelegationList = serde_json::from_value(json!({"delegations": [{
            "id": "d1", "delegatorUserId": "u", "cloudUser": "c", "repository": "r",
            "tag": "t", "cloudRegion": "x-1", "createdAt": "2026-01-02T03:04:05Z",
            "name": "n", "dockerRegistryUri": "reg.example"}]}))
        .unwrap();
        assert!(d.delegations[0].created_at_parsed().is_some());
    }
}
