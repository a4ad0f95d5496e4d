//! The Endpoint adapter: serverless endpoints behind a job queue or a load balancer, with
//! their queue health or their workers, and a ConfigMap that tells in-cluster
//! applications where to send requests. A create, or a change that raises what the
//! minimum workers cost, is admitted against the namespace's Budgets first (see
//! `gpucloud_policy::budget`). The seed API has queue endpoints on GPU types only: a
//! load balancer, GPU pools or CPU workers stall there with `UnsupportedByBackend`.

pub mod cost;
pub mod decide;
pub mod summary;

pub use cost::*;
pub use decide::*;

use std::collections::BTreeMap;

use gpucloud_crd::endpoint::WorkerStates as StatusWorkerStates;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::DeleteParams;
use kube::{Api, Resource, ResourceExt};
use tracing::{debug, warn};

use gpucloud_crd::Endpoint;
use gpucloud_crd::endpoint::{
    EndpointHealth, EndpointRollout, EndpointStatus, EndpointType, JobCounts, WorkerCounts,
};
use gpucloud_platform::domain::{
    EndpointChange, EndpointSpec, Rollout, Routing, ServerlessEndpoint, WorkerStates,
    seed_unsupported,
};
use gpucloud_platform::{Health, PlatformApi, PlatformClient};

use crate::kinds::shared::owned_config_map::{self, kube_failure};
use crate::kinds::shared::{budget_hold, dependency};
use gpucloud_engine::adapter::{
    Actuator, Created, Decide, Inventory, KindState, Note, PassContext, Plan, Readiness, Report,
    Seen,
};
use gpucloud_engine::failure::Failure;
use gpucloud_engine::marker::{is_named_for, kept_name};
use gpucloud_platform::domain::Identified;
use gpucloud_policy::budget::BudgetLedger;
use gpucloud_policy::budget::ledger::{Member, MemberKind};
use gpucloud_policy::budget::members::BudgetMember;
use crate::kinds::shared::sweep::OrphanSweep;
use crate::kinds::summary::rows_of;
use crate::kinds::shared::registration::{Census, Controllers, RegisteredKind};
use tokio::task::JoinHandle;

/// Label on the connection ConfigMaps, naming the Endpoint that owns them.
pub const CONNECTION_LABEL: &str = "gpucloud.io/endpoint";

/// An endpoint as listed, plus what the pass learned of it: the queue health (queue
/// endpoints) or the workers (load balancers) fetched for Ready endpoints, while workers
/// roll over to a new release how far they are, and what its workers cost at the
/// catalog's price.
#[derive(Clone, Debug)]
pub struct RemoteEndpoint {
    pub record: ServerlessEndpoint,
    pub health: Option<Health>,
    /// A load balancer's workers by state.
    pub worker_states: Option<WorkerStates>,
    pub rollout: Option<Rollout>,
    /// `None`: not known (the catalog could not be read, or cannot price its types).
    pub min_workers_cost: Option<f64>,
    /// What one worker costs per hour; `None` as for `min_workers_cost`.
    pub worker_cost: Option<f64>,
}

impl RemoteEndpoint {
    fn listed(record: ServerlessEndpoint) -> Self {
        Self {
            record,
            health: None,
            worker_states: None,
            rollout: None,
            min_workers_cost: None,
            worker_cost: None,
        }
    }

    /// Prices the minimum workers and one worker with `client`'s catalog (cached).
    async fn price(&mut self, client: &PlatformClient) {
        let shape = CostShape::of_record(&self.record);
        let id = self.record.id.clone();
        self.min_workers_cost = cost_or_none(client, &shape, &id).await;
        self.worker_cost = cost_or_none(client, &shape.one_worker(), &id).await;
    }
}

/// The endpoint as the spec wants it, with references resolved.
pub type DesiredEndpoint = EndpointSpec;

/// A connection ConfigMap as written: its name and data.
type WrittenConnection = (String, BTreeMap<String, String>);

/// What the Endpoint kind keeps of one object between its passes.
#[derive(Debug, Default)]
pub struct EndpointState {
    /// The connection ConfigMap last written (name and data), so that it is written only
    /// when it changes.
    written: Option<WrittenConnection>,
}

impl KindState for EndpointState {
    fn is_empty(&self) -> bool {
        self.written.is_none()
    }
}

/// The Endpoint kind.
#[derive(Default)]
pub struct EndpointAdapter {
    /// The Budgets' ledger: creates and raises of the minimum workers are admitted
    /// against it. `None`: no Budget is enforced.
    budgets: Option<Arc<BudgetLedger>>,
    /// How long a held endpoint waits before it looks again by itself, should no wake-up
    /// come.
    held_recheck: Duration,
}

impl EndpointAdapter {
    /// Admits creates and raises of the minimum workers against `budgets`; a held
    /// endpoint looks again after `held_recheck` at the latest.
    pub fn with_budgets(mut self, budgets: Arc<BudgetLedger>, held_recheck: Duration) -> Self {
        self.budgets = Some(budgets);
        self.held_recheck = held_recheck;
        self
    }

    /// Writes (server-side apply) the connection ConfigMap when it changed, and removes
    /// one this Endpoint wrote under an earlier name.
    async fn write_connection(
        &self,
        pass: &PassContext<'_, EndpointState>,
        obj: &Endpoint,
        data: BTreeMap<String, String>,
    ) -> Result<(), Failure> {
        let shared = pass.shared;
        let wanted = obj.spec.write_connection_to.clone();
        let current = wanted.clone().map(|name| (name, data));
        if pass.state.read(|s| s.written == current) {
            return Ok(());
        }
        let config_maps: Api<ConfigMap> =
            Api::namespaced(shared.kube.clone(), &obj.namespace().unwrap_or_default());
        if let Some((name, data)) = &current {
            owned_config_map::apply(shared, obj, name, CONNECTION_LABEL, data.clone()).await?;
        }
        // A ConfigMap written under a name the spec no longer gives is this object's to remove.
        let selector = format!("{CONNECTION_LABEL}={}", obj.name_any());
        let owned = config_maps
            .list(&kube::api::ListParams::default().labels(&selector))
            .await
            .map_err(kube_failure)?;
        for stale in owned
            .items
            .iter()
            .filter(|cm| Some(cm.name_any()) != wanted)
        {
            let ours = stale
                .owner_references()
                .iter()
                .any(|o| Some(&o.uid) == obj.meta().uid.as_ref());
            if ours {
                config_maps
                    .delete(&stale.name_any(), &DeleteParams::default())
                    .await
                    .map_err(kube_failure)?;
            }
        }
        pass.state.update(|s| s.written = current);
        Ok(())
    }
}

impl Identified for RemoteEndpoint {
    fn id(&self) -> &str {
        &self.record.id
    }
}

impl Inventory for EndpointAdapter {
    type Kind = Endpoint;
    type Remote = RemoteEndpoint;

    const KIND: &'static str = "Endpoint";
    const NOUN: &'static str = "endpoint";

    fn orphan_candidate(remote: &Self::Remote) -> Option<gpucloud_policy::orphans::Candidate> {
        Some(gpucloud_policy::orphans::endpoint_candidate(
            &remote.record,
            remote.min_workers_cost,
        ))
    }

    async fn list(&self, client: &PlatformClient) -> Result<Vec<RemoteEndpoint>, Failure> {
        let records = client
            .endpoints()
            .list()
            .await
            .map_err(|e| Failure::from_platform("list endpoints", &e))?;
        let mut remotes: Vec<RemoteEndpoint> =
            records.into_iter().map(RemoteEndpoint::listed).collect();
        // What each one's minimum workers cost, for status (and so for the Budgets): one
        // cached catalog read, none when no endpoint keeps workers.
        // One worker of each is priced too, for what its running workers cost.
        let shapes: Vec<CostShape> = remotes
            .iter()
            .flat_map(|r| {
                let shape = CostShape::of_record(&r.record);
                [shape.one_worker(), shape]
            })
            .collect();
        match costs_of(client, &shapes.iter().collect::<Vec<_>>()).await {
            Ok(costs) => {
                for (remote, cost) in remotes.iter_mut().zip(costs.chunks(2)) {
                    remote.worker_cost = cost[0].as_ref().ok().copied();
                    remote.min_workers_cost = cost[1].as_ref().ok().copied();
                }
            }
            Err(e) => warn!(error = %e, "could not read the catalog's serverless prices"),
        }
        Ok(remotes)
    }

    fn claims(&self, obj: &Endpoint, remote: &RemoteEndpoint) -> bool {
        is_named_for(obj, obj.spec.name.as_deref(), &remote.record.name)
    }
}

impl Actuator for EndpointAdapter {
    type Desired = DesiredEndpoint;
    type Change = EndpointChange;
    type State = EndpointState;

    async fn desired(
        &self,
        pass: &PassContext<'_, EndpointState>,
        obj: &Endpoint,
    ) -> Result<DesiredEndpoint, Failure> {
        if pass.client.api() == PlatformApi::Seed
            && let Some(field) = seed_unsupported(&desired_of(obj, String::new(), None, None))
        {
            return Err(Failure::permanent(
                "UnsupportedByBackend",
                format!(
                    "{field}: the seed API has queue endpoints on GPU types only (no load balancers, GPU pools or CPU workers); run this install on the REST v2 backend (--platform-api v2)"
                ),
            ));
        }
        let volume = dependency::network_volume_id(
            pass.shared,
            &obj.namespace().unwrap_or_default(),
            obj.spec.network_volume_id.as_deref(),
            obj.spec.network_volume_ref.as_ref(),
        )
        .await?;
        // Exactly one of the two is set (a CEL rule of the CRD).
        let template = match (&obj.spec.template_id, &obj.spec.template_ref) {
            (Some(id), _) => id.clone(),
            (None, Some(r)) => {
                dependency::ready_id::<gpucloud_crd::Template>(
                    pass.shared,
                    &obj.namespace().unwrap_or_default(),
                    &r.name,
                    "spec.templateRef",
                )
                .await?
            }
            (None, None) => {
                return Err(Failure::permanent(
                    "InvalidSpec",
                    "spec: set exactly one of templateId and templateRef",
                ));
            }
        };
        let tag = pass.shared.install_tag.get();
        Ok(desired_of(obj, template, volume, tag))
    }

    async fn admit(
        &self,
        pass: &PassContext<'_, EndpointState>,
        obj: &Endpoint,
        desired: &DesiredEndpoint,
        remote: Option<&RemoteEndpoint>,
        changes: &[EndpointChange],
    ) -> Result<(), Failure> {
        let Some(budgets) = &self.budgets else {
            return Ok(());
        };
        let ns = obj.namespace().unwrap_or_default();
        let after = CostShape::of_desired(desired);
        // Only a create with minimum workers, or a change that may raise their cost, asks
        // for room: anything else costs no wait and no catalog read.
        if after.is_free() || remote.is_some() && !changes.iter().any(moves_cost) {
            budgets.unhold(&ns, &obj.member());
            return Ok(());
        }
        budget_hold::listed(budgets, self.held_recheck, "the endpoint").await?;
        if !budgets.has_budgets(&ns) {
            budgets.unhold(&ns, &obj.member());
            return Ok(());
        }
        let before = remote.map(|r| CostShape::of_record(&r.record));
        let mut shapes = vec![&after];
        shapes.extend(before.as_ref());
        let costs = costs_of(pass.client, &shapes)
            .await
            .map_err(|e| Failure::from_platform("read the GPU catalog's prices", &e))?;
        let after_cost = match &costs[0] {
            Ok(c) => *c,
            Err(unpriced) => {
                let message = if desired.cpu.is_some() {
                    format!(
                        "spec.cpu.flavors: the platform's catalog has no price for {}; a Budget of the namespace cannot count the endpoint's minimum workers, so it is held",
                        unpriced.types.join(", ")
                    )
                } else {
                    format!(
                        "spec.gpuTypeIds: the platform's catalog has no price for {}; a Budget of the namespace cannot count the endpoint's minimum workers, so it is held",
                        unpriced.types.join(", ")
                    )
                };
                return Err(budget_hold::waiting(
                    "BudgetPriceUnknown",
                    message,
                    self.held_recheck,
                ));
            }
        };
        // The old cost, else the listing's figure; neither known (a type the catalog no
        // longer prices), the change is admitted as a create: it asks for all it will cost.
        let before_cost = costs
            .get(1)
            .and_then(|c| c.as_ref().ok().copied())
            .or_else(|| remote.and_then(|r| r.min_workers_cost));
        match cost_admission(before_cost, after_cost) {
            CostAdmission::Proceed => {
                budgets.unhold(&ns, &obj.member());
                Ok(())
            }
            CostAdmission::Reserve(cost) => budgets
                .reserve(&ns, &obj.member(), obj.labels(), cost)
                .map_err(|e| budget_hold::exceeded(&e, self.held_recheck)),
        }
    }

    async fn create(
        &self,
        pass: &PassContext<'_, EndpointState>,
        obj: &Endpoint,
        d: &DesiredEndpoint,
    ) -> Result<Created<RemoteEndpoint>, Failure> {
        let created = pass
            .client
            .endpoints()
            .create(d)
            .await
            .map_err(|e| Failure::from_platform("create the endpoint", &e));
        // Budget: a create that did not happen gives its reservation back at once.
        let mut record = budget_hold::release_if_unmade(self.budgets.as_deref(), obj, created)?;
        // REST v2 does not echo the template: status keeps the one the endpoint was made with.
        record
            .template_id
            .get_or_insert_with(|| d.template_id.clone());
        let mut remote = RemoteEndpoint::listed(record);
        remote.price(pass.client).await;
        Ok(Created::quietly(remote))
    }

    async fn delete(
        &self,
        client: &PlatformClient,
        id: &str,
        _holder: Option<&Endpoint>,
    ) -> Result<(), Failure> {
        client
            .endpoints()
            .delete(id)
            .await
            .map_err(|e| Failure::from_platform("delete the endpoint", &e))
    }

    fn forget(&self, key: &str) {
        if let (Some(budgets), Some((ns, name))) = (&self.budgets, key.split_once('/')) {
            budgets.forget(ns, &Member::new(MemberKind::Endpoint, name));
        }
    }

    async fn after_sync(
        &self,
        pass: &PassContext<'_, EndpointState>,
        obj: &Endpoint,
        remote: &mut RemoteEndpoint,
    ) -> Result<(), Failure> {
        // Up to date with its spec, it asks for no room: a raise held and then taken back
        // (the spec reverted) is no longer held.
        if let Some(budgets) = &self.budgets {
            budgets.unhold(&obj.namespace().unwrap_or_default(), &obj.member());
        }
        let id = remote.record.id.clone();
        let client = pass.client;
        if rollout_to_follow(obj.status.as_ref(), remote) {
            let rollout = client
                .endpoints()
                .rollout(&id)
                .await
                .map_err(|e| Failure::from_platform("read the endpoint's rollout", &e))?;
            remote.rollout = Some(rollout);
        }
        // One call per pass either way: a queue's health, or a load balancer's workers
        // (it has no queue; the platform's load balancer checks each worker's health).
        if matches!(remote.record.routing, Some(Routing::LoadBalancer(_))) {
            let states = client
                .endpoints()
                .workers(&id)
                .await
                .map_err(|e| Failure::from_platform("read the endpoint's workers", &e))?;
            debug!(endpoint = %id, ?states, "read the load balancer's workers");
            remote.worker_states = states;
        } else {
            let health = client
                .jobs()
                .health(&id)
                .await
                .map_err(|e| Failure::from_platform("read the endpoint's health", &e))?;
            remote.health = Some(health);
        }
        self.write_connection(pass, obj, connection_data(&remote.record))
            .await
    }

    async fn update(
        &self,
        pass: &PassContext<'_, EndpointState>,
        remote: &mut RemoteEndpoint,
        change: &EndpointChange,
    ) -> Result<Note, Failure> {
        self.apply_change(pass.client, remote, change).await?;
        Ok(Note::updated(self.describe_change(change)))
    }
}

impl Decide for EndpointAdapter {
    fn plan(
        &self,
        obj: &Endpoint,
        desired: &DesiredEndpoint,
        remote: &RemoteEndpoint,
        _state: &EndpointState,
    ) -> Plan<EndpointChange> {
        // REST v2 does not echo an endpoint's template: the one this operator last applied
        // (kept in status) stands for it.
        let mut record = remote.record.clone();
        if record.template_id.is_none() {
            record.template_id = obj.status.as_ref().and_then(|s| s.template_id.clone());
        }
        match kept_name(obj, obj.spec.name.as_deref(), &record.name) {
            Some(name) if name != desired.name => {
                let kept = DesiredEndpoint {
                    name: name.to_string(),
                    ..desired.clone()
                };
                plan_endpoint(&kept, &record)
            }
            _ => plan_endpoint(desired, &record),
        }
    }

    fn report(
        &self,
        obj: &Endpoint,
        remote: Option<&RemoteEndpoint>,
        seen: Seen,
        _state: &EndpointState,
    ) -> Report<EndpointStatus> {
        Report {
            status: self.status_of(obj, remote, seen),
            readiness: remote.map(|r| self.readiness_of(obj, r)),
            conditions: Vec::new(),
        }
    }
}

/// The parts of the report, the policy and the update, each from what the pass has.
impl EndpointAdapter {
    async fn apply_change(
        &self,
        client: &PlatformClient,
        remote: &mut RemoteEndpoint,
        change: &EndpointChange,
    ) -> Result<(), Failure> {
        client
            .endpoints()
            .update(&remote.record.id, change)
            .await
            .map_err(|e| Failure::from_platform("update the endpoint", &e))?;
        if change.rolls_workers() {
            // Reported in status, so that the following passes follow the rollout.
            remote.rollout = Some(Rollout {
                in_progress: true,
                workers_on_latest: 0,
                workers_total: 0,
            });
        }
        if let Some(t) = &change.template_id {
            remote.record.template_id = Some(t.clone());
        }
        // Status says the new cost at once: the Budget's reservation for a raise goes
        // when status reaches it.
        if moves_cost(change) {
            let shape = CostShape::after(&remote.record, change);
            remote.min_workers_cost = cost_or_none(client, &shape, &remote.record.id).await;
            remote.worker_cost = cost_or_none(client, &shape.one_worker(), &remote.record.id).await;
        }
        Ok(())
    }

    fn readiness_of(&self, _obj: &Endpoint, remote: &RemoteEndpoint) -> Readiness {
        readiness_of(remote)
    }

    fn status_of(
        &self,
        obj: &Endpoint,
        remote: Option<&RemoteEndpoint>,
        _seen: Seen,
    ) -> EndpointStatus {
        let mut status = obj.status.clone().unwrap_or_default();
        let Some(remote) = remote else { return status };
        let r = &remote.record;
        match &r.load_balancer_urls {
            Some(lb) => {
                status.url = Some(lb.base.clone());
                status.health_url = Some(lb.health.clone());
            }
            None => status.url = Some(r.job_api_url.clone()),
        }
        status.endpoint_type = r.routing.as_ref().map(|t| match t {
            Routing::Queue => EndpointType::Queue,
            Routing::LoadBalancer(_) => EndpointType::LoadBalancer,
        });
        status.pools = r
            .pools
            .as_ref()
            .map(|p| p.pools.clone())
            .unwrap_or_default();
        status.cpu_flavors = r
            .cpu
            .as_ref()
            .map(|c| c.flavors.clone())
            .unwrap_or_default();
        status.name = Some(r.name.clone());
        status.template_id = r.template_id.clone().or(status.template_id);
        if let Some(rollout) = remote.rollout {
            status.rollout = Some(EndpointRollout {
                in_progress: rollout.in_progress,
                workers_on_latest: rollout.workers_on_latest,
                workers_total: rollout.workers_total,
            });
        }
        status.gpu_type_ids = r.gpus.types();
        status.workers_min = r.workers_min.and_then(|v| i32::try_from(v).ok());
        status.workers_max = r.workers_max.and_then(|v| i32::try_from(v).ok());
        if let Some(cost) = remote.min_workers_cost {
            // Rounded as a Budget's figures are: an unchanged cost writes no status.
            status.min_workers_cost_per_hour = Some((cost * 1e6).round() / 1e6);
        }
        if let Some(cost) = workers_cost(remote) {
            status.workers_cost_per_hour = Some((cost * 1e6).round() / 1e6);
        }
        if let Some(w) = remote.worker_states {
            status.worker_states = Some(StatusWorkerStates {
                running: w.running,
                idle: w.idle,
                initializing: w.initializing,
                throttled: w.throttled,
                unhealthy: w.unhealthy,
                total: w.total,
            });
            status.workers = Some(format!(
                "{}/{}",
                w.serving(),
                r.workers_max.unwrap_or_default()
            ));
        }
        if let Some(h) = &remote.health {
            status.health = Some(EndpointHealth {
                jobs: JobCounts {
                    completed: h.jobs.completed,
                    failed: h.jobs.failed,
                    in_progress: h.jobs.in_progress,
                    in_queue: h.jobs.in_queue,
                    retried: h.jobs.retried,
                },
                workers: WorkerCounts {
                    idle: h.workers.idle,
                    running: h.workers.running,
                },
            });
            status.workers = Some(format!(
                "{}/{}",
                h.workers.running,
                r.workers_max.unwrap_or_default()
            ));
        }
        status
    }

    fn describe_change(&self, change: &EndpointChange) -> String {
        format!("updated the endpoint: {}", change.fields().join(", "))
    }
}

impl crate::kinds::shared::sweep::Swept for EndpointAdapter {
    const DELETE_ORDER: u8 = 2;

    fn for_sweep(_: &kube::Client) -> Self {
        EndpointAdapter::default()
    }
}

/// The Endpoint kind's registration (see `crate::kinds`).
pub const REGISTERED: RegisteredKind = RegisteredKind {
    crd: gpucloud_crd::managed_crd::<Endpoint>,
    controller: Some(start),
    rows: rows_of::<Endpoint>,
    sweep: Some(OrphanSweep::of::<EndpointAdapter>()),
};

fn start(controllers: &Controllers, census: Census) -> JoinHandle<()> {
    let adapter = EndpointAdapter::default().with_budgets(
        controllers.budgets.clone(),
        controllers.shared.config.poll_interval,
    );
    controllers.spawn_held_by_budgets(adapter, census, MemberKind::Endpoint)
}

#[cfg(test)]
mod tests;
