//! Pure decisions on a Lease's record, with the semantics of client-go's leader election:
//! who may take the Lease and when, what a write puts in it, and when a leader that cannot
//! renew stops leading. No I/O and no clock of its own: the times are arguments.
//!
//! Safety rests on two clocks never being compared. A follower judges another holder's
//! Lease expired by its own monotonic clock: from when it first saw the record as it is
//! now, plus the record's `leaseDurationSeconds`. The leader counts its renew deadline from
//! when it sent its last renew that succeeded, which was before any follower could see
//! it. A deadline shorter than the duration (less the time the leader takes to stop
//! acting) then means the leader has stopped before any follower may take over.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

/// The election's times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// How long a Lease lasts without renewal, as written in it (`leaseDurationSeconds`).
    pub lease_duration: Duration,
    /// How long after sending its last successful renew a leader stops leading.
    pub renew_deadline: Duration,
    /// How often a leader renews.
    pub renew_every: Duration,
    /// How often a follower reads the Lease (a released one is taken within this), and how
    /// soon anyone tries again after a request failed.
    pub retry_every: Duration,
    /// The longest one request may take; a leader's also ends at its renew deadline.
    pub request_timeout: Duration,
}

/// client-go's defaults, with a follower that looks every second.
pub const TIMING: Timing = Timing {
    lease_duration: Duration::from_secs(15),
    renew_deadline: Duration::from_secs(10),
    renew_every: Duration::from_secs(2),
    retry_every: Duration::from_secs(1),
    request_timeout: Duration::from_secs(5),
};

/// A Lease as the apiserver answered it.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub spec: LeaseSpec,
    /// What a write sends back, so that it is refused (409) if anyone wrote in between.
    pub resource_version: Option<String>,
    /// The Lease's UID: the install's tag derives from it (`InstallTag::from_uid`).
    pub uid: Option<String>,
}

/// What this process knows of the Lease.
#[derive(Clone, Debug, PartialEq)]
pub enum Known {
    /// Nothing yet, or forgotten after a write was refused: read first.
    Unread,
    /// There is no such Lease.
    Absent,
    /// The Lease as last read or written, and since when it has been as it is (by this
    /// process's clock).
    Seen { record: Record, since: Instant },
}

/// Pure: what this process knows after reading `read` (`None`: no such Lease) at `now`. A
/// record unchanged since the last read keeps the time it was first seen, so that a holder
/// that stopped renewing expires a lease duration after that.
pub fn observe(known: &Known, read: Option<Record>, now: Instant) -> Known {
    let Some(record) = read else {
        return Known::Absent;
    };
    let since = match known {
        Known::Seen {
            record: last,
            since,
        } if last.spec == record.spec => *since,
        _ => now,
    };
    Known::Seen { record, since }
}

/// Who holds a Lease, as far as this process may act on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Nobody: released (no holder, or an empty one).
    Free,
    /// This process: it may take it back at once.
    Ours,
    /// Another process that has not renewed for the Lease's duration, by this process's
    /// observation.
    Expired { holder: String },
    /// Another process, until `until` unless it renews.
    Held { holder: String, until: Instant },
}

impl Verdict {
    /// Whether this process may write itself in as the holder.
    pub fn may_take(&self) -> bool {
        !matches!(self, Self::Held { .. })
    }
}

/// Pure: who holds the Lease last seen as `record` since `since`, for `identity` at `now`.
pub fn verdict(
    record: &Record,
    since: Instant,
    identity: &str,
    now: Instant,
    timing: &Timing,
) -> Verdict {
    let holder = match record.spec.holder_identity.as_deref() {
        None | Some("") => return Verdict::Free,
        Some(holder) if holder == identity => return Verdict::Ours,
        Some(holder) => holder.to_string(),
    };
    let until = since + duration_of(&record.spec, timing);
    if now < until {
        Verdict::Held { holder, until }
    } else {
        Verdict::Expired { holder }
    }
}

/// How long a Lease lasts as its record says, else as this process's would.
fn duration_of(spec: &LeaseSpec, timing: &Timing) -> Duration {
    spec.lease_duration_seconds
        .and_then(|s| u64::try_from(s).ok())
        .filter(|s| *s > 0)
        .map_or(timing.lease_duration, Duration::from_secs)
}

/// Pure: the record that makes `identity` the holder, written at wall time `wall`, over
/// `previous` (`None`: a new Lease). A holder renewing keeps its acquire time and the
/// count of transitions; a new holder counts one more transition.
pub fn claim(
    previous: Option<&LeaseSpec>,
    identity: &str,
    timing: &Timing,
    wall: Timestamp,
) -> LeaseSpec {
    let previous = previous.cloned().unwrap_or_default();
    let renewing = previous.holder_identity.as_deref() == Some(identity);
    let transitions = previous.lease_transitions.unwrap_or(0);
    let (acquire_time, lease_transitions) = if renewing {
        (
            previous.acquire_time.clone().or(Some(MicroTime(wall))),
            transitions,
        )
    } else if previous == LeaseSpec::default() {
        // A Lease made now: no holder changed.
        (Some(MicroTime(wall)), 0)
    } else {
        (Some(MicroTime(wall)), transitions.saturating_add(1))
    };
    LeaseSpec {
        holder_identity: Some(identity.to_string()),
        acquire_time,
        renew_time: Some(MicroTime(wall)),
        lease_duration_seconds: Some(
            i32::try_from(timing.lease_duration.as_secs()).unwrap_or(i32::MAX),
        ),
        lease_transitions: Some(lease_transitions),
        ..previous
    }
}

/// Pure: the record a holder leaves when it lets go: no holder, and no times, so that
/// another install reading it (`gpucloud_engine::ownership`) sees no live holder either.
/// The count of transitions stays.
pub fn released(previous: &LeaseSpec) -> LeaseSpec {
    LeaseSpec {
        holder_identity: None,
        acquire_time: None,
        renew_time: None,
        lease_duration_seconds: None,
        ..previous.clone()
    }
}

/// Pure: whether `identity` is the holder `known` names, so that it has something to
/// release.
pub fn holds(known: &Known, identity: &str) -> bool {
    matches!(known, Known::Seen { record, .. }
        if record.spec.holder_identity.as_deref() == Some(identity))
}

/// Pure: whether a leader whose last successful renew was sent at `renew_sent` must stop
/// leading at `now`: the renew deadline has passed, and the Lease may expire for the others
/// soon.
pub fn must_step_down(renew_sent: Instant, now: Instant, timing: &Timing) -> bool {
    now.saturating_duration_since(renew_sent) >= timing.renew_deadline
}

/// Pure: how long the next request may take: the request timeout, and for a leader no
/// longer than what is left of its renew deadline, so that a request that hangs cannot keep
/// it leading past that.
pub fn request_budget(renew_sent: Option<Instant>, now: Instant, timing: &Timing) -> Duration {
    let left = renew_sent.map_or(timing.request_timeout, |sent| {
        (sent + timing.renew_deadline).saturating_duration_since(now)
    });
    timing.request_timeout.min(left)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held_by(holder: Option<&str>) -> Record {
        Record {
            spec: LeaseSpec {
                holder_identity: holder.map(str::to_string),
                lease_duration_seconds: Some(15),
                lease_transitions: Some(3),
                ..LeaseSpec::default()
            },
            resource_version: Some("7".into()),
            uid: None,
        }
    }

    fn wall(s: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + s).unwrap()
    }

    #[test]
    fn a_released_lease_is_free_at_once() {
        let now = Instant::now();
        for holder in [None, Some("")] {
            let verdict = verdict(&held_by(holder), now, "me", now, &TIMING);
            assert_eq!(verdict, Verdict::Free, "{holder:?}");
            assert!(verdict.may_take());
        }
    }

    #[test]
    fn another_holder_expires_a_lease_duration_after_this_process_first_saw_its_record() {
        let seen = Instant::now();
        let record = held_by(Some("other"));
        let until = seen + Duration::from_secs(15);
        let at = |after: u64| {
            verdict(
                &record,
                seen,
                "me",
                seen + Duration::from_secs(after),
                &TIMING,
            )
        };
        assert_eq!(
            at(14),
            Verdict::Held {
                holder: "other".into(),
                until
            }
        );
        assert!(!at(14).may_take());
        assert_eq!(
            at(15),
            Verdict::Expired {
                holder: "other".into()
            }
        );
        assert!(at(15).may_take());
    }

    #[test]
    fn the_duration_is_the_records_and_this_processs_when_it_has_none() {
        let seen = Instant::now();
        let mut record = held_by(Some("other"));
        record.spec.lease_duration_seconds = Some(40);
        let at_20 = seen + Duration::from_secs(20);
        assert!(!verdict(&record, seen, "me", at_20, &TIMING).may_take());
        record.spec.lease_duration_seconds = None;
        assert!(verdict(&record, seen, "me", at_20, &TIMING).may_take());
    }

    #[test]
    fn this_processs_own_lease_is_taken_back_at_once() {
        let now = Instant::now();
        assert_eq!(
            verdict(&held_by(Some("me")), now, "me", now, &TIMING),
            Verdict::Ours
        );
    }

    #[test]
    fn an_unchanged_record_keeps_when_it_was_first_seen_and_a_changed_one_starts_again() {
        let first = Instant::now();
        let later = first + Duration::from_secs(9);
        let known = observe(&Known::Unread, Some(held_by(Some("other"))), first);
        let again = observe(&known, Some(held_by(Some("other"))), later);
        assert_eq!(
            again,
            Known::Seen {
                record: held_by(Some("other")),
                since: first
            },
            "the holder has not renewed: its term runs from the first sight"
        );
        let mut renewed = held_by(Some("other"));
        renewed.spec.renew_time = Some(MicroTime(wall(9)));
        let Known::Seen { since, .. } = observe(&again, Some(renewed), later) else {
            panic!("seen");
        };
        assert_eq!(since, later, "renewed: a new term from now");
        assert_eq!(observe(&again, None, later), Known::Absent);
    }

    #[test]
    fn a_new_holder_counts_a_transition_and_a_renewing_one_keeps_its_acquire_time() {
        let new = claim(None, "me", &TIMING, wall(0));
        assert_eq!(new.holder_identity.as_deref(), Some("me"));
        assert_eq!(new.lease_transitions, Some(0), "a new Lease");
        assert_eq!(new.lease_duration_seconds, Some(15));
        assert_eq!(new.acquire_time, Some(MicroTime(wall(0))));

        let renewed = claim(Some(&new), "me", &TIMING, wall(2));
        assert_eq!(renewed.acquire_time, Some(MicroTime(wall(0))));
        assert_eq!(renewed.renew_time, Some(MicroTime(wall(2))));
        assert_eq!(renewed.lease_transitions, Some(0));

        let taken = claim(Some(&renewed), "other", &TIMING, wall(30));
        assert_eq!(taken.holder_identity.as_deref(), Some("other"));
        assert_eq!(taken.acquire_time, Some(MicroTime(wall(30))));
        assert_eq!(taken.lease_transitions, Some(1));

        // Released, then taken: the holder changed once more.
        let free = released(&taken);
        assert_eq!(free.holder_identity, None);
        assert_eq!(free.renew_time, None);
        assert_eq!(free.lease_transitions, Some(1));
        assert_eq!(
            claim(Some(&free), "me", &TIMING, wall(40)).lease_transitions,
            Some(2)
        );
    }

    #[test]
    fn only_the_named_holder_has_something_to_release() {
        let since = Instant::now();
        let seen = |holder| Known::Seen {
            record: held_by(holder),
            since,
        };
        assert!(holds(&seen(Some("me")), "me"));
        assert!(!holds(&seen(Some("other")), "me"));
        assert!(!holds(&seen(None), "me"));
        assert!(!holds(&Known::Unread, "me"));
    }

    #[test]
    fn a_leader_steps_down_once_the_deadline_since_its_last_renew_sent_passes() {
        let sent = Instant::now();
        let after = |s: u64| sent + Duration::from_secs(s);
        assert!(!must_step_down(sent, after(9), &TIMING));
        assert!(must_step_down(sent, after(10), &TIMING));
        // The deadline and the time `run` takes to stop acting fit in a Lease's term.
        assert!(TIMING.renew_deadline < TIMING.lease_duration);
        assert!(TIMING.renew_every < TIMING.renew_deadline);
    }

    #[test]
    fn a_leaders_request_ends_by_its_deadline() {
        let sent = Instant::now();
        let after = |s: u64| sent + Duration::from_secs(s);
        assert_eq!(
            request_budget(None, after(0), &TIMING),
            TIMING.request_timeout
        );
        assert_eq!(
            request_budget(Some(sent), after(2), &TIMING),
            TIMING.request_timeout
        );
        assert_eq!(
            request_budget(Some(sent), after(8), &TIMING),
            Duration::from_secs(2)
        );
        assert_eq!(
            request_budget(Some(sent), after(11), &TIMING),
            Duration::ZERO
        );
    }
}
