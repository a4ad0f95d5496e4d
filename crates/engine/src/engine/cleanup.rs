//! The pass of an object being deleted: deal with its remote object, then let it go. The
//! deletion policy decides between deleting and releasing ([`decide_cleanup`], pure); a
//! create that may still land is waited for, and what an interrupted one made is found in
//! a listing newer than it, so that nothing is left behind; a release is recorded
//! ([`crate::released`]) before anything else. Only what the object holds is deleted or
//! released ([`crate::tenancy`]). Right before a delete the kind's CRD is read
//! ([`super::crd_guard`]): while it is being deleted, the delete becomes a release
//! ([`guard_delete`]). The finalizer goes last, conflict-checked. A delete that
//! cannot finish keeps the finalizer, says why in an Event and in the conditions, and
//! retries.

use gpucloud_platform::domain::Identified;
use std::sync::Arc;
use std::time::Duration;

use crate::action::Action;
use kube::{Api, Resource};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use gpucloud_crd::ManagedKind;

use super::{Engine, EngineError};
use crate::adapter::{Adapter, Seen};
use crate::credentials::Credentials;
use crate::decide::{
    Cleanup, CleanupFacts, DeleteGuard, IdChosenBy, Look, RELEASED_CRD_DELETING, decide_cleanup,
    guard_delete, keeps_remote, kept_for_crd,
};
use crate::failure::Failure;

/// Remote objects kept on the platform because the kind's CRD (`crd`) is going, and why.
struct KeptForCrd {
    ids: Vec<String>,
    crd: String,
    why: String,
}

/// Pure: how a delete that could not finish is told: its own reason (`DeleteUnauthorized`),
/// so that it is not taken for a failure of the object's last apply.
fn told(failure: &Failure) -> Failure {
    Failure {
        reason: format!("Delete{}", failure.reason),
        ..failure.clone()
    }
}

/// Pure: a failed delete of `id`, naming what it was deleting.
fn deleting(failure: Failure, noun: &str, id: &str) -> Failure {
    Failure {
        message: format!("{} (deleting {noun} {id})", failure.message),
        ..failure
    }
}

/// Pure: a release that could not be recorded, retried like any failed delete.
fn not_recorded(err: &kube::Error, noun: &str, id: &str) -> Failure {
    Failure::retryable(
        "ReleaseNotRecorded",
        format!("could not record that {noun} {id} was left on the platform on purpose: {err}"),
    )
}

/// What the pass of an object being deleted knows of it before it asks the platform.
struct Leaving<K> {
    obj: Arc<K>,
    key: String,
    /// The id the object is managed by.
    known: Option<String>,
    /// An id a person named and the object never recorded: not deleted unless it holds it.
    by_person: Option<String>,
    /// deletionPolicy Orphan, ObserveOnly or paused.
    keeps_remote: bool,
    marker: Option<crate::decide::Marker>,
}

/// What the pass did with the remote objects, for its report.
#[derive(Default)]
struct Done {
    /// The remote object left on the platform by the deletion policy.
    released: Option<String>,
    /// Remote objects kept because the kind's CRD is going.
    kept: Option<KeptForCrd>,
}

impl<A: Adapter> Engine<A> {
    /// The pass of an object being deleted: the same stages as a live one, towards "gone".
    /// Observe the object, decide (reading listings while an interrupted create must be
    /// looked for), act (release or delete), report (the Events, then the finalizer).
    pub(super) async fn cleanup(
        &self,
        api: &Api<A::Kind>,
        obj: Arc<A::Kind>,
    ) -> Result<Action, EngineError> {
        let leaving = self.observe_leaving(obj);
        // Resolved only when the platform must be asked, and then once.
        let mut creds: Option<Credentials> = None;
        let step = match self.decide_leaving(&leaving, &mut creds).await {
            Ok(step) => step,
            Err(f) => return self.cleanup_failed(api, &leaving.obj, f).await,
        };
        let done = match step {
            Cleanup::WaitForPendingCreate(wait) => {
                // A create that may still land would be left behind by a delete now.
                return Ok(Action::requeue(wait + Duration::from_millis(100)));
            }
            Cleanup::Release => self.release(&leaving).await,
            Cleanup::Delete(ids) => self.delete_held(&leaving, &mut creds, ids).await,
        };
        match done {
            Ok(done) => self.report_gone(api, &leaving, done).await,
            Err(f) => self.cleanup_failed(api, &leaving.obj, f).await,
        }
    }

    /// The facts of an object being deleted, from the newest copy this process knows (as a
    /// live pass reads it, see `Engine::observe`).
    fn observe_leaving(&self, obj: Arc<A::Kind>) -> Leaving<A::Kind> {
        let obj = self.newest(obj);
        let key = obj.key();
        let (annotations, known) = super::observe::annotations_and_id(obj.as_ref());
        let by_person = match &known {
            Some((id, IdChosenBy::Person)) => Some(id.clone()),
            _ => None,
        };
        Leaving {
            keeps_remote: keeps_remote(
                obj.deletion_policy(),
                obj.management_policy(),
                annotations.paused,
            ),
            marker: annotations.create_pending.map(|m| self.marker(&key, m)),
            known: known.map(|(id, _)| id),
            by_person,
            obj,
            key,
        }
    }

    /// Reads listings until [`decide_cleanup`] has a step.
    async fn decide_leaving(
        &self,
        leaving: &Leaving<A::Kind>,
        creds: &mut Option<Credentials>,
    ) -> Result<Cleanup, Failure> {
        let mut listing: Option<Arc<crate::snapshot::Listing<A::Remote>>> = None;
        loop {
            let claimed: Option<(Instant, Vec<&str>)> = listing
                .as_ref()
                .map(|l| (l.started_at, self.claimed_ids(&leaving.obj, l)));
            let facts = CleanupFacts {
                now: Instant::now(),
                keeps_remote: leaving.keeps_remote,
                id: leaving.known.as_deref(),
                marker: leaving.marker,
                listing: claimed,
            };
            let need = match decide_cleanup(&facts) {
                Look::Take(step) => return Ok(step),
                Look::Relist(need) => need,
            };
            let creds = self.credentials_once(&leaving.obj, creds).await?;
            match self.shared_listing(&creds, need).await {
                Ok(l) => listing = Some(l),
                Err(f) => return Err(f.with_credentials(&creds.source)),
            }
        }
    }

    /// Leaves the remote object on the platform. Only what the object held is released:
    /// the record proves a remote object free for others (see `crate::tenancy`), and an
    /// id it never recorded may be another object's.
    async fn release(&self, leaving: &Leaving<A::Kind>) -> Result<Done, Failure> {
        let held = leaving
            .known
            .as_deref()
            .filter(|id| leaving.by_person.as_deref() != Some(*id));
        if let Some(id) = held {
            self.record_release(&leaving.obj, id).await?;
        }
        Ok(Done {
            released: held.map(str::to_string),
            kept: None,
        })
    }

    /// Deletes the remote objects `ids` the object holds (see [`Engine::delete_or_keep`]).
    async fn delete_held(
        &self,
        leaving: &Leaving<A::Kind>,
        creds: &mut Option<Credentials>,
        ids: Vec<String>,
    ) -> Result<Done, Failure> {
        if ids.is_empty() {
            return Ok(Done::default());
        }
        let by_person = leaving.by_person.as_deref();
        let kept = self
            .delete_or_keep(&leaving.obj, creds, ids, by_person)
            .await?;
        Ok(Done {
            released: None,
            kept,
        })
    }

    /// Tells what was done, and lets the object go. The Events and the finalizer go at once:
    /// one round trip less per object when many are deleted together, and neither needs
    /// the other.
    async fn report_gone(
        &self,
        api: &Api<A::Kind>,
        leaving: &Leaving<A::Kind>,
        done: Done,
    ) -> Result<Action, EngineError> {
        let obj = leaving.obj.as_ref();
        let told = async {
            if let Some(id) = done.released {
                let message = format!("left {} {id} on the platform", A::NOUN);
                self.shared
                    .event(obj, false, "Orphaned", "Delete", message)
                    .await;
            }
            if let Some(kept) = done.kept {
                self.tell_kept(obj, kept).await;
            }
        };
        let (finalizer, ()) = tokio::join!(self.release_finalizer(api, obj), told);
        if !finalizer? {
            debug!(kind = A::KIND, object = %leaving.key, "changed while deleting; looking again");
            return Ok(Action::requeue(Duration::from_millis(200)));
        }
        self.forget(&leaving.key);
        Ok(Action::await_change())
    }

    /// Deletes the remote objects `ids` that the object holds, unless the kind's CRD is
    /// going: then they are recorded as released instead, and returned with why.
    async fn delete_or_keep(
        &self,
        obj: &A::Kind,
        creds: &mut Option<Credentials>,
        ids: Vec<String>,
        by_person: Option<&str>,
    ) -> Result<Option<KeptForCrd>, Failure> {
        let creds = self.credentials_once(obj, creds).await?;
        // Never another object's remote object (see `crate::tenancy`).
        let ids = self.deletable(obj, &creds, ids, by_person).await?;
        if ids.is_empty() {
            return Ok(None);
        }
        // Read now, not when the pass began: the CRD's delete may have started since.
        let crd = super::crd_guard::crd_name::<A::Kind>();
        match guard_delete(&crd, &self.crd_state().await) {
            DeleteGuard::Delete => self.delete_remote(obj, &creds, ids).await.map(|()| None),
            DeleteGuard::Release { why } => {
                for id in &ids {
                    self.record_release(obj, id).await?;
                }
                Ok(Some(KeptForCrd { ids, crd, why }))
            }
            DeleteGuard::Hold(failure) => {
                warn!(kind = A::KIND, object = %obj.key(), crd = %crd, reason = %failure.reason, "not deleting: the kind's CRD could not be read");
                Err(failure)
            }
        }
    }

    /// Says, in the log and in an Event on the object, that its remote objects were kept
    /// because the kind's CRD is going.
    async fn tell_kept(&self, obj: &A::Kind, kept: KeptForCrd) {
        for id in &kept.ids {
            warn!(kind = A::KIND, object = %obj.key(), id = %id, crd = %kept.crd, reason = RELEASED_CRD_DELETING, "the kind's CRD is going: kept the remote object and recorded it as released, not deleted");
            let message = kept_for_crd(&kept.why, A::NOUN, id);
            self.shared
                .event(obj, true, RELEASED_CRD_DELETING, "Delete", message)
                .await;
        }
    }

    /// The ids of the remote objects `listing` shows that carry the object's name or tag.
    fn claimed_ids<'l>(
        &self,
        obj: &A::Kind,
        listing: &'l crate::snapshot::Listing<A::Remote>,
    ) -> Vec<&'l str> {
        listing
            .items
            .iter()
            .filter(|r| self.adapter.claims(obj, r))
            .map(Identified::id)
            .collect()
    }

    /// The key to delete with, resolved on first use in this deletion.
    async fn credentials_once(
        &self,
        obj: &A::Kind,
        cache: &mut Option<Credentials>,
    ) -> Result<Credentials, Failure> {
        if let Some(c) = cache {
            return Ok(c.clone());
        }
        let c = self.credentials_to_delete(obj).await?;
        *cache = Some(c.clone());
        Ok(c)
    }

    /// Records that the remote object `id` is left on the platform, for the orphan sweep.
    /// The finalizer stays until the record has it: an id released but not recorded would
    /// be listed as an orphan, and `orphans --delete` would delete what was meant to stay.
    async fn record_release(&self, obj: &A::Kind, id: &str) -> Result<(), Failure> {
        let key = obj.key();
        self.shared
            .released
            .record(A::KIND, id, &key)
            .await
        .map_err(|err| {
            warn!(kind = A::KIND, object = %key, id = %id, error = %err, "could not record the release for the orphan sweep");
            not_recorded(&err, A::NOUN, id)
        })
    }

    /// Deletes the remote objects `ids`; one already gone counts as deleted.
    async fn delete_remote(
        &self,
        obj: &A::Kind,
        creds: &Credentials,
        ids: Vec<String>,
    ) -> Result<(), Failure> {
        let key = obj.key();
        let client = self.client_for(creds);
        for id in ids {
            match self.adapter.delete(&client, &id, Some(obj)).await {
                Ok(()) => {
                    info!(kind = A::KIND, object = %key, id = %id, "deleted");
                    let message = format!("deleted {} {id}", A::NOUN);
                    self.shared
                        .event(obj, false, "Deleted", "Delete", message)
                        .await;
                }
                Err(f) if f.is_not_found() => {
                    debug!(kind = A::KIND, object = %key, id = %id, "already gone");
                }
                Err(f) => return Err(deleting(f, A::NOUN, &id).with_credentials(&creds.source)),
            }
        }
        Ok(())
    }

    /// A delete that could not finish keeps the finalizer; say why (an Event, and the
    /// conditions, so that `kubectl get` shows what holds the object) and retry with backoff.
    async fn cleanup_failed(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        failure: Failure,
    ) -> Result<Action, EngineError> {
        let told = told(&failure);
        self.shared
            .event(obj, true, &told.reason, "Delete", failure.message.clone())
            .await;
        let last_ready = crate::conditions::last_ready(
            super::observe::conditions_of(obj),
            obj.meta().generation,
        );
        let verdicts = told.verdicts(last_ready);
        let status = self.status(&obj.key(), obj, None, &verdicts, Seen::default(), false);
        if let Err(err) = self.write_status(api, obj, status).await {
            // The Event said it already; the retry below writes again.
            debug!(kind = A::KIND, object = %obj.key(), error = %err, "could not write the delete's conditions");
        }
        // A Stalled delete still retries slowly so that a fixed key unblocks it without
        // anyone touching the object.
        let delay = if failure.is_permanent() {
            self.shared
                .config
                .stalled_recheck
                .min(Duration::from_secs(300))
        } else {
            self.failed(&obj.key(), failure.retry_after)
        };
        Ok(Action::requeue(delay))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_delete_is_told_under_its_own_reason() {
        let f = Failure::permanent("Unauthorized", "401");
        let told = told(&f);
        assert_eq!(told.reason, "DeleteUnauthorized");
        assert_eq!((told.message, told.class), (f.message, f.class));
    }

    #[test]
    fn a_release_not_recorded_is_retried_and_names_the_object() {
        let err = kube::Error::Api(
            kube::core::Status::failure("etcd timeout", "InternalError")
                .with_code(500)
                .boxed(),
        );
        let told = told(&not_recorded(&err, "volume", "vol-1"));
        assert_eq!(told.reason, "DeleteReleaseNotRecorded");
        assert!(!told.is_permanent());
        assert!(told.message.contains("volume vol-1"), "{}", told.message);
    }

    #[test]
    fn a_failed_delete_names_what_it_was_deleting() {
        let f = deleting(
            Failure::retryable("PlatformUnavailable", "502"),
            "volume",
            "vol-1",
        );
        assert_eq!(f.message, "502 (deleting volume vol-1)");
        assert_eq!(f.reason, "PlatformUnavailable");
    }
}
