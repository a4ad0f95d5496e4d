//! The seam each kind implements; the engine does everything else.
//!
//! A kind is three traits, each with one job:
//! - [`Inventory`]: list the account's remote objects of the kind, and recognise an
//!   object's own among them after a crash;
//! - [`Actuator`]: the spec resolved, and the platform writes: create, update, delete;
//! - [`Decide`]: the pure judgments: the plan against the remote object, the report
//!   (status, readiness, the kind's own conditions) and the policy, as data.
//!
//! Reading the listing, policies, annotations, crash safety, conditions, Events, backoff
//! and metrics are the engine's. The contract:
//! - [`Decide`] is pure: what it needs comes in its arguments (the kind's state of the
//!   object among them), and it keeps nothing between calls.
//! - Every fallible call fails with [`Failure`]; a create that may
//!   have happened anyway says so in its `applied`.
//! - A kind never publishes Events: what users should hear of comes back as [`Note`]s, and
//!   the engine publishes them.
//! - What a kind keeps per object (what it last wrote, what its last create was refused)
//!   is its [`Actuator::State`]: the engine keeps it in the object's record and hands it
//!   to each call, and it goes with the object. A kind keeps no per-object table.

mod actuator;
mod decide;
mod inventory;
mod state;

pub use actuator::Actuator;
pub use decide::{Decide, Policy, Report, WhenGone};
pub use inventory::Inventory;
pub use state::{KindState, StateCells, StateOf};

use super::context::Shared;
use super::credentials::Credentials;
use super::failure::Failure;
use gpucloud_crd::ManagedKind;
use gpucloud_platform::PlatformClient;

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

/// What every call of a pass may read, resolved once per pass; `T` is the kind's
/// [`Actuator::State`].
pub struct PassContext<'a, T = ()> {
    pub shared: &'a Shared,
    pub credentials: &'a Credentials,
    pub client: &'a PlatformClient,
    /// The kind's state of the object the pass is for.
    pub state: StateOf<'a, T>,
}

/// A kind the engine runs: its inventory, actuator and decisions together.
pub trait Adapter: Decide {}

impl<T: Decide> Adapter for T {}

/// The Secrets an object reads: its credentials Secret (when it names one) and `more`,
/// sorted and each once, for [`Actuator::secrets`].
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
