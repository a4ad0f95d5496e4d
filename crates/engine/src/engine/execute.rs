//! The third stage of a pass: carry out decide's step. Report a remote object, adopt one,
//! bring one in line with the spec (the adapter's pure `plan`, then its platform calls:
//! update in place, or delete to replace), create one ([`super::create`]), or only report.
//! Every branch ends in an [`Outcome`] for the status stage; the apiserver writes it needs
//! (the claim and the finalizer of an adopted object) go through [`super::writes`].

use gpucloud_platform::domain::Identified;
use std::time::Duration;

use kube::Api;
use tracing::{info, warn};

use super::observe::CreateAttempt;
use super::outcome::{Outcome, Requeue};
use super::writes::legacy_id_removal;
use super::{Engine, EngineError, Observed};
use crate::adapter::{Adapter, PassContext, Plan, Readiness, Seen};
use crate::conditions::{Verdict, Verdicts};
use crate::decide::{Adoption, Step};
use crate::failure::Failure;

impl<A: Adapter> Engine<A> {
    /// Carries out `step`.
    pub(super) async fn execute(
        &self,
        api: &Api<A::Kind>,
        seen: &Observed<A::Kind>,
        pass: &PassContext<'_, A::State>,
        attempt: CreateAttempt,
        step: Step<A::Remote>,
    ) -> Result<Outcome<A::Remote>, EngineError> {
        let obj = seen.obj.as_ref();
        // Before any write for a remote object: is it this object's to take?
        if let Step::Observe(remote) | Step::Manage(remote) | Step::Adopt(remote, _) = &step
            && let Some(refused) = self.refusal(seen, remote).await
        {
            return Ok(refused);
        }
        match step {
            Step::Fail(f) => Ok(Outcome::failed(f, None, seen.last_ready.clone())),
            Step::WaitForPendingCreate(wait) => Ok(wait_for_pending_create(A::NOUN, wait)),
            Step::Observe(remote) => {
                self.ensure_owned(api, obj, attempt.account, false).await?;
                Ok(self.observed(seen, remote))
            }
            Step::Adopt(remote, how) => self.adopt(api, seen, pass, remote, how).await,
            Step::Manage(remote) => {
                self.ensure_owned(api, obj, attempt.account, true).await?;
                self.manage(api, seen, pass, remote).await
            }
            Step::Recreate => {
                let id = seen.known.as_ref().map(|(id, _)| id.as_str());
                let id = id.unwrap_or_default();
                let message = format!(
                    "{} {id} was deleted outside the operator; creating it again",
                    A::NOUN
                );
                warn!(kind = A::KIND, object = %seen.key, id = %id, "deleted outside the operator");
                self.shared
                    .event(obj, true, "ExternalDeleted", "Create", message)
                    .await;
                self.create(api, seen, pass, attempt).await
            }
            Step::Create => self.create(api, seen, pass, attempt).await,
        }
    }

    /// Takes `remote` as the object's own, then manages it (or only reports it, under
    /// ObserveOnly).
    async fn adopt(
        &self,
        api: &Api<A::Kind>,
        seen: &Observed<A::Kind>,
        pass: &PassContext<'_, A::State>,
        remote: A::Remote,
        how: Adoption,
    ) -> Result<Outcome<A::Remote>, EngineError> {
        let obj = seen.obj.as_ref();
        let id = Identified::id(&remote).to_string();
        self.ensure_owned(api, obj, pass.credentials.account, !seen.observe_only)
            .await?;
        if self.records.read(&seen.key, |r| r.unsure_create.is_some()) == Some(true) {
            self.records.update(&seen.key, |r| r.unsure_create = None);
        }
        info!(kind = A::KIND, object = %seen.key, id = %id, reason = how.reason(), "adopted");
        let message = format!("adopted existing {} {id}", A::NOUN);
        self.shared
            .event(obj, false, how.reason(), "Adopt", message)
            .await;
        match seen.observe_only {
            true => Ok(self.observed(seen, remote)),
            false => self.manage(api, seen, pass, remote).await,
        }
    }

    /// Brings an existing remote object in line with the spec.
    async fn manage(
        &self,
        api: &Api<A::Kind>,
        seen: &Observed<A::Kind>,
        pass: &PassContext<'_, A::State>,
        mut remote: A::Remote,
    ) -> Result<Outcome<A::Remote>, EngineError> {
        let obj = seen.obj.as_ref();
        let last_ready = seen.last_ready.clone();
        let desired = match self.resolve(pass, seen, Some(&remote)).await {
            Ok(d) => d,
            Err(outcome) => return Ok(*outcome),
        };
        match self.plan(&seen.key, obj, &desired, &remote) {
            Plan::UpToDate => match self.after_sync_if_ready(pass, seen, &mut remote).await {
                Ok(()) => Ok(self.observed(seen, remote)),
                Err(f) => Ok(Outcome::failed(f, Some(remote), last_ready)),
            },
            Plan::Blocked(failure) => Ok(Outcome::blocked(failure, remote, last_ready)),
            Plan::Update(changes) => {
                match self
                    .held(pass, seen, &desired, Some(&remote), &changes)
                    .await
                {
                    Some(held) => Ok(held),
                    None => Ok(self.update(seen, pass, remote, &changes).await),
                }
            }
            Plan::Replace { reason } => {
                self.delete_for(api, seen, pass, remote, "Replacing", reason)
                    .await
            }
            Plan::Remove { reason, message } => {
                self.delete_for(api, seen, pass, remote, reason, message)
                    .await
            }
        }
    }

    /// Makes `changes` in place, in order, stopping at the first that fails.
    async fn update(
        &self,
        seen: &Observed<A::Kind>,
        pass: &PassContext<'_, A::State>,
        mut remote: A::Remote,
        changes: &[A::Change],
    ) -> Outcome<A::Remote> {
        let obj = seen.obj.as_ref();
        for change in changes {
            let note = match self.adapter.update(pass, &mut remote, change).await {
                Ok(note) => note,
                Err(f) => {
                    // The remote object is known not to match the spec (a pod stopped out
                    // of band that cannot resume): not Ready, as a change that went through
                    // would not be either until the next listing.
                    let not_ready = Verdict::no(f.reason.clone(), f.message.clone());
                    return Outcome::failed(f, Some(remote), not_ready);
                }
            };
            info!(kind = A::KIND, object = %seen.key, id = Identified::id(&remote), change = %note.message, "updated");
            self.shared
                .event(obj, note.warning, &note.reason, note.action, note.message)
                .await;
        }
        self.wrote(obj);
        // The listing predates the change: show the change as under way and read a fresh
        // listing on the next pass.
        let message = format!("updated the {}", A::NOUN);
        Outcome::progressing(Some(remote), "Updating", message, Requeue::Progress)
    }

    /// Deletes the remote object and forgets its id: the next pass goes the create way
    /// (to create it again, for a replace). `reason` names the Event and the condition,
    /// `why` says why.
    async fn delete_for(
        &self,
        api: &Api<A::Kind>,
        seen: &Observed<A::Kind>,
        pass: &PassContext<'_, A::State>,
        remote: A::Remote,
        reason: &'static str,
        why: String,
    ) -> Result<Outcome<A::Remote>, EngineError> {
        let obj = seen.obj.as_ref();
        let id = Identified::id(&remote).to_string();
        if let Err(f) = self.adapter.delete(pass.client, &id, Some(obj)).await
            && !f.is_not_found()
        {
            return Ok(Outcome::failed(f, Some(remote), seen.last_ready.clone()));
        }
        let message = format!("deleted {} {id}: {why}", A::NOUN);
        self.shared
            .event(obj, false, reason, "Delete", message)
            .await;
        self.wrote(obj);
        // An id the operator chose and recorded in an annotation (earlier versions) must
        // go with the object; one in status goes with the status.
        if seen.annotations.external_id.is_some() {
            self.patch_metadata(api, obj, &legacy_id_removal(), None, false)
                .await?;
        }
        Ok(Outcome::deleted(reason, why))
    }

    /// Extra I/O of the kind once its remote object is Ready (see `Actuator::after_sync`).
    pub(super) async fn after_sync_if_ready(
        &self,
        pass: &PassContext<'_, A::State>,
        seen: &Observed<A::Kind>,
        remote: &mut A::Remote,
    ) -> Result<(), Failure> {
        match self.readiness(seen, remote) {
            Readiness::Ready { .. } => self.adapter.after_sync(pass, &seen.obj, remote).await,
            Readiness::Progressing { .. } => Ok(()),
        }
    }

    /// An up-to-date remote object: Ready, or still coming up.
    pub(super) fn observed(
        &self,
        seen: &Observed<A::Kind>,
        remote: A::Remote,
    ) -> Outcome<A::Remote> {
        self.observed_then(seen, remote, Requeue::Poll)
    }

    /// An up-to-date remote object, looked at again after `when_ready` once it is Ready.
    pub(super) fn observed_then(
        &self,
        seen: &Observed<A::Kind>,
        remote: A::Remote,
        when_ready: Requeue,
    ) -> Outcome<A::Remote> {
        match self.readiness(seen, &remote) {
            Readiness::Ready { message } => {
                Outcome::new(Some(remote), Verdicts::converged(message), when_ready)
            }
            Readiness::Progressing { reason, message } => {
                Outcome::progressing(Some(remote), reason, message, Requeue::Progress)
            }
        }
    }
}

impl<A: Adapter> Engine<A> {
    /// Whether an up-to-date remote object is usable yet, as the kind reports it; a kind
    /// that says nothing of it has a usable object as soon as it is up to date.
    fn readiness(&self, seen: &Observed<A::Kind>, remote: &A::Remote) -> Readiness {
        let report = self.report_of(&seen.key, &seen.obj, Some(remote), Seen::default());
        report.readiness.unwrap_or_else(|| Readiness::Ready {
            message: format!("{} {} is up to date", A::NOUN, Identified::id(remote)),
        })
    }
}

/// Pure: an earlier create may still land: look for it again after `wait`, creating
/// nothing meanwhile.
fn wait_for_pending_create<R>(noun: &str, wait: Duration) -> Outcome<R> {
    let message = format!(
        "an earlier create of the {noun} may still be under way; looking for it again in {}s before creating",
        wait.as_secs().max(1)
    );
    let requeue = Requeue::After(wait + Duration::from_millis(100));
    Outcome::still_creating(Outcome::progressing(
        None,
        "CreatePending",
        message,
        requeue,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_create_that_may_still_land_is_waited_for_and_shown_as_creating() {
        let outcome = wait_for_pending_create::<()>("volume", Duration::from_millis(2_500));
        assert_eq!(
            outcome.requeue,
            Requeue::After(Duration::from_millis(2_600))
        );
        assert!(outcome.seen.creating && !outcome.forget_id);
        assert_eq!(outcome.verdicts.ready.reason, "CreatePending");
        assert!(outcome.verdicts.reconciling.status);
        assert!(
            outcome
                .verdicts
                .ready
                .message
                .contains("looking for it again in 2s"),
            "{:?}",
            outcome.verdicts.ready
        );
    }

    #[test]
    fn a_wait_shorter_than_a_second_is_told_as_one() {
        let outcome = wait_for_pending_create::<()>("volume", Duration::from_millis(300));
        assert!(outcome.verdicts.ready.message.contains("in 1s"));
    }
}
