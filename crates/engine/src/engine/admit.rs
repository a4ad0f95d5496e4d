//! Before a pass writes for an object: its spec resolved, and the writes admitted. A
//! create and an in-place change go through the same two gates: the kind resolves the
//! spec (Secrets, other objects), then its admission (a Budget) may hold the writes; a
//! create is also held while the kind's policy says so (a Pod outside its schedule),
//! decided before the marker, so that a hold costs no write at all.

use super::outcome::{Outcome, Requeue};
use super::{Engine, Observed};
use crate::adapter::{Adapter, PassContext};
use crate::conditions::Verdicts;
use crate::failure::Failure;

impl<A: Adapter> Engine<A> {
    /// The spec resolved for a create (`remote` is `None`) or a change of `remote`, or the
    /// outcome to report when it cannot be yet.
    pub(super) async fn resolve(
        &self,
        pass: &PassContext<'_, A::State>,
        seen: &Observed<A::Kind>,
        remote: Option<&A::Remote>,
    ) -> Result<A::Desired, Box<Outcome<A::Remote>>> {
        self.adapter
            .desired(pass, &seen.obj)
            .await
            .map_err(|f| Box::new(stopped(f, remote, seen)))
    }

    /// Whether the writes for `desired` may go: a create (`remote` is `None`) or `changes`
    /// to `remote`. `None`: go ahead; else the outcome to report instead.
    pub(super) async fn held(
        &self,
        pass: &PassContext<'_, A::State>,
        seen: &Observed<A::Kind>,
        desired: &A::Desired,
        remote: Option<&A::Remote>,
        changes: &[A::Change],
    ) -> Option<Outcome<A::Remote>> {
        let obj = seen.obj.as_ref();
        if remote.is_none()
            && let Some(message) = self.policy(&seen.key, obj, None).hold_create
        {
            // Nothing to create yet, and nothing wrong: converged, no marker, no call.
            let converged = Verdicts::converged(message);
            return Some(Outcome::new(None, converged, Requeue::Poll));
        }
        let refused = self
            .adapter
            .admit(pass, obj, desired, remote, changes)
            .await
            .err()?;
        Some(stopped(refused, remote, seen))
    }
}

/// The outcome of a pass stopped by `failure` before it wrote: about `remote` when there
/// is one; before a create, status names no remote object.
fn stopped<K, R: Clone>(failure: Failure, remote: Option<&R>, seen: &Observed<K>) -> Outcome<R> {
    let last_ready = seen.last_ready.clone();
    match remote {
        Some(remote) => Outcome::failed(failure, Some(remote.clone()), last_ready),
        None => Outcome::failed_forgetting_id(failure, last_ready),
    }
}
