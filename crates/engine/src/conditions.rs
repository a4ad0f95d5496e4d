//! kstatus-compatible conditions, computed without I/O.
//!
//! Every kind reports four conditions: `Ready` (the remote object matches the spec and is
//! usable), `Synced` (the last attempt to talk to the platform worked), `Reconciling` (the
//! operator is still moving things) and `Stalled` (only a change by a person can help).
//! kstatus reads them in that spirit: Stalled=True is Failed, Reconciling=True is
//! InProgress, Ready=True is Current.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use gpucloud_crd::condition::phrase;
pub use gpucloud_crd::condition::{Condition, READY, RECONCILING, STALLED, SYNCED};

/// One condition as the reconcile decided it, before timestamps are attached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub status: bool,
    pub reason: String,
    pub message: String,
}

impl Verdict {
    pub fn yes(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            status: true,
            reason: reason.into(),
            message: message.into(),
        }
    }

    pub fn no(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            status: false,
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// The four conditions of one reconcile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdicts {
    pub ready: Verdict,
    pub synced: Verdict,
    pub reconciling: Verdict,
    pub stalled: Verdict,
}

impl Verdicts {
    /// Everything matches the spec.
    pub fn converged(message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            ready: Verdict::yes(phrase::AVAILABLE, message),
            synced: Verdict::yes(phrase::RECONCILE_SUCCESS, phrase::SPEC_MATCHED),
            reconciling: Verdict::no(phrase::CONVERGED, phrase::NOTHING_LEFT),
            stalled: Verdict::no(phrase::CONVERGED, phrase::NOTHING_BLOCKED),
        }
    }

    /// Work is under way and more passes will follow without anyone's help.
    pub fn progressing(reason: impl Into<String>, message: impl Into<String>) -> Self {
        let (reason, message) = (reason.into(), message.into());
        Self {
            ready: Verdict::no(reason.clone(), message.clone()),
            synced: Verdict::yes(phrase::RECONCILE_SUCCESS, phrase::LAST_CALL_WORKED),
            reconciling: Verdict::yes(reason, message),
            stalled: Verdict::no(phrase::PROGRESSING, phrase::NOTHING_BLOCKED),
        }
    }

    /// A retry will not help: the spec, the credentials or the account must change.
    pub fn stalled(reason: impl Into<String>, message: impl Into<String>) -> Self {
        let (reason, message) = (reason.into(), message.into());
        Self {
            ready: Verdict::no(reason.clone(), message.clone()),
            synced: Verdict::no(reason.clone(), message.clone()),
            reconciling: Verdict::no(reason.clone(), phrase::WAITING_FOR_A_CHANGE),
            stalled: Verdict::yes(reason, message),
        }
    }

    /// A failure that is retried with backoff but that only a change outside the operator
    /// ends (no data center with room for a whole cluster): Stalled, with Reconciling
    /// saying a retry is scheduled.
    pub fn stalled_retrying(reason: impl Into<String>, message: impl Into<String>) -> Self {
        let (reason, message) = (reason.into(), message.into());
        Self {
            ready: Verdict::no(reason.clone(), message.clone()),
            synced: Verdict::no(reason.clone(), message.clone()),
            reconciling: Verdict::yes(reason.clone(), phrase::RETRY_SCHEDULED),
            stalled: Verdict::yes(reason, message),
        }
    }

    /// A failure that a later retry can fix (rate limit, outage, no capacity). A Ready
    /// object stays Ready, so that one transient error does not turn it red on GitOps
    /// dashboards; one that is not Ready says why not.
    pub fn retrying(ready: Verdict, reason: impl Into<String>, message: impl Into<String>) -> Self {
        let (reason, message) = (reason.into(), message.into());
        let ready = if ready.status {
            ready
        } else {
            Verdict::no(reason.clone(), message.clone())
        };
        Self {
            ready,
            synced: Verdict::no(reason.clone(), message.clone()),
            reconciling: Verdict::yes(reason, message),
            stalled: Verdict::no(phrase::RETRYING, phrase::RETRY_SCHEDULED),
        }
    }

    fn iter(&self) -> [(&'static str, &Verdict); 4] {
        [
            (READY, &self.ready),
            (SYNCED, &self.synced),
            (RECONCILING, &self.reconciling),
            (STALLED, &self.stalled),
        ]
    }
}

fn status_word(status: bool) -> &'static str {
    if status { "True" } else { "False" }
}

/// Builds the new condition list from the previous one: `lastTransitionTime` moves only
/// when a condition's status flips, so that repeated reconciles write nothing new.
pub fn apply(
    previous: &[Condition],
    verdicts: &Verdicts,
    generation: Option<i64>,
    now: &Time,
) -> Vec<Condition> {
    verdicts
        .iter()
        .into_iter()
        .map(|(type_, verdict)| one(previous, type_, verdict, generation, now))
        .collect()
}

/// One condition from its verdict, with the transition time kept from `previous` while
/// its status does not flip.
pub fn one(
    previous: &[Condition],
    type_: &str,
    verdict: &Verdict,
    generation: Option<i64>,
    now: &Time,
) -> Condition {
    let status = status_word(verdict.status);
    let last_transition_time = previous
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
        .map(|c| c.last_transition_time.clone())
        .unwrap_or_else(|| now.clone());
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: verdict.reason.as_str().into(),
        message: verdict.message.as_str().into(),
        observed_generation: generation,
        last_transition_time,
    }
}

/// The condition of the given type, if present.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether a condition of the given type is present and True.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == "True")
}

/// The `Ready` verdict as last written, to carry it through a transient failure. A Ready
/// decided for an older generation says nothing of the spec as it is now: it is not
/// carried, so that a failure to apply a spec change does not leave Ready=True standing
/// for the new generation.
pub fn last_ready(conditions: &[Condition], generation: Option<i64>) -> Verdict {
    match find(conditions, READY) {
        Some(c)
            if c.status == "True"
                && c.observed_generation.is_some()
                && generation.is_some()
                && c.observed_generation != generation =>
        {
            Verdict::no(
                "SpecChanged",
                "the spec changed since the object was last Ready",
            )
        }
        Some(c) => Verdict {
            status: c.status == "True",
            reason: c.reason.to_string(),
            message: c.message.to_string(),
        },
        None => Verdict::no("Pending", "not reconciled yet"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(secs).unwrap())
    }

    #[test]
    fn first_pass_writes_all_four_with_ready_false() {
        let conditions = apply(
            &[],
            &Verdicts::progressing("Creating", "creating"),
            Some(1),
            &at(10),
        );
        let types: Vec<_> = conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, [READY, SYNCED, RECONCILING, STALLED]);
        assert_eq!(find(&conditions, READY).unwrap().status, "False");
        assert!(conditions.iter().all(|c| c.last_transition_time == at(10)));
        assert!(conditions.iter().all(|c| c.observed_generation == Some(1)));
    }

    #[test]
    fn transition_time_moves_only_on_a_flip() {
        let first = apply(
            &[],
            &Verdicts::progressing("Creating", "creating"),
            Some(1),
            &at(10),
        );
        let same = apply(
            &first,
            &Verdicts::progressing("Creating", "still creating"),
            Some(1),
            &at(20),
        );
        assert_eq!(find(&same, READY).unwrap().last_transition_time, at(10));
        let done = apply(&same, &Verdicts::converged("ready"), Some(1), &at(30));
        assert_eq!(find(&done, READY).unwrap().last_transition_time, at(30));
        // Stalled stays False throughout, so its time never moves.
        assert_eq!(find(&done, STALLED).unwrap().last_transition_time, at(10));
    }

    #[test]
    fn stalled_is_the_only_true_blocker() {
        let c = apply(
            &[],
            &Verdicts::stalled("Forbidden", "the key lacks access"),
            Some(2),
            &at(1),
        );
        assert!(is_true(&c, STALLED));
        assert!(!is_true(&c, RECONCILING));
        assert!(!is_true(&c, READY));
        assert_eq!(find(&c, READY).unwrap().reason, "Forbidden");
    }

    #[test]
    fn retrying_keeps_the_last_ready() {
        let ok = apply(&[], &Verdicts::converged("ready"), Some(1), &at(1));
        let retry = Verdicts::retrying(
            last_ready(&ok, Some(1)),
            "RateLimited",
            "429 from the platform",
        );
        let c = apply(&ok, &retry, Some(1), &at(5));
        assert!(is_true(&c, READY));
        assert_eq!(find(&c, READY).unwrap().last_transition_time, at(1));
        assert!(!is_true(&c, SYNCED));
        assert!(is_true(&c, RECONCILING));
    }

    #[test]
    fn a_ready_of_an_older_generation_is_not_kept_through_a_failure() {
        let ok = apply(&[], &Verdicts::converged("stopped"), Some(2), &at(1));
        let carried = last_ready(&ok, Some(3));
        assert!(!carried.status);
        let retry = Verdicts::retrying(carried, "NoCapacity", "no free GPUs on the host");
        let c = apply(&ok, &retry, Some(3), &at(5));
        assert!(!is_true(&c, READY));
        assert_eq!(find(&c, READY).unwrap().reason, "NoCapacity");
        // Not Ready before: nothing to carry either way.
        let pending = apply(
            &[],
            &Verdicts::progressing("Creating", "creating"),
            Some(2),
            &at(1),
        );
        assert_eq!(last_ready(&pending, Some(3)).reason, "Creating");
    }

    #[test]
    fn retrying_before_ready_says_why() {
        let retry = Verdicts::retrying(Verdict::no("Pending", ""), "NoCapacity", "no GPUs");
        let c = apply(&[], &retry, Some(1), &at(5));
        assert_eq!(find(&c, READY).unwrap().reason, "NoCapacity");
        assert!(!is_true(&c, READY) && !is_true(&c, STALLED));
    }

    #[test]
    fn the_words_every_object_repeats_are_shared_not_copied() {
        // What the watch cache holds for every object: only what is particular to the
        // object (here, the Ready message) takes memory of its own.
        for verdicts in [
            Verdicts::converged("volume abc has 10 GB in EU-RO-1"),
            Verdicts::progressing("Creating", "creating volume abc"),
        ] {
            let conditions = apply(&[], &verdicts, Some(1), &at(1));
            for c in &conditions {
                assert!(c.type_.is_shared() && c.status.is_shared(), "{c:?}");
                assert!(c.reason.is_shared(), "{c:?}");
            }
            let owned: Vec<&str> = conditions
                .iter()
                .filter(|c| !c.message.is_shared())
                .map(|c| c.message.as_str())
                .collect();
            assert!(owned.len() <= 2, "{owned:?}");
            assert!(owned.iter().all(|m| m.contains("abc")), "{owned:?}");
        }
    }
}
