//! The Endpoint adapter: serverless endpoints with their queue and worker health, and a
//! ConfigMap that tells in-cluster applications where to send jobs. A create, or a change
//! that raises what the minimum workers cost, is admitted against the namespace's Budgets
//! first (see `gpucloud_policy::budget`).

pub mod summary;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::DeleteParams;
use kube::{Api, Resource, ResourceExt};
use tracing::warn;

use gpucloud_crd::Endpoint;
use gpucloud_crd::endpoint::{
    EndpointHealth, EndpointRollout, EndpointStatus, JobCounts, ScalerType, WorkerCounts,
};
use gpucloud_platform::domain::{
    EndpointChange, EndpointSpec, Rollout, Scaler, ServerlessEndpoint,
};
use gpucloud_platform::domain::{ServerlessPrices, Unpriced};
use gpucloud_platform::{Health, PlatformClient, PlatformError};

use crate::kinds::shared::owned_config_map::{self, kube_failure};
use crate::kinds::shared::{budget_hold, dependency};
use gpucloud_engine::adapter::{Adapter, Created, PassContext, Plan, Readiness, Seen};
use gpucloud_engine::context::Shared;
use gpucloud_engine::failure::{Applied, Failure};
use gpucloud_engine::marker::default_remote_name;
use gpucloud_policy::budget::BudgetLedger;

/// Label on the connection ConfigMaps, naming the Endpoint that owns them.
pub const CONNECTION_LABEL: &str = "gpucloud.io/endpoint";

/// An endpoint as listed, plus what the pass learned of it: the queue health fetched for
/// Ready endpoints, while workers roll over to a new release how far they are, and what
/// its minimum workers cost at the catalog's price.
#[derive(Clone, Debug)]
pub struct RemoteEndpoint {
    pub record: ServerlessEndpoint,
    pub health: Option<Health>,
    pub rollout: Option<Rollout>,
    /// `None`: not known (the catalog could not be read, or cannot price its types).
    pub min_workers_cost: Option<f64>,
}

impl RemoteEndpoint {
    fn listed(record: ServerlessEndpoint) -> Self {
        Self {
            record,
            health: None,
            rollout: None,
            min_workers_cost: None,
        }
    }
}

/// What decides an endpoint's minimum-workers cost: workers, GPUs per worker, GPU types.
#[derive(Clone, Debug, PartialEq)]
pub struct CostShape {
    pub workers_min: i64,
    pub gpu_count: i64,
    pub gpu_type_ids: Vec<String>,
}

impl CostShape {
    fn of_desired(d: &DesiredEndpoint) -> Self {
        Self {
            workers_min: d.workers_min,
            gpu_count: d.gpu_count,
            gpu_type_ids: d.gpu_type_ids.clone(),
        }
    }

    fn of_record(r: &ServerlessEndpoint) -> Self {
        Self {
            workers_min: r.workers_min.unwrap_or_default(),
            gpu_count: r.gpu_count.unwrap_or(1),
            gpu_type_ids: r.gpus.types(),
        }
    }

    /// The record with `change` made.
    fn after(r: &ServerlessEndpoint, change: &EndpointChange) -> Self {
        let mut shape = Self::of_record(r);
        if let Some(w) = change.workers_min {
            shape.workers_min = w;
        }
        if let Some(c) = change.gpu_count {
            shape.gpu_count = c;
        }
        if let Some(t) = &change.gpu_type_ids {
            shape.gpu_type_ids = t.clone();
        }
        shape
    }

    fn cost(&self, prices: &ServerlessPrices) -> Result<f64, Unpriced> {
        prices.min_workers_cost(self.workers_min, self.gpu_count, &self.gpu_type_ids)
    }

    /// Pure: whether no minimum worker runs, so that the cost is 0 without the catalog.
    fn is_free(&self) -> bool {
        self.workers_min <= 0
    }
}

/// Pure: whether `change` may move what the minimum workers cost.
pub fn moves_cost(change: &EndpointChange) -> bool {
    change.workers_min.is_some() || change.gpu_count.is_some() || change.gpu_type_ids.is_some()
}

/// What the Budget admission of an endpoint decides, given its cost before and after.
#[derive(Clone, Debug, PartialEq)]
pub enum CostAdmission {
    /// No reservation needed: nothing more to pay (a create of no minimum workers, a
    /// change that lowers or keeps the cost).
    Proceed,
    /// Reserve this cost per hour first.
    Reserve(f64),
}

/// Pure: a create (`before` is `None`) or a change to an endpoint costing `before`, which
/// would make it cost `after`.
pub fn cost_admission(before: Option<f64>, after: f64) -> CostAdmission {
    const EPSILON: f64 = 1e-9;
    match before {
        _ if after <= EPSILON => CostAdmission::Proceed,
        Some(b) if after <= b + EPSILON => CostAdmission::Proceed,
        _ => CostAdmission::Reserve(after),
    }
}

/// Reads the catalog's prices only when `shapes` need them: the cost of each, or why it
/// cannot be priced.
async fn costs_of(
    client: &PlatformClient,
    shapes: &[&CostShape],
) -> Result<Vec<Result<f64, Unpriced>>, PlatformError> {
    let prices = if shapes.iter().all(|s| s.is_free()) {
        Arc::new(ServerlessPrices::default())
    } else {
        client.catalog().serverless_prices().await?
    };
    Ok(shapes.iter().map(|s| s.cost(&prices)).collect())
}

/// The cost of `shape`, `None` when it cannot be known now (logged: it only leaves the
/// last figure in status).
async fn cost_or_none(client: &PlatformClient, shape: &CostShape, id: &str) -> Option<f64> {
    match costs_of(client, &[shape]).await {
        Ok(mut costs) => costs.pop().and_then(Result::ok),
        Err(e) => {
            warn!(endpoint = %id, error = %e, "could not read the catalog's serverless prices");
            None
        }
    }
}

/// The endpoint as the spec wants it, with references resolved.
pub type DesiredEndpoint = EndpointSpec;

fn remote_name(obj: &Endpoint) -> String {
    obj.spec
        .name
        .clone()
        .unwrap_or_else(|| default_remote_name(obj))
}

/// Pure: the desired endpoint, given the template and network volume ids already resolved.
pub fn desired_of(
    obj: &Endpoint,
    template_id: String,
    network_volume_id: Option<String>,
) -> DesiredEndpoint {
    let s = &obj.spec;
    let scaler_value = i64::from(s.scaler_value);
    EndpointSpec {
        name: remote_name(obj),
        template_id,
        gpu_type_ids: s.gpu_type_ids.clone(),
        gpu_count: i64::from(s.gpu_count),
        workers_min: i64::from(s.workers_min),
        workers_max: i64::from(s.workers_max),
        idle_timeout_s: i64::from(s.idle_timeout_seconds),
        scaler: match s.scaler_type {
            ScalerType::QueueDelay => Scaler::QueueDelay(scaler_value),
            ScalerType::RequestCount => Scaler::RequestCount(scaler_value),
        },
        execution_timeout_ms: s.execution_timeout_ms,
        flashboot: s.flashboot,
        network_volume_id,
    }
}

/// Pure: the fields that differ, as one partial update.
pub fn plan_endpoint(
    desired: &DesiredEndpoint,
    record: &ServerlessEndpoint,
) -> Plan<EndpointChange> {
    fn differs<T: PartialEq + Clone>(want: &T, have: Option<T>) -> Option<T> {
        (have.as_ref() != Some(want)).then(|| want.clone())
    }
    let change = EndpointChange {
        name: differs(&desired.name, Some(record.name.clone())),
        template_id: differs(&desired.template_id, record.template_id.clone()),
        gpu_type_ids: (!record.gpus.matches(&desired.gpu_type_ids))
            .then(|| desired.gpu_type_ids.clone()),
        gpu_count: differs(&desired.gpu_count, record.gpu_count),
        workers_min: differs(&desired.workers_min, record.workers_min),
        workers_max: differs(&desired.workers_max, record.workers_max),
        idle_timeout_s: differs(&desired.idle_timeout_s, record.idle_timeout_s),
        network_volume_id: match (&desired.network_volume_id, &record.network_volume_id) {
            (Some(want), have) if have.as_ref() != Some(want) => Some(want.clone()),
            _ => None,
        },
        execution_timeout_ms: match desired.execution_timeout_ms {
            Some(want) if record.execution_timeout_ms != Some(want) => Some(want),
            _ => None,
        },
        scaler: differs(&desired.scaler, record.scaler),
        flashboot: differs(&desired.flashboot, record.flashboot),
    };
    if change.is_empty() {
        Plan::UpToDate
    } else {
        Plan::Update(vec![change])
    }
}

/// Pure: whether the endpoint serves its latest spec yet. Workers still on an older
/// release mean a rollout is under way.
pub fn readiness_of(remote: &RemoteEndpoint) -> Readiness {
    match remote.rollout {
        Some(r) if r.in_progress => Readiness::Progressing {
            reason: "RollingOut".into(),
            message: format!(
                "{} of {} workers run the latest release of endpoint {}",
                r.workers_on_latest, r.workers_total, remote.record.id
            ),
        },
        _ => Readiness::Ready {
            message: format!("endpoint {} matches the spec", remote.record.id),
        },
    }
}

/// The Endpoint kind.
#[derive(Default)]
pub struct EndpointAdapter {
    /// The connection ConfigMap last written per object (name, id, url), so it is written
    /// only when it changes; dropped in `forget`.
    written: parking_lot::Mutex<HashMap<String, (String, String, String)>>,
    /// The Budgets' ledger: creates and raises of the minimum workers are admitted
    /// against it. `None`: no Budget is enforced.
    budgets: Option<Arc<BudgetLedger>>,
    /// How long a held endpoint waits before it looks again by itself, should no wake-up
    /// come.
    held_recheck: Duration,
}

/// Pure: whether a pass should ask how far a rollout has come: one the operator started
/// in this pass (`remote.rollout`), or one status still reports as under way. Other
/// passes cost no rollout call.
pub fn rollout_to_follow(status: Option<&EndpointStatus>, remote: &RemoteEndpoint) -> bool {
    let reported = status
        .and_then(|s| s.rollout.as_ref())
        .is_some_and(|r| r.in_progress);
    reported || remote.rollout.is_some_and(|r| r.in_progress)
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
        shared: &Shared,
        obj: &Endpoint,
        id: &str,
        url: &str,
    ) -> Result<(), Failure> {
        let key = format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any());
        let wanted = obj.spec.write_connection_to.clone();
        let previous = self.written.lock().get(&key).cloned();
        let current = wanted
            .clone()
            .map(|name| (name, id.to_string(), url.to_string()));
        if previous == current {
            return Ok(());
        }
        let config_maps: Api<ConfigMap> =
            Api::namespaced(shared.kube.clone(), &obj.namespace().unwrap_or_default());
        if let Some((name, id, url)) = &current {
            let data = BTreeMap::from([
                ("id".to_string(), id.clone()),
                ("url".to_string(), url.clone()),
            ]);
            owned_config_map::apply(shared, obj, name, CONNECTION_LABEL, data).await?;
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
        let mut written = self.written.lock();
        match current {
            Some(c) => written.insert(key, c),
            None => written.remove(&key),
        };
        Ok(())
    }
}

impl Adapter for EndpointAdapter {
    type Kind = Endpoint;
    type Remote = RemoteEndpoint;
    type Desired = DesiredEndpoint;
    type Change = EndpointChange;

    const KIND: &'static str = "Endpoint";
    const NOUN: &'static str = "endpoint";

    const ORPHAN_SWEEP: bool = true;

    fn orphan_candidate(remote: &Self::Remote) -> Option<gpucloud_policy::orphans::Candidate> {
        Some(gpucloud_policy::orphans::endpoint_candidate(
            &remote.record,
            remote.min_workers_cost,
        ))
    }

    fn id(remote: &RemoteEndpoint) -> &str {
        &remote.record.id
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
        let shapes: Vec<CostShape> = remotes
            .iter()
            .map(|r| CostShape::of_record(&r.record))
            .collect();
        match costs_of(client, &shapes.iter().collect::<Vec<_>>()).await {
            Ok(costs) => {
                for (remote, cost) in remotes.iter_mut().zip(costs) {
                    remote.min_workers_cost = cost.ok();
                }
            }
            Err(e) => warn!(error = %e, "could not read the catalog's serverless prices"),
        }
        Ok(remotes)
    }

    fn claims(&self, obj: &Endpoint, remote: &RemoteEndpoint) -> bool {
        remote.record.name == remote_name(obj)
    }

    async fn desired(
        &self,
        pass: &PassContext<'_>,
        obj: &Endpoint,
    ) -> Result<DesiredEndpoint, Failure> {
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
        Ok(desired_of(obj, template, volume))
    }

    async fn admit(
        &self,
        pass: &PassContext<'_>,
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
            budgets.unhold_endpoint(&ns, &obj.name_any());
            return Ok(());
        }
        budget_hold::listed(budgets, self.held_recheck, "the endpoint").await?;
        if !budgets.has_budgets(&ns) {
            budgets.unhold_endpoint(&ns, &obj.name_any());
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
                return Err(budget_hold::waiting(
                    "BudgetPriceUnknown",
                    format!(
                        "spec.gpuTypeIds: the platform's catalog has no price for {}; a Budget of the namespace cannot count the endpoint's minimum workers, so it is held",
                        unpriced.types.join(", ")
                    ),
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
                budgets.unhold_endpoint(&ns, &obj.name_any());
                Ok(())
            }
            CostAdmission::Reserve(cost) => budgets
                .reserve_endpoint(&ns, &obj.name_any(), obj.labels(), cost)
                .map_err(|e| budget_hold::exceeded(&e, self.held_recheck)),
        }
    }

    async fn create(
        &self,
        pass: &PassContext<'_>,
        obj: &Endpoint,
        d: &DesiredEndpoint,
    ) -> Result<Created<RemoteEndpoint>, Failure> {
        let created = pass
            .client
            .endpoints()
            .create(d)
            .await
            .map_err(|e| Failure::from_platform("create the endpoint", &e));
        let mut record = match created {
            Ok(record) => record,
            Err(f) => {
                // Budget: a create that did not happen gives its reservation back at once.
                if let Some(budgets) = &self.budgets
                    && f.applied == Applied::No
                {
                    budgets.release_endpoint(&obj.namespace().unwrap_or_default(), &obj.name_any());
                }
                return Err(f);
            }
        };
        // REST v2 does not echo the template: status keeps the one the endpoint was made with.
        record
            .template_id
            .get_or_insert_with(|| d.template_id.clone());
        let shape = CostShape::of_record(&record);
        let mut remote = RemoteEndpoint::listed(record);
        remote.min_workers_cost = cost_or_none(pass.client, &shape, &remote.record.id).await;
        Ok(Created::quietly(remote))
    }

    fn plan(
        &self,
        obj: &Endpoint,
        desired: &DesiredEndpoint,
        remote: &RemoteEndpoint,
    ) -> Plan<EndpointChange> {
        // REST v2 does not echo an endpoint's template: the one this operator last applied
        // (kept in status) stands for it.
        let mut record = remote.record.clone();
        if record.template_id.is_none() {
            record.template_id = obj.status.as_ref().and_then(|s| s.template_id.clone());
        }
        plan_endpoint(desired, &record)
    }

    async fn apply(
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
        }
        Ok(())
    }

    async fn delete(&self, client: &PlatformClient, id: &str) -> Result<(), Failure> {
        client
            .endpoints()
            .delete(id)
            .await
            .map_err(|e| Failure::from_platform("delete the endpoint", &e))
    }

    fn forget(&self, key: &str) {
        self.written.lock().remove(key);
        if let (Some(budgets), Some((ns, name))) = (&self.budgets, key.split_once('/')) {
            budgets.forget_endpoint(ns, name);
        }
    }

    fn readiness(&self, _obj: &Endpoint, remote: &RemoteEndpoint) -> Readiness {
        readiness_of(remote)
    }

    async fn after_sync(
        &self,
        pass: &PassContext<'_>,
        obj: &Endpoint,
        remote: &mut RemoteEndpoint,
    ) -> Result<(), Failure> {
        // Up to date with its spec, it asks for no room: a raise held and then taken back
        // (the spec reverted) is no longer held.
        if let Some(budgets) = &self.budgets {
            budgets.unhold_endpoint(&obj.namespace().unwrap_or_default(), &obj.name_any());
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
        let health = client
            .jobs()
            .health(&remote.record.id)
            .await
            .map_err(|e| Failure::from_platform("read the endpoint's health", &e))?;
        remote.health = Some(health);
        let url = remote.record.job_api_url.clone();
        self.write_connection(pass.shared, obj, &remote.record.id, &url)
            .await
    }

    fn status(
        &self,
        obj: &Endpoint,
        remote: Option<&RemoteEndpoint>,
        _seen: Seen,
    ) -> EndpointStatus {
        let mut status = obj.status.clone().unwrap_or_default();
        let Some(remote) = remote else { return status };
        let r = &remote.record;
        status.url = Some(r.job_api_url.clone());
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

    fn describe(&self, change: &EndpointChange) -> String {
        format!("updated the endpoint: {}", change.fields().join(", "))
    }
}

#[cfg(test)]
mod tests;
