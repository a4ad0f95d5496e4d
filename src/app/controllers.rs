//! Starting one kind's controller as a task of its own: what every kind's start shares, so
//! that the registration of a kind (`crate::kinds`) only says how to build its adapter (or,
//! for a kind with no platform object, its reconciler). Every kind runs on the engine's
//! runtime ([`run_kind`]), stopped the same way.

use std::sync::Arc;

use futures::Stream;
use kube::runtime::reflector::ObjectRef;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use gpucloud_engine::adapter::Adapter;
use gpucloud_engine::context::Shared;
use gpucloud_engine::engine::Engine;
use gpucloud_engine::reconciler::Reconciler;
use gpucloud_engine::runner::{Companion, Watched, run_kind};
use gpucloud_policy::budget::BudgetLedger;
use gpucloud_policy::orphans::census;

/// What `run` hands to every kind's start: built once, shared by all kinds.
pub struct Controllers {
    pub shared: Arc<Shared>,
    /// The namespaces (and labels) every kind watches.
    pub watched: Watched,
    /// Reconciles running at once, per kind.
    pub concurrency: u16,
    /// Turns true when every controller must stop.
    pub stop: watch::Receiver<bool>,
    /// The Budgets' ledger, shared by the Pod adapter and the Budget controller.
    pub budgets: Arc<BudgetLedger>,
    /// How often the Budget controller reads this month's billing.
    pub billing_interval: std::time::Duration,
}

impl Controllers {
    /// Runs the engine of `adapter`'s kind until `stop` turns true. Each kind gets its own
    /// task, so the kinds reconcile in parallel on a multi-threaded runtime.
    pub fn spawn<A: Adapter>(&self, adapter: A) -> JoinHandle<()> {
        self.spawn_with_wakes(adapter, futures::stream::empty())
    }

    /// As [`Self::spawn`], and also reconciles the objects `wakes` names (a Pod held by a
    /// Budget, when room appears).
    pub fn spawn_with_wakes<A: Adapter>(
        &self,
        adapter: A,
        wakes: impl Stream<Item = ObjectRef<A::Kind>> + Send + 'static,
    ) -> JoinHandle<()> {
        let engine = Arc::new(Engine::new(self.shared.clone(), adapter));
        // The orphan census of the kind reads the controller's store, beside it.
        let census = A::ORPHAN_SWEEP.then(|| {
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
            stopped(self.stop.clone()),
        ))
    }
}

/// Resolves once `stop` is true, or once nobody can set it any more.
pub async fn stopped(mut stop: watch::Receiver<bool>) {
    while !*stop.borrow_and_update() {
        if stop.changed().await.is_err() {
            return;
        }
    }
}
