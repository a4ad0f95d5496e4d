//! What a pass ends with, as data: the conditions it reached, the remote object to report,
//! the Event a new situation deserves and when to come back. Every stage that can end a
//! pass returns an [`Outcome`]; [`super::status`] turns it into status, an Event and a
//! requeue. Pure, tested below.

use std::time::Duration;

use crate::adapter::Seen;
use crate::conditions::{Verdict, Verdicts};
use crate::credentials::Credentials;
use crate::failure::{Failure, FailureClass};

/// What a pass decided, before status is written.
#[derive(Debug)]
pub(super) struct Outcome<R> {
    pub remote: Option<R>,
    pub verdicts: Verdicts,
    pub requeue: Requeue,
    /// An Event to publish when this outcome is new (reason, warning, message).
    pub event: Option<(String, bool, String)>,
    /// The failure this outcome reports, and the Ready it kept, if it is one.
    pub failure: Option<(Failure, Verdict)>,
    /// What the adapter's `status` should know besides the remote object.
    pub seen: Seen,
    /// The remote object the status names is gone: drop its id from status.
    pub forget_id: bool,
}

/// When the next pass comes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Requeue {
    /// The next periodic drift check.
    Poll,
    /// Soon: something is still coming up.
    Progress,
    /// At once (the object changed under us, or the next step is ready).
    Now,
    /// After the object's backoff.
    Backoff(Option<Duration>),
    /// After this long.
    After(Duration),
    /// Only when something changes (or after the long stalled recheck).
    Stalled,
}

impl<R> Outcome<R> {
    pub fn new(remote: Option<R>, verdicts: Verdicts, requeue: Requeue) -> Self {
        Self {
            remote,
            verdicts,
            requeue,
            event: None,
            failure: None,
            seen: Seen::default(),
            forget_id: false,
        }
    }

    /// Work under way that more passes finish on their own: `reason`, `message`, and back
    /// after `requeue`.
    pub fn progressing(
        remote: Option<R>,
        reason: impl Into<String>,
        message: impl Into<String>,
        requeue: Requeue,
    ) -> Self {
        Self::new(remote, Verdicts::progressing(reason, message), requeue)
    }

    pub fn failed(failure: Failure, remote: Option<R>, last_ready: Verdict) -> Self {
        let requeue = match failure.class {
            FailureClass::Permanent => Requeue::Stalled,
            FailureClass::Retryable => Requeue::Backoff(failure.retry_after),
            // Waiting on another object in the cluster costs no platform call: look often,
            // unless whatever it waits for wakes it and asked for a later safety net.
            FailureClass::Waiting => failure
                .retry_after
                .map_or(Requeue::Progress, Requeue::After),
            FailureClass::Conflict => Requeue::Now,
        };
        let warning = failure.class != FailureClass::Waiting;
        Self {
            event: Some((failure.reason.clone(), warning, failure.message.clone())),
            failure: Some((failure.clone(), last_ready.clone())),
            ..Self::new(remote, failure.verdicts(last_ready), requeue)
        }
    }

    /// A failure after which status no longer names the remote object: none was made, or
    /// the one named is gone.
    pub fn failed_forgetting_id(failure: Failure, last_ready: Verdict) -> Self {
        Self {
            forget_id: true,
            ..Self::failed(failure, None, last_ready)
        }
    }

    /// The spec asks for a change the platform cannot make: `failure` says which, and
    /// status says the object is blocked.
    pub fn blocked(failure: Failure, remote: R, last_ready: Verdict) -> Self {
        Self {
            seen: Seen {
                blocked: true,
                ..Seen::default()
            },
            ..Self::failed(failure, Some(remote), last_ready)
        }
    }

    /// A create whose outcome is not known yet: no remote object to report, and status
    /// says one is being created. `outcome` is what the pass tells meanwhile.
    pub fn still_creating(outcome: Self) -> Self {
        Self {
            seen: Seen {
                creating: true,
                ..outcome.seen
            },
            ..outcome
        }
    }

    /// The remote object was deleted on purpose (to replace it, or for good): status stops
    /// naming it, and the next pass goes the create way at once.
    pub fn deleted(reason: &'static str, why: String) -> Self {
        Self {
            forget_id: true,
            ..Self::progressing(None, reason, why, Requeue::Now)
        }
    }

    /// When the platform refused the key, says which key that was, so that the message
    /// names the Secret to fix.
    pub fn naming_credentials(self, creds: &Credentials) -> Self {
        match self.failure {
            Some((failure, last_ready)) if failure.is_about_credentials() => Self {
                seen: self.seen,
                forget_id: self.forget_id,
                ..Self::failed(
                    failure.with_credentials(&creds.source),
                    self.remote,
                    last_ready,
                )
            },
            failure => Self { failure, ..self },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::credentials::AccountId;

    fn ready() -> Verdict {
        Verdict::yes("Available", "ok")
    }

    #[test]
    fn a_failure_comes_back_by_its_class() {
        let secs = Duration::from_secs;
        let requeue = |f: Failure| Outcome::<()>::failed(f, None, ready()).requeue;
        assert_eq!(
            requeue(Failure::permanent("InvalidSpec", "x")),
            Requeue::Stalled
        );
        let limited = Failure {
            retry_after: Some(secs(30)),
            ..Failure::retryable("RateLimited", "429")
        };
        assert_eq!(requeue(limited), Requeue::Backoff(Some(secs(30))));
        assert_eq!(
            requeue(Failure::waiting("DependencyNotReady", "x")),
            Requeue::Progress
        );
        let woken = Failure {
            retry_after: Some(secs(600)),
            ..Failure::waiting("DependencyNotReady", "x")
        };
        assert_eq!(requeue(woken), Requeue::After(secs(600)));
        let conflict = Failure::new(FailureClass::Conflict, "Conflict", "x");
        assert_eq!(requeue(conflict), Requeue::Now);
    }

    #[test]
    fn a_failure_is_told_as_a_warning_unless_it_only_waits() {
        let event = |f: Failure| Outcome::<()>::failed(f, None, ready()).event;
        assert_eq!(
            event(Failure::permanent("InvalidSpec", "bad")),
            Some(("InvalidSpec".to_string(), true, "bad".to_string()))
        );
        assert_eq!(
            event(Failure::waiting("DependencyNotReady", "later")),
            Some(("DependencyNotReady".to_string(), false, "later".to_string()))
        );
    }

    #[test]
    fn a_retryable_failure_keeps_ready() {
        let outcome =
            Outcome::<()>::failed(Failure::retryable("RateLimited", "429"), None, ready());
        assert_eq!(outcome.verdicts.ready, ready());
        assert_eq!(outcome.failure.map(|(_, kept)| kept), Some(ready()));
    }

    fn credentials() -> Credentials {
        Credentials {
            key: gpucloud_platform::ApiKey::new("secret").expect("a plain key"),
            account: AccountId::any(),
            source: "Secret team-a/key, key \"apiKey\"".to_string(),
        }
    }

    #[test]
    fn a_refused_key_is_named_and_the_rest_of_the_outcome_kept() {
        let refused = Failure::permanent("Unauthorized", "could not list: 401");
        let outcome =
            Outcome::still_creating(Outcome::<()>::failed_forgetting_id(refused, ready()));
        let named = outcome.naming_credentials(&credentials());
        let (failure, _) = named.failure.expect("still a failure");
        assert!(failure.message.contains("Secret team-a/key"), "{failure:?}");
        assert_eq!(named.event.map(|(_, _, m)| m), Some(failure.message));
        assert!(named.forget_id && named.seen.creating);
    }

    #[test]
    fn other_outcomes_are_not_renamed() {
        let busy = Failure::retryable("RateLimited", "429");
        let named =
            Outcome::<()>::failed(busy.clone(), None, ready()).naming_credentials(&credentials());
        assert_eq!(named.failure.map(|(f, _)| f), Some(busy));
        let fine = Outcome::<()>::progressing(None, "Updating", "x", Requeue::Progress)
            .naming_credentials(&credentials());
        assert!(fine.failure.is_none() && fine.event.is_none());
    }
}
