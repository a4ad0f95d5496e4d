//! The platform writes of one kind: the spec resolved, then create, update, delete.

use std::future::Future;

use gpucloud_platform::PlatformClient;

use super::inventory::Inventory;
use super::{Created, KindState, PassContext, secrets_with_credentials};
use crate::failure::Failure;
use crate::note::Note;

/// How one kind's remote objects are made, changed and deleted. Every call fails with
/// [`Failure`]; a create that may have happened anyway says so in [`Failure::applied`].
/// What users should hear of comes back as [`Note`]s, which the engine publishes.
pub trait Actuator: Inventory {
    /// The spec with everything it refers to resolved (Secrets, other objects).
    type Desired: Send + Sync;
    /// One change the platform makes in place.
    type Change: std::fmt::Debug + Send + Sync;
    /// What the kind keeps of one object between its passes (what it last wrote beside
    /// the remote object, what its last create was refused): `()` for none. The engine
    /// keeps it with the object's record; every call of a pass reaches it through
    /// [`PassContext::state`], and [`Decide`](super::Decide) reads it.
    type State: KindState;

    /// The spec resolved, or why it cannot be yet.
    fn desired(
        &self,
        pass: &PassContext<'_, Self::State>,
        obj: &Self::Kind,
    ) -> impl Future<Output = Result<Self::Desired, Failure>> + Send;

    fn create(
        &self,
        pass: &PassContext<'_, Self::State>,
        obj: &Self::Kind,
        desired: &Self::Desired,
    ) -> impl Future<Output = Result<Created<Self::Remote>, Failure>> + Send;

    /// Makes `change`, records in `remote` what the platform will not report back (a field
    /// its listing does not echo, a rollout that has started), and says what it did: the
    /// engine publishes that as the change's Event.
    fn update(
        &self,
        pass: &PassContext<'_, Self::State>,
        remote: &mut Self::Remote,
        change: &Self::Change,
    ) -> impl Future<Output = Result<Note, Failure>> + Send;

    /// Deletes the remote object `id`; a `NotFound` failure means it was already gone.
    /// `holder` is the object that holds it, or `None` when the orphan sweep removes what
    /// no object holds.
    fn delete(
        &self,
        client: &PlatformClient,
        id: &str,
        holder: Option<&Self::Kind>,
    ) -> impl Future<Output = Result<(), Failure>> + Send;

    /// Admission before a create (`remote` is `None`) or before `changes` to `remote`: a
    /// guardrail the platform knows nothing of (a Budget) may hold it. Called before any
    /// write for it, Kubernetes or platform; a refusal is reported like any failure (a
    /// `Waiting` one holds the object without an error).
    fn admit(
        &self,
        _pass: &PassContext<'_, Self::State>,
        _obj: &Self::Kind,
        _desired: &Self::Desired,
        _remote: Option<&Self::Remote>,
        _changes: &[Self::Change],
    ) -> impl Future<Output = Result<(), Failure>> + Send {
        async { Ok(()) }
    }

    /// Extra I/O once the remote object is up to date and Ready, once per pass: live
    /// figures the listing lacks (an endpoint's queue health) and objects the kind keeps
    /// in the cluster (a connection ConfigMap). Results go into `remote` for the report.
    fn after_sync(
        &self,
        _pass: &PassContext<'_, Self::State>,
        _obj: &Self::Kind,
        _remote: &mut Self::Remote,
    ) -> impl Future<Output = Result<(), Failure>> + Send {
        async { Ok(()) }
    }

    /// Names of the Secrets (in the object's namespace) this object reads; a change to one
    /// of them triggers a reconcile.
    fn secrets(&self, obj: &Self::Kind) -> Vec<String> {
        secrets_with_credentials(obj, [])
    }

    /// Lets go of what is held for the object `key` (`namespace/name`) outside the engine
    /// (a Budget's reservation, a background watcher): it is gone. Its
    /// [`State`](Self::State) goes with its record.
    fn forget(&self, _key: &str) {}
}
