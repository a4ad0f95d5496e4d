//! The pure judgments of one kind: what must change, what to report, and its policy.

use std::time::Duration;

use gpucloud_crd::ManagedKind;

use super::actuator::Actuator;
use super::{Plan, Readiness, Seen};
use crate::conditions::Verdict;

/// What a kind reports of an object: its status fields, whether the remote object is
/// usable yet, and conditions of its own besides the four the engine writes.
#[derive(Clone, Debug, PartialEq)]
pub struct Report<S> {
    /// The kind's own status fields (the engine fills the common part). Without a remote
    /// object, what to keep of what was last reported. Never a secret.
    pub status: S,
    /// Whether an up-to-date remote object is usable yet; `None` without one.
    pub readiness: Option<Readiness>,
    /// The kind's own conditions, written after the four.
    pub conditions: Vec<(&'static str, Verdict)>,
}

impl<S> Report<S> {
    /// `status`, with no remote object to judge.
    pub fn status(status: S) -> Self {
        Self {
            status,
            readiness: None,
            conditions: Vec::new(),
        }
    }

    /// `status`, and how usable the remote object is.
    pub fn with(status: S, readiness: Option<Readiness>) -> Self {
        Self {
            status,
            readiness,
            conditions: Vec::new(),
        }
    }
}

/// What to do when the remote object the operator knew has disappeared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WhenGone {
    /// Create it again (with a Warning Event).
    #[default]
    Recreate,
    /// Report it and wait for a person.
    Report,
}

/// A kind's time-driven rules for one object, as data: whether to create now, what to do
/// when its remote object goes missing, when to look again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// Why the remote object must not be created now although none exists (a Pod outside
    /// its schedule windows). The pass then reports this, Ready, and creates nothing.
    pub hold_create: Option<String>,
    pub when_gone: WhenGone,
    /// The longest the next pass may wait (a schedule boundary is due then): the engine
    /// requeues no later than this, instead of waiting for the poll interval.
    pub look_again_in: Option<Duration>,
}

/// The pure part of a kind: called with what was resolved and listed, and with the
/// kind's [`State`](Actuator::State) of the object, which it reads and never changes.
pub trait Decide: Actuator {
    /// Compares the remote object with the desired state.
    fn plan(
        &self,
        obj: &Self::Kind,
        desired: &Self::Desired,
        remote: &Self::Remote,
        state: &Self::State,
    ) -> Plan<Self::Change>;

    /// Status, readiness and the kind's own conditions from what was observed: the remote
    /// object, if one is known, and what the engine saw besides.
    fn report(
        &self,
        obj: &Self::Kind,
        remote: Option<&Self::Remote>,
        seen: Seen,
        state: &Self::State,
    ) -> Report<<Self::Kind as ManagedKind>::Status>;

    /// The object's policy; `remote` is `None` before one is known.
    fn policy(
        &self,
        _obj: &Self::Kind,
        _remote: Option<&Self::Remote>,
        _state: &Self::State,
    ) -> Policy {
        Policy::default()
    }
}
