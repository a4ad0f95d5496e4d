//! Why a reconcile could not finish, and what that means for status and requeue.
//! Pure: the mapping from a platform error to a condition reason is decided here once.

use std::time::Duration;

use gpucloud_platform::{ErrorClass, PlatformError};

use super::conditions::{Verdict, Verdicts};
use super::note::Note;

/// The classes that decide the requeue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureClass {
    /// Only a change to the spec, the annotations, a Secret or the account can help:
    /// Stalled, no retry loop.
    Permanent,
    /// Worth trying again after a backoff (rate limit, outage, no capacity).
    Retryable,
    /// Waiting for something else in the cluster (a referenced object); not an error.
    Waiting,
    /// The Kubernetes object changed under us; try again at once with the new version.
    Conflict,
}

const KEY_HINT: &str =
    "; check the API key (the operator's key or the object's credentialsSecretRef)";
const PERMISSION_HINT: &str = "; the API key lacks the permission for this action";

/// One failed reconcile: a class, a PascalCase reason and a one-line message that names
/// what to fix. Never carries a secret.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}: {message}")]
pub struct Failure {
    pub class: FailureClass,
    pub reason: String,
    pub message: String,
    /// How long the platform asked us to wait.
    pub retry_after: Option<Duration>,
    /// Whether the failed call may have taken effect anyway (it matters for creates).
    pub applied: Applied,
    /// A retryable failure that says Stalled meanwhile: it is retried with backoff, but
    /// only something outside the operator ends it (a whole cluster's worth of machines
    /// freed), so dashboards should show it as stuck rather than as progressing.
    pub stalls: bool,
    /// What else users should hear of this failure (each placement a create tried and
    /// was refused), published as Events before the failure's own.
    pub notes: Vec<Note>,
}

/// Whether a failed platform call may have done what it was asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Applied {
    /// Certainly not (a 4xx, or no call was made).
    #[default]
    No,
    /// Perhaps, and the platform answered (a 5xx): whatever it did, it did before the answer.
    MaybeAnswered,
    /// Perhaps, and no answer came (a timeout, a dropped connection): it may still be running.
    MaybeUnanswered,
}

impl Failure {
    pub fn new(class: FailureClass, reason: &str, message: impl Into<String>) -> Self {
        Self {
            class,
            reason: reason.to_string(),
            message: message.into(),
            retry_after: None,
            applied: Applied::No,
            stalls: false,
            notes: Vec::new(),
        }
    }

    /// A [`FailureClass::Retryable`] failure reported as Stalled while it is retried (see
    /// [`Failure::stalls`]).
    pub fn stalled_retrying(reason: &str, message: impl Into<String>) -> Self {
        Self {
            stalls: true,
            ..Self::retryable(reason, message)
        }
    }

    pub fn permanent(reason: &str, message: impl Into<String>) -> Self {
        Self::new(FailureClass::Permanent, reason, message)
    }

    pub fn retryable(reason: &str, message: impl Into<String>) -> Self {
        Self::new(FailureClass::Retryable, reason, message)
    }

    pub fn waiting(reason: &str, message: impl Into<String>) -> Self {
        Self::new(FailureClass::Waiting, reason, message)
    }

    /// Maps a platform error met while doing `what` (such as "create the network volume").
    pub fn from_platform(what: &str, err: &PlatformError) -> Self {
        let (class, reason) = match err.class() {
            ErrorClass::InvalidInput => (FailureClass::Permanent, "InvalidSpec"),
            ErrorClass::Unauthorized => (FailureClass::Permanent, "Unauthorized"),
            ErrorClass::Forbidden => (FailureClass::Permanent, "Forbidden"),
            ErrorClass::NotFound => (FailureClass::Permanent, "NotFound"),
            ErrorClass::RateLimited => (FailureClass::Retryable, "RateLimited"),
            ErrorClass::Capacity => (FailureClass::Retryable, "NoCapacity"),
            ErrorClass::Transient => (FailureClass::Retryable, "PlatformUnavailable"),
            ErrorClass::Decode => (FailureClass::Retryable, "UnexpectedResponse"),
            // The object's state will move on (a pod finishing a transition); read it again.
            ErrorClass::Conflict => (FailureClass::Retryable, "Conflict"),
            // No other input can succeed until funds are added: stop and say so.
            ErrorClass::PaymentRequired => (FailureClass::Permanent, "InsufficientBalance"),
        };
        let hint = match err.class() {
            ErrorClass::Unauthorized => KEY_HINT,
            ErrorClass::Forbidden => PERMISSION_HINT,
            _ => "",
        };
        Self {
            class,
            reason: reason.to_string(),
            message: format!("could not {what}: {err}{hint}"),
            retry_after: err.retry_after(),
            applied: match (err.may_have_been_applied(), err.status()) {
                (false, _) => Applied::No,
                (true, Some(_)) => Applied::MaybeAnswered,
                (true, None) => Applied::MaybeUnanswered,
            },
            stalls: false,
            notes: Vec::new(),
        }
    }

    /// The failure with `notes` to publish before it.
    pub fn with_notes(mut self, notes: Vec<Note>) -> Self {
        self.notes = notes;
        self
    }

    /// A refused delete of something the platform says is still in use (its 400 on a
    /// template or a registry credential a pod or an endpoint needs) is a wait for those
    /// users to go, retried with backoff, not a spec to fix: reason `reason`.
    pub fn in_use_on_delete(self, reason: &str) -> Self {
        if self.reason == "InvalidSpec" {
            Self {
                class: FailureClass::Waiting,
                reason: reason.to_string(),
                ..self
            }
        } else {
            self
        }
    }

    /// Whether the platform said the object does not exist.
    pub fn is_not_found(&self) -> bool {
        self.reason == "NotFound"
    }

    pub fn is_permanent(&self) -> bool {
        self.class == FailureClass::Permanent
    }

    /// Whether the platform refused the API key itself, so that the fix is in a Secret.
    pub fn is_about_credentials(&self) -> bool {
        matches!(self.reason.as_str(), "Unauthorized" | "Forbidden")
    }

    /// Names the key that was used (`source`, such as `Secret team-a/key, key "apiKey"`)
    /// in place of the generic hint, so that the message says which Secret to fix.
    pub fn with_credentials(mut self, source: &str) -> Self {
        let specific = match self.reason.as_str() {
            "Unauthorized" => format!("; fix the API key in {source}"),
            "Forbidden" => {
                format!("; the API key in {source} lacks the permission for this action")
            }
            _ => return self,
        };
        for generic in [KEY_HINT, PERMISSION_HINT] {
            if let Some(stripped) = self.message.strip_suffix(generic) {
                self.message = stripped.to_string();
            }
        }
        self.message.push_str(&specific);
        self
    }

    /// The conditions this failure leads to. `last_ready` is what Ready said before, kept
    /// through retryable failures so one 429 does not turn a healthy object red.
    pub fn verdicts(&self, last_ready: Verdict) -> Verdicts {
        match self.class {
            FailureClass::Permanent => Verdicts::stalled(&self.reason, &self.message),
            FailureClass::Retryable if self.stalls => {
                Verdicts::stalled_retrying(&self.reason, &self.message)
            }
            FailureClass::Retryable => Verdicts::retrying(last_ready, &self.reason, &self.message),
            FailureClass::Waiting | FailureClass::Conflict => {
                Verdicts::progressing(&self.reason, &self.message)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permanent_failures_stall() {
        let f = Failure::permanent("InvalidSpec", "dataCenterId XX-1 is unknown");
        let v = f.verdicts(Verdict::no("Pending", ""));
        assert!(v.stalled.status && !v.ready.status && !v.reconciling.status);
        assert_eq!(v.ready.reason, "InvalidSpec");
    }

    #[test]
    fn a_delete_refused_for_users_waits_instead_of_stalling() {
        let refused = Failure::permanent("InvalidSpec", "registry r1 is used by endpoint e1")
            .in_use_on_delete("RegistryCredentialInUse");
        assert!(!refused.is_permanent());
        assert_eq!(refused.reason, "RegistryCredentialInUse");
        assert_eq!(refused.message, "registry r1 is used by endpoint e1");
        let other = Failure::permanent("Unauthorized", "401").in_use_on_delete("X");
        assert!(other.is_permanent() && other.reason == "Unauthorized");
    }

    #[test]
    fn retryable_failures_keep_ready() {
        let f = Failure::retryable("RateLimited", "429");
        let v = f.verdicts(Verdict::yes("Available", "ok"));
        assert!(v.ready.status && !v.stalled.status && v.reconciling.status && !v.synced.status);
    }

    #[test]
    fn credential_failures_name_the_secret_to_fix() {
        let source = "Secret team-a/key, key \"apiKey\" (spec.credentialsSecretRef)";
        let generic = Failure::permanent(
            "Unauthorized",
            format!("could not list network volumes: 401{KEY_HINT}"),
        );
        assert!(generic.is_about_credentials());
        let named = generic.with_credentials(source);
        assert_eq!(
            named.message,
            format!("could not list network volumes: 401; fix the API key in {source}")
        );
        let forbidden = Failure::permanent(
            "Forbidden",
            format!("could not delete: 403{PERMISSION_HINT}"),
        )
        .with_credentials(source);
        assert_eq!(
            forbidden.message,
            format!(
                "could not delete: 403; the API key in {source} lacks the permission for this action"
            )
        );
        let other = Failure::permanent("InvalidSpec", "dataCenterId: unknown");
        assert!(!other.is_about_credentials());
        assert_eq!(other.clone().with_credentials(source), other);
    }

    #[test]
    fn a_stalling_retry_says_stalled_and_that_it_is_retried() {
        let f = Failure::stalled_retrying("NoCapacity", "no data center has 4 machines");
        assert_eq!(f.class, FailureClass::Retryable);
        let v = f.verdicts(Verdict::yes("Available", "ok"));
        assert!(v.stalled.status && !v.ready.status && !v.synced.status);
        assert_eq!(v.stalled.reason, "NoCapacity");
        assert!(v.reconciling.status, "it is retried");
        assert_eq!(
            v.reconciling.message.as_str(),
            gpucloud_crd::condition::phrase::RETRY_SCHEDULED
        );
    }

    #[test]
    fn waiting_is_progress_not_failure() {
        let f = Failure::waiting("DependencyNotReady", "NetworkVolume data is not Ready");
        let v = f.verdicts(Verdict::no("Pending", ""));
        assert!(v.synced.status && v.reconciling.status && !v.stalled.status);
        assert_eq!(v.ready.reason, "DependencyNotReady");
    }
}
