//! The pass of an object being deleted: deal with its remote object, then let it go. The
//! deletion policy decides between deleting and releasing ([`decide_cleanup`], pure); a
//! create that may still land is waited for, and what an interrupted one made is found in
//! a listing newer than it, so that nothing is left behind; a release is recorded
//! ([`crate::released`]) before anything else. Only what the object holds is deleted or
//! released ([`crate::tenancy`]). The finalizer goes last, conflict-checked. A delete that
//! cannot finish keeps the finalizer, says why in an Event and in the conditions, and
//! retries.

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
use crate::decide::{Cleanup, CleanupFacts, IdChosenBy, decide_cleanup, keeps_remote};
use crate::failure::Failure;

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

impl<A: Adapter> Engine<A> {
    /// Deletes (or releases) the remote object, then lets the Kubernetes object go.
    pub(super) async fn cleanup(
        &self,
        api: &Api<A::Kind>,
        obj: Arc<A::Kind>,
    ) -> Result<Action, EngineError> {
        // The newest this process knows, as a live pass reads it (see `Engine::observe`).
        let obj = self.newest(obj);
        let key = obj.key();
        let (annotations, known) = super::observe::annotations_and_id(obj.as_ref());
        // An id a person named and the object never recorded: not deleted unless it holds it.
        let by_person = match &known {
            Some((id, IdChosenBy::Person)) => Some(id.clone()),
            _ => None,
        };
        let known = known.map(|(id, _)| id);
        let keeps_remote = keeps_remote(
            obj.deletion_policy(),
            obj.management_policy(),
            annotations.paused,
        );
        let marker = annotations.create_pending.map(|m| self.marker(&key, m));
        // Resolved only when the platform must be asked, and then once.
        let mut creds: Option<Credentials> = None;
        let mut listing: Option<std::sync::Arc<crate::snapshot::Listing<A::Remote>>> = None;
        let (ids, released) = loop {
            let claimed: Option<(Instant, Vec<&str>)> = listing.as_ref().map(|l| {
                let ids = self.claimed_ids(&obj, l);
                (l.started_at, ids)
            });
            let facts = CleanupFacts {
                now: Instant::now(),
                keeps_remote,
                id: known.as_deref(),
                marker,
                listing: claimed,
            };
            match decide_cleanup(&facts) {
                Cleanup::Release => {
                    // Only what the object held is released: the record proves a remote
                    // object free for others (see `crate::tenancy`), and an id it never
                    // recorded may be another object's.
                    let held = known
                        .as_deref()
                        .filter(|id| by_person.as_deref() != Some(*id));
                    if let Some(id) = held
                        && let Err(f) = self.record_release(&obj, id).await
                    {
                        return self.cleanup_failed(api, &obj, f).await;
                    }
                    break (Vec::new(), held);
                }
                Cleanup::WaitForPendingCreate(wait) => {
                    // A create that may still land would be left behind by a delete now.
                    return Ok(Action::requeue(wait + Duration::from_millis(100)));
                }
                Cleanup::Relist(need) => {
                    let creds = match self.credentials_once(&obj, &mut creds).await {
                        Ok(c) => c,
                        Err(f) => return self.cleanup_failed(api, &obj, f).await,
                    };
                    match self.shared_listing(&creds, need).await {
                        Ok(l) => listing = Some(l),
                        Err(f) => {
                            let f = f.with_credentials(&creds.source);
                            return self.cleanup_failed(api, &obj, f).await;
                        }
                    }
                }
                Cleanup::Delete(ids) => break (ids, None),
            }
        };
        if !ids.is_empty() {
            let deleted = async {
                let creds = self.credentials_once(&obj, &mut creds).await?;
                // Never another object's remote object (see `crate::tenancy`).
                let ids = self
                    .deletable(&obj, &creds, ids, by_person.as_deref())
                    .await?;
                self.delete_remote(&obj, &creds, ids).await
            }
            .await;
            if let Err(f) = deleted {
                return self.cleanup_failed(api, &obj, f).await;
            }
        }
        // The Event of a release and the finalizer at once: one round trip less per object
        // when many are deleted together, and neither needs the other.
        let told = async {
            if let Some(id) = released {
                let message = format!("left {} {id} on the platform", A::NOUN);
                self.shared
                    .event(obj.as_ref(), false, "Orphaned", "Delete", message)
                    .await;
            }
        };
        let (finalizer, ()) = tokio::join!(self.release_finalizer(api, &obj), told);
        if !finalizer? {
            debug!(kind = A::KIND, object = %key, "changed while deleting; looking again");
            return Ok(Action::requeue(Duration::from_millis(200)));
        }
        self.forget(&key);
        Ok(Action::await_change())
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
            .map(|r| A::id(r))
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
            match self.adapter.delete(&client, &id).await {
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
        let last_ready =
            crate::conditions::last_ready(super::status::conditions_of(obj), obj.meta().generation);
        let verdicts = told.verdicts(last_ready);
        let status = self.status(obj, None, &verdicts, Seen::default(), false);
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
            self.backoffs.fail(&obj.key(), failure.retry_after)
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
