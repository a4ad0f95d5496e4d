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

/// GPU requirements, with a fallback list and a price cap.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GpuRequirements {
    /// GPU type ids in priority order, such as `NVIDIA GeForce RTX 4090`. The first type
    /// with stock for `count` GPUs within the price cap is deployed.
    #[schemars(length(min = 1, max = 32))]
    pub types: Vec<String>,
    /// GPUs in the pod.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 16))]
    pub count: i32,
    /// Highest acceptable price per GPU per hour, in US dollars.
    #[schemars(range(min = 0.0))]
    pub max_price_per_hour: Option<f64>,
}

fn one() -> i32 {
    1
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

/// A key of a Secret in the pod's namespace.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeySelector {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Key inside the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

/// Where an environment variable's value comes from.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EnvVarSource {
    /// A key of a Secret in the same namespace. The value goes to the platform and nowhere
    /// else: never into status, Events or logs.
    pub secret_key_ref: SecretKeySelector,
}

/// An environment variable of the pod's container.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[x_kube(validation = Rule::new("!(has(self.value) && has(self.valueFrom))").message("set value or valueFrom, not both"))]
#[serde(rename_all = "camelCase")]
pub struct EnvVar {
    /// Variable name: letters, digits and underscores, not starting with a digit.
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$"), length(max = 256))]
    pub name: String,
    /// Literal value.
    pub value: Option<String>,
    /// Value taken from a Secret.
    pub value_from: Option<EnvVarSource>,
}

/// Every entry of `spec.ports` is a port from 1 to 65535 (no leading zero) and `http` or `tcp`.
/// Shared with the Template kind, whose `spec.ports` has the same form.
pub(crate) const PORTS_RULE: &str = "self.all(p, p.matches('^([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])/(http|tcp)$'))";
pub(crate) const PORTS_MESSAGE: &str = "ports: each entry must be <port>/<type> with a port from 1 to 65535 and a type of http or tcp, such as 8888/http";

/// A GPU or CPU pod on the GPU cloud.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq)]
#[kube(
    group = "gpucloud.io",
    version = "v1alpha1",
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
    /// Running or Stopped. Automation may patch this field to stop pods at night.
    #[serde(default)]
    pub desired_state: DesiredState,
    /// Container image.
    #[schemars(length(min = 1, max = 512))]
    pub image: String,
    /// Arguments given to the container.
    pub docker_args: Option<String>,
    /// Ports to expose, each `<port>/<type>` with a port from 1 to 65535 and type `http` or
    /// `tcp`, such as `8888/http`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        inner(regex(pattern = r"^[0-9]{1,5}/(http|tcp)$"), length(max = 10)),
        length(max = 32)
    )]
    // The pattern checks the shape; the range needs the rule, which also says in words
    // what is wrong (a pattern failure only quotes the regex).
    #[x_kube(validation = Rule::new(PORTS_RULE).message(PORTS_MESSAGE))]
    pub ports: Vec<String>,
    /// Environment variables of the container.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub env: Vec<EnvVar>,
    /// Container disk in gigabytes.
    #[serde(default = "default_container_disk")]
    #[schemars(range(min = 1, max = 10000))]
    pub container_disk_gb: i32,
    /// Pod volume in gigabytes (kept while the pod is stopped).
    #[serde(default)]
    #[schemars(range(min = 0, max = 10000))]
    pub volume_gb: i32,
    /// Where the volume is mounted in the container.
    pub volume_mount_path: Option<String>,
    /// Fewest vCPUs acceptable.
    #[schemars(range(min = 1, max = 512))]
    pub min_vcpu_count: Option<i32>,
    /// Least memory acceptable, in gigabytes.
    #[schemars(range(min = 1, max = 4096))]
    pub min_memory_gb: Option<i32>,
    /// Which clouds may host the pod.
    #[serde(default)]
    pub cloud_type: CloudType,
    /// Only machines with one of these CUDA versions, such as `12.4`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_cuda_versions: Vec<String>,
    /// Data center to deploy in, such as `EU-RO-1`; any when unset.
    pub data_center_id: Option<String>,
    /// GPU type priority list, count and price cap: a GPU pod. Set exactly one of `gpu`
    /// and `cpu`.
    pub gpu: Option<GpuRequirements>,
    /// CPU flavor priority list, vCPUs and price cap: a CPU pod (REST v2 backend only).
    /// A CPU pod takes no `volumeGb`, `idleStop`, `allowedCudaVersions`,
    /// `globalNetworking`, `minVcpuCount`, `minMemoryGb` or `cloudType: COMMUNITY`.
    pub cpu: Option<CpuRequirements>,
    /// A private address on the platform's cross-data-center network, with the internal
    /// host name `<podId>.runpod.internal` in status (REST v2 backend only; GPU pods in
    /// data centers on the global network).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub global_networking: bool,
    /// A `NetworkVolume` in this namespace to attach; the pod waits until it is Ready.
    pub network_volume_ref: Option<LocalObjectReference>,
    /// Id of a network volume on the platform to attach.
    pub network_volume_id: Option<String>,
    // --- references to a Template and a RegistryCredential ---
    /// A `Template` in this namespace to deploy from (its image and settings, with `image`
    /// and the fields here on top); the pod waits until it is Ready. A change of its id (the
    /// Template replaced) is applied as `updateStrategy` says.
    pub template_ref: Option<LocalObjectReference>,
    /// A `RegistryCredential` in this namespace to pull a private `image` with (REST v2;
    /// with the seed API, pull through a Template's `registryCredentialRef`); the pod waits
    /// until it is Ready.
    pub registry_credential_ref: Option<LocalObjectReference>,
    /// What to do when a field changes that the platform cannot edit on a live pod.
    #[serde(default)]
    pub update_strategy: UpdateStrategy,
    /// What happens to the remote pod when this object is deleted.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    /// Manage the pod, or only observe it.
    #[serde(default)]
    pub management_policy: ManagementPolicy,
    /// Secret holding the API key for this object, instead of the operator's default.
    pub credentials_secret_ref: Option<CredentialsSecretRef>,
    // --- Cost guardrails; types in `super::guardrails`. ---
    /// Weekly windows in which the pod runs; outside them it is stopped.
    /// `desiredState: Stopped` always wins.
    pub schedule: Option<PodSchedule>,
    /// Stop the pod once it has run this long since its last start, such as `8h` or
    /// `1h30m` (units `h`, `m`, `s`). It stays stopped until `desiredState` is toggled,
    /// the spec is edited, or the next schedule window opens.
    #[schemars(regex(pattern = r"^([0-9]+[hms])+$"), length(max = 32))]
    #[x_kube(validation = Rule::new(DURATION_RULE).message(DURATION_MESSAGE))]
    pub max_runtime: Option<String>,
    /// Stop the pod once every GPU's utilisation stayed below a threshold for a duration.
    pub idle_stop: Option<IdleStop>,
    // --- End of cost guardrails. ---
    // --- Start and resume failures; types in `super::pod_startup`. ---
    /// What to do when the platform cannot resume the stopped pod because its host has no
    /// free GPU: `Wait` for it, or `Recreate` the pod elsewhere after `resumeTimeout`.
    #[serde(default)]
    pub resume_policy: ResumePolicy,
    /// How long refused resumes go on before `resumePolicy: Recreate` deploys a new pod,
    /// such as `10m` (units `h`, `m`, `s`). Default 10m.
    #[schemars(regex(pattern = r"^([0-9]+[hms])+$"), length(max = 32))]
    #[x_kube(validation = Rule::new(DURATION_RULE).message(DURATION_MESSAGE))]
    pub resume_timeout: Option<String>,
    /// Longest the pod may take from deploy or resume to running, such as `15m`; then
    /// `onStartupFailure` applies. Unset: no limit.
    #[schemars(regex(pattern = r"^([0-9]+[hms])+$"), length(max = 32))]
    #[x_kube(validation = Rule::new(DURATION_RULE).message(DURATION_MESSAGE))]
    pub startup_timeout: Option<String>,
    /// What happens to a pod not running at `startupTimeout`: `Stop` or `Terminate`. It
    /// stays so until the spec is edited.
    #[serde(default)]
    pub on_startup_failure: OnStartupFailure,
    // --- End of start and resume failures. ---
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
