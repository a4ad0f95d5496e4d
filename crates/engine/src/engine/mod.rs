//! The managed-resource engine: one reconcile for every kind.
//!
//! One object's pass is a pipeline, one module per stage, read in this order:
//! - [`claim`]: ownership, the gate: an object another install holds is left alone;
//! - [`observe`]: the facts: the object's annotations, policies, id and create marker, its
//!   key, and its slice of the shared listing, read until [`crate::decide`] (pure) has a
//!   step for it;
//! - [`holders`]: the tenancy gate before a pass acts on a remote object it did not make:
//!   one that another object holds is refused, in any namespace;
//! - [`admit`]: before any write, the spec resolved and the writes admitted (one place for
//!   a create and a change);
//! - [`execute`]: the step carried out: adopt, update or replace through the adapter,
//!   or [`create`] (the crash-safe create); each ends in an [`outcome::Outcome`];
//! - [`status`]: the outcome reported: status computed as data and written only when it
//!   changed, the Event of a new situation, the requeue.
//!
//! An object being deleted takes [`cleanup`] instead of observe to status; before it deletes
//! a remote object, [`crd_guard`] reads the kind's CRD (one being deleted takes every
//! object with it, and their remote objects are released, not deleted). The apiserver
//! writes are in [`writes`]; what the engine remembers between passes is in [`memory`].
//!
//! Writes per object, apply to Ready: the marker with the finalizer (one conflict-checked
//! patch), the platform create, status with the id, and the `Created` Event.

mod admit;
mod claim;
mod cleanup;
mod crd_guard;
mod create;
mod execute;
mod holders;
mod memory;
mod observe;
mod outcome;
mod own_writes;
mod records;
mod runs;
mod status;
mod writes;

use std::sync::Arc;

use crate::action::Action;
use kube::{Api, Resource, ResourceExt};
use tokio::time::Instant;
use tracing::warn;

use crate::cache::Cache;
use crate::snapshot::Snapshots;
use gpucloud_crd::ManagedKind;

use super::adapter::{Adapter, PassContext, StateOf};
use super::backoff::BackoffPolicy;
use super::context::{FINALIZER, Shared};
use super::credentials::{AccountId, Credentials};
use super::failure::Failure;
use super::ownership::Ownership;
use super::resync::Resync;
use memory::SecretKeyRef;
use observe::Observed;
use outcome::Outcome;
use records::Records;

/// Errors that end a reconcile early; the controller's error policy requeues them. Platform
/// failures are not among them: they are reported in status and requeued by class.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    /// At start-up: the namespaces of `--namespace-selector` cannot be watched.
    #[error("--namespace-selector {selector:?}: {reason}")]
    NamespaceSelector { selector: String, reason: String },
}

/// The engine for one kind.
pub struct Engine<A: Adapter> {
    pub shared: Arc<Shared>,
    pub adapter: A,
    /// When each converged object is due for its resync pass (see [`Resync`]).
    pub resync: Resync,
    /// The kind's watch cache, which the runner fills and reads passes from; a pass reads
    /// it again when it observes (see [`Engine::observe`]).
    cache: Cache<A::Kind>,
    snapshots: Snapshots<AccountId, A::Remote, Failure>,
    /// What this process remembers of each object between its passes (see [`records`]).
    records: Records<<A::Kind as ManagedKind>::Status, A::State>,
    /// How long a failed pass waits, by how many failed in a row.
    backoff: BackoffPolicy,
    /// When this engine started: a create marked pending by an earlier process (one that
    /// crashed with the create in flight) has landed or failed by `started + create_timeout`.
    started: Instant,
    /// Which install claims which object, and whether the holder of a claim still runs.
    ownership: Ownership,
    /// The key last read through each credentials reference (`None`: the default key), so
    /// that an object whose Secret went first (a namespace being deleted takes both) can
    /// still delete its remote object instead of leaking it. One entry per Secret, not
    /// per object.
    last_keys: parking_lot::Mutex<std::collections::HashMap<Option<SecretKeyRef>, Credentials>>,
    /// The markers whose object is proven gone, and the ids objects claimed by adoption
    /// (see [`holders`]).
    holders: parking_lot::Mutex<holders::Holders>,
}

impl<A: Adapter> Engine<A> {
    pub fn new(shared: Arc<Shared>, adapter: A) -> Self {
        // The oldest listing a pass takes (see `observe::listing_need`).
        let writes_matter_for = shared
            .config
            .poll_interval
            .max(shared.config.progress_interval);
        let ownership = Ownership::new(
            shared.kube.clone(),
            shared.config.install.clone(),
            shared.config.takeover_after,
        );
        Self {
            ownership,
            holders: Default::default(),
            last_keys: Default::default(),
            backoff: shared.config.backoff,
            shared,
            adapter,
            resync: Resync::default(),
            cache: Cache::new(),
            snapshots: Snapshots::new(),
            records: Records::new(writes_matter_for, Instant::now()),
            started: Instant::now(),
        }
    }

    /// The kind's watch cache (one per engine).
    pub fn cache(&self) -> &Cache<A::Kind> {
        &self.cache
    }

    /// The entry point the controller runs for every object.
    pub async fn reconcile(self: Arc<Self>, obj: Arc<A::Kind>) -> Result<Action, EngineError> {
        let started = std::time::Instant::now();
        self.shared.expire_event_cache();
        let api: Api<A::Kind> = Api::namespaced(
            self.shared.kube.clone(),
            &obj.namespace().unwrap_or_default(),
        );
        // Whatever this pass ends in says when the next one comes.
        self.resync.cancel(&obj.key());
        let Some(obj) = self.claim(&api, obj).await? else {
            return Ok(self.left_alone());
        };
        let result = if obj.meta().deletion_timestamp.is_none() {
            self.pass(&api, obj).await
        } else if obj.finalizers().iter().any(|f| f == FINALIZER) {
            self.cleanup(&api, obj).await
        } else {
            // Nothing of ours holds it: it goes without us.
            self.forget(&obj.key());
            Ok(Action::await_change())
        };
        let outcome = if result.is_ok() { "ok" } else { "error" };
        self.shared
            .metrics
            .reconciled(A::KIND, outcome, started.elapsed());
        if let Some(age) = self.snapshots.oldest_age() {
            self.shared.metrics.snapshot_age(A::KIND, age);
        }
        self.tell_remembered();
        result
    }

    /// Lets go of the shared listings no pass has asked for in the progress interval (see
    /// [`Snapshots::release_unread`]). The runner calls it as often.
    pub fn release_unread_listings(&self) {
        self.snapshots
            .release_unread(self.shared.config.progress_interval);
    }

    /// One pass over a live object: observe, decide, execute, status.
    async fn pass(&self, api: &Api<A::Kind>, obj: Arc<A::Kind>) -> Result<Action, EngineError> {
        let seen = self.observe(obj);
        if seen.annotations.paused {
            // Hands off: no platform call, only say so in status.
            return self.report_paused(api, &seen).await;
        }
        // No status write before this point: until the first one, the CRD's status default
        // (observedGeneration 0) keeps kstatus and Argo CD from reading the object as done.
        let outcome = match self.credentials(&seen.obj).await {
            Ok(creds) => self
                .converge(api, &seen, &creds)
                .await?
                .naming_credentials(&creds),
            Err(failure) => Outcome::failed(failure, None, seen.last_ready.clone()),
        };
        self.report(api, &seen, outcome).await
    }

    /// The platform's side of a pass, with the object's key: observe its slice of the
    /// listing until decide has a step, and carry the step out.
    async fn converge(
        &self,
        api: &Api<A::Kind>,
        seen: &Observed<A::Kind>,
        creds: &Credentials,
    ) -> Result<Outcome<A::Remote>, EngineError> {
        let client = self.client_for(creds);
        let pass = PassContext {
            shared: &self.shared,
            credentials: creds,
            client: &client,
            state: StateOf::new(&self.records, &seen.key),
        };
        let attempt = seen.attempt(creds.account);
        match self.observe_platform(seen, &pass, attempt).await {
            Ok(step) => self.execute(api, seen, &pass, attempt, step).await,
            Err(failure) => Ok(Outcome::failed(failure, None, seen.last_ready.clone())),
        }
    }

    /// What the controller does when `reconcile` returned an error (a Kubernetes write failed).
    /// `key` is the object's `namespace/name`.
    pub fn error_policy(&self, key: &str, err: &EngineError) -> Action {
        let delay = self.failed(key, None);
        warn!(kind = A::KIND, object = %key, error = %err, retry_in = ?delay, "reconcile failed");
        Action::requeue(delay)
    }
}
