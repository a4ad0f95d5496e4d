//! The engine's protocol as pure functions: from what a pass knows (the object's policies,
//! the id it knows, a create marker, a listing) to the one step the pass takes. The engine
//! gathers the facts, asks, and carries the step out; every row of the crash-safe
//! protocol is a unit test below, with no cluster and no network.
//!
//! The protocol in one paragraph: a create is preceded by a conflict-checked marker (the
//! time it started). While no id is known and a marker stands, the remote object may exist
//! without the operator knowing its id (a crash, a timeout, a 5xx, a backup restored
//! without status), so it is looked for by its deterministic name or tag in a listing
//! newer than the marker; only once the create can no longer land does finding nothing
//! mean that nothing was made. A known id that is missing from a listing is looked for in
//! a newer one before it is called gone.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use crate::snapshot::Freshness;
use gpucloud_crd::{DeletionPolicy, ManagementPolicy};

use super::adapter::WhenGone;
use super::failure::{Applied, Failure};

/// Who chose the id the object is managed by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdChosenBy {
    /// The operator, after its own create or adoption (kept in status).
    Operator,
    /// A person, through the external-id annotation: never recreated behind their back.
    Person,
}

/// A create marker and what it means now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Marker {
    /// When the create was started (the marker's time, on this process's clock).
    pub at: Instant,
    /// From when a listing shows whatever the create made (see [`pending_settles_at`]).
    pub settles_at: Instant,
}

/// A create whose answer said nothing certain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnsureCreate {
    /// The pending marker written before it.
    pub marker: Timestamp,
    /// From this instant on, a new listing shows the object if the create made one.
    pub settled_at: Instant,
}

/// Pure: from when a listing can tell whether the create marked pending at `marker` made
/// something. A create this process sent and got an answer to (a 5xx) happened, if it
/// did, before the answer; one that got no answer (a timeout) may still be running at the
/// platform, until `create_timeout` after the call gave up (`unsure` holds both). A marker
/// this process knows nothing of was left by an earlier process, which sent nothing after
/// it died, so before this one started: its create is over by `started + create_timeout`.
pub fn pending_settles_at(
    marker: Timestamp,
    unsure: Option<UnsureCreate>,
    started: Instant,
    create_timeout: Duration,
) -> Instant {
    match unsure {
        Some(own) if own.marker == marker => own.settled_at,
        _ => started + create_timeout,
    }
}

/// What a create the platform did not confirm leaves behind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailedCreate {
    /// It may have made the object: keep the marker, so that the next pass looks the object
    /// up before anything else, in a listing that started after `settles_in` from now.
    MaybeMade { settles_in: Duration },
    /// Nothing was made: drop the marker, which would only make the next pass wait. A
    /// refusal for good is remembered, so that the same create is not sent again.
    NotMade { refused_for_good: bool },
}

/// Pure: what a failed create leaves behind. One the platform answered (a 5xx) is settled
/// at once; one that got no answer may still land until `create_timeout` has passed.
pub fn after_failed_create(failure: &Failure, create_timeout: Duration) -> FailedCreate {
    match failure.applied {
        Applied::No => FailedCreate::NotMade {
            refused_for_good: failure.is_permanent(),
        },
        Applied::MaybeAnswered => FailedCreate::MaybeMade {
            settles_in: Duration::ZERO,
        },
        Applied::MaybeUnanswered => FailedCreate::MaybeMade {
            settles_in: create_timeout,
        },
    }
}

/// Everything the decision needs; `claimed` and `by_id` are read from `listing_started`'s
/// listing by the engine (the adapter's `claims`, and the id lookup).
#[derive(Clone, Debug)]
pub struct Facts<'a, R> {
    pub now: Instant,
    pub observe_only: bool,
    pub id: Option<(&'a str, IdChosenBy)>,
    pub marker: Option<Marker>,
    pub listing_started: Instant,
    /// The remote object with the known id, if the listing has it.
    pub by_id: Option<&'a R>,
    /// The remote objects the listing shows that carry this object's name or tag.
    pub claimed: &'a [&'a R],
    /// The known id was already missing from an earlier listing of this pass.
    pub second_look: bool,
    /// The platform refused this same create for good (same generation and key).
    pub refused_before: Option<&'a Failure>,
    pub when_gone: WhenGone,
}

/// What one listing tells a pass: a step `S`, or that it must read a newer listing first.
#[derive(Clone, Debug, PartialEq)]
pub enum Look<S> {
    /// Read a listing that meets this, then decide again.
    Relist(Freshness),
    /// Take this step.
    Take(S),
}

/// What the pass does.
#[derive(Clone, Debug, PartialEq)]
pub enum Step<R> {
    /// Bring this remote object in line with the spec.
    Manage(R),
    /// ObserveOnly: report this remote object, change nothing.
    Observe(R),
    /// Take this remote object as the object's own (found by name or tag).
    Adopt(R, Adoption),
    /// Write a new marker (with the finalizer), then create.
    Create,
    /// A create may still land: look again after this long, creating nothing.
    WaitForPendingCreate(Duration),
    /// The remote object was deleted outside the operator: forget the id, create again.
    Recreate,
    /// Report, change nothing.
    Fail(Failure),
}

impl<R> Step<R> {
    /// A short name of the step, for logs.
    pub fn name(&self) -> &'static str {
        match self {
            Step::Manage(_) => "manage",
            Step::Observe(_) => "observe",
            Step::Adopt(..) => "adopt",
            Step::Create => "create",
            Step::WaitForPendingCreate(_) => "wait-for-pending-create",
            Step::Recreate => "recreate",
            Step::Fail(_) => "fail",
        }
    }
}

/// How an adopted object was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Adoption {
    /// By name, with no create of this operator in sight.
    Existing,
    /// What an interrupted create made.
    AfterInterruptedCreate,
    /// The one that carries the object's tag once the known one is gone.
    Successor,
}

impl Adoption {
    pub fn reason(self) -> &'static str {
        match self {
            Adoption::Existing => "Adopted",
            Adoption::AfterInterruptedCreate => "AdoptedAfterInterruptedCreate",
            Adoption::Successor => "AdoptedSuccessor",
        }
    }
}

/// Pure: the step of one pass (paused and deleted objects are decided elsewhere), or the
/// newer listing it must read first.
pub fn decide<R: Clone>(f: &Facts<'_, R>, noun: &str) -> Look<Step<R>> {
    if let Some((id, chosen_by)) = f.id {
        if let Some(remote) = f.by_id {
            return Look::Take(match f.observe_only {
                true => Step::Observe(remote.clone()),
                false => Step::Manage(remote.clone()),
            });
        }
        if !f.second_look {
            // One listing can miss an object made just before it: ask a newer one.
            return Look::Relist(Freshness::StartedAfter(f.listing_started));
        }
        let report =
            f.observe_only || chosen_by == IdChosenBy::Person || f.when_gone == WhenGone::Report;
        return Look::Take(match (report, f.claimed) {
            (true, _) => Step::Fail(gone(noun, id)),
            (false, []) => Step::Recreate,
            // The known object is gone but another one carries this object's tag (an
            // adapter that moved it, make before break, or a create made meanwhile):
            // that one is the object's now, rather than a third.
            (false, [one]) => Step::Adopt((*one).clone(), Adoption::Successor),
            (false, many) => Step::Fail(ambiguous(many.len(), noun)),
        });
    }
    if let Some(marker) = f.marker {
        return recover(f, marker, noun);
    }
    Look::Take(match f.claimed {
        [] if f.observe_only => Step::Fail(Failure::permanent(
            "ExternalNotFound",
            format!(
                "managementPolicy is ObserveOnly: set the {} annotation to the id of an existing {noun}",
                super::annotations::EXTERNAL_ID
            ),
        )),
        [] => match f.refused_before {
            Some(failure) => Step::Fail(failure.clone()),
            None => Step::Create,
        },
        [one] => Step::Adopt((*one).clone(), Adoption::Existing),
        many => Step::Fail(ambiguous(many.len(), noun)),
    })
}

/// After an interrupted create: adopt what it made, wait while it may still land, or
/// create once a listing newer than anything it can have done shows nothing.
fn recover<R: Clone>(f: &Facts<'_, R>, marker: Marker, noun: &str) -> Look<Step<R>> {
    let settled = marker.settles_at <= f.now;
    // Anything the create made is in a listing newer than the marker; only its absence
    // must wait until the create can no longer land.
    let need_after = if settled {
        marker.settles_at
    } else {
        marker.at
    };
    if f.listing_started <= need_after {
        return Look::Relist(Freshness::StartedAfter(need_after));
    }
    Look::Take(match f.claimed {
        [] if !settled => Step::WaitForPendingCreate(marker.settles_at - f.now),
        [] if f.observe_only => Step::Fail(gone(noun, "made by the interrupted create")),
        [] => match f.refused_before {
            Some(failure) => Step::Fail(failure.clone()),
            None => Step::Create,
        },
        [one] => Step::Adopt((*one).clone(), Adoption::AfterInterruptedCreate),
        many => Step::Fail(ambiguous(many.len(), noun)),
    })
}

fn gone(noun: &str, id: &str) -> Failure {
    Failure::permanent(
        "ExternalNotFound",
        format!(
            "{noun} {id} named by {} does not exist on the platform",
            super::annotations::EXTERNAL_ID
        ),
    )
}

fn ambiguous(count: usize, noun: &str) -> Failure {
    Failure::permanent(
        "AmbiguousExternalObject",
        format!(
            "{count} {noun}s carry this object's name; set the {} annotation to the one to manage",
            super::annotations::EXTERNAL_ID
        ),
    )
}

/// What deleting the object does on the platform.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cleanup {
    /// Leave the remote object (deletionPolicy Orphan, ObserveOnly, paused).
    Release,
    /// A create may still land: deleting now would leave what it makes behind.
    WaitForPendingCreate(Duration),
    /// Delete these remote objects (none: nothing was ever made).
    Delete(Vec<String>),
}

/// Facts for deleting an object.
#[derive(Clone, Debug)]
pub struct CleanupFacts<'a> {
    pub now: Instant,
    /// deletionPolicy Orphan, ObserveOnly or paused.
    pub keeps_remote: bool,
    pub id: Option<&'a str>,
    pub marker: Option<Marker>,
    /// The newest listing read in this deletion, and the ids it shows this object claims.
    pub listing: Option<(Instant, Vec<&'a str>)>,
}

/// Pure: whether deleting the object leaves its remote object on the platform: its
/// deletionPolicy says Orphan, it was only ever observed, or it is paused (hands off).
pub fn keeps_remote(deletion: DeletionPolicy, management: ManagementPolicy, paused: bool) -> bool {
    deletion == DeletionPolicy::Orphan || management == ManagementPolicy::ObserveOnly || paused
}

/// Pure: what deleting the object does.
pub fn decide_cleanup(f: &CleanupFacts<'_>) -> Look<Cleanup> {
    if f.keeps_remote {
        return Look::Take(Cleanup::Release);
    }
    let mut ids: Vec<String> = f.id.iter().map(|id| id.to_string()).collect();
    // Without a known id, a marker means a create may have made something: find it.
    if let (None, Some(marker)) = (f.id, f.marker) {
        if marker.settles_at > f.now {
            return Look::Take(Cleanup::WaitForPendingCreate(marker.settles_at - f.now));
        }
        match &f.listing {
            Some((started, claimed)) if *started > marker.settles_at => {
                ids.extend(claimed.iter().map(|id| id.to_string()));
            }
            _ => return Look::Relist(Freshness::StartedAfter(marker.settles_at)),
        }
    }
    ids.sort();
    ids.dedup();
    Look::Take(Cleanup::Delete(ids))
}

/// The Event reason of a remote object kept because its kind's CRD is going.
pub const RELEASED_CRD_DELETING: &str = "ReleasedCrdDeleting";

/// The kind's CustomResourceDefinition as a fresh read finds it, just before a delete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CrdState {
    /// Installed and not being deleted.
    Installed,
    /// Its deletionTimestamp is set: the apiserver is deleting every object of the kind.
    Deleting,
    /// Not found: deleted, and the objects of the kind still being removed (this one is).
    Gone,
    /// The read failed for another reason than a 404 (this error).
    Unreadable(String),
}

/// What a delete the policy asks for does, given its kind's CRD.
#[derive(Clone, Debug, PartialEq)]
pub enum DeleteGuard {
    /// Delete the remote objects, as the deletionPolicy says.
    Delete,
    /// Keep them and record them released, as deletionPolicy Orphan does; `why` says so.
    Release { why: String },
    /// Neither now: whether the CRD is going is unknown. Retry.
    Hold(Failure),
}

/// Pure: whether a delete may go ahead. Deleting a CRD deletes every object of its kind
/// (an uninstall that took the CRDs along, `kubectl delete -k` of a base that lists them),
/// and nobody asked for their paid remote objects to go then: they are kept and recorded
/// as released, for `orphans` to clean up on purpose. A CRD that cannot be read may be
/// going: nothing is deleted until it can be.
pub fn guard_delete(crd_name: &str, crd: &CrdState) -> DeleteGuard {
    match crd {
        CrdState::Installed => DeleteGuard::Delete,
        CrdState::Deleting => DeleteGuard::Release {
            why: format!("the CustomResourceDefinition {crd_name} is being deleted"),
        },
        CrdState::Gone => DeleteGuard::Release {
            why: format!("the CustomResourceDefinition {crd_name} is gone"),
        },
        CrdState::Unreadable(err) => DeleteGuard::Hold(Failure::retryable(
            "CrdUnreadable",
            format!(
                "could not read the CustomResourceDefinition {crd_name} ({err}): nothing is \
                 deleted on the platform while the kind may be being uninstalled"
            ),
        )),
    }
}

/// Pure: the note of a remote object kept by [`DeleteGuard::Release`].
pub fn kept_for_crd(why: &str, noun: &str, id: &str) -> String {
    format!("{why}: the remote {noun} {id} is kept and recorded as released, not deleted")
}

#[cfg(test)]
#[path = "decide_tests.rs"]
mod tests;
