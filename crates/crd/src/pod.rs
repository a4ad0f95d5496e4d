//! `Pod`: an on-demand GPU or CPU pod on the platform.

// Each `printcolumn(...)` repeats the same keys, which clippy takes for duplicates.
#![allow(clippy::duplicated_attributes)]

use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    CommonStatus, CredentialsSecretRef, DeletionPolicy, LocalObjectReference, ManagementPolicy,
};
pub use super::guardrails::{
    DURATION_MESSAGE, DURATION_RULE, GuardrailStatus, IdleStop, PodSchedule, ScheduleWindow,
};
pub use super::pod_startup::{
    OnStartupFailure, PodReplacement, ResumePolicy, ResumeStatus, StartFailure, StartupHold,
    StartupStatus,
};
use crate::container::ContainerSettings;
use crate::gpu::{Gpu, type_ids_required};

/// Whether the pod should be running or stopped.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum DesiredState {
    /// Deployed and running; resumed when it was stopped.
    #[default]
    Running,
    /// Stopped: the GPUs are released and the volume data kept.
    Stopped,
}

/// Which of the platform's clouds may host the pod.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "UPPERCASE")]
pub enum CloudType {
    #[default]
    All,
    Secure,
    Community,
}

/// What to do when a field changes that the platform cannot edit on a live pod.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum UpdateStrategy {
    /// Terminate the pod and deploy a new one.
    #[default]
    Recreate,
    /// Touch nothing and report `Synced=False` with reason `ImmutableFieldChanged`.
    Never,
}

/// The vCPU counts a CPU pod may have: the platform takes powers of two from 2.
pub const VCPU_COUNT_RULE: &str = "self in [2, 4, 8, 16, 32, 64, 128, 256, 512]";
pub const VCPU_COUNT_MESSAGE: &str =
    "cpu.vcpuCount must be a power of two from 2 to 512, such as 4 or 8";

/// CPU requirements of a CPU pod: flavors in priority order, a size and a price cap.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CpuRequirements {
    /// CPU flavor ids in priority order, as `GET /v2/catalog/cpus` lists them, such as
    /// `cpu3c`. The first flavor with room for `vcpuCount` vCPUs within the price cap is
    /// deployed.
    #[schemars(length(min = 1, max = 16), inner(length(min = 1, max = 64)))]
    pub flavors: Vec<String>,
    /// vCPUs of the pod: a power of two from 2 to 512 (its memory follows from the flavor).
    #[schemars(range(min = 2, max = 512))]
    #[x_kube(validation = Rule::new(VCPU_COUNT_RULE).message(VCPU_COUNT_MESSAGE))]
    pub vcpu_count: i32,
    /// Highest acceptable price of the whole pod per hour, in US dollars.
    #[schemars(range(min = 0.0))]
    pub max_price_per_hour: Option<f64>,
}

/// A GPU pod's GPUs: the shared GPU block and a price cap.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = type_ids_required)]
pub struct PodGpu {
    #[serde(flatten)]
    pub gpu: Gpu,
    /// Highest acceptable price per GPU per hour, in US dollars, at least 0; no cap when
    /// unset.
    #[schemars(range(min = 0.0))]
    pub max_price_per_hour: Option<f64>,
}

/// A GPU or CPU pod on the GPU cloud.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq)]
#[kube(
    group = "gpucloud.io",
    version = "v1beta1",
    kind = "Pod",
    namespaced,
    status = "PodStatus",
    shortname = "gpod",
    category = "gpucloud",
    doc = "An on-demand GPU or CPU pod on the GPU cloud, with a fallback list and a price cap.",
    printcolumn(name = "STATE", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "GPU", type_ = "string", json_path = ".status.gpuTypeId"),
    printcolumn(name = "CPU", type_ = "string", json_path = ".status.cpuFlavorId"),
    printcolumn(name = "COST/HR", type_ = "number", json_path = ".status.costPerHour")
)]
#[x_kube(
    validation = Rule::new("!(has(self.networkVolumeRef) && has(self.networkVolumeId))").message("set networkVolumeRef or networkVolumeId, not both"),
    // CPU pods: exactly one of gpu and cpu, and none of the GPU-only fields.
    validation = Rule::new("has(self.gpu) != has(self.cpu)").message("set exactly one of gpu and cpu: gpu for a GPU pod, cpu for a CPU pod"),
    validation = Rule::new("!has(self.cpu) || !has(self.idleStop)").message("idleStop watches GPU utilisation: a CPU pod (cpu) takes no idleStop").field_path(".idleStop"),
    validation = Rule::new("!has(self.cpu) || !has(self.volumeGb) || self.volumeGb == 0").message("volumeGb: a CPU pod (cpu) has no pod volume on its host; use a network volume (networkVolumeRef)").field_path(".volumeGb"),
    validation = Rule::new("!has(self.cpu) || !has(self.allowedCudaVersions) || size(self.allowedCudaVersions) == 0").message("allowedCudaVersions is for GPU pods: a CPU pod (cpu) has no CUDA").field_path(".allowedCudaVersions"),
    validation = Rule::new("!has(self.cpu) || !has(self.cloudType) || self.cloudType != 'COMMUNITY'").message("cloudType COMMUNITY: CPU pods (cpu) run in the secure cloud only").field_path(".cloudType"),
    validation = Rule::new("!has(self.cpu) || !has(self.globalNetworking) || !self.globalNetworking").message("globalNetworking needs an NVIDIA GPU: a CPU pod (cpu) cannot join the global network").field_path(".globalNetworking"),
    validation = Rule::new("!has(self.cpu) || (!has(self.minVcpuCount) && !has(self.minMemoryGb))").message("minVcpuCount and minMemoryGb choose a GPU pod's machine: a CPU pod (cpu) takes its size from cpu.vcpuCount and its flavor").field_path(".minVcpuCount")
)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    /// `Running` (the default) or `Stopped`. Automation may patch this field to stop pods at
    /// night.
    #[serde(default)]
    pub desired_state: DesiredState,
    /// Container image, 1 to 512 characters.
    #[schemars(length(min = 1, max = 512))]
    pub image: String,
    /// Arguments, ports and environment of the container.
    #[serde(flatten)]
    pub container: ContainerSettings,
    /// Container disk in gigabytes (wiped on restart), 1 to 10,000; 20 when unset.
    #[serde(default = "default_container_disk")]
    #[schemars(range(min = 1, max = 10000))]
    pub container_disk_gb: i32,
    /// Pod volume in gigabytes, kept while the pod is stopped, 0 to 10,000; 0 (none) when
    /// unset. A CPU pod takes none.
    #[serde(default)]
    #[schemars(range(min = 0, max = 10000))]
    pub volume_gb: i32,
    /// Where the volume is mounted in the container: an absolute path of at most 255
    /// characters. Unset: the Template's (with `templateRef`), else the platform's default.
    #[schemars(regex(pattern = r"^/.*"), length(max = 255))]
    pub volume_mount_path: Option<String>,
    /// Fewest vCPUs acceptable on a GPU pod's machine, 1 to 512; any when unset.
    #[schemars(range(min = 1, max = 512))]
    pub min_vcpu_count: Option<i32>,
    /// Least memory acceptable on a GPU pod's machine, in gigabytes, 1 to 4,096; any when
    /// unset.
    #[schemars(range(min = 1, max = 4096))]
    pub min_memory_gb: Option<i32>,
    /// Which clouds may host the pod: `ALL` (the default), `SECURE` or `COMMUNITY` (GPU pods
    /// only).
    #[serde(default)]
    pub cloud_type: CloudType,
    /// CUDA versions (`major.minor`, such as `12.4`) a GPU pod's machine may run, at most
    /// 32; any when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(regex(pattern = r"^[0-9]+\.[0-9]+$")), length(max = 32))]
    pub allowed_cuda_versions: Vec<String>,
    /// Data center to deploy in, such as `EU-RO-1`; any when unset.
    pub data_center_id: Option<String>,
    /// GPU types in priority order, GPUs in the pod and a price cap: a GPU pod. Set exactly
    /// one of `gpu` and `cpu`.
    pub gpu: Option<PodGpu>,
    /// CPU flavor priority list, vCPUs and price cap: a CPU pod (REST v2 backend only).
    /// A CPU pod takes no `volumeGb`, `idleStop`, `allowedCudaVersions`,
    /// `globalNetworking`, `minVcpuCount`, `minMemoryGb` or `cloudType: COMMUNITY`.
    pub cpu: Option<CpuRequirements>,
    /// A private address on the platform's cross-data-center network, with the internal
    /// host name `<podId>.runpod.internal` in status (REST v2 backend only; GPU pods in
    /// data centers on the global network). False when unset.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub global_networking: bool,
    /// A `NetworkVolume` in this namespace to attach; the pod waits until it is Ready. Not
    /// with `networkVolumeId`.
    pub network_volume_ref: Option<LocalObjectReference>,
    /// Id of a network volume on the platform to attach. Not with `networkVolumeRef`.
    pub network_volume_id: Option<String>,
    /// A `Template` in this namespace to deploy from (its image and settings, with `image`
    /// and the fields here on top); the pod waits until it is Ready. A change of its id (the
    /// Template replaced) is applied as `updateStrategy` says.
    pub template_ref: Option<LocalObjectReference>,
    /// A `RegistryCredential` in this namespace to pull a private `image` with (REST v2;
    /// with the seed API, pull through a Template's `registryCredentialRef`); the pod waits
    /// until it is Ready.
    pub registry_credential_ref: Option<LocalObjectReference>,
    /// What to do when a field changes that the platform cannot edit on a live pod:
    /// `Recreate` (the default) or `Never`.
    #[serde(default)]
    pub update_strategy: UpdateStrategy,
    /// What happens to the remote pod when this object is deleted: `Delete` (the default)
    /// or `Orphan`.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    /// `Manage` the pod (the default), or `ObserveOnly`.
    #[serde(default)]
    pub management_policy: ManagementPolicy,
    /// Secret holding the API key for this object; the operator's default key when unset.
    pub credentials_secret_ref: Option<CredentialsSecretRef>,
    /// Weekly windows in which the pod runs; outside them it is stopped. Always running
    /// when unset. `desiredState: Stopped` always wins.
    pub schedule: Option<PodSchedule>,
    /// Stop the pod once it has run this long since its last start, such as `8h` or
    /// `1h30m` (units `h`, `m`, `s`, longer than zero); no limit when unset. It stays
    /// stopped until `desiredState` is toggled, the spec is edited, or the next schedule
    /// window opens.
    #[schemars(regex(pattern = r"^([0-9]+[hms])+$"), length(max = 32))]
    #[x_kube(validation = Rule::new(DURATION_RULE).message(DURATION_MESSAGE))]
    pub max_runtime: Option<String>,
    /// Stop the pod once every GPU's utilisation stayed below a threshold for a duration;
    /// never when unset. GPU pods only.
    pub idle_stop: Option<IdleStop>,
    /// What to do when the platform cannot resume the stopped pod because its host has no
    /// free GPU: `Wait` for it (the default), or `Recreate` the pod elsewhere after
    /// `resumeTimeout`.
    #[serde(default)]
    pub resume_policy: ResumePolicy,
    /// How long refused resumes go on before `resumePolicy: Recreate` deploys a new pod,
    /// such as `10m` (units `h`, `m`, `s`, longer than zero); 10m when unset.
    #[schemars(regex(pattern = r"^([0-9]+[hms])+$"), length(max = 32))]
    #[x_kube(validation = Rule::new(DURATION_RULE).message(DURATION_MESSAGE))]
    pub resume_timeout: Option<String>,
    /// Longest the pod may take from deploy or resume to running, such as `15m` (units
    /// `h`, `m`, `s`, longer than zero); then `onStartupFailure` applies. No limit when
    /// unset.
    #[schemars(regex(pattern = r"^([0-9]+[hms])+$"), length(max = 32))]
    #[x_kube(validation = Rule::new(DURATION_RULE).message(DURATION_MESSAGE))]
    pub startup_timeout: Option<String>,
    /// What happens to a pod not running at `startupTimeout`: `Stop` (the default) or
    /// `Terminate`. It stays so until the spec is edited.
    #[serde(default)]
    pub on_startup_failure: OnStartupFailure,
}

fn default_container_disk() -> i32 {
    20
}

/// Where the pod is in its life, as the operator sees it.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum PodPhase {
    /// Waiting for something (a dependency, capacity) before deploying.
    #[default]
    Pending,
    /// A deploy was sent.
    Deploying,
    /// Deployed, not booted yet.
    Starting,
    Running,
    Stopping,
    Stopped,
    /// Cannot reach the desired state without a change to the spec.
    Failed,
}

/// A port of the running pod.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PodPortStatus {
    pub private_port: i32,
    pub public_ip: Option<String>,
    pub public_port: Option<i32>,
    /// `http` or `tcp`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Address to open in a browser, for http ports.
    pub url: Option<String>,
}

/// Where other globally networked pods of the account reach this pod.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct GlobalNetworkingStatus {
    pub ip: Option<String>,
    /// `<podId>.runpod.internal`.
    pub internal_dns: Option<String>,
}

/// Utilisation of one GPU.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GpuUtilisation {
    pub id: String,
    pub gpu_util_percent: f64,
    pub memory_util_percent: f64,
}

/// What the platform reports about the pod.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodStatus {
    #[serde(flatten)]
    pub common: CommonStatus,
    /// Where the pod is in its life.
    pub phase: Option<PodPhase>,
    /// The platform's own word for the pod's state, such as RUNNING or EXITED.
    pub desired_status: Option<String>,
    /// Name of the pod on the platform.
    pub remote_name: Option<String>,
    /// GPU type the pod got.
    pub gpu_type_id: Option<String>,
    pub gpu_count: Option<i32>,
    /// CPU flavor a CPU pod got.
    pub cpu_flavor_id: Option<String>,
    /// vCPUs of a CPU pod.
    pub vcpu_count: Option<i32>,
    /// The pod's address on the global network, when `globalNetworking` is on.
    pub global_networking: Option<GlobalNetworkingStatus>,
    /// Price of the whole pod per hour, in US dollars.
    pub cost_per_hour: Option<f64>,
    pub machine_id: Option<String>,
    pub pod_host_id: Option<String>,
    pub uptime_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<PodPortStatus>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuUtilisation>,
    /// What the cost guardrails (schedule, maxRuntime, idleStop) see and hold.
    pub guardrails: Option<GuardrailStatus>,
    /// A start under way or given up on, and what the pod's system log said.
    pub startup: Option<StartupStatus>,
    /// Resumes refused for lack of a free GPU on the host, and a replacement pod.
    pub resume: Option<ResumeStatus>,
}

crate::managed::managed_kind!(Pod, PodStatus);
