//! The small trait each kind implements; the engine does everything else.
//!
//! An adapter says how to list, create, change and delete its kind of remote object, how
//! to recognise its own object in a listing after a crash, and how to turn what it sees
//! into status. Reading the listing, policies, annotations, crash safety, conditions,
//! Events, backoff and metrics are the engine's.

use std::fmt::Debug;
use std::future::Future;

use crate::platform::{PlatformClient, PlatformError};

use super::context::Shared;
use super::failure::Failure;
use super::kind::ManagedKind;

/// What must happen to bring an existing remote object in line with the spec.
#[derive(Debug, PartialEq)]
pub enum Plan<C> {
    /// Nothing.
    UpToDate,
    /// Changes the platform can make in place, in order.
    Update(Vec<C>),
    /// The platform cannot make the change in place: delete the object and create it again.
    Replace { reason: String },
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

/// A create that failed. `maybe_created` is true when the platform may have created the
/// object anyway (5xx, timeout): the engine then looks for it instead of creating again.
/// `answered` is true when the platform did answer (a 5xx): whatever the create did, it
/// did before the answer. Without an answer (a timeout, a dropped connection) the create
/// may still be running at the platform.
#[derive(Debug)]
pub struct CreateFailure {
    pub failure: Failure,
    pub maybe_created: bool,
    pub answered: bool,
}

impl CreateFailure {
    pub fn from_platform(what: &str, err: &PlatformError) -> Self {
        Self {
            failure: Failure::from_platform(what, err),
            maybe_created: err.may_have_been_applied(),
            answered: err.status().is_some(),
        }
    }

    pub fn definite(failure: Failure) -> Self {
        Self {
            failure,
            maybe_created: false,
            answered: true,
        }
    }
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
    ) -> impl Future<Output = Result<Vec<Self::Remote>, PlatformError>> + Send;

    /// Whether `remote` is the one this object created (by its deterministic name or tag).
    fn claims(&self, obj: &Self::Kind, remote: &Self::Remote) -> bool;

    /// The spec resolved, or why it cannot be yet.
    fn desired(
        &self,
        shared: &Shared,
        obj: &Self::Kind,
    ) -> impl Future<Output = Result<Self::Desired, Failure>> + Send;

    fn create(
        &self,
        client: &PlatformClient,
        obj: &Self::Kind,
        desired: &Self::Desired,
    ) -> impl Future<Output = Result<Self::Remote, CreateFailure>> + Send;

    /// Pure: compares the remote object with the desired state.
    fn plan(
        &self,
        obj: &Self::Kind,
        desired: &Self::Desired,
        remote: &Self::Remote,
    ) -> Plan<Self::Change>;

    fn apply(
        &self,
        client: &PlatformClient,
        remote: &Self::Remote,
        change: &Self::Change,
    ) -> impl Future<Output = Result<(), Failure>> + Send;

    fn delete(
        &self,
        client: &PlatformClient,
        id: &str,
    ) -> impl Future<Output = Result<(), PlatformError>> + Send;

    /// Pure: is an up-to-date remote object usable yet.
    fn readiness(&self, obj: &Self::Kind, remote: &Self::Remote) -> Readiness;

    /// Pure: the kind's own status fields from the remote object (the engine fills the
    /// common part). Must not copy secrets.
    fn status(
        &self,
        shared: &Shared,
        obj: &Self::Kind,
        remote: Option<&Self::Remote>,
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
        _shared: &Shared,
        _client: &PlatformClient,
        _obj: &Self::Kind,
        _remote: &mut Self::Remote,
    ) -> impl Future<Output = Result<(), Failure>> + Send {
        async { Ok(()) }
    }

    /// Names of the Secrets (in the object's namespace) this object reads; a change to one
    /// of them triggers a reconcile.
    fn secrets(&self, obj: &Self::Kind) -> Vec<String> {
        obj.credentials()
            .map(|c| vec![c.name.clone()])
            .unwrap_or_default()
    }

    fn when_gone(&self, _obj: &Self::Kind) -> WhenGone {
        WhenGone::Recreate
    }
}
