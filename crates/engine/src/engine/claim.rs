//! Ownership, the gate before a pass: an object is acted on by one install only. The first
//! write of a pass carries this install's claim; an object another live install claims is
//! left alone (said once), and one whose holder's Lease expired long ago is taken over.
//!
//! Which annotation and finalizer a write must add is decided by pure functions, tested
//! below; [`crate::ownership`] tells whether a holder still runs.

use std::sync::Arc;
use std::time::Duration;

use kube::runtime::controller::Action;
use kube::{Api, ResourceExt};
use tracing::{info, warn};

use gpucloud_crd::ManagedKind;

use super::writes::AnnotationChange;
use super::{Engine, EngineError};
use crate::adapter::Adapter;
use crate::backoff::jitter;
use crate::context::FINALIZER;
use crate::ownership::{self, Claim};

/// Pure: the claim annotation to write with the next write, unless the object (claimed
/// by `current`) is this install's (`me`) already.
fn claim_change(current: Option<&String>, me: &str) -> Option<AnnotationChange> {
    (current.map(String::as_str) != Some(me)).then(|| (ownership::OWNER, Some(me.to_string())))
}

/// Pure: when to look again at an object another install holds, before jitter: in case
/// its Lease expires.
fn recheck_after(takeover_after: Duration) -> Duration {
    takeover_after.clamp(Duration::from_secs(10), Duration::from_secs(300))
}

impl<A: Adapter> Engine<A> {
    /// The object, if this install may act on it: claimed by it, by nobody yet (it claims
    /// it with its first write), or by an install whose Lease expired long ago (claimed
    /// here). `None`: another install holds it, and it is left alone.
    pub(super) async fn claim(
        &self,
        api: &Api<A::Kind>,
        obj: Arc<A::Kind>,
    ) -> Result<Option<Arc<A::Kind>>, EngineError> {
        let claim = obj.annotations().get(ownership::OWNER).cloned();
        match self.ownership.claim(claim.as_deref()).await {
            Claim::Mine | Claim::Unclaimed => Ok(Some(obj)),
            Claim::Theirs(holder) => {
                self.leave_alone(&obj, &holder).await;
                Ok(None)
            }
            Claim::TakeOver(holder) => self.take_over(api, &obj, &holder).await,
        }
    }

    /// Says once that another install holds the object.
    async fn leave_alone(&self, obj: &A::Kind, holder: &str) {
        let key = obj.key();
        if !self.told_claimed.lock().insert(key.clone()) {
            return;
        }
        info!(kind = A::KIND, object = %key, holder = %holder, "claimed by another install; leaving it alone");
        self.shared.metrics.claimed_elsewhere(A::KIND);
        self.shared
            .event(
                obj,
                false,
                "ClaimedByAnotherInstall",
                "Claim",
                format!(
                    "managed by install {holder} ({}); install {} leaves it alone",
                    ownership::OWNER,
                    self.ownership.me
                ),
            )
            .await;
    }

    /// Claims the object of an install whose Lease expired long ago.
    async fn take_over(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        holder: &str,
    ) -> Result<Option<Arc<A::Kind>>, EngineError> {
        let me = Some(self.ownership.me.clone());
        match self
            .patch_metadata(api, obj, &[(ownership::OWNER, me)], None, true)
            .await
        {
            Ok(updated) => {
                self.told_claimed.lock().remove(&obj.key());
                warn!(kind = A::KIND, object = %obj.key(), holder = %holder, "took over from an install whose Lease expired");
                self.shared
                    .event(
                        &updated,
                        true,
                        "TakenOver",
                        "Claim",
                        format!(
                            "install {holder} has not renewed its Lease for over {}s; install {} manages the object now",
                            self.ownership.takeover_after.as_secs(),
                            self.ownership.me
                        ),
                    )
                    .await;
                Ok(Some(Arc::new(updated)))
            }
            // Someone moved first: the watch brings the object back.
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// When to look again at an object another install holds: in case its Lease expires.
    pub(super) fn left_alone(&self) -> Action {
        Action::requeue(jitter(recheck_after(self.ownership.takeover_after), 0.1))
    }

    /// The claim annotation to write with the next write, unless the object is claimed
    /// by this install already.
    pub(super) fn claim_change(&self, obj: &A::Kind) -> Option<AnnotationChange> {
        claim_change(obj.annotations().get(ownership::OWNER), &self.ownership.me)
    }

    /// Claims the object and, with `finalizer`, puts the finalizer on it (an object whose
    /// remote object the operator may delete), if either is missing. A create's marker
    /// carries both; this is for adoptions and ObserveOnly.
    pub(super) async fn ensure_owned(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        finalizer: bool,
    ) -> Result<(), EngineError> {
        let has_finalizer = obj.finalizers().iter().any(|f| f == FINALIZER);
        let claim: Vec<_> = self.claim_change(obj).into_iter().collect();
        let add_finalizer = (finalizer && !has_finalizer).then_some(FINALIZER);
        if claim.is_empty() && add_finalizer.is_none() {
            return Ok(());
        }
        match self
            .patch_metadata(api, obj, &claim, add_finalizer, true)
            .await
        {
            Ok(_) => Ok(()),
            // Changed meanwhile: the next pass (the watch brings it) tries again.
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_claimed_by_this_install_needs_no_claim() {
        let me = "ops/gpucloud-operator".to_string();
        assert_eq!(claim_change(Some(&me), &me), None);
    }

    #[test]
    fn an_unclaimed_or_taken_over_object_is_claimed_with_the_next_write() {
        let me = "ops/gpucloud-operator";
        let want = Some((ownership::OWNER, Some(me.to_string())));
        assert_eq!(claim_change(None, me), want);
        assert_eq!(claim_change(Some(&"old/install".to_string()), me), want);
    }

    #[test]
    fn another_installs_object_is_looked_at_between_ten_seconds_and_five_minutes() {
        let secs = |s| Duration::from_secs(s);
        assert_eq!(recheck_after(secs(1)), secs(10));
        assert_eq!(recheck_after(secs(60)), secs(60));
        assert_eq!(recheck_after(secs(3600)), secs(300));
    }
}
