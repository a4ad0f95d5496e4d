//! The Pod adapter: on-demand GPU pods with a GPU fallback list, a price cap, stop and
//! resume, drift repair and crash-safe deploys.
//!
//! - Observation: the engine's shared listing is one pod listing per account per interval
//!   (`client.pods().list()`, whichever backend); the GPU offers (`client.catalog()`) are a
//!   second shared listing per account, GPU count and cloud, read only when a pod must be
//!   deployed.
//! - Placement ([`gpucloud_policy::placement::choose_placements`]) is pure: the offers of the
//!   priority list's types with stock for the count and a price within the cap, cheapest
//!   first within a type. A placement the platform answers with the capacity error is
//!   skipped for a cool-down ([`PodAdapter`] keeps the marks in memory) and the next is
//!   tried in the same pass.
//! - Prices: an offer's price is the hourly price of the whole pod of `n` GPUs;
//!   `gpu.maxPricePerHour` caps the price of one GPU, so an offer fits when its price is
//!   at most `cap × n`.
//! - Bad input: an unknown GPU type id is a permanent `UnknownGpuType` (a typo never fixes
//!   itself); a cap below the price of every type in stock is a retryable `PriceAboveCap`
//!   (prices move); no stock anywhere is a retryable `NoCapacity`.
//! - Ports: a port's URL is `http://{ip}:{publicPort}` for `http` ports, from what the
//!   platform reports in the pod's runtime (no proxy domain is assumed).
//! - Crash safety: the remote name is `<namespace>-<name>-<uid8>` and the pod's env carries
//!   [`TAG_ENV`]`=<uid>`; `claims` recognises either.
//! - Secrets: `valueFrom.secretKeyRef` values are resolved into [`DesiredPod`] and sent to
//!   the platform only; `Debug` of the desired pod redacts them and status never copies env.

pub mod references;
pub mod summary;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use tokio::time::Instant;

use crate::crd::Pod;
use crate::crd::budget::BUDGET_EXCEEDED;
use crate::crd::pod::{
    CloudType, DesiredState, GpuUtilisation, PodPhase, PodPortStatus, PodStatus, UpdateStrategy,
};
use crate::platform::domain::{
    EXITED, GpuOffer, Placement, Pod as RemotePod, PodRequest, RUNNING, TERMINATED,
};
use crate::platform::{ErrorClass, PlatformClient, PlatformError};
use gpucloud_engine::snapshot::{Freshness, Snapshots};

use crate::crd::guardrails::Guardrail;
use crate::kinds::shared::dependency;
use crate::metrics::Metrics;
use gpucloud_engine::adapter::{
    Adapter, Created, Note, PassContext, Plan, Readiness, Seen, WhenGone,
};
use gpucloud_engine::conditions::Verdict;
use gpucloud_engine::context::Shared;
use gpucloud_engine::credentials::AccountId;
use gpucloud_engine::failure::{Applied, Failure};
use gpucloud_policy::budget::BudgetLedger;
use gpucloud_policy::guardrails::{self, Decision, clock::Clock};
use gpucloud_policy::placement::{self, Candidate, PlacementRules};

pub use gpucloud_engine::marker::TAG_ENV;

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
    pub max_price_per_hour: Option<f64>,
    pub desired_state: DesiredState,
    pub update_strategy: UpdateStrategy,
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
}

/// The remote name: namespace, name and the first 8 hex digits of the UID.
pub fn remote_name(obj: &Pod) -> String {
    gpucloud_engine::marker::default_remote_name(obj)
}

fn secure_cloud(c: CloudType) -> Option<bool> {
    match c {
        CloudType::All => None,
        CloudType::Secure => Some(true),
        CloudType::Community => Some(false),
    }
}

/// Sorted, trimmed `port/type` entries of a comma-separated list.
fn normalise_ports<'a>(ports: impl IntoIterator<Item = &'a str>) -> Vec<String> {
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
            docker_args: s.docker_args.clone().filter(|a| !a.is_empty()),
            ports: normalise_ports(s.ports.iter().map(String::as_str)),
            env,
            container_disk_gb: s.container_disk_gb,
            volume_gb: s.volume_gb,
            volume_mount_path: s.volume_mount_path.clone(),
            min_vcpu_count: s.min_vcpu_count,
            min_memory_gb: s.min_memory_gb,
            allowed_cuda_versions: s.allowed_cuda_versions.clone(),
            gpu_count: s.gpu.count,
            network_volume_id: network_volume_id.or_else(|| s.network_volume_id.clone()),
            // Resolved from spec.templateRef / spec.registryCredentialRef by `desired`.
            template_id: None,
            registry_id: None,
        },
        cloud_type: s.cloud_type,
        data_center_id: s.data_center_id.clone(),
        gpu_types: s.gpu.types.clone(),
        max_price_per_hour: s.gpu.max_price_per_hour,
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
        changed.push("dockerArgs");
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
        .filter(|(k, _)| *k != TAG_ENV)
        .collect();
    have_env.sort();
    let want_env: Vec<(&str, &str)> = desired
        .request
        .env
        .iter()
        .filter(|(k, _)| k != TAG_ENV)
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

/// How long an admission waits for the Budget controller's first listing (at start).
const BUDGETS_LISTING_WAIT: Duration = Duration::from_secs(30);

/// Catalog key: account, GPU count, cloud (None: any).
type CatalogKey = (AccountId, i32, Option<bool>);

/// Exhausted-placement key: where, and for how many GPUs.
type ExhaustedKey = (Placement, i32);

/// The Pod kind.
pub struct PodAdapter {
    /// GPU offers per account, count and cloud: read only to deploy, at most once per
    /// interval.
    catalog: Snapshots<CatalogKey, GpuOffer, Failure>,
    catalog_max_age: Duration,
    /// Placements the platform answered with the capacity error, until when to skip them.
    exhausted: parking_lot::Mutex<HashMap<ExhaustedKey, Instant>>,
    cooldown: Duration,
    /// "Now" of the cost guardrails, and where their stops are counted.
    clock: Clock,
    metrics: Option<Arc<Metrics>>,
    /// The Budgets' ledger: deploys and resumes are admitted against it (see
    /// `gpucloud_policy::budget`). `None`: no Budget is enforced.
    budgets: Option<Arc<BudgetLedger>>,
    /// How long a held pod waits before it looks again by itself, should no wake-up come.
    held_recheck: Duration,
}

/// The condition that says whether a cost guardrail holds the pod stopped (only on pods
/// with a guardrail).
pub const GUARDRAIL_CONDITION: &str = "GuardrailStopped";

impl PodAdapter {
    /// `interval`: how old the GPU catalog may be, and how long a type that answered the
    /// capacity error is skipped.
    pub fn new(interval: Duration) -> Self {
        Self {
            catalog: Snapshots::new(),
            catalog_max_age: interval,
            exhausted: parking_lot::Mutex::new(HashMap::new()),
            cooldown: interval,
            clock: Clock::default(),
            metrics: None,
            budgets: None,
            held_recheck: interval,
        }
    }

    /// The clock the guardrails read "now" from, and the metrics their stops count in.
    pub fn with_guardrails(mut self, clock: Clock, metrics: Arc<Metrics>) -> Self {
        self.clock = clock;
        self.metrics = Some(metrics);
        self
    }

    /// The cost guardrails' decision for `obj` now, with `remote` as listed. A spec whose
    /// guardrails do not parse has none here: `desired` reports it.
    fn guardrails(&self, obj: &Pod, remote: Option<&RemotePod>) -> Decision {
        let previous = obj.status.as_ref().and_then(|s| s.guardrails.as_ref());
        let spec = &obj.spec;
        if spec.schedule.is_none()
            && spec.max_runtime.is_none()
            && spec.idle_stop.is_none()
            && previous.is_none()
        {
            // No guardrail and nothing held: the spec's state, as `evaluate` would say,
            // without parsing or allocating on every call of every pass.
            return Decision {
                state: spec.desired_state,
                stop: None,
                status: None,
                due_in: None,
            };
        }
        let rules = guardrails::rules_of(&obj.spec).unwrap_or_default();
        let runtime = remote
            .filter(|r| r.desired_status == RUNNING)
            .and_then(|r| r.runtime.as_ref());
        let utils: Vec<f64> = runtime
            .map(|r| r.gpus.iter().map(|g| g.gpu_util_percent).collect())
            .unwrap_or_default();
        let facts = guardrails::Facts {
            spec_state: obj.spec.desired_state,
            generation: obj.metadata.generation,
            previous,
            running: runtime.map(|r| guardrails::Running {
                uptime_seconds: r.uptime_in_seconds,
                gpu_util_percent: &utils,
            }),
            now: self.clock.now(),
        };
        guardrails::evaluate(&rules, &facts)
    }

    /// Admits deploys and resumes against `budgets`.
    pub fn with_budgets(mut self, budgets: Arc<BudgetLedger>) -> Self {
        self.budgets = Some(budgets);
        self
    }

    /// Takes (or moves) the pod's Budget reservation to `price` per hour, or holds it:
    /// a `Waiting` failure named `BudgetExceeded` with the figures, looked at again when
    /// the ledger finds room (or after `held_recheck`).
    fn reserve(&self, obj: &Pod, price: f64) -> Result<(), Failure> {
        let Some(budgets) = &self.budgets else {
            return Ok(());
        };
        let ns = obj.namespace().unwrap_or_default();
        budgets
            .reserve(&ns, &obj.name_any(), obj.labels(), price)
            .map_err(|exceeded| {
                let mut f = Failure::waiting(BUDGET_EXCEEDED, exceeded.message());
                f.retry_after = Some(self.held_recheck);
                f
            })
    }

    fn exhausted_placements(&self, count: i32) -> HashSet<Placement> {
        let mut marks = self.exhausted.lock();
        marks.retain(|_, until| *until > Instant::now());
        marks
            .keys()
            .filter(|(_, c)| *c == count)
            .map(|(p, _)| p.clone())
            .collect()
    }

    fn mark_exhausted(&self, placement: &Placement, count: i32) {
        self.exhausted
            .lock()
            .insert((placement.clone(), count), Instant::now() + self.cooldown);
    }

    async fn env(&self, shared: &Shared, obj: &Pod) -> Result<Vec<(String, String)>, Failure> {
        let ns = obj.namespace().unwrap_or_default();
        crate::kinds::shared::secret_env::resolve(shared, &ns, &obj.spec.env).await
    }

    /// Where the pod may go, in order of preference, from the GPU catalog (read at most
    /// once per interval per account, count and cloud).
    async fn candidates(
        &self,
        pass: &PassContext<'_>,
        resolved: &ResolvedPod,
    ) -> Result<Vec<Candidate>, Failure> {
        let client = pass.client;
        let d = &resolved.pod;
        let cloud = secure_cloud(d.cloud_type);
        let catalog = self
            .catalog
            .get(
                &(resolved.account, d.request.gpu_count, cloud),
                Freshness::MaxAge(self.catalog_max_age),
                || async {
                    client
                        .catalog()
                        .gpu_offers(d.request.gpu_count, cloud)
                        .await
                        .map_err(|e| Failure::from_platform("list GPU types", &e))
                },
            )
            .await?;
        let exhausted = self.exhausted_placements(d.request.gpu_count);
        let data_centers: Vec<String> = d.data_center_id.iter().cloned().collect();
        let rules = PlacementRules {
            types: &d.gpu_types,
            count: d.request.gpu_count,
            max_price_per_gpu: d.max_price_per_hour,
            data_center_ids: &data_centers,
            allowed_cuda_versions: &d.request.allowed_cuda_versions,
        };
        let mut candidates = placement::choose_placements(&rules, &catalog.items, &exhausted)?;
        if d.request.network_volume_id.is_some() {
            // The volume's data center is the only place the pod can go: one try per GPU
            // type and cloud, not one per data center.
            candidates = placement::pinned_by_volume(candidates);
        }
        Ok(candidates)
    }

    /// Deploys on the first of `candidates` the platform accepts. Each candidate dearer
    /// than the one admitted is admitted again first (a fallback to a dearer type must fit
    /// the Budget too).
    async fn deploy(
        &self,
        client: &PlatformClient,
        obj: &Pod,
        resolved: &ResolvedPod,
        candidates: &[Candidate],
    ) -> Result<Created<RemotePod>, Failure> {
        let d = &resolved.pod;
        let request = &d.request;
        let mut admitted_price = candidates.first().map_or(0.0, |c| c.price_per_hour);
        // Placements refused for capacity in this pass, and the last refusal.
        let mut refused_at: Vec<String> = Vec::new();
        let mut refused: Option<PlatformError> = None;
        for candidate in candidates {
            let Candidate {
                placement: at,
                price_per_hour,
            } = candidate;
            if *price_per_hour > admitted_price {
                self.reserve(obj, *price_per_hour)?;
                admitted_price = *price_per_hour;
            }
            match client.pods().deploy(request, at).await {
                Ok(mut pod) => {
                    pod.cost_per_hr.get_or_insert(*price_per_hour);
                    // One Event for the whole fallback: users need to see why their pod
                    // runs lower in their list. If every placement is refused, the last
                    // refusal is the pass's failure, reported by the engine instead.
                    let notes = refused
                        .iter()
                        .map(|e| Note {
                            reason: "GpuTypeNoCapacity".into(),
                            warning: true,
                            action: "Create",
                            message: fallback_note(
                                &refused_at,
                                e,
                                &placement::describe(at),
                                self.cooldown,
                            ),
                        })
                        .collect();
                    return Ok(Created { remote: pod, notes });
                }
                Err(e) if e.class() == ErrorClass::Capacity => {
                    self.mark_exhausted(at, d.request.gpu_count);
                    refused_at.push(placement::describe(at));
                    refused = Some(e);
                }
                Err(e) => {
                    return Err(Failure::from_platform(
                        &format!("deploy the pod on {}", placement::describe(at)),
                        &e,
                    ));
                }
            }
        }
        let failure = match refused {
            Some(e) => Failure::from_platform(
                &format!(
                    "deploy {} GPU(s) of any of {}",
                    d.request.gpu_count,
                    d.gpu_types.join(", ")
                ),
                &e,
            ),
            None => placement::no_capacity(&d.gpu_types, d.request.gpu_count),
        };
        Err(failure)
    }
}

impl Adapter for PodAdapter {
    type Kind = Pod;
    type Remote = RemotePod;
    type Desired = ResolvedPod;
    type Change = PodChange;

    const KIND: &'static str = "Pod";
    const NOUN: &'static str = "pod";

    const ORPHAN_SWEEP: bool = true;

    fn orphan_candidate(remote: &RemotePod) -> Option<crate::orphans::Candidate> {
        crate::orphans::pod_candidate(remote)
    }

    fn id(remote: &RemotePod) -> &str {
        &remote.id
    }

    async fn list(&self, client: &PlatformClient) -> Result<Vec<RemotePod>, Failure> {
        client
            .pods()
            .list()
            .await
            .map_err(|e| Failure::from_platform("list pods", &e))
    }

    fn claims(&self, obj: &Pod, remote: &RemotePod) -> bool {
        match remote.env_value(TAG_ENV) {
            Some(uid) => obj.uid().as_deref() == Some(uid),
            None => remote.name == remote_name(obj),
        }
    }

    async fn desired(&self, pass: &PassContext<'_>, obj: &Pod) -> Result<ResolvedPod, Failure> {
        let shared = pass.shared;
        // What the schema could not check (an unknown time zone): a condition and an
        // Event naming the field, no retry.
        guardrails::rules_of(&obj.spec)?;
        let volume = dependency::network_volume_id(
            shared,
            &obj.namespace().unwrap_or_default(),
            obj.spec.network_volume_id.as_deref(),
            obj.spec.network_volume_ref.as_ref(),
        )
        .await?;
        let env = self.env(shared, obj).await?;
        let mut pod = desired_of(obj, env, volume);
        references::resolve_pod_references(shared, obj, &mut pod.request).await?;
        // Budget (StopNewest): the pod is stopped while the running total is over.
        let ns = obj.namespace().unwrap_or_default();
        if let Some(budgets) = &self.budgets
            && budgets.must_stop(&ns, &obj.name_any())
        {
            pod.desired_state = DesiredState::Stopped;
        }
        Ok(ResolvedPod {
            account: pass.credentials.account,
            pod,
        })
    }

    async fn admit(
        &self,
        pass: &PassContext<'_>,
        obj: &Pod,
        resolved: &ResolvedPod,
        remote: Option<&RemotePod>,
        changes: &[PodChange],
    ) -> Result<(), Failure> {
        let Some(budgets) = &self.budgets else {
            return Ok(());
        };
        let price = match remote {
            // A deploy: the price of the first placement it will try. Without one the
            // create fails on its own, with the reason.
            None => match self.candidates(pass, resolved).await {
                Ok(candidates) => match candidates.first() {
                    Some(c) => c.price_per_hour,
                    None => return Ok(()),
                },
                Err(_) => return Ok(()),
            },
            // A resume: a stopped pod's listing says it costs 0; the price it last ran at,
            // else the catalog's.
            Some(remote) if changes.contains(&PodChange::Resume) => {
                let ns = obj.namespace().unwrap_or_default();
                let known = remote
                    .cost_per_hr
                    .filter(|c| *c > 0.0)
                    .or_else(|| budgets.last_price(&ns, &obj.name_any()));
                match known {
                    Some(price) => price,
                    None => match self.candidates(pass, resolved).await {
                        Ok(candidates) => candidates.first().map_or(0.0, |c| c.price_per_hour),
                        Err(_) => 0.0,
                    },
                }
            }
            Some(_) => return Ok(()),
        };
        if !budgets.wait_synced(BUDGETS_LISTING_WAIT).await {
            let mut f = Failure::waiting(
                "BudgetsNotListed",
                "the operator has not listed the Budgets and Pods yet; the deploy waits for it",
            );
            f.retry_after = Some(self.held_recheck);
            return Err(f);
        }
        self.reserve(obj, price)
    }

    async fn create(
        &self,
        pass: &PassContext<'_>,
        obj: &Pod,
        resolved: &ResolvedPod,
    ) -> Result<Created<RemotePod>, Failure> {
        let candidates = self.candidates(pass, resolved).await;
        let created = match candidates {
            Ok(candidates) => self.deploy(pass.client, obj, resolved, &candidates).await,
            Err(f) => Err(f),
        };
        // Budget: a deploy that did not happen gives its reservation back at once.
        if let (Err(f), Some(budgets)) = (&created, &self.budgets)
            && f.applied == Applied::No
        {
            budgets.release(&obj.namespace().unwrap_or_default(), &obj.name_any());
        }
        created
    }

    fn plan(&self, obj: &Pod, desired: &ResolvedPod, remote: &RemotePod) -> Plan<PodChange> {
        let decision = self.guardrails(obj, Some(remote));
        // Stopped wins, whoever wants it: the spec, or a Budget (StopNewest) in `desired`.
        // The guardrails start from the spec's state, so they only ever add a stop.
        if decision.state == desired.pod.desired_state
            || desired.pod.desired_state == DesiredState::Stopped
        {
            return plan_pod(&desired.pod, remote);
        }
        let want = DesiredPod {
            desired_state: decision.state,
            ..desired.pod.clone()
        };
        match (plan_pod(&want, remote), decision.stop) {
            (Plan::Update(changes), Some(stop)) if changes == [PodChange::Stop] => {
                Plan::Update(vec![PodChange::StopBy(stop.guardrail, stop.message)])
            }
            (plan, _) => plan,
        }
    }

    async fn apply(
        &self,
        client: &PlatformClient,
        remote: &mut RemotePod,
        change: &PodChange,
    ) -> Result<(), Failure> {
        match change {
            PodChange::Resume => client
                .pods()
                .start(
                    &remote.id,
                    remote.gpu_count.and_then(|n| i32::try_from(n).ok()),
                )
                .await
                .map_err(|e| Failure::from_platform("resume the pod", &e)),
            PodChange::Stop => client
                .pods()
                .stop(&remote.id)
                .await
                .map_err(|e| Failure::from_platform("stop the pod", &e)),
            PodChange::StopBy(guardrail, _) => {
                client
                    .pods()
                    .stop(&remote.id)
                    .await
                    .map_err(|e| Failure::from_platform("stop the pod", &e))?;
                if let Some(m) = &self.metrics {
                    m.guardrail_stop(guardrails::label_of(*guardrail));
                }
                Ok(())
            }
        }
    }

    async fn delete(&self, client: &PlatformClient, id: &str) -> Result<(), Failure> {
        client
            .pods()
            .terminate(id)
            .await
            .map_err(|e| Failure::from_platform("terminate the pod", &e))
    }

    fn readiness(&self, obj: &Pod, remote: &RemotePod) -> Readiness {
        let decision = self.guardrails(obj, Some(remote));
        match (readiness_of(decision.state, remote), decision.stop) {
            (Readiness::Ready { message }, Some(stop)) => Readiness::Ready {
                message: format!("{message}: {}", stop.message),
            },
            (readiness, _) => readiness,
        }
    }

    fn status(&self, obj: &Pod, remote: Option<&RemotePod>, seen: Seen) -> PodStatus {
        let current = obj.status.clone().unwrap_or_default();
        let Some(remote) = remote else {
            if current.common.id.is_some() && !seen.creating {
                // Known pod, not seen this pass (a listing failed): keep what was reported.
                return current;
            }
            let phase = if seen.creating {
                PodPhase::Deploying
            } else {
                PodPhase::Pending
            };
            return PodStatus {
                common: current.common,
                phase: Some(phase),
                guardrails: self.guardrails(obj, None).status,
                ..PodStatus::default()
            };
        };
        let written_ago = current.common.last_sync_time.as_ref().map(|t| {
            Duration::try_from(Timestamp::now().duration_since(t.0)).unwrap_or(Duration::ZERO)
        });
        let decision = self.guardrails(obj, Some(remote));
        let mut status = status_of(current.clone(), decision.state, remote);
        status.guardrails = decision.status;
        if seen.blocked {
            status.phase = Some(PodPhase::Failed);
        }
        settle_live_figures(&current, status, written_ago, LIVE_FIGURES_REFRESH)
    }

    fn describe(&self, change: &PodChange) -> String {
        match change {
            PodChange::Resume => "resumed the pod".into(),
            PodChange::Stop => "stopped the pod".into(),
            PodChange::StopBy(_, why) => format!("stopped the pod: {why}"),
        }
    }

    fn change_reason(&self, change: &PodChange) -> &'static str {
        match change {
            PodChange::StopBy(guardrail, _) => guardrails::reason_of(*guardrail),
            _ => "Updated",
        }
    }

    fn hold_create(&self, obj: &Pod, _desired: &ResolvedPod) -> Option<String> {
        let stop = self.guardrails(obj, None).stop?;
        Some(format!("not deployed: {}", stop.message))
    }

    fn due_in(&self, obj: &Pod, remote: Option<&RemotePod>) -> Option<Duration> {
        // A little past the boundary, so that the pass lands on the new side of it.
        let due = self.guardrails(obj, remote).due_in?;
        Some(self.clock.real(due) + Duration::from_millis(250))
    }

    fn extra_conditions(
        &self,
        obj: &Pod,
        remote: Option<&RemotePod>,
    ) -> Vec<(&'static str, Verdict)> {
        let decision = self.guardrails(obj, remote);
        if decision.status.is_none() {
            return Vec::new();
        }
        let verdict = match decision.stop {
            Some(stop) => Verdict::yes(stop.reason(), stop.message),
            None => Verdict::no("NotStopped", "no cost guardrail holds the pod stopped"),
        };
        vec![(GUARDRAIL_CONDITION, verdict)]
    }

    fn secrets(&self, obj: &Pod) -> Vec<String> {
        let mut names: Vec<String> = obj
            .spec
            .credentials_secret_ref
            .iter()
            .map(|c| c.name.clone())
            .chain(
                obj.spec
                    .env
                    .iter()
                    .filter_map(|e| e.value_from.as_ref())
                    .map(|f| f.secret_key_ref.name.clone()),
            )
            .collect();
        names.sort();
        names.dedup();
        names
    }

    fn forget(&self, key: &str) {
        if let (Some(budgets), Some((ns, name))) = (&self.budgets, key.split_once('/')) {
            budgets.forget(ns, name);
        }
    }

    fn when_gone(&self, obj: &Pod) -> WhenGone {
        match obj.spec.update_strategy {
            UpdateStrategy::Recreate => WhenGone::Recreate,
            UpdateStrategy::Never => WhenGone::Report,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::PodSpec;
    use kube::api::ObjectMeta;
    use serde_json::json;

    #[test]
    fn fallback_note_names_both_types_and_the_platform_answer() {
        let err = PlatformError::Capacity {
            operation: "podFindAndDeployOnDemand",
            detail: "There are no longer any instances available".into(),
        };
        let note = fallback_note(&["B".into()], &err, "C", Duration::from_secs(60));
        assert!(note.contains("no capacity for B"), "{note}");
        assert!(note.contains("no longer any instances"), "{note}");
        assert!(
            note.contains("skipping B for 60s and deploying on C"),
            "{note}"
        );
    }

    fn obj(spec: serde_json::Value) -> Pod {
        let mut base = json!({"image": "img:1", "gpu": {"types": ["A", "B"]}, "ports": ["8888/http", "22/tcp"],
            "env": [{"name": "PLAIN", "value": "x"}]});
        base.as_object_mut()
            .unwrap()
            .extend(spec.as_object().unwrap().clone());
        let spec: PodSpec = serde_json::from_value(base).unwrap();
        let mut p = Pod::new("web", spec);
        p.metadata = ObjectMeta {
            name: Some("web".into()),
            namespace: Some("team".into()),
            uid: Some("1234abcd-0000-0000-0000-000000000000".into()),
            ..Default::default()
        };
        p
    }

    fn desired(spec: serde_json::Value) -> DesiredPod {
        desired_of(
            &obj(spec),
            vec![
                ("PLAIN".into(), "x".into()),
                ("TOKEN".into(), "s3cret".into()),
            ],
            None,
        )
    }

    fn remote(extra: serde_json::Value) -> RemotePod {
        let mut v = json!({
            "id": "pod-1", "name": "team-web-1234abcd", "imageName": "img:1",
            "env": ["PLAIN=x", "TOKEN=s3cret", format!("{TAG_ENV}=1234abcd-0000-0000-0000-000000000000")],
            "machineId": "m-1", "machine": {"podHostId": "pod-1-m1", "gpuTypeId": "B", "secureCloud": true},
            "desiredStatus": "RUNNING", "gpuCount": 1, "containerDiskInGb": 20, "volumeInGb": 0,
            "dockerArgs": "", "ports": "22/tcp,8888/http", "costPerHr": 0.4,
            "runtime": {"uptimeInSeconds": 12, "ports": [
                {"ip": "1.2.3.4", "isIpPublic": true, "privatePort": 8888, "publicPort": 40001, "type": "http"},
                {"ip": "1.2.3.4", "isIpPublic": true, "privatePort": 22, "publicPort": 40002, "type": "tcp"}],
              "gpus": [{"id": "g0", "gpuUtilPercent": 50.0, "memoryUtilPercent": 10.0}]}
        });
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn remote_name_and_tag() {
        let o = obj(json!({}));
        assert_eq!(remote_name(&o), "team-web-1234abcd");
        let d = desired(json!({}));
        assert!(
            d.request
                .env
                .iter()
                .any(|(k, v)| k == TAG_ENV && v == "1234abcd-0000-0000-0000-000000000000")
        );
        let a = PodAdapter::new(Duration::from_secs(1));
        assert!(a.claims(&o, &remote(json!({}))));
        // The tag decides over the name: another object's pod of the same name is not ours.
        let other = remote(json!({"env": [format!("{TAG_ENV}=ffff")]}));
        assert!(!a.claims(&o, &other));
        // A pod without a tag is recognised by its name.
        assert!(a.claims(&o, &remote(json!({"env": []}))));
        assert!(!a.claims(&o, &remote(json!({"env": [], "name": "x"}))));
    }

    #[test]
    fn debug_of_desired_hides_env_values() {
        let d = desired(json!({}));
        let shown = format!("{d:?}");
        assert!(
            shown.contains("TOKEN") && !shown.contains("s3cret"),
            "{shown}"
        );
    }

    #[test]
    fn matching_pod_is_up_to_date() {
        assert_eq!(
            plan_pod(&desired(json!({})), &remote(json!({}))),
            Plan::UpToDate
        );
    }

    #[test]
    fn desired_state_drives_stop_and_resume() {
        let stopped = remote(json!({"desiredStatus": "EXITED", "runtime": null}));
        assert_eq!(
            plan_pod(&desired(json!({})), &stopped),
            Plan::Update(vec![PodChange::Resume])
        );
        let d = desired(json!({"desiredState": "Stopped"}));
        assert_eq!(
            plan_pod(&d, &remote(json!({}))),
            Plan::Update(vec![PodChange::Stop])
        );
        assert_eq!(plan_pod(&d, &stopped), Plan::UpToDate);
    }

    #[test]
    fn an_adopted_pod_without_the_tag_has_no_env_change() {
        let d = desired(json!({}));
        assert!(d.request.env.iter().any(|(k, _)| k == TAG_ENV));
        let untagged = remote(json!({"env": ["TOKEN=s3cret", "PLAIN=x"]}));
        assert!(!immutable_changes(&d, &untagged).contains(&"env"));
        let other = remote(json!({"env": ["TOKEN=s3cret", "PLAIN=x", "EXTRA=1"]}));
        assert!(immutable_changes(&d, &other).contains(&"env"));
    }

    #[test]
    fn immutable_changes_replace_or_block() {
        let d = desired(json!({"image": "img:2"}));
        match plan_pod(&d, &remote(json!({}))) {
            Plan::Replace { reason } => assert!(reason.contains("image"), "{reason}"),
            other => panic!("{other:?}"),
        }
        let d = desired(json!({"image": "img:2", "updateStrategy": "Never"}));
        match plan_pod(&d, &remote(json!({}))) {
            Plan::Blocked(f) => {
                assert_eq!(f.reason, "ImmutableFieldChanged");
                assert!(f.is_permanent());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn each_immutable_field_is_noticed() {
        let base = remote(json!({}));
        let cases = [
            (json!({"ports": ["8888/http"]}), "ports"),
            (json!({"containerDiskGb": 50}), "containerDiskGb"),
            (json!({"volumeGb": 10}), "volumeGb"),
            (
                json!({"gpu": {"types": ["A", "B"], "count": 2}}),
                "gpu.count",
            ),
            (json!({"gpu": {"types": ["A"]}}), "gpu.types"),
            (json!({"dockerArgs": "sleep 1"}), "dockerArgs"),
            (json!({"cloudType": "COMMUNITY"}), "cloudType"),
        ];
        for (spec, field) in cases {
            let got = immutable_changes(&desired(spec.clone()), &base);
            assert_eq!(got, vec![field], "{spec}");
        }
        // A changed Secret value is an env change, named without the value.
        let changed = desired_of(
            &obj(json!({})),
            vec![("PLAIN".into(), "x".into()), ("TOKEN".into(), "n3w".into())],
            None,
        );
        match plan_pod(&changed, &base) {
            Plan::Replace { reason } => {
                assert!(
                    reason.contains("env") && !reason.contains("n3w"),
                    "{reason}"
                )
            }
            other => panic!("{other:?}"),
        }
        // Port order and a type in the fallback list other than the first are no change.
        let reordered = remote(json!({"ports": "8888/http, 22/tcp"}));
        assert_eq!(plan_pod(&desired(json!({})), &reordered), Plan::UpToDate);
    }

    #[test]
    fn readiness_and_phase() {
        let run = DesiredState::Running;
        let stop = DesiredState::Stopped;
        let booted = remote(json!({}));
        let booting = remote(json!({"runtime": null}));
        let exited = remote(json!({"desiredStatus": "EXITED", "runtime": null}));
        assert!(matches!(
            readiness_of(run, &booted),
            Readiness::Ready { .. }
        ));
        assert!(
            matches!(readiness_of(run, &booting), Readiness::Progressing { reason, .. } if reason == "Starting")
        );
        assert!(matches!(
            readiness_of(stop, &exited),
            Readiness::Ready { .. }
        ));
        assert!(
            matches!(readiness_of(stop, &booted), Readiness::Progressing { reason, .. } if reason == "Stopping")
        );
        assert_eq!(phase_of(run, &booted), PodPhase::Running);
        assert_eq!(phase_of(run, &booting), PodPhase::Starting);
        assert_eq!(phase_of(run, &exited), PodPhase::Starting);
        assert_eq!(phase_of(stop, &exited), PodPhase::Stopped);
        assert_eq!(phase_of(stop, &booted), PodPhase::Stopping);
    }

    #[test]
    fn status_maps_the_platform_pod_without_env() {
        let s = status_of(
            PodStatus::default(),
            DesiredState::Running,
            &remote(json!({})),
        );
        assert_eq!(s.phase, Some(PodPhase::Running));
        assert_eq!(s.desired_status.as_deref(), Some("RUNNING"));
        assert_eq!(s.gpu_type_id.as_deref(), Some("B"));
        assert_eq!(s.gpu_count, Some(1));
        assert_eq!(s.cost_per_hour, Some(0.4));
        assert_eq!(s.machine_id.as_deref(), Some("m-1"));
        assert_eq!(s.pod_host_id.as_deref(), Some("pod-1-m1"));
        assert_eq!(s.uptime_seconds, Some(12));
        assert_eq!(s.remote_name.as_deref(), Some("team-web-1234abcd"));
        assert_eq!(s.ports.len(), 2);
        assert_eq!(s.ports[0].url.as_deref(), Some("http://1.2.3.4:40001"));
        assert_eq!(s.ports[0].public_ip.as_deref(), Some("1.2.3.4"));
        assert_eq!(s.ports[1].url, None);
        assert_eq!(s.gpus.len(), 1);
        let text = serde_json::to_string(&s).unwrap();
        assert!(!text.contains("s3cret"), "{text}");
    }

    #[test]
    fn live_figures_alone_do_not_rewrite_status() {
        let run = DesiredState::Running;
        let at = |uptime: i64| {
            remote(json!({"runtime": {"uptimeInSeconds": uptime, "ports": [],
            "gpus": [{"id": "g0", "gpuUtilPercent": uptime as f64, "memoryUtilPercent": 1.0}]}}))
        };
        let written = status_of(PodStatus::default(), run, &at(12));
        let minute = Some(Duration::from_secs(60));
        // A later listing: only the live figures moved, and they were written a minute ago.
        let next = status_of(written.clone(), run, &at(72));
        let settled = settle_live_figures(&written, next.clone(), minute, LIVE_FIGURES_REFRESH);
        assert_eq!(settled, written);
        // Written long ago: refreshed.
        let stale = Some(LIVE_FIGURES_REFRESH + Duration::from_secs(1));
        let settled = settle_live_figures(&written, next, stale, LIVE_FIGURES_REFRESH);
        assert_eq!(settled.uptime_seconds, Some(72));
        assert_eq!(settled.gpus[0].gpu_util_percent, 72.0);
        // A restart (uptime went down) and any other change carry the new figures.
        let restarted = status_of(written.clone(), run, &at(3));
        let settled = settle_live_figures(&written, restarted, minute, LIVE_FIGURES_REFRESH);
        assert_eq!(settled.uptime_seconds, Some(3));
        let mut moved = status_of(written.clone(), run, &at(72));
        moved.cost_per_hour = Some(0.5);
        let settled = settle_live_figures(&written, moved, minute, LIVE_FIGURES_REFRESH);
        assert_eq!(settled.uptime_seconds, Some(72));
        // Stopped: no runtime, nothing kept.
        let exited = remote(json!({"desiredStatus": "EXITED", "runtime": null}));
        let stopped = status_of(written.clone(), DesiredState::Stopped, &exited);
        let settled = settle_live_figures(&written, stopped, minute, LIVE_FIGURES_REFRESH);
        assert_eq!(settled.uptime_seconds, None);
        assert!(settled.gpus.is_empty());
    }

    /// A clock stopped at one instant: the guardrails read no machine clock in tests.
    struct Fixed(Timestamp);

    impl guardrails::clock::WallClock for Fixed {
        fn now(&self) -> Timestamp {
            self.0
        }
    }

    fn adapter_at(now: &str) -> PodAdapter {
        PodAdapter::new(Duration::from_secs(1)).with_guardrails(
            Clock::new(Fixed(now.parse().unwrap())),
            Arc::new(Metrics::new()),
        )
    }

    #[test]
    fn a_stop_in_desired_is_kept_whatever_the_guardrails_say() {
        // A Budget (StopNewest) stops a pod whose spec says Running: `desired` says
        // Stopped, the guardrails (none here) say the spec's Running.
        let a = adapter_at("2026-01-14T20:00:00Z");
        let resolved = ResolvedPod {
            account: AccountId::any(),
            pod: desired(json!({"desiredState": "Stopped"})),
        };
        assert_eq!(
            a.plan(&obj(json!({})), &resolved, &remote(json!({}))),
            Plan::Update(vec![PodChange::Stop])
        );
    }

    #[test]
    fn a_closed_schedule_window_stops_a_running_spec_and_says_why() {
        let o = obj(json!({"schedule": {"timeZone": "UTC",
            "windows": [{"days": ["Mon", "Tue", "Wed", "Thu", "Fri"], "from": "08:00", "to": "18:00"}]}}));
        // Wednesday 2026-01-14, 20:00 UTC: closed until Thursday 08:00.
        let a = adapter_at("2026-01-14T20:00:00Z");
        let resolved = ResolvedPod {
            account: AccountId::any(),
            pod: desired(json!({})),
        };
        let stop = match a.plan(&o, &resolved, &remote(json!({}))) {
            Plan::Update(changes) => match changes.as_slice() {
                [c @ PodChange::StopBy(Guardrail::Schedule, why)] => {
                    assert!(why.contains("2026-01-15T08:00:00Z"), "{why}");
                    c.clone()
                }
                other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        assert_eq!(a.change_reason(&stop), "StoppedBySchedule");
        assert!(
            a.describe(&stop)
                .starts_with("stopped the pod: outside its schedule")
        );
        // Stopped where the schedule wants it: Ready, phase Stopped, the window in status.
        let exited = remote(json!({"desiredStatus": "EXITED", "runtime": null}));
        assert_eq!(
            a.plan(&o, &resolved, &exited),
            Plan::UpToDate,
            "no resume outside the window"
        );
        assert!(
            matches!(a.readiness(&o, &exited), Readiness::Ready { message } if message.contains("outside its schedule"))
        );
        let status = a.status(&o, Some(&exited), Seen::default());
        assert_eq!(status.phase, Some(PodPhase::Stopped));
        let window = status.guardrails.unwrap().schedule.unwrap();
        assert_eq!(window.window, crate::crd::guardrails::WindowPhase::Closed);
        let conditions = a.extra_conditions(&o, Some(&exited));
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0].0, GUARDRAIL_CONDITION);
        assert_eq!(conditions[0].1.reason, "StoppedBySchedule");
        // Not deployed before the window, and looked at again when it opens.
        assert!(a.hold_create(&o, &resolved).is_some());
        assert_eq!(
            a.due_in(&o, Some(&exited)),
            Some(Duration::from_secs(12 * 3600) + Duration::from_millis(250))
        );
        // Inside the window the same spec runs, and a pod without guardrails is untouched.
        let open = adapter_at("2026-01-14T10:00:00Z");
        assert_eq!(
            open.plan(&o, &resolved, &exited),
            Plan::Update(vec![PodChange::Resume])
        );
        assert!(open.hold_create(&o, &resolved).is_none());
        let plain = obj(json!({}));
        assert!(a.extra_conditions(&plain, Some(&exited)).is_empty());
        assert_eq!(a.due_in(&plain, Some(&exited)), None);
    }

    #[test]
    fn secrets_lists_env_references() {
        let o = obj(json!({"env": [
            {"name": "A", "valueFrom": {"secretKeyRef": {"name": "s1", "key": "k"}}},
            {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s1", "key": "j"}}},
            {"name": "C", "value": "v"}],
            "credentialsSecretRef": {"name": "creds"}}));
        let a = PodAdapter::new(Duration::from_secs(1));
        assert_eq!(a.secrets(&o), vec!["creds".to_string(), "s1".to_string()]);
    }
}
