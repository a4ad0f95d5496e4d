//! The crash-safe create: the marker (with the finalizer and the claim, one conflict-checked
//! patch) is in etcd before the platform hears of the create, and the id goes into status
//! after it. A create whose answer said nothing certain keeps its marker, and the next
//! passes look for what it made before creating anything ([`crate::decide`]); one the
//! platform refused for good is not sent again for the same generation and key.
//!
//! What a failed create leaves behind is decided by [`after_failed_create`] (pure).

use gpucloud_platform::domain::Identified;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use std::time::Duration;

use tokio::time::Instant;
use tracing::{info, warn};

use super::observe::CreateAttempt;
use super::outcome::{Outcome, Requeue};
use super::writes::legacy_id_removal;
use super::{Engine, EngineError, Observed};
use crate::adapter::{Adapter, Created, PassContext};
use crate::annotations as ann;
use crate::context::FINALIZER;
use crate::credentials::AccountId;
use crate::decide::{FailedCreate, UnsureCreate, after_failed_create};
use crate::failure::Failure;

/// A create the platform refused for good.
#[derive(Debug)]
pub(super) struct RefusedCreate {
    attempt: CreateAttempt,
    at: Instant,
    failure: Failure,
}

/// Whether the object may be created now, and with what.
enum Prepared<D, R> {
    /// Go ahead with this resolved spec.
    Create(D),
    /// No create, no marker: report this.
    Hold(Box<Outcome<R>>),
}

impl<A: Adapter> Engine<A> {
    /// Creates the remote object: resolve and admit the spec, write the marker, create,
    /// and settle what the answer says.
    pub(super) async fn create(
        &self,
        api: &Api<A::Kind>,
        seen: &Observed<A::Kind>,
        pass: &PassContext<'_, A::State>,
        attempt: CreateAttempt,
    ) -> Result<Outcome<A::Remote>, EngineError> {
        let desired = match self.prepare(seen, pass).await {
            Prepared::Create(desired) => desired,
            Prepared::Hold(outcome) => return Ok(*outcome),
        };
        let Some(marker) = self.mark(api, seen, attempt.account).await? else {
            // Another pass (or replica) moved first.
            return Ok(Outcome::progressing(
                None,
                gpucloud_crd::condition::phrase::CREATING,
                "the object changed; retrying",
                Requeue::Now,
            ));
        };
        match self.adapter.create(pass, &seen.obj, &desired).await {
            Ok(created) => Ok(self.created(seen, pass, created).await),
            Err(failure) => {
                self.create_failed(api, seen, marker, attempt, failure)
                    .await
            }
        }
    }

    /// The spec resolved and admitted, unless the create must wait (see [`super::admit`]).
    async fn prepare(
        &self,
        seen: &Observed<A::Kind>,
        pass: &PassContext<'_, A::State>,
    ) -> Prepared<A::Desired, A::Remote> {
        let desired = match self.resolve(pass, seen, None).await {
            Ok(d) => d,
            Err(outcome) => return Prepared::Hold(outcome),
        };
        match self.held(pass, seen, &desired, None, &[]).await {
            Some(held) => Prepared::Hold(Box::new(held)),
            None => Prepared::Create(desired),
        }
    }

    /// Writes the pending marker with the finalizer and the claim, conflict-checked, and
    /// returns its time; `None` when the object changed since it was read.
    async fn mark(
        &self,
        api: &Api<A::Kind>,
        seen: &Observed<A::Kind>,
        account: AccountId,
    ) -> Result<Option<Timestamp>, EngineError> {
        let marker = Timestamp::now();
        let mut changes = vec![(ann::CREATE_PENDING, Some(marker.to_string()))];
        changes.extend(self.claim_change(&seen.obj, account));
        if seen.annotations.external_id.is_some() {
            // Only reached when that id is gone and was the operator's (see `known_id`).
            changes.extend(legacy_id_removal());
        }
        match self
            .patch_metadata(api, &seen.obj, &changes, Some(FINALIZER), true)
            .await
        {
            Ok(_) => Ok(Some(marker)),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The platform made the object: tell, and report it (Ready at once for some kinds).
    async fn created(
        &self,
        seen: &Observed<A::Kind>,
        pass: &PassContext<'_, A::State>,
        created: Created<A::Remote>,
    ) -> Outcome<A::Remote> {
        let obj = seen.obj.as_ref();
        self.wrote(obj);
        let mut remote = created.remote;
        let id = Identified::id(&remote).to_string();
        info!(kind = A::KIND, object = %seen.key, id = %id, "created");
        for note in created.notes {
            self.shared
                .event(obj, note.warning, &note.reason, note.action, note.message)
                .await;
        }
        let message = format!("created {} {id}", A::NOUN);
        self.shared
            .event(obj, false, "Created", "Create", message)
            .await;
        // Ready at once (a volume): what the kind keeps beside a Ready object (an
        // endpoint's connection ConfigMap) must exist before status says Ready.
        if let Err(f) = self.after_sync_if_ready(pass, seen, &mut remote).await {
            return Outcome::failed(f, Some(remote), seen.last_ready.clone());
        }
        // A fresh object's listing comes soon, Ready or not.
        self.observed_then(seen, remote, Requeue::Progress)
    }

    /// The platform did not confirm the create: keep the marker while the create may still
    /// land, or drop it (and remember a refusal for good).
    async fn create_failed(
        &self,
        api: &Api<A::Kind>,
        seen: &Observed<A::Kind>,
        marker: Timestamp,
        attempt: CreateAttempt,
        failure: Failure,
    ) -> Result<Outcome<A::Remote>, EngineError> {
        let key = seen.key.clone();
        for note in &failure.notes {
            let message = note.message.clone();
            self.shared
                .event(&*seen.obj, note.warning, &note.reason, note.action, message)
                .await;
        }
        let outcome = Outcome::failed_forgetting_id(failure.clone(), seen.last_ready.clone());
        match after_failed_create(&failure, self.shared.config.create_timeout) {
            FailedCreate::MaybeMade { settles_in } => {
                let settled_at = Instant::now() + settles_in;
                let unsure = UnsureCreate { marker, settled_at };
                self.records
                    .update(&key, |r| r.unsure_create = Some(unsure));
                warn!(kind = A::KIND, object = %key, error = %failure, "create may have happened; will look it up");
                Ok(Outcome::still_creating(outcome))
            }
            FailedCreate::NotMade { refused_for_good } => {
                self.patch_metadata(api, &seen.obj, &[(ann::CREATE_PENDING, None)], None, false)
                    .await?;
                if refused_for_good {
                    let refused = RefusedCreate {
                        attempt,
                        at: Instant::now(),
                        failure,
                    };
                    self.records
                        .update(&key, |r| r.refused_create = Some(Box::new(refused)));
                }
                Ok(outcome)
            }
        }
    }

    /// The failure of a create the platform refused for good for this same generation and
    /// account, unless the Stalled recheck is due.
    pub(super) fn refused_before(&self, key: &str, attempt: CreateAttempt) -> Option<Failure> {
        let now = Instant::now();
        let recheck = self.shared.config.stalled_recheck;
        let holds = self.records.read(key, |r| {
            r.refused_create.as_ref().map(|refused| {
                (
                    refused.holds_for(attempt, now, recheck),
                    refused.failure.clone(),
                )
            })
        });
        match holds.flatten() {
            Some((true, failure)) => Some(failure),
            Some((false, _)) => {
                self.records.update(key, |r| r.refused_create = None);
                None
            }
            None => None,
        }
    }
}

impl RefusedCreate {
    /// Pure: whether this refusal still answers a create of `attempt` at `now`: the same
    /// generation with the same key, before half the Stalled recheck has passed (then the
    /// create is sent again, in case what refused it was fixed outside the object).
    fn holds_for(&self, attempt: CreateAttempt, now: Instant, stalled_recheck: Duration) -> bool {
        self.attempt == attempt && now.saturating_duration_since(self.at) < stalled_recheck / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(generation: i64, at: Instant) -> RefusedCreate {
        RefusedCreate {
            attempt: CreateAttempt {
                generation: Some(generation),
                account: AccountId::nth(1),
            },
            at,
            failure: Failure::permanent("InvalidSpec", "bad image"),
        }
    }

    #[test]
    fn a_refusal_holds_for_the_same_generation_and_key_until_the_recheck() {
        let at = Instant::now();
        let recheck = Duration::from_secs(600);
        let entry = refused(3, at);
        let same = entry.attempt;
        assert!(entry.holds_for(same, at + Duration::from_secs(10), recheck));
        // Half the Stalled recheck later, the create is tried again.
        assert!(!entry.holds_for(same, at + Duration::from_secs(300), recheck));
        // A new generation (the spec was fixed) or another key may succeed.
        let next = CreateAttempt {
            generation: Some(4),
            ..same
        };
        assert!(!entry.holds_for(next, at, recheck));
        let other_key = CreateAttempt {
            account: AccountId::nth(2),
            ..same
        };
        assert!(!entry.holds_for(other_key, at, recheck));
    }
}
