//! The Pod's decisions, pure: the desired pod from the spec, the plan against the remote
//! pod, readiness, phase and status. The adapter (`super::PodAdapter`) calls them with
//! what it resolved and listed; they are unit tested without a network.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use gpucloud_crd::Pod;
use gpucloud_crd::pod::{
    CloudType, DesiredState, GlobalNetworkingStatus, GpuUtilisation, PodPhase, PodPortStatus,
    PodStatus, UpdateStrategy,
};
use gpucloud_platform::PlatformError;
use gpucloud_platform::domain::{EXITED, Pod as RemotePod, PodRequest, RUNNING, TERMINATED};

use gpucloud_crd::guardrails::Guardrail;
use gpucloud_engine::adapter::{Plan, Readiness};
use gpucloud_engine::credentials::AccountId;
use gpucloud_engine::failure::Failure;
use gpucloud_engine::marker::{TAG_ENV, is_mark_env};

use super::BudgetSlot;

/// The pod as the spec wants it, with Secrets and the network volume resolved: what a
/// deploy sends (`request`, whose `Debug` hides env values) and what decides where and
/// whether it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredPod {
    /// Env is `(key, value)` with the tag included, sorted by key; ports are normalised
    /// `port/type` entries, sorted.
    pub request: PodRequest,
    pub cloud_type: CloudType,
    pub data_center_id: Option<String>,
    pub gpu_types: Vec<String>,
    /// `gpu.maxPricePerHour` (per GPU) of a GPU pod, `cpu.maxPricePerHour` (the whole pod)
    /// of a CPU pod; [`DesiredPod::price_cap`] is the whole pod's either way.
    pub max_price_per_hour: Option<f64>,
    /// Set for a CPU pod (then `gpu_types` is empty and the request asks for no GPU).
    pub cpu: Option<DesiredCpu>,
    pub desired_state: DesiredState,
    pub update_strategy: UpdateStrategy,
}

/// What a CPU pod asks for: flavors in priority order and a size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesiredCpu {
    pub flavors: Vec<String>,
    pub vcpu_count: u32,
}

impl DesiredPod {
    /// The highest hourly price of the whole pod the spec accepts: a GPU pod's cap is per
    /// GPU (so times the count), a CPU pod's is the pod's.
    pub fn price_cap(&self) -> Option<f64> {
        let cap = self.max_price_per_hour?;
        Some(match self.cpu {
            Some(_) => cap,
            None => cap * f64::from(self.request.gpu_count.max(1)),
        })
    }
}

/// The desired pod and the account it is deployed with (the GPU catalog is per account).
#[derive(Clone, Debug)]
pub struct ResolvedPod {
    pub account: AccountId,
    pub pod: DesiredPod,
}

/// An in-place change of a live pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodChange {
    Resume,
    Stop,
    /// A stop decided by a cost guardrail, with why (see [`gpucloud_policy::guardrails`]).
    StopBy(Guardrail, String),
    /// A stop of a pod not running at `startupTimeout`, with why.
    GiveUpStart(String),
    /// A pod whose resumes were refused too long moves to a new one (see `super::resume`).
    Relocate(Box<Relocation>),
}

/// A relocation to make: everything `apply` needs, which sees no object.
#[derive(Clone, Debug)]
pub struct Relocation {
    /// `namespace/name`.
    pub key: String,
    /// Whose Budget reservation the replacement moves.
    pub budget: BudgetSlot,
    /// The object's UID: the tag every pod it made carries.
    pub uid: String,
    pub old_id: String,
    pub refused_since: Timestamp,
    pub resolved: ResolvedPod,
}

impl PartialEq for Relocation {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.old_id == other.old_id
    }
}

impl Eq for Relocation {}

/// The remote name: namespace, name and the first 8 hex digits of the UID.
pub fn remote_name(obj: &Pod) -> String {
    gpucloud_engine::marker::default_remote_name(obj)
}

pub(super) fn secure_cloud(c: CloudType) -> Option<bool> {
    match c {
        CloudType::All => None,
        CloudType::Secure => Some(true),
        CloudType::Community => Some(false),
    }
}

/// Sorted, trimmed `port/type` entries of a comma-separated list.
pub(super) fn normalise_ports<'a>(ports: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut v: Vec<String> = ports
        .into_iter()
        .flat_map(|p| p.split(','))
        .map(|p| p.trim().to_ascii_lowercase())
        .filter(|p| !p.is_empty())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Pure: the desired pod, given the env already resolved (without the tag) and the
/// network volume id.
pub fn desired_of(
    obj: &Pod,
    mut env: Vec<(String, String)>,
    network_volume_id: Option<String>,
) -> DesiredPod {
    let s = &obj.spec;
    env.retain(|(k, _)| k != TAG_ENV);
    env.push((TAG_ENV.to_string(), obj.uid().unwrap_or_default()));
    env.sort();
    DesiredPod {
        request: PodRequest {
            name: remote_name(obj),
            image: s.image.clone(),
            docker_args: s.container.args.clone().filter(|a| !a.is_empty()),
            ports: normalise_ports(s.container.ports.iter().map(String::as_str)),
            env,
            container_disk_gb: s.container_disk_gb,
            volume_gb: s.volume_gb,
            volume_mount_path: s.volume_mount_path.clone(),
            min_vcpu_count: s.min_vcpu_count,
            min_memory_gb: s.min_memory_gb,
            allowed_cuda_versions: s.allowed_cuda_versions.clone(),
            gpu_count: s.gpu.as_ref().map_or(0, |g| g.gpu.count),
            network_volume_id: network_volume_id.or_else(|| s.network_volume_id.clone()),
            // Resolved from spec.templateRef / spec.registryCredentialRef by `desired`.
            template_id: None,
            registry_id: None,
            global_networking: s.global_networking,
        },
        cloud_type: s.cloud_type,
        data_center_id: s.data_center_id.clone(),
        gpu_types: s.gpu.as_ref().map(|g| g.gpu.type_ids.clone()).unwrap_or_default(),
        max_price_per_hour: match (&s.gpu, &s.cpu) {
            (Some(g), _) => g.max_price_per_hour,
            (None, Some(c)) => c.max_price_per_hour,
            (None, None) => None,
        },
        cpu: s.cpu.as_ref().map(|c| DesiredCpu {
            flavors: c.flavors.clone(),
            vcpu_count: c.vcpu_count.unsigned_abs(),
        }),
        desired_state: s.desired_state,
        update_strategy: s.update_strategy,
    }
}

/// Pure: the fields of `desired` a live pod cannot take without a new deploy.
pub fn immutable_changes(desired: &DesiredPod, remote: &RemotePod) -> Vec<&'static str> {
    let mut changed = Vec::new();
    if remote.image_name != desired.request.image {
        changed.push("image");
    }
    if let (Some(want), Some(have)) = (&desired.request.template_id, &remote.template_id)
        && want != have
    {
        changed.push("templateRef");
    }
    let have_args = remote.docker_args.clone().filter(|a| !a.is_empty());
    if have_args != desired.request.docker_args {
        changed.push("args");
    }
    let have_ports = normalise_ports(remote.ports.as_deref());
    if have_ports != desired.request.ports {
        changed.push("ports");
    }
    // The tag is the operator's bookmark, not the user's env: a pod adopted by external-id
    // never had it, and that is no reason to replace (or refuse) it.
    let mut have_env: Vec<(&str, &str)> = remote
        .env
        .iter()
        .filter_map(|e| e.split_once('='))
        .filter(|(k, _)| !is_mark_env(k))
        .collect();
    have_env.sort();
    let want_env: Vec<(&str, &str)> = desired
        .request
        .env
        .iter()
        .filter(|(k, _)| !is_mark_env(k))
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    if have_env != want_env {
        changed.push("env");
    }
    if remote
        .container_disk_in_gb
        .is_some_and(|v| v != i64::from(desired.request.container_disk_gb))
    {
        changed.push("containerDiskGb");
    }
    if remote
        .volume_in_gb
        .is_some_and(|v| v != i64::from(desired.request.volume_gb))
    {
        changed.push("volumeGb");
    }
    if desired.request.volume_mount_path.is_some()
        && remote.volume_mount_path != desired.request.volume_mount_path
    {
        changed.push("volumeMountPath");
    }
    if remote
        .gpu_count
        .is_some_and(|n| n != i64::from(desired.request.gpu_count))
    {
        changed.push("gpu.count");
    }
    let machine = remote.machine.clone().unwrap_or_default();
    if let Some(t) = &machine.gpu_type_id
        && !desired.gpu_types.contains(t)
    {
        changed.push("gpu.types");
    }
    changed.extend(cpu_changes(desired, remote));
    if let (Some(want), Some(have)) = (&desired.data_center_id, &machine.data_center_id)
        && want != have
    {
        changed.push("dataCenterId");
    }
    if let (Some(want), Some(have)) = (secure_cloud(desired.cloud_type), machine.secure_cloud)
        && want != have
    {
        changed.push("cloudType");
    }
    if let (Some(want), Some(have)) = (desired.request.min_vcpu_count, remote.vcpu_count)
        && have + 1e-9 < f64::from(want)
    {
        changed.push("minVcpuCount");
    }
    if let (Some(want), Some(have)) = (desired.request.min_memory_gb, remote.memory_in_gb)
        && have + 1e-9 < f64::from(want)
    {
        changed.push("minMemoryGb");
    }
    if desired.request.network_volume_id.is_some()
        && remote.network_volume_id != desired.request.network_volume_id
    {
        changed.push("networkVolume");
    }
    changed
}

/// Pure: what of a CPU pod (and of global networking) a live pod cannot take: a GPU pod
/// that should be a CPU pod or the reverse, another flavor, another size.
fn cpu_changes(desired: &DesiredPod, remote: &RemotePod) -> Vec<&'static str> {
    let mut changed = Vec::new();
    match (&desired.cpu, &remote.cpu_flavor_id) {
        (Some(want), Some(have)) => {
            if !want.flavors.contains(have) {
                changed.push("cpu.flavors");
            }
            if remote
                .vcpu_count
                .is_some_and(|n| (n - f64::from(want.vcpu_count)).abs() > 1e-9)
            {
                changed.push("cpu.vcpuCount");
            }
        }
        // A CPU pod that should have GPUs; a GPU pod that should be a CPU pod shows as
        // a GPU type outside the (empty) list of types.
        (None, Some(_)) => changed.push("gpu"),
        (Some(_), None) if remote.gpu_count.is_some_and(|n| n > 0) => changed.push("cpu"),
        _ => {}
    }
    if desired.request.global_networking != remote.global_networking.is_some() {
        changed.push("globalNetworking");
    }
    changed
}

/// Pure: the spec field the seed backend cannot deploy (`cpu`, `globalNetworking`), if any.
pub fn unsupported_field(spec: &gpucloud_crd::PodSpec) -> Option<&'static str> {
    if spec.cpu.is_some() {
        Some("cpu")
    } else if spec.global_networking {
        Some("globalNetworking")
    } else {
        None
    }
}

/// Pure: a pod found again after a create whose pass did not finish (its id is not in
/// status yet) and billed above the cap: the create's own check never ran, so it runs
/// here, and the pod is replaced (terminated, and the next placement tried). A pod the
/// status already knows is left alone: its price was checked when it was created. So is
/// a pod the operator did not create (adopted by `gpucloud.io/external-id`, without the
/// tag): it was running at that price before it was handed over.
pub fn billed_after_create(
    obj: &Pod,
    desired: &DesiredPod,
    remote: &RemotePod,
) -> Option<Plan<PodChange>> {
    let known = obj.status.as_ref().and_then(|s| s.common.id.as_deref());
    if known == Some(remote.id.as_str()) || remote.env_value(TAG_ENV) != obj.uid().as_deref() {
        return None;
    }
    let cap = desired.price_cap()?;
    let billed = super::placing::billed_above_cap(Some(cap), remote.cost_per_hr)?;
    Some(Plan::Replace {
        reason: format!(
            "pod {} is billed ${billed:.3}/h, above the cap of ${cap:.3}/h (PriceAboveCap)",
            remote.id
        ),
    })
}

/// Pure: the Event's note when the platform refused `refused` for capacity in the middle
/// of a deploy and the next type of the list is tried.
pub fn fallback_note(
    refused: &[String],
    err: &PlatformError,
    deployed_on: &str,
    cooldown: Duration,
) -> String {
    let refused = refused.join(", ");
    format!(
        "the platform has no capacity for {refused} although its stock listing showed some ({err}); skipping {refused} for {}s and deploying on {deployed_on}",
        cooldown.as_secs().max(1)
    )
}

/// Pure: what to do to `remote` to match `desired`.
pub fn plan_pod(desired: &DesiredPod, remote: &RemotePod) -> Plan<PodChange> {
    let changed = immutable_changes(desired, remote);
    if !changed.is_empty() {
        let fields = changed.join(", ");
        return match desired.update_strategy {
            UpdateStrategy::Recreate => Plan::Replace {
                reason: format!(
                    "spec changed fields a live pod cannot take ({fields}); deploying a new pod"
                ),
            },
            UpdateStrategy::Never => Plan::Blocked(Failure::permanent(
                "ImmutableFieldChanged",
                format!(
                    "spec changed fields a live pod cannot take ({fields}) and updateStrategy is Never; revert them, or set updateStrategy to Recreate"
                ),
            )),
        };
    }
    match (desired.desired_state, remote.desired_status.as_str()) {
        (DesiredState::Running, EXITED) => Plan::Update(vec![PodChange::Resume]),
        (DesiredState::Stopped, RUNNING) => Plan::Update(vec![PodChange::Stop]),
        _ => Plan::UpToDate,
    }
}

/// Pure: whether the pod is where the spec wants it.
pub fn readiness_of(state: DesiredState, remote: &RemotePod) -> Readiness {
    let gpu = remote
        .machine
        .as_ref()
        .and_then(|m| m.gpu_type_id.clone())
        .or_else(|| remote.cpu_flavor_id.clone())
        .unwrap_or_default();
    match (state, remote.desired_status.as_str()) {
        (DesiredState::Running, RUNNING) if remote.runtime.is_some() => Readiness::Ready {
            message: format!("pod {} is running on {gpu}", remote.id),
        },
        (DesiredState::Running, RUNNING | EXITED) => Readiness::Progressing {
            reason: "Starting".into(),
            message: format!("pod {} is starting", remote.id),
        },
        (DesiredState::Stopped, EXITED) => Readiness::Ready {
            message: format!("pod {} is stopped", remote.id),
        },
        (DesiredState::Stopped, RUNNING) => Readiness::Progressing {
            reason: "Stopping".into(),
            message: format!("pod {} is stopping", remote.id),
        },
        (_, other) => Readiness::Progressing {
            reason: "Waiting".into(),
            message: format!("pod {} is {other}", remote.id),
        },
    }
}

/// Pure: the phase of a pod the platform reports.
pub fn phase_of(state: DesiredState, remote: &RemotePod) -> PodPhase {
    match (state, remote.desired_status.as_str()) {
        (DesiredState::Running, RUNNING) if remote.runtime.is_some() => PodPhase::Running,
        (DesiredState::Running, RUNNING | EXITED) => PodPhase::Starting,
        (DesiredState::Stopped, EXITED) => PodPhase::Stopped,
        (DesiredState::Stopped, RUNNING) => PodPhase::Stopping,
        (_, TERMINATED) => PodPhase::Failed,
        _ => PodPhase::Pending,
    }
}

/// Pure: the kind's status fields from the platform's pod. Never copies env.
pub fn status_of(mut status: PodStatus, state: DesiredState, remote: &RemotePod) -> PodStatus {
    let machine = remote.machine.clone().unwrap_or_default();
    status.phase = Some(phase_of(state, remote));
    status.desired_status = Some(remote.desired_status.clone());
    status.remote_name = Some(remote.name.clone());
    status.gpu_type_id = machine.gpu_type_id.clone().or(status.gpu_type_id);
    status.gpu_count = remote
        .gpu_count
        .and_then(|n| i32::try_from(n).ok())
        .or(status.gpu_count);
    status.cpu_flavor_id = remote.cpu_flavor_id.clone();
    status.vcpu_count = remote
        .cpu_flavor_id
        .as_ref()
        .and(remote.vcpu_count)
        .map(|n| n.round() as i32);
    status.global_networking = remote
        .global_networking
        .as_ref()
        .map(|g| GlobalNetworkingStatus {
            ip: g.ip.clone(),
            internal_dns: g.internal_dns.clone(),
        });
    status.cost_per_hour = remote.cost_per_hr.or(status.cost_per_hour);
    status.machine_id = Some(remote.machine_id.clone()).filter(|m| !m.is_empty());
    status.pod_host_id = Some(machine.pod_host_id.clone()).filter(|m| !m.is_empty());
    let runtime = remote.runtime.as_ref();
    status.uptime_seconds = runtime.map(|r| r.uptime_in_seconds);
    status.ports = runtime
        .map(|r| {
            r.ports
                .iter()
                .map(|p| PodPortStatus {
                    private_port: i32::try_from(p.private_port).unwrap_or_default(),
                    public_ip: p.is_ip_public.then(|| p.ip.clone()),
                    public_port: i32::try_from(p.public_port).ok(),
                    type_: p.kind.clone(),
                    url: (p.kind == "http").then(|| format!("http://{}:{}", p.ip, p.public_port)),
                })
                .collect()
        })
        .unwrap_or_default();
    status.gpus = runtime
        .map(|r| {
            r.gpus
                .iter()
                .map(|g| GpuUtilisation {
                    id: g.id.clone(),
                    gpu_util_percent: g.gpu_util_percent,
                    memory_util_percent: g.memory_util_percent,
                })
                .collect()
        })
        .unwrap_or_default();
    status
}

/// How long the live figures of a pod that changed in no other way (uptime, GPU
/// utilisation) may stand in status before they are written again. Every listing moves
/// them; writing them each time would cost a status write per pod per resync, the very
/// cost that batched observation exists to avoid.
pub const LIVE_FIGURES_REFRESH: Duration = Duration::from_secs(600);

/// Pure: `next`, with the live figures (`uptimeSeconds`, `gpus`) of `previous` when
/// nothing else changed, `previous` was written less than `refresh` ago (`written_ago`),
/// and the pod has not restarted since (its uptime did not go down).
pub fn settle_live_figures(
    previous: &PodStatus,
    mut next: PodStatus,
    written_ago: Option<Duration>,
    refresh: Duration,
) -> PodStatus {
    let without_live = |s: &PodStatus| PodStatus {
        common: Default::default(),
        uptime_seconds: None,
        gpus: Vec::new(),
        ..s.clone()
    };
    let restarted = match (previous.uptime_seconds, next.uptime_seconds) {
        (Some(before), Some(now)) => now < before,
        (before, now) => before.is_some() != now.is_some(),
    };
    let recent = written_ago.is_some_and(|ago| ago < refresh);
    if recent && !restarted && without_live(previous) == without_live(&next) {
        next.uptime_seconds = previous.uptime_seconds;
        next.gpus = previous.gpus.clone();
    }
    next
}
