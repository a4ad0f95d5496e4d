//! The small trait each kind implements; the engine does everything else.
//!
//! An adapter says how to list, create, change and delete its kind of remote object, how
//! to recognise its own object in a listing after a crash, and how to turn what it sees
//! into status. Reading the listing, policies, annotations, crash safety, conditions,
//! Events, backoff and metrics are the engine's.
//!
//! The contract, so that a newcomer can rely on it:
//! - `plan`, `readiness` and `status` are pure: what they need comes in their arguments,
//!   and they keep nothing between calls.
//! - Every fallible call fails with [`Failure`]; a create that may have happened anyway
//!   says so in [`Failure::applied`].
//! - An adapter never publishes Events: what users should hear of comes back as [`Note`]s,
//!   and the engine publishes them.
//! - What an adapter keeps per object (a cache of what it last wrote) is dropped in
//!   [`Adapter::forget`], which the engine calls when the object goes.

use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

use crate::marker::{Candidate, Marker};
use gpucloud_platform::PlatformClient;

use super::conditions::Verdict;
use super::context::Shared;
use super::credentials::Credentials;
use super::failure::Failure;
use gpucloud_crd::ManagedKind;

/// What must happen to bring an existing remote object in line with the spec.
#[derive(Debug, PartialEq)]
pub enum Plan<C> {
    /// Nothing.
    UpToDate,
    /// Changes the platform can make in place, in order.
    Update(Vec<C>),
    /// The platform cannot make the change in place: delete the object and create it again.
    Replace { reason: String },
    /// Delete the object for good: the next pass finds none and goes the create way,
    /// where the adapter holds it (`admit`) until the spec changes. `reason` names the
    /// Event, `message` says why.
    Remove {
        reason: &'static str,
        message: String,
    },
    /// The change is not allowed (a shrink, an immutable field): tell the user, touch nothing.
    Blocked(Failure),
}

/// Whether an up-to-date remote object is usable yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readiness {
    Ready {
        message: String,
    },
    /// Still coming up (booting, stopping): look again soon.
    Progressing {
        reason: String,
        message: String,
    },
}

/// What to do when the remote object the operator knew has disappeared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhenGone {
    /// Create it again (with a Warning Event).
    Recreate,
    /// Report it and wait for a person.
    Report,
}

pub use super::note::Note;

/// A remote object an adapter made, with what the engine should tell users about how.
#[derive(Debug)]
pub struct Created<R> {
    pub remote: R,
    pub notes: Vec<Note>,
}

impl<R> Created<R> {
    pub fn quietly(remote: R) -> Self {
        Self {
            remote,
            notes: Vec::new(),
        }
    }
}

/// What the engine knows of the object besides the remote object, for `status`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Seen {
    /// The spec asks for a change the platform cannot make (the plan was `Blocked`).
    pub blocked: bool,
    /// No remote object is known, and a create has been started for one.
    pub creating: bool,
}

/// What every call of a pass may read, resolved once per pass.
pub struct PassContext<'a> {
    pub shared: &'a Shared,
    pub credentials: &'a Credentials,
    pub client: &'a PlatformClient,
}

/// One kind of managed remote object.
pub trait Adapter: Send + Sync + Sized + 'static {
    type Kind: ManagedKind;
    type Remote: Clone + Debug + Send + Sync + 'static;
    /// The spec with everything it refers to resolved (Secrets, other objects).
    type Desired: Send + Sync;
    type Change: Debug + Send + Sync;

    /// Kind name, as in metrics and logs.
    const KIND: &'static str;
    /// What users call the remote object, for messages ("network volume").
    const NOUN: &'static str;

    fn id(remote: &Self::Remote) -> &str;

    /// Every remote object of this kind in the account: one call, for the shared snapshot.
    fn list(
        &self,
        client: &PlatformClient,
    ) -> impl Future<Output = Result<Vec<Self::Remote>, Failure>> + Send;

    /// Whether `remote` is the one this object created (by its deterministic name or tag).
    fn claims(&self, obj: &Self::Kind, remote: &Self::Remote) -> bool;

    /// Whether the operator counts this kind's orphans (`gpucloud_orphans`, see
    /// `crate::orphan_census`): remote objects with its marker and no object.
    const ORPHAN_SWEEP: bool = false;

    /// Pure: `remote` as the orphan sweep sees it (its marker, what it costs); `None` when
    /// it is gone already (a terminated pod). Read only when [`Self::ORPHAN_SWEEP`].
    fn orphan_candidate(_remote: &Self::Remote) -> Option<Candidate> {
        None
    }

    /// Pure: the marker `remote` carries, which names the object that made it (see
    /// [`crate::marker`]); `None` when it carries none (a name the spec chose, a remote
    /// object made outside the operator). The engine refuses to adopt, change or delete a
    /// remote object another live object's marker names ([`crate::tenancy`]). By default,
    /// the marker the orphan sweep reads.
    fn owner_marker(remote: &Self::Remote) -> Option<Marker> {
        Self::orphan_candidate(remote).and_then(|c| c.marker)
    }

    /// The spec resolved, or why it cannot be yet.
    fn desired(
        &self,
        pass: &PassContext<'_>,
        obj: &Self::Kind,
    ) -> impl Future<Output = Result<Self::Desired, Failure>> + Send;

    fn create(
        &self,
        pass: &PassContext<'_>,
        obj: &Self::Kind,
        desired: &Self::Desired,
    ) -> impl Future<Output = Result<Created<Self::Remote>, Failure>> + Send;

    /// Admission before a create (`remote` is `None`) or before `changes` to `remote`: a
    /// guardrail the platform knows nothing of (a Budget) may hold it. Called before any
    /// write for it, Kubernetes or platform; a refusal is reported like any failure (a
    /// `Waiting` one holds the object without an error).
    fn admit(
        &self,
        _pass: &PassContext<'_>,
        _obj: &Self::Kind,
        _desired: &Self::Desired,
        _remote: Option<&Self::Remote>,
        _changes: &[Self::Change],
    ) -> impl Future<Output = Result<(), Failure>> + Send {
        async { Ok(()) }
    }

    /// Pure: compares the remote object with the desired state.
    fn plan(
        &self,
        obj: &Self::Kind,
        desired: &Self::Desired,
        remote: &Self::Remote,
    ) -> Plan<Self::Change>;

    /// Makes `change`, and records in `remote` what the platform will not report back (a
    /// field its listing does not echo, a rollout that has started).
    fn apply(
        &self,
        client: &PlatformClient,
        remote: &mut Self::Remote,
        change: &Self::Change,
    ) -> impl Future<Output = Result<(), Failure>> + Send;

    /// Deletes the remote object; a `NotFound` failure means it was already gone.
    fn delete(
        &self,
        client: &PlatformClient,
        id: &str,
    ) -> impl Future<Output = Result<(), Failure>> + Send;

    /// Pure: is an up-to-date remote object usable yet.
    fn readiness(&self, obj: &Self::Kind, remote: &Self::Remote) -> Readiness;

    /// Pure: the kind's own status fields from the remote object (the engine fills the
    /// common part). Without a remote object, what to keep of what was last reported.
    /// Must not copy secrets.
    fn status(
        &self,
        obj: &Self::Kind,
        remote: Option<&Self::Remote>,
        seen: Seen,
    ) -> <Self::Kind as ManagedKind>::Status;

    /// One line for the Event that reports `change`.
    fn describe(&self, change: &Self::Change) -> String {
        format!("{change:?}")
    }

    /// Extra I/O once the remote object is up to date and Ready, once per pass: live
    /// figures the listing lacks (an endpoint's queue health) and objects the kind keeps
    /// in the cluster (a connection ConfigMap). Results go into `remote` for `status`.
    fn after_sync(
        &self,
        _pass: &PassContext<'_>,
        _obj: &Self::Kind,
        _remote: &mut Self::Remote,
    ) -> impl Future<Output = Result<(), Failure>> + Send {
        async { Ok(()) }
    }

    /// Drops what the adapter keeps about the object `key` (`namespace/name`): it is gone.
    fn forget(&self, _key: &str) {}

    /// Names of the Secrets (in the object's namespace) this object reads; a change to one
    /// of them triggers a reconcile.
    fn secrets(&self, obj: &Self::Kind) -> Vec<String> {
        secrets_with_credentials(obj, [])
    }

    fn when_gone(&self, _obj: &Self::Kind) -> WhenGone {
        WhenGone::Recreate
    }

    // --- Time-driven decisions (a Pod's cost guardrails use them; defaults do nothing). ---

    /// Pure: why the remote object must not be created now although none exists (a Pod
    /// outside its schedule windows). The pass then reports this, Ready, and creates
    /// nothing; the object stays un-created until this says `None`.
    fn hold_create(&self, _obj: &Self::Kind, _desired: &Self::Desired) -> Option<String> {
        None
    }

    /// The longest the next pass may wait (a schedule boundary is due then): the engine
    /// requeues no later than this, instead of waiting for the poll interval.
    fn due_in(&self, _obj: &Self::Kind, _remote: Option<&Self::Remote>) -> Option<Duration> {
        None
    }

    /// The reason of the Event that reports `change`.
    fn change_reason(&self, _change: &Self::Change) -> &'static str {
        "Updated"
    }

    /// Pure: conditions of the kind's own, besides the four the engine writes.
    fn extra_conditions(
        &self,
        _obj: &Self::Kind,
        _remote: Option<&Self::Remote>,
    ) -> Vec<(&'static str, Verdict)> {
        Vec::new()
    }
}

/// The Secrets an object reads: its credentials Secret (when it names one) and `more`,
/// sorted and each once, for [`Adapter::secrets`].
pub fn secrets_with_credentials<K: ManagedKind>(
    obj: &K,
    more: impl IntoIterator<Item = String>,
) -> Vec<String> {
    let mut names: Vec<String> = obj
        .credentials()
        .map(|c| c.name.clone())
        .into_iter()
        .chain(more)
        .collect();
    names.sort();
    names.dedup();
    names
}
