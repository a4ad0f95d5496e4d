//! What the runtime ([`crate::runner`]) runs passes of: one kind's reconciler. The
//! runtime (the watch, the cache, the scheduler, the resync, the leader's stop) knows this
//! trait and nothing else of a kind: the engine of a kind that mirrors a platform object is
//! one (`engine::runs`), and so is a controller with no platform object, which keeps the
//! defaults of the hooks it has no use for.
//!
//! The hooks are called from the watch, in its order: [`Reconciler::seen`] for every
//! object it brings, [`Reconciler::is_echo`] before a change counts,
//! [`Reconciler::caught_up`] and [`Reconciler::forget`] once the cache has the change or
//! the deletion (see [`crate::feed::Feed::on`]).

use std::future::Future;
use std::sync::Arc;

use super::action::Action;
use super::cache::{Cache, CachedKind};
use super::context::Shared;
use super::resync::Resync;

/// One kind's reconciler, as the runtime runs it (see the module's doc).
pub trait Reconciler: Send + Sync + 'static {
    /// The kind whose objects it passes over, as the cache keeps them.
    type Kind: CachedKind;
    /// Why a pass ended early; [`Reconciler::error_policy`] says when the next one comes.
    type Error: std::fmt::Display + Send + 'static;

    /// The kind's name in logs, metrics and the liveness probe.
    const KIND: &'static str;

    /// Whether the kind's objects read Secrets (their credentials, the operator's default
    /// key): the runtime then reads them again on an interval and gives a pass to the
    /// objects whose Secret changed (see [`crate::secret_recheck`]).
    const READS_SECRETS: bool = false;

    /// What every kind shares: the clients, the configuration, progress and metrics.
    fn shared(&self) -> &Arc<Shared>;

    /// The kind's watch cache, which the runtime fills and reads passes from.
    fn cache(&self) -> &Cache<Self::Kind>;

    /// When each converged object is due for its resync pass.
    fn resync(&self) -> &Resync;

    /// One pass over `obj`, as the cache holds it.
    fn reconcile(
        self: Arc<Self>,
        obj: Arc<Self::Kind>,
    ) -> impl Future<Output = Result<Action, Self::Error>> + Send;

    /// When the object `key` (`namespace/name`) has its next pass after one that ended in
    /// `error`.
    fn error_policy(&self, key: &str, error: &Self::Error) -> Action;

    /// Hears of every object the watch brings, a change or one of a listing, as it comes:
    /// before the cache has it (a listing's objects reach the cache at the listing's end,
    /// after every one of them was heard here).
    fn seen(&self, _obj: &Self::Kind) {}

    /// Whether `obj`, a change the watch brings, is this process's own write coming back,
    /// which asks for no pass.
    fn is_echo(&self, _obj: &Self::Kind) -> bool {
        false
    }

    /// Hears of each object a live change brings, once the cache has it.
    fn caught_up(&self, _obj: &Self::Kind) {}

    /// Drops what is kept about the object `key`: it is gone from the cluster (deleted, or
    /// no longer shown by a relisting, or its namespace is no longer watched).
    fn forget(&self, _key: &str) {}

    /// Lets go of what no pass has read lately; the runtime calls it every progress
    /// interval.
    fn release_unread_listings(&self) {}

    /// The Secrets `obj` names, in its namespace (with [`Reconciler::READS_SECRETS`]; the
    /// operator's default key comes on top).
    fn secrets(&self, _obj: &Self::Kind) -> Vec<String> {
        Vec::new()
    }

    /// Whether `obj`'s last pass ended because its Secret, or the key in it, was missing
    /// (with [`Reconciler::READS_SECRETS`]): the first reading of a Secret is for those.
    fn waits_for_a_missing_secret(&self, _obj: &Self::Kind) -> bool {
        false
    }
}
