//! How a kind is registered and started: its [`RegisteredKind`], which `crate::kinds`
//! lists, and the [`Controllers`] every kind's start is handed to run its controller as a
//! task of its own. Every kind runs on the engine's runtime ([`run_kind`]): an adapter's
//! kind through its engine, a kind with no platform object (Budget) through its own
//! reconciler.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames,
};
use kube::runtime::reflector::ObjectRef;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use gpucloud_engine::adapter::Adapter;
use gpucloud_engine::context::Shared;
use gpucloud_engine::engine::Engine;
use gpucloud_engine::reconciler::Reconciler;
use gpucloud_engine::runner::{Companion, Watched, run_kind};
use gpucloud_policy::budget::BudgetLedger;
use gpucloud_policy::budget::ledger::MemberKind;
use gpucloud_policy::orphans::census;

use super::sweep::OrphanSweep;
use crate::kinds::summary::Row;

/// Whether a kind's orphans are counted beside its controller (`gpucloud_orphans`): for
/// the kinds the orphan sweep covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Census {
    Counted,
    Skipped,
}

/// Starts a kind's controller as a task; [`Census`] says whether its orphans are counted
/// beside it.
pub type StartController = fn(&Controllers, Census) -> JoinHandle<()>;
/// Lists a kind's table rows (the demo's, `kubectl gpucloud status`) in a namespace, or in
/// every namespace when `None`.
pub type ListRows = fn(kube::Client, Option<String>) -> BoxFuture<'static, kube::Result<Vec<Row>>>;

/// One kind of the operator. Its names (kind, plural, short names, group) are read from
/// its CRD, so the `#[kube(...)]` attribute of the type stays their only source.
#[derive(Clone, Copy)]
pub struct RegisteredKind {
    /// The CustomResourceDefinition, as `CustomResourceExt::crd` generates it.
    pub crd: fn() -> CustomResourceDefinition,
    /// How `run` starts the kind's controller; `None` for a kind the operator only reads
    /// (its RBAC then has no writes, see [`crate::kinds::rbac::needs`], and Argo CD no health check:
    /// nothing writes its status).
    pub controller: Option<StartController>,
    pub rows: ListRows,
    /// How `orphans` lists and removes the kind's remote objects; `None` for a kind the
    /// sweep does not cover. The kinds it covers have their orphans counted too.
    pub sweep: Option<OrphanSweep>,
}

/// The objects of `kind` the Budgets' ledger found room for, to reconcile again, as a
/// stream; dropped with the controller, which hands them back to the ledger for the kind's
/// next controller (the next term of leadership).
fn budget_wakes<K>(
    budgets: &BudgetLedger,
    kind: MemberKind,
) -> futures::stream::BoxStream<'static, ObjectRef<K>>
where
    K: kube::Resource<DynamicType = ()> + 'static,
{
    let Some(mut wakes) = budgets.take_wakes(kind) else {
        return futures::stream::empty().boxed();
    };
    futures::stream::poll_fn(move |cx| wakes.poll_recv(cx))
        .map(|woken| ObjectRef::new(&woken.name).within(&woken.namespace))
        .boxed()
}

impl RegisteredKind {
    /// Starts the kind's controller, if it has one.
    pub fn start(&self, controllers: &Controllers) -> Option<JoinHandle<()>> {
        let census = match self.sweep {
            Some(_) => Census::Counted,
            None => Census::Skipped,
        };
        self.controller.map(|start| start(controllers, census))
    }

    /// Whether a controller of the operator writes to the kind's objects and their status.
    pub fn is_managed(&self) -> bool {
        self.controller.is_some()
    }

    /// The names block of the CRD: `kind`, `plural`, `shortNames`, `categories`.
    pub fn names(&self) -> CustomResourceDefinitionNames {
        (self.crd)().spec.names
    }

    /// `NetworkVolume`.
    pub fn kind(&self) -> String {
        self.names().kind
    }

    /// `networkvolumes`: the resource in RBAC rules and the CRD's name.
    pub fn plural(&self) -> String {
        self.names().plural
    }

    pub fn short_names(&self) -> Vec<String> {
        self.names().short_names.unwrap_or_default()
    }

    /// `gpucloud.io`.
    pub fn group(&self) -> String {
        (self.crd)().spec.group
    }
}

/// What `run` hands to every kind's start: built once, shared by all kinds.
pub struct Controllers {
    pub shared: Arc<Shared>,
    /// The namespaces (and labels) every kind watches.
    pub watched: Watched,
    /// Reconciles running at once, per kind.
    pub concurrency: u16,
    /// Turns true when every controller must stop.
    pub stop: watch::Receiver<bool>,
    /// The Budgets' ledger, shared by the kinds it holds and the Budget controller.
    pub budgets: Arc<BudgetLedger>,
    /// How often the Budget controller reads this month's billing.
    pub billing_interval: std::time::Duration,
}

impl Controllers {
    /// Resolves once every controller must stop, or once nobody can say so any more.
    pub fn stopped(&self) -> impl Future<Output = ()> + Send + Sync + 'static {
        let mut stop = self.stop.clone();
        async move {
            // An error: the sender is gone, and with it whoever could have said it.
            let _ = stop.wait_for(|stop| *stop).await;
        }
    }

    /// Runs the engine of `adapter`'s kind until `stop` turns true. Each kind gets its own
    /// task, so the kinds reconcile in parallel on a multi-threaded runtime.
    pub fn spawn<A: Adapter>(&self, adapter: A, census: Census) -> JoinHandle<()> {
        self.spawn_with_wakes(adapter, census, futures::stream::empty())
    }

    /// As [`Self::spawn`], for a kind the Budgets' ledger may hold: its objects held as
    /// `member` are reconciled again when the ledger finds room for them.
    pub fn spawn_held_by_budgets<A: Adapter>(
        &self,
        adapter: A,
        census: Census,
        member: MemberKind,
    ) -> JoinHandle<()> {
        let wakes = budget_wakes(&self.budgets, member);
        self.spawn_with_wakes(adapter, census, wakes)
    }

    /// As [`Self::spawn`], and also reconciles the objects `wakes` names.
    fn spawn_with_wakes<A: Adapter>(
        &self,
        adapter: A,
        census: Census,
        wakes: impl Stream<Item = ObjectRef<A::Kind>> + Send + 'static,
    ) -> JoinHandle<()> {
        let engine = Arc::new(Engine::new(self.shared.clone(), adapter));
        // The orphan census of the kind reads the controller's store, beside it.
        let census = (census == Census::Counted).then(|| {
            let (engine, watched) = (engine.clone(), self.watched.clone());
            Box::new(move |store, synced| tokio::spawn(census::run(engine, store, synced, watched)))
                as Companion<A::Kind>
        });
        self.spawn_reconciler(engine, wakes, census)
    }

    /// Runs `reconciler`'s kind on the engine's runtime until `stop` turns true: passes of
    /// the objects its watch triggers and of those `wakes` names, with `companion` beside.
    pub fn spawn_reconciler<R: Reconciler>(
        &self,
        reconciler: Arc<R>,
        wakes: impl Stream<Item = ObjectRef<R::Kind>> + Send + 'static,
        companion: Option<Companion<R::Kind>>,
    ) -> JoinHandle<()> {
        tokio::spawn(run_kind(
            reconciler,
            self.watched.clone(),
            self.concurrency,
            wakes,
            companion,
            self.stopped(),
        ))
    }
}
