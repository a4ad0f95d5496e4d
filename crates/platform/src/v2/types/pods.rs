//! Pods: the answer, the create and update bodies, actions, the list filter and log lines.

use serde::{Deserialize, Serialize};

use super::common::{
    Cloud, CpuConfig, CreateCpuConfig, CreateGpuConfig, GpuConfig, Mounts, open_enum,
};
use super::container::{ContainerConfig, CreateContainerConfig, UpdateContainerConfig};

open_enum! {
    /// Lifecycle state of a pod.
    PodStatus {
        Provisioning => "PROVISIONING",
        Starting => "STARTING",
        Running => "RUNNING",
        Exited => "EXITED",
        Error => "ERROR",
        Terminated => "TERMINATED",
    }
}

open_enum! {
    /// A state transition of `POST /v2/pods/{id}/action`.
    PodAction {
        Start => "start",
        Stop => "stop",
        Restart => "restart",
        Terminate => "terminate",
    }
}

open_enum! {
    /// Where a log line comes from.
    LogSource { Container => "container", System => "system" }
}

/// A pod as the platform describes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pod {
    pub id: String,
    pub name: String,
    pub status: PodStatus,
    /// Transitions the current status allows.
    #[serde(default)]
    pub actions: Vec<PodAction>,
    /// `image`, `args`, `disk`, `ports`, `env` and `registry`.
    #[serde(flatten)]
    pub container: ContainerConfig,
    #[serde(default)]
    pub mounts: Mounts,
    /// Set for GPU pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuConfig>,
    /// Set for CPU pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud: Option<Cloud>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_center_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh: Option<PodSsh>,
    /// Set for members of an instant cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<PodCluster>,
    /// Template the pod was created from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
    /// USD per hour now (0 when stopped).
    #[serde(default)]
    pub cost: f64,
    /// A locked pod cannot be stopped or reset.
    #[serde(default)]
    pub locked: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_networking: Option<PodGlobalNetworking>,
    /// Live utilisation; absent unless running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<PodRuntime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
}

/// Live figures of a running pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodRuntime {
    /// Seconds since the container started.
    #[serde(default)]
    pub uptime: u64,
    #[serde(default)]
    pub gpus: Vec<PodGpuUtilization>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<Utilization>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Utilization>,
    #[serde(default)]
    pub ports: Vec<PodRuntimePort>,
}

/// A percentage in use.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Utilization {
    #[serde(default)]
    pub util: i64,
}

/// One GPU's compute and memory use, in percent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGpuUtilization {
    #[serde(default)]
    pub util: i64,
    #[serde(default)]
    pub memory_util: i64,
}

/// A published port of a running pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodRuntimePort {
    #[serde(default)]
    pub private: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public: Option<u32>,
    #[serde(default, rename = "type")]
    pub port_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
}

/// How to reach the pod over SSH.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSsh {
    /// Through the platform's proxy (interactive shell only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<PodSshEndpoint>,
    /// Straight to the pod's published `22/tcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct: Option<PodSshEndpoint>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSshEndpoint {
    pub host: String,
    pub port: u32,
    pub username: String,
    #[serde(default)]
    pub command: String,
}

/// The pod's private cross-data-centre network.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodGlobalNetworking {
    pub enabled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_dns: Option<String>,
}

/// Membership of an instant cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodCluster {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
}

/// Body of `POST /v2/pods`. `name` is required, and exactly one of `gpu` or `cpu`; `image`
/// unless `template_id` supplies it. Unset fields are not sent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreatePod {
    pub name: String,
    /// `image`, `args`, `disk`, `ports`, `env` and `registry`.
    #[serde(flatten)]
    pub container: CreateContainerConfig,
    /// The platform's default is `SECURE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud: Option<Cloud>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<CreateGpuConfig>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CreateCpuConfig>,
    /// Preferred data centres; unset lets the scheduler choose.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_center_ids: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_networking: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mounts: Option<Mounts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_jupyter: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ssh: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_id: Option<String>,
}

/// Body of `PATCH /v2/pods/{id}`: only what is set changes. `container.registry:
/// Some(None)` sends `null`, which removes the credential.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdatePod {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `image`, `args`, `disk`, `ports`, `env` and `registry`.
    #[serde(flatten)]
    pub container: UpdateContainerConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mounts: Option<Mounts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locked: Option<bool>,
    /// Takes effect at the next start or restart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub global_networking: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_id: Option<String>,
}

/// Filter of `GET /v2/pods`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodListQuery {
    /// Also list members of instant clusters (left out by default).
    pub include_cluster_pods: Option<bool>,
}

/// Body of `POST /v2/pods/{id}/action`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct PodActionRequest {
    pub action: PodAction,
}

/// Where `GET /v2/pods/{id}/logs` starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogQuery {
    /// Both sources when unset.
    pub source: Option<LogSource>,
    /// Past lines to send first (the platform's default is 100, at most 5000).
    pub tail: Option<u32>,
    /// RFC 3339 time to resume from; overrides `tail`.
    pub since: Option<String>,
    /// A previous line's `id` to resume after; overrides `since` and `tail`.
    pub last_event_id: Option<String>,
}

/// One log line of a pod (or a serverless worker).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogLine {
    pub source: LogSource,
    pub line: String,
    /// RFC 3339.
    #[serde(default)]
    pub ts: String,
    /// The event's id (its timestamp): give it back as `last_event_id` to resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl Default for PodStatus {
    fn default() -> Self {
        PodStatus::Other(String::new())
    }
}

impl PodStatus {
    /// Billing compute: the container is being placed, starting or running.
    pub fn is_active(&self) -> bool {
        matches!(
            self,
            PodStatus::Provisioning | PodStatus::Starting | PodStatus::Running
        )
    }
}
