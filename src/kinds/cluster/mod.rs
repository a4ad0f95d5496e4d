//! The Cluster adapter: Instant Clusters (REST v2 only), placed by whole machines with a
//! GPU fallback list and a price cap for the whole cluster, renamed in place, replaced
//! when their shape changes, deleted when `maxRuntime` is reached, and described to
//! in-cluster programs by a ConfigMap.
//!
//! - Observation: two calls per account per interval for every cluster (the clusters,
//!   and every member from the pod list), joined by the client.
//! - Placement ([`decide::candidates`]) is pure: the priority list's GPU types × the
//!   allowed data centers (the network volume's alone when one is mounted), with stock
//!   for one node in the catalog's cluster availability and a price within the cap. Each
//!   is tried with a create pinned to its data center until one has room for every node;
//!   each refusal is an Event and, for the create that lands, a status entry.
//! - Crash safety: the remote name is `<namespace>-<name>-<uid8>` (unless `spec.name`
//!   sets it) and every member's env carries [`TAG_ENV`]`=<uid>`; `claims` recognises
//!   either, so a renamed cluster is still found after a crash.
//! - Budgets: a create is admitted at the price of its first placement; a fallback to a
//!   dearer one is admitted again first. `StopNewest` deletes a cluster only when its
//!   `budgetStopPolicy` is `Delete`.
//! - Seed backend: no clusters; the object reports `UnsupportedByBackend` and no call is
//!   made.

pub mod config_map;
pub mod decide;
pub mod summary;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;

use gpucloud_crd::cluster::{BudgetStopPolicy, ClusterStatus, PlacementRefusal};
use gpucloud_crd::guardrails::GuardrailHold;
use gpucloud_crd::pod::UpdateStrategy;
use gpucloud_crd::{Cluster, NetworkVolume, Template};
use gpucloud_engine::adapter::{
    Actuator, Created, Decide, Inventory, KindState, Note, PassContext, Plan, Policy, Readiness,
    Report, Seen, WhenGone,
};
use gpucloud_engine::annotations::parse_duration;
use gpucloud_engine::credentials::AccountId;
use gpucloud_engine::failure::Failure;
use gpucloud_engine::marker::{TAG_ENV, is_named_for, kept_name, with_install_tag};
use gpucloud_engine::snapshot::{Freshness, Snapshots};
use gpucloud_platform::PlatformClient;
use gpucloud_platform::domain::Identified;
use gpucloud_platform::domain::{
    Cluster as RemoteCluster, ClusterOffer, ClusterRequest, NodeContainer,
};
use gpucloud_policy::budget::BudgetLedger;
use gpucloud_policy::budget::ledger::{Member, MemberKind};
use gpucloud_policy::budget::members::BudgetMember;
use gpucloud_policy::fallback::Fallback;
use gpucloud_policy::guardrails::clock::Clock;

use crate::kinds::shared::{budget_hold, dependency, owned_config_map, secret_env};
use decide::{
    Candidate, ClusterChange, DEFAULT_MOUNT_PATH, DesiredCluster, RuntimeDecision, candidates,
    container_of, nothing_fits, plan_cluster, readiness_of, remote_name, runtime_decision,
    started_at, status_of,
};
use crate::kinds::shared::sweep::OrphanSweep;
use crate::kinds::summary::rows_of;
use crate::kinds::shared::registration::{Census, Controllers, RegisteredKind};
use tokio::task::JoinHandle;

/// A cluster as a pass sees it: the platform's, and what the create that made it in this
/// pass refused on the way (empty for a listed one).
#[derive(Clone, Debug)]
pub struct ClusterView {
    pub cluster: RemoteCluster,
    pub refused: Vec<PlacementRefusal>,
}

impl ClusterView {
    fn listed(cluster: RemoteCluster) -> Self {
        Self {
            cluster,
            refused: Vec::new(),
        }
    }
}

/// What the Cluster kind keeps of one object between its passes.
#[derive(Debug, Default)]
pub struct ClusterState {
    /// The ConfigMap data last written, so that it is written only on change.
    written: Option<BTreeMap<String, String>>,
    /// The placements refused by the last create that made nothing, for status (a create
    /// that lands brings its own in the [`ClusterView`]).
    refused: Vec<PlacementRefusal>,
}

impl KindState for ClusterState {
    fn is_empty(&self) -> bool {
        self.written.is_none() && self.refused.is_empty()
    }
}

/// Offers key: account, GPUs per node, nodes.
type OffersKey = (AccountId, u32, u32);

/// The Cluster kind.
pub struct ClusterAdapter {
    /// The cluster's own API, for the address ConfigMaps.
    kube: kube::Client,
    /// The catalog's offers per account and shape: read only to create, at most once per
    /// interval.
    offers: Snapshots<OffersKey, ClusterOffer, Failure>,
    offers_max_age: Duration,
    /// "Now" of `maxRuntime`.
    clock: Clock,
    /// The Budgets' ledger; `None`: no Budget is enforced.
    budgets: Option<Arc<BudgetLedger>>,
    /// How long a held cluster waits before it looks again by itself.
    held_recheck: Duration,
}

impl ClusterAdapter {
    /// `interval`: how old the catalog may be, and how long a held cluster waits.
    pub fn new(kube: kube::Client, interval: Duration, clock: Clock) -> Self {
        Self {
            kube,
            offers: Snapshots::new(),
            offers_max_age: interval,
            clock,
            budgets: None,
            held_recheck: interval,
        }
    }

    /// Admits creates against `budgets`.
    pub fn with_budgets(mut self, budgets: Arc<BudgetLedger>) -> Self {
        self.budgets = Some(budgets);
        self
    }

    /// The `maxRuntime` decision for `obj` now, with `remote` as listed.
    fn runtime(&self, obj: &Cluster, remote: Option<&RemoteCluster>) -> RuntimeDecision {
        let limit = obj.spec.max_runtime.as_deref().and_then(parse_duration);
        let previous = obj.status.as_ref().and_then(|s| s.guardrails.as_ref());
        runtime_decision(
            limit,
            previous,
            obj.metadata.generation,
            started_at(obj, remote),
            self.clock.now(),
        )
    }

    /// Takes the cluster's Budget reservation at `price` per hour, or holds it.
    fn reserve(&self, obj: &Cluster, price: f64) -> Result<(), Failure> {
        let Some(budgets) = &self.budgets else {
            return Ok(());
        };
        let ns = obj.namespace().unwrap_or_default();
        budgets
            .reserve(&ns, &obj.member(), obj.labels(), price)
            .map_err(|e| budget_hold::exceeded(&e, self.held_recheck))
    }

    /// Where the cluster may go, in order, and what was refused (the catalog read at most
    /// once per interval per account and shape).
    async fn placements(
        &self,
        client: &PlatformClient,
        desired: &DesiredCluster,
    ) -> Result<(Vec<Candidate>, Vec<PlacementRefusal>), Failure> {
        let r = &desired.request;
        let key = (desired.account, r.gpu_count_per_pod, r.pod_count);
        let offers = self
            .offers
            .get(&key, Freshness::MaxAge(self.offers_max_age), || async {
                client
                    .clusters()
                    .offers(r.gpu_count_per_pod, r.pod_count)
                    .await
                    .map_err(|e| Failure::from_platform("list GPU types", &e))
            })
            .await?;
        Ok(candidates(desired, &offers.items))
    }

    /// The Template's container settings, its env resolved, when the spec names one.
    async fn template(
        &self,
        pass: &PassContext<'_, ClusterState>,
        obj: &Cluster,
    ) -> Result<Option<NodeContainer>, Failure> {
        let Some(r) = &obj.spec.template_ref else {
            return Ok(None);
        };
        let ns = obj.namespace().unwrap_or_default();
        let (template, _) =
            dependency::ready_object::<Template>(pass.shared, &ns, &r.name, "spec.templateRef")
                .await?;
        let env = secret_env::resolve(pass.shared, &ns, &template.spec.container.env)
            .await
            .map_err(|f| Failure {
                message: format!("Template {}: {}", r.name, f.message),
                ..f
            })?;
        let t = &template.spec;
        Ok(Some(NodeContainer {
            image: t.image.clone(),
            args: t.container.args.clone(),
            disk_gb: t.container_disk_gb.and_then(|d| u32::try_from(d).ok()),
            ports: t.container.ports.clone(),
            env,
            network_volume_id: None,
        }))
    }

    /// The mounted volume's id and data center, when the spec names one.
    async fn volume(
        &self,
        pass: &PassContext<'_, ClusterState>,
        obj: &Cluster,
    ) -> Result<Option<(String, String)>, Failure> {
        let Some(r) = &obj.spec.network_volume_ref else {
            return Ok(None);
        };
        let ns = obj.namespace().unwrap_or_default();
        let (volume, id) = dependency::ready_object::<NetworkVolume>(
            pass.shared,
            &ns,
            &r.name,
            "spec.networkVolumeRef",
        )
        .await?;
        Ok(Some((id, volume.spec.data_center_id.clone())))
    }

    /// Creates on the first candidate with room for every node.
    async fn place(
        &self,
        pass: &PassContext<'_, ClusterState>,
        obj: &Cluster,
        desired: &DesiredCluster,
        candidates: &[Candidate],
        mut refused: Vec<PlacementRefusal>,
    ) -> Result<Created<ClusterView>, Failure> {
        let mut fallback = Fallback::new(candidates, |c| c.price_per_hour);
        let mut made = None;
        while let Some((i, candidate)) = fallback.next(|price| self.reserve(obj, price))? {
            let request = ClusterRequest {
                gpu_type_id: candidate.gpu_type_id.clone(),
                data_center_id: Some(candidate.data_center_id.clone()),
                ..desired.request.clone()
            };
            match pass.client.clusters().create(&request).await {
                Ok(cluster) => {
                    made = Some(cluster);
                    break;
                }
                Err(e) => {
                    let doing = format!("create the cluster on {}", candidate.describe());
                    fallback.refused(i, e, &doing)?;
                }
            }
        }
        refused.extend(fallback.no_room().iter().map(|(i, e)| PlacementRefusal {
            candidate: candidates[*i].describe(),
            reason: format!("no room for every node: {e}"),
        }));
        let Some(cluster) = made else {
            let failure = nothing_fits(&refused).with_notes(refusal_notes(&refused));
            pass.state.update(|s| s.refused = refused);
            return Err(failure);
        };
        let notes = refusal_notes(&refused);
        pass.state.update(|s| s.refused.clear());
        Ok(Created {
            remote: ClusterView { cluster, refused },
            notes,
        })
    }

    /// The ConfigMap of the addresses of a cluster that is no more: it goes before the
    /// next cluster is created, so that no Job reads a deleted cluster's addresses (or
    /// takes them for the next one's). The next cluster's is written once it runs.
    async fn drop_stale_config_map(
        &self,
        pass: &PassContext<'_, ClusterState>,
        obj: &Cluster,
    ) -> Result<(), Failure> {
        let wrote_one = pass.state.update(|s| s.written.take()).is_some();
        self.remove_config_map(obj, wrote_one).await
    }

    /// Deletes the address ConfigMap of `obj` when it may have one: this process wrote it
    /// (`wrote_one`), or status names it. One already gone counts as deleted.
    async fn remove_config_map(&self, obj: &Cluster, wrote_one: bool) -> Result<(), Failure> {
        if wrote_one || obj.status.as_ref().is_some_and(|s| s.config_map.is_some()) {
            owned_config_map::delete(&self.kube, obj, &config_map::name_of(obj)).await?;
        }
        Ok(())
    }
}

/// One Warning Event per refused placement: users see why the cluster runs lower in
/// their list, or why it does not run yet.
fn refusal_notes(refused: &[PlacementRefusal]) -> Vec<Note> {
    refused
        .iter()
        .map(|r| Note {
            reason: "PlacementRefused".into(),
            warning: true,
            action: "Create",
            message: format!("{}: {}", r.candidate, r.reason),
        })
        .collect()
}

impl Identified for ClusterView {
    fn id(&self) -> &str {
        &self.cluster.id
    }
}

impl Inventory for ClusterAdapter {
    type Kind = Cluster;
    type Remote = ClusterView;

    const KIND: &'static str = "Cluster";
    const NOUN: &'static str = "cluster";

    fn orphan_candidate(remote: &ClusterView) -> Option<gpucloud_policy::orphans::Candidate> {
        Some(gpucloud_policy::orphans::cluster_candidate(&remote.cluster))
    }

    async fn list(&self, client: &PlatformClient) -> Result<Vec<ClusterView>, Failure> {
        client
            .clusters()
            .list()
            .await
            .map(|l| l.into_iter().map(ClusterView::listed).collect())
            .map_err(|e| Failure::from_platform("list clusters", &e))
    }

    fn claims(&self, obj: &Cluster, remote: &ClusterView) -> bool {
        match remote.cluster.env_value(TAG_ENV) {
            Some(uid) => obj.uid().as_deref() == Some(uid),
            None => is_named_for(obj, obj.spec.name.as_deref(), &remote.cluster.name),
        }
    }
}

impl Actuator for ClusterAdapter {
    type Desired = DesiredCluster;
    type Change = ClusterChange;
    type State = ClusterState;

    async fn desired(
        &self,
        pass: &PassContext<'_, ClusterState>,
        obj: &Cluster,
    ) -> Result<DesiredCluster, Failure> {
        if !pass.client.clusters().supported() {
            return Err(Failure::permanent(
                "UnsupportedByBackend",
                "the seed API has no Instant Clusters: run this install on the REST v2 backend (--platform-api v2)",
            ));
        }
        let s = &obj.spec;
        let ns = obj.namespace().unwrap_or_default();
        let volume = self.volume(pass, obj).await?;
        let mut data_center_ids = s.data_center_ids.clone();
        if let Some((_, dc)) = &volume {
            if !data_center_ids.is_empty() && !data_center_ids.contains(dc) {
                return Err(Failure::permanent(
                    "DataCenterMismatch",
                    format!(
                        "spec.networkVolumeRef is in {dc}, which spec.dataCenterIds ({}) leaves out: a cluster mounts a volume of its own data center",
                        data_center_ids.join(", ")
                    ),
                ));
            }
            data_center_ids = vec![dc.clone()];
        }
        let template = self.template(pass, obj).await?;
        let env = secret_env::resolve(pass.shared, &ns, &s.container.env).await?;
        let env = with_install_tag(env, pass.shared.install_tag.get());
        let container = container_of(obj, env, template, volume.map(|(id, _)| id));
        let budget_stop = self
            .budgets
            .as_ref()
            .filter(|b| b.must_stop(&ns, &obj.member()))
            .filter(|_| s.budget_stop_policy == BudgetStopPolicy::Delete)
            .map(|_| {
                "a Budget's StopNewest chose this cluster, the newest over its cap (budgetStopPolicy Delete): deleting it".to_string()
            });
        Ok(DesiredCluster {
            account: pass.credentials.account,
            request: ClusterRequest {
                name: remote_name(obj, pass.shared.install_tag.get()),
                cluster_type: s.cluster_type.as_str().to_string(),
                gpu_type_id: String::new(),
                gpu_count_per_pod: u32::try_from(s.gpu.count).unwrap_or(1),
                pod_count: u32::try_from(s.node_count).unwrap_or(2),
                data_center_id: None,
                container,
                volume_mount_path: s
                    .volume_mount_path
                    .clone()
                    .unwrap_or_else(|| DEFAULT_MOUNT_PATH.to_string()),
                start_ssh: s.start_ssh,
            },
            gpu_types: s.gpu.type_ids.clone(),
            data_center_ids,
            max_price_per_hour: s.max_price_per_hour,
            update_strategy: s.update_strategy,
            budget_stop,
        })
    }

    async fn admit(
        &self,
        pass: &PassContext<'_, ClusterState>,
        obj: &Cluster,
        desired: &DesiredCluster,
        remote: Option<&ClusterView>,
        _changes: &[ClusterChange],
    ) -> Result<(), Failure> {
        let (Some(budgets), None) = (&self.budgets, remote) else {
            return Ok(());
        };
        // The price of the first placement the create will try; without one the create
        // fails on its own, with the reason.
        let price = match self.placements(pass.client, desired).await {
            Ok((candidates, _)) => match candidates.first() {
                Some(c) => c.price_per_hour,
                None => return Ok(()),
            },
            Err(_) => return Ok(()),
        };
        budget_hold::listed(budgets, self.held_recheck, "the create").await?;
        self.reserve(obj, price)
    }

    async fn create(
        &self,
        pass: &PassContext<'_, ClusterState>,
        obj: &Cluster,
        desired: &DesiredCluster,
    ) -> Result<Created<ClusterView>, Failure> {
        self.drop_stale_config_map(pass, obj).await?;
        let created = match self.placements(pass.client, desired).await {
            Ok((candidates, refused)) => self.place(pass, obj, desired, &candidates, refused).await,
            Err(f) => Err(f),
        };
        // Budget: a create that did not happen gives its reservation back at once.
        budget_hold::release_if_unmade(self.budgets.as_deref(), obj, created)
    }

    async fn delete(
        &self,
        client: &PlatformClient,
        id: &str,
        holder: Option<&Cluster>,
    ) -> Result<(), Failure> {
        client
            .clusters()
            .delete(id)
            .await
            .map_err(|e| Failure::from_platform("delete the cluster", &e))?;
        // Its addresses go with it (see `drop_stale_config_map`).
        match holder {
            Some(obj) => self.remove_config_map(obj, false).await,
            None => Ok(()),
        }
    }

    async fn after_sync(
        &self,
        pass: &PassContext<'_, ClusterState>,
        obj: &Cluster,
        remote: &mut ClusterView,
    ) -> Result<(), Failure> {
        let ns = obj.namespace().unwrap_or_default();
        if let Some(budgets) = &self.budgets {
            budgets.unhold(&ns, &obj.member());
        }
        let Some(data) = config_map::data_of(&remote.cluster) else {
            return Ok(());
        };
        if pass.state.read(|s| s.written.as_ref() == Some(&data)) {
            return Ok(());
        }
        let name = config_map::name_of(obj);
        owned_config_map::apply(pass.shared, obj, &name, config_map::LABEL, data.clone()).await?;
        pass.state.update(|s| s.written = Some(data));
        Ok(())
    }

    fn forget(&self, key: &str) {
        if let (Some(budgets), Some((ns, name))) = (&self.budgets, key.split_once('/')) {
            budgets.forget(ns, &Member::new(MemberKind::Cluster, name));
        }
    }

    fn secrets(&self, obj: &Cluster) -> Vec<String> {
        secret_env::secrets_read(obj, &obj.spec.container.env)
    }

    async fn update(
        &self,
        pass: &PassContext<'_, ClusterState>,
        remote: &mut ClusterView,
        change: &ClusterChange,
    ) -> Result<Note, Failure> {
        self.apply_change(pass.client, remote, change).await?;
        Ok(Note::updated(self.describe_change(change)))
    }
}

impl Decide for ClusterAdapter {
    fn plan(
        &self,
        obj: &Cluster,
        desired: &DesiredCluster,
        remote: &ClusterView,
        _state: &ClusterState,
    ) -> Plan<ClusterChange> {
        let runtime = self.runtime(obj, Some(&remote.cluster));
        match kept_name(obj, obj.spec.name.as_deref(), &remote.cluster.name) {
            Some(name) if name != desired.request.name => {
                let mut kept = desired.clone();
                kept.request.name = name.to_string();
                plan_cluster(&kept, &remote.cluster, runtime.hold.as_ref())
            }
            _ => plan_cluster(desired, &remote.cluster, runtime.hold.as_ref()),
        }
    }

    fn report(
        &self,
        obj: &Cluster,
        remote: Option<&ClusterView>,
        seen: Seen,
        state: &ClusterState,
    ) -> Report<ClusterStatus> {
        Report {
            status: self.status_of(obj, remote, seen, state),
            readiness: remote.map(|r| self.readiness_of(obj, r)),
            conditions: Vec::new(),
        }
    }

    fn policy(&self, obj: &Cluster, remote: Option<&ClusterView>, _state: &ClusterState) -> Policy {
        Policy {
            hold_create: self.hold_create_of(obj),
            when_gone: self.when_gone_of(obj),
            look_again_in: self.due_in_of(obj, remote),
        }
    }
}

/// The parts of the report, the policy and the update, each from what the pass has.
impl ClusterAdapter {
    async fn apply_change(
        &self,
        client: &PlatformClient,
        remote: &mut ClusterView,
        change: &ClusterChange,
    ) -> Result<(), Failure> {
        match change {
            ClusterChange::Rename(name) => {
                client
                    .clusters()
                    .rename(&remote.cluster.id, name)
                    .await
                    .map_err(|e| Failure::from_platform("rename the cluster", &e))?;
                remote.cluster.name = name.clone();
                Ok(())
            }
        }
    }

    fn readiness_of(&self, _obj: &Cluster, remote: &ClusterView) -> Readiness {
        readiness_of(&remote.cluster)
    }

    fn status_of(
        &self,
        obj: &Cluster,
        remote: Option<&ClusterView>,
        seen: Seen,
        state: &ClusterState,
    ) -> ClusterStatus {
        let cluster = remote.map(|r| &r.cluster);
        let hold: Option<GuardrailHold> = self.runtime(obj, cluster).hold;
        let refused = match remote {
            Some(r) => &r.refused,
            None => &state.refused,
        };
        status_of(obj, cluster, refused, seen, hold.as_ref())
    }

    fn describe_change(&self, change: &ClusterChange) -> String {
        match change {
            ClusterChange::Rename(name) => format!("renamed the cluster to {name:?}"),
        }
    }

    fn when_gone_of(&self, obj: &Cluster) -> WhenGone {
        match obj.spec.update_strategy {
            UpdateStrategy::Recreate => WhenGone::Recreate,
            UpdateStrategy::Never => WhenGone::Report,
        }
    }

    fn hold_create_of(&self, obj: &Cluster) -> Option<String> {
        let hold = self.runtime(obj, None).hold?;
        Some(format!("not created: {}", hold.message))
    }

    fn due_in_of(&self, obj: &Cluster, remote: Option<&ClusterView>) -> Option<Duration> {
        let due = self.runtime(obj, remote.map(|r| &r.cluster)).due_in?;
        Some(self.clock.real(due) + Duration::from_millis(250))
    }
}

impl crate::kinds::shared::sweep::Swept for ClusterAdapter {
    const DELETE_ORDER: u8 = 1;

    fn for_sweep(kube: &kube::Client) -> Self {
        ClusterAdapter::new(kube.clone(), Duration::from_secs(30), Clock::default())
    }
}

/// The Cluster kind's registration (see `crate::kinds`).
pub const REGISTERED: RegisteredKind = RegisteredKind {
    crd: gpucloud_crd::managed_crd::<Cluster>,
    controller: Some(start),
    rows: rows_of::<Cluster>,
    sweep: Some(OrphanSweep::of::<ClusterAdapter>()),
};

fn start(controllers: &Controllers, census: Census) -> JoinHandle<()> {
    let shared = &controllers.shared;
    let adapter = ClusterAdapter::new(
        shared.kube.clone(),
        shared.config.poll_interval,
        shared.config.clock.clone(),
    )
    .with_budgets(controllers.budgets.clone());
    controllers.spawn_held_by_budgets(adapter, census, MemberKind::Cluster)
}

#[cfg(test)]
mod tests;
