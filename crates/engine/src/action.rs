//! What a pass asks of the controller when it ends: come back after a delay, or wait for a
//! change. The engine's own type rather than kube's `Action`, whose delay the controller
//! that runs the engine (see [`crate::controller`]) could not read back.

use std::time::Duration;

/// When the next pass of an object comes, unless a change brings it sooner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Action {
    requeue_after: Option<Duration>,
}

impl Action {
    /// Another pass after `delay`.
    #[must_use]
    pub const fn requeue(delay: Duration) -> Self {
        Self {
            requeue_after: Some(delay),
        }
    }

    /// No pass until the object, its Secret or a wake says so (a resync in the
    /// [`crate::resync`] table counts as one).
    #[must_use]
    pub const fn await_change() -> Self {
        Self {
            requeue_after: None,
        }
    }

    /// The delay before the next pass, if one is asked for.
    pub const fn requeue_after(&self) -> Option<Duration> {
        self.requeue_after
    }
}
