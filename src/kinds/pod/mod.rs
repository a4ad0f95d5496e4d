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
//! - CPU pods, global networking and the price as billed: `deploy.rs` and
//!   [`placing`]; REST v2 only, `UnsupportedByBackend` on the seed API.

mod changes;
mod decide;
use decide::secure_cloud;
mod deploy;
mod lifecycle;
pub mod placing;
use placing::{Offer, Target};
pub mod references;
pub mod resume;
pub mod startup;
pub mod summary;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use tokio::time::Instant;

use gpucloud_crd::Pod;
use gpucloud_crd::pod::{DesiredState, PodPhase, PodStatus, UpdateStrategy};
use gpucloud_engine::snapshot::{Freshness, Snapshots};
use gpucloud_platform::PlatformClient;
use gpucloud_platform::domain::{
    CpuOffer, CpuPlacement, GpuOffer, Placement, Pod as RemotePod, RUNNING,
};

use crate::kinds::shared::{budget_hold, dependency, secret_env};
use gpucloud_engine::adapter::{
    Actuator, Created, Decide, Inventory, Note, PassContext, Plan, Policy, Readiness, Report, Seen,
    WhenGone,
};
use gpucloud_engine::conditions::Verdict;
use gpucloud_engine::context::Shared;
use gpucloud_engine::credentials::AccountId;
use gpucloud_engine::failure::Failure;
use gpucloud_engine::metrics::Metrics;
use gpucloud_policy::budget::BudgetLedger;
use gpucloud_policy::budget::ledger::{Member, MemberKind};
use gpucloud_policy::budget::members::BudgetMember;
use gpucloud_policy::guardrails::{self, Decision, clock::Clock};
use gpucloud_policy::placement::{self, PlacementRules};

pub use decide::{
    DesiredCpu, DesiredPod, LIVE_FIGURES_REFRESH, PodChange, ResolvedPod, desired_of,
    fallback_note, immutable_changes, phase_of, plan_pod, readiness_of, remote_name,
    settle_live_figures, status_of,
};
pub use gpucloud_engine::marker::TAG_ENV;
use gpucloud_engine::marker::with_install_tag;
use resume::PodState;
use crate::kinds::shared::sweep::OrphanSweep;
use crate::kinds::summary::rows_of;
use crate::kinds::shared::registration::{Census, Controllers, RegisteredKind};
use tokio::task::JoinHandle;

/// Catalog key: account, GPU count, cloud (None: any).
type CatalogKey = (AccountId, i32, Option<bool>);

/// CPU catalog key: account, vCPUs.
type CpuCatalogKey = (AccountId, u32);

/// Exhausted-placement key: where, and for how many GPUs (a CPU target carries its size).
type ExhaustedKey = (Target, i32);

/// The Pod kind.
pub struct PodAdapter {
    /// GPU offers per account, count and cloud: read only to deploy, at most once per
    /// interval.
    catalog: Snapshots<CatalogKey, GpuOffer, Failure>,
    catalog_max_age: Duration,
    /// CPU offers per account and vCPU count, read as the GPU ones.
    cpu_catalog: Snapshots<CpuCatalogKey, CpuOffer, Failure>,
    /// Data centers on the global network, per account: read only to deploy a pod with
    /// `globalNetworking`, at most once per interval.
    global_data_centers: Snapshots<AccountId, String, Failure>,
    /// Placements the platform answered with the capacity error, or that billed a created
    /// pod above its cap, until when to skip them.
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
    /// The system logs of starting pods, and the failures they told.
    startups: startup::StartupWatches,
}

/// Whose Budget reservation a deploy moves: the object's namespace, name and labels.
#[derive(Clone, Debug)]
pub struct BudgetSlot {
    pub namespace: String,
    pub name: String,
    pub labels: std::collections::BTreeMap<String, String>,
}

impl BudgetSlot {
    pub fn of(obj: &Pod) -> Self {
        Self {
            namespace: obj.namespace().unwrap_or_default(),
            name: obj.name_any(),
            labels: obj.labels().clone(),
        }
    }
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
            cpu_catalog: Snapshots::new(),
            global_data_centers: Snapshots::new(),
            catalog_max_age: interval,
            exhausted: parking_lot::Mutex::new(HashMap::new()),
            cooldown: interval,
            clock: Clock::default(),
            metrics: None,
            budgets: None,
            held_recheck: interval,
            startups: startup::StartupWatches::default(),
        }
    }

    /// Log streams open right now, to pods that are starting.
    pub fn open_startup_streams(&self) -> usize {
        self.startups.open()
    }

    /// The clock the guardrails read "now" from, and the metrics their stops count in.
    pub fn with_guardrails(mut self, clock: Clock, metrics: Arc<Metrics>) -> Self {
        self.startups.count_in(metrics.clone());
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
    fn reserve(&self, slot: &BudgetSlot, price: f64) -> Result<(), Failure> {
        let Some(budgets) = &self.budgets else {
            return Ok(());
        };
        budgets
            .reserve(
                &slot.namespace,
                &Member::new(MemberKind::Pod, &slot.name),
                &slot.labels,
                price,
            )
            .map_err(|e| budget_hold::exceeded(&e, self.held_recheck))
    }

    fn exhausted_placements(&self, count: i32) -> HashSet<Placement> {
        let mut marks = self.exhausted.lock();
        marks.retain(|_, until| *until > Instant::now());
        marks
            .keys()
            .filter_map(|(t, c)| match t {
                Target::Gpu(p) if *c == count => Some(p.clone()),
                _ => None,
            })
            .collect()
    }

    fn exhausted_cpu_placements(&self) -> HashSet<CpuPlacement> {
        let mut marks = self.exhausted.lock();
        marks.retain(|_, until| *until > Instant::now());
        marks
            .keys()
            .filter_map(|(t, _)| match t {
                Target::Cpu(p) => Some(p.clone()),
                Target::Gpu(_) => None,
            })
            .collect()
    }

    fn mark_exhausted(&self, target: &Target, count: i32) {
        self.exhausted
            .lock()
            .insert((target.clone(), count), Instant::now() + self.cooldown);
    }

    async fn env(&self, shared: &Shared, obj: &Pod) -> Result<Vec<(String, String)>, Failure> {
        let ns = obj.namespace().unwrap_or_default();
        crate::kinds::shared::secret_env::resolve(shared, &ns, &obj.spec.container.env).await
    }

    /// Where the pod may go, in order of preference, from the GPU catalog (read at most
    /// once per interval per account, count and cloud); a CPU pod's come from the CPU
    /// catalog (`deploy.rs`).
    async fn candidates(
        &self,
        client: &PlatformClient,
        resolved: &ResolvedPod,
    ) -> Result<Vec<Offer>, Failure> {
        let d = &resolved.pod;
        if let Some(cpu) = &d.cpu {
            return self.cpu_candidates(client, resolved, cpu).await;
        }
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
        let data_centers: Vec<String> = if d.request.global_networking {
            let global = self.global_data_centers(client, resolved.account).await?;
            placing::global_data_centers(d.data_center_id.as_deref(), &global)?
        } else {
            d.data_center_id.iter().cloned().collect()
        };
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
        Ok(candidates.into_iter().map(Offer::from).collect())
    }
}

impl Inventory for PodAdapter {
    type Kind = Pod;
    type Remote = RemotePod;

    const KIND: &'static str = "Pod";
    const NOUN: &'static str = "pod";

    fn orphan_candidate(remote: &RemotePod) -> Option<gpucloud_policy::orphans::Candidate> {
        gpucloud_policy::orphans::pod_candidate(remote)
    }

    async fn list(&self, client: &PlatformClient) -> Result<Vec<RemotePod>, Failure> {
        let pods = client
            .pods()
            .list()
            .await
            .map_err(|e| Failure::from_platform("list pods", &e))?;
        self.startups.follow(client, &pods);
        Ok(pods)
    }

    fn claims(&self, obj: &Pod, remote: &RemotePod) -> bool {
        match remote.env_value(TAG_ENV) {
            Some(uid) => obj.uid().as_deref() == Some(uid),
            None => remote.name == remote_name(obj),
        }
    }
}

impl Actuator for PodAdapter {
    type Desired = ResolvedPod;
    type Change = PodChange;
    type State = PodState;

    async fn desired(
        &self,
        pass: &PassContext<'_, PodState>,
        obj: &Pod,
    ) -> Result<ResolvedPod, Failure> {
        let shared = pass.shared;
        // What the schema could not check (an unknown time zone): a condition and an
        // Event naming the field, no retry.
        guardrails::rules_of(&obj.spec)?;
        if let Some(field) = decide::unsupported_field(&obj.spec)
            && !pass.client.pods().supports_cpu_and_global_networking()
        {
            return Err(Failure::permanent(
                "UnsupportedByBackend",
                format!(
                    "spec.{field}: the seed API deploys GPU pods only, without global networking; run this install on the REST v2 backend (--platform-api v2)"
                ),
            ));
        }
        let volume = dependency::network_volume_id(
            shared,
            &obj.namespace().unwrap_or_default(),
            obj.spec.network_volume_id.as_deref(),
            obj.spec.network_volume_ref.as_ref(),
        )
        .await?;
        let env = with_install_tag(self.env(shared, obj).await?, shared.install_tag.get());
        let mut pod = desired_of(obj, env, volume);
        references::resolve_pod_references(shared, obj, &mut pod.request).await?;
        // Budget (StopNewest): the pod is stopped while the running total is over.
        let ns = obj.namespace().unwrap_or_default();
        if let Some(budgets) = &self.budgets
            && budgets.must_stop(&ns, &obj.member())
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
        pass: &PassContext<'_, PodState>,
        obj: &Pod,
        resolved: &ResolvedPod,
        remote: Option<&RemotePod>,
        changes: &[PodChange],
    ) -> Result<(), Failure> {
        if remote.is_none() {
            self.startup_hold(obj)?;
        }
        let Some(budgets) = &self.budgets else {
            return Ok(());
        };
        let price = match remote {
            // A deploy: the price of the first placement it will try. Without one the
            // create fails on its own, with the reason.
            None => match self.candidates(pass.client, resolved).await {
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
                    .or_else(|| budgets.last_price(&ns, &obj.member()));
                match known {
                    Some(price) => price,
                    None => match self.candidates(pass.client, resolved).await {
                        Ok(candidates) => candidates.first().map_or(0.0, |c| c.price_per_hour),
                        Err(_) => 0.0,
                    },
                }
            }
            Some(_) => return Ok(()),
        };
        budget_hold::listed(budgets, self.held_recheck, "the deploy").await?;
        self.reserve(&BudgetSlot::of(obj), price)
    }

    async fn create(
        &self,
        pass: &PassContext<'_, PodState>,
        obj: &Pod,
        resolved: &ResolvedPod,
    ) -> Result<Created<RemotePod>, Failure> {
        let candidates = self.candidates(pass.client, resolved).await;
        let slot = BudgetSlot::of(obj);
        let created = match candidates {
            Ok(candidates) => self.deploy(pass.client, &slot, resolved, &candidates).await,
            Err(f) => Err(f),
        };
        // Budget: a deploy that did not happen gives its reservation back at once.
        budget_hold::release_if_unmade(self.budgets.as_deref(), obj, created)
    }

    async fn delete(
        &self,
        client: &PlatformClient,
        id: &str,
        _holder: Option<&Pod>,
    ) -> Result<(), Failure> {
        client
            .pods()
            .terminate(id)
            .await
            .map_err(|e| Failure::from_platform("terminate the pod", &e))
    }

    fn secrets(&self, obj: &Pod) -> Vec<String> {
        secret_env::secrets_read(obj, &obj.spec.container.env)
    }

    fn forget(&self, key: &str) {
        self.startups.forget(key);
        if let (Some(budgets), Some((ns, name))) = (&self.budgets, key.split_once('/')) {
            budgets.forget(ns, &Member::new(MemberKind::Pod, name));
        }
    }

    /// Once the pod is up to date and Ready, what its state remembered of refused resumes
    /// and of a relocation is settled (see [`PodState::settle`]).
    async fn after_sync(
        &self,
        pass: &PassContext<'_, PodState>,
        obj: &Pod,
        remote: &mut RemotePod,
    ) -> Result<(), Failure> {
        let running = remote.desired_status == RUNNING;
        let resume = obj.status.as_ref().and_then(|s| s.resume.as_ref());
        pass.state.update(|s| s.settle(running, resume));
        Ok(())
    }

    async fn update(
        &self,
        pass: &PassContext<'_, PodState>,
        remote: &mut RemotePod,
        change: &PodChange,
    ) -> Result<Note, Failure> {
        self.apply_change(pass, remote, change).await?;
        Ok(Note::update(
            self.change_reason_of(change),
            self.describe_change(change),
        ))
    }
}

impl Decide for PodAdapter {
    fn plan(
        &self,
        obj: &Pod,
        desired: &ResolvedPod,
        remote: &RemotePod,
        state: &PodState,
    ) -> Plan<PodChange> {
        if let Some(replace) = decide::billed_after_create(obj, &desired.pod, remote) {
            return replace;
        }
        let base = self.plan_by_spec(obj, desired, remote);
        self.plan_lifecycle(obj, desired, remote, base, state)
    }

    fn report(
        &self,
        obj: &Pod,
        remote: Option<&RemotePod>,
        seen: Seen,
        state: &PodState,
    ) -> Report<PodStatus> {
        Report {
            status: self.status_of(obj, remote, seen, state),
            readiness: remote.map(|r| self.readiness_of(obj, r)),
            conditions: self.extra_conditions_of(obj, remote),
        }
    }

    fn policy(&self, obj: &Pod, remote: Option<&RemotePod>, state: &PodState) -> Policy {
        Policy {
            hold_create: self.hold_create_of(obj),
            when_gone: self.when_gone_of(obj),
            look_again_in: self.due_in_of(obj, remote, state),
        }
    }
}

/// The parts of the report, the policy and the update, each from what the pass has.
impl PodAdapter {
    fn readiness_of(&self, obj: &Pod, remote: &RemotePod) -> Readiness {
        let decision = self.guardrails(obj, Some(remote));
        match (readiness_of(decision.state, remote), decision.stop) {
            (Readiness::Ready { message }, Some(stop)) => Readiness::Ready {
                message: format!("{message}: {}", stop.message),
            },
            (readiness, _) => readiness,
        }
    }

    fn status_of(
        &self,
        obj: &Pod,
        remote: Option<&RemotePod>,
        seen: Seen,
        state: &PodState,
    ) -> PodStatus {
        let current = obj.status.clone().unwrap_or_default();
        let Some(remote) = remote else {
            if current.common.id.is_some() && !seen.creating {
                // Known pod, not seen this pass (a listing failed, or it was just
                // removed): keep what was reported, with a hold decided meanwhile.
                let startup = self.startup_assessment(obj, None).status;
                return PodStatus {
                    startup: startup.or(current.startup.clone()),
                    ..current
                };
            }
            let phase = if seen.creating {
                PodPhase::Deploying
            } else {
                PodPhase::Pending
            };
            let status = PodStatus {
                common: current.common,
                phase: Some(phase),
                guardrails: self.guardrails(obj, None).status,
                ..PodStatus::default()
            };
            let mut status = self.lifecycle_status(obj, None, status, state);
            if status.startup.as_ref().is_some_and(|s| s.hold.is_some()) {
                // Terminated because it did not start: held until the spec is edited.
                status.phase = Some(PodPhase::Failed);
            }
            return status;
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
        let status = self.lifecycle_status(obj, Some(remote), status, state);
        settle_live_figures(&current, status, written_ago, LIVE_FIGURES_REFRESH)
    }

    fn describe_change(&self, change: &PodChange) -> String {
        changes::describe(change)
    }

    fn change_reason_of(&self, change: &PodChange) -> &'static str {
        changes::reason(change)
    }

    fn hold_create_of(&self, obj: &Pod) -> Option<String> {
        let stop = self.guardrails(obj, None).stop?;
        Some(format!("not deployed: {}", stop.message))
    }

    fn due_in_of(
        &self,
        obj: &Pod,
        remote: Option<&RemotePod>,
        state: &PodState,
    ) -> Option<Duration> {
        // A little past the boundary, so that the pass lands on the new side of it.
        let guardrail = self
            .guardrails(obj, remote)
            .due_in
            .map(|d| self.clock.real(d));
        let lifecycle = self.lifecycle_due_in(obj, remote, state);
        let due = match (guardrail, lifecycle) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        Some(due + Duration::from_millis(250))
    }

    fn extra_conditions_of(
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

    fn when_gone_of(&self, obj: &Pod) -> WhenGone {
        match obj.spec.update_strategy {
            UpdateStrategy::Recreate => WhenGone::Recreate,
            UpdateStrategy::Never => WhenGone::Report,
        }
    }
}

impl crate::kinds::shared::sweep::Swept for PodAdapter {
    const DELETE_ORDER: u8 = 0;
    const REMOVAL: &'static str = "terminated";

    fn for_sweep(_: &kube::Client) -> Self {
        PodAdapter::new(Duration::from_secs(30))
    }
}

/// The Pod kind's registration (see `crate::kinds`).
pub const REGISTERED: RegisteredKind = RegisteredKind {
    crd: gpucloud_crd::managed_crd::<Pod>,
    controller: Some(start),
    rows: rows_of::<Pod>,
    sweep: Some(OrphanSweep::of::<PodAdapter>()),
};

fn start(controllers: &Controllers, census: Census) -> JoinHandle<()> {
    let shared = &controllers.shared;
    let adapter = PodAdapter::new(shared.config.poll_interval)
        .with_guardrails(shared.config.clock.clone(), shared.metrics.clone())
        .with_budgets(controllers.budgets.clone());
    controllers.spawn_held_by_budgets(adapter, census, MemberKind::Pod)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod cpu_tests;
