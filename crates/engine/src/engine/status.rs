//! The last stage of a pass: the outcome reported. Status is computed as data (the
//! adapter's fields, the four conditions with their transition times kept, the id) and
//! written only when it changed besides its sync time; an Event goes out only for a new
//! situation; the requeue follows from the outcome.
//!
//! Each of those is a pure function, tested below; [`Engine::report`] runs them in order.

use gpucloud_platform::domain::Identified;
use std::time::Duration;

use crate::action::Action;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::{Api, Resource};

use gpucloud_crd::{CommonStatus, ManagedKind};

use super::observe::conditions_of;
use super::outcome::{Outcome, Requeue};
use super::{Engine, EngineError, Observed};
use crate::adapter::{Adapter, Seen};
use crate::annotations as ann;
use crate::backoff::jitter;
use crate::conditions::{self, Condition, Verdict, Verdicts};
use crate::metrics::Health;

/// Pure: the conditions of a paused object: hands off, and only say so.
fn paused(last_ready: Verdict) -> Verdicts {
    Verdicts {
        ready: last_ready,
        synced: Verdict::no("Paused", format!("{} is \"true\"", ann::PAUSED)),
        reconciling: Verdict::no("Paused", "paused by annotation"),
        stalled: Verdict::no("Paused", "paused by annotation"),
    }
}

/// Pure: whether an outcome's Event tells something new. Ready keeps its reason through
/// retryable failures, Synced carries theirs: a reason either shows already was told, so
/// that a failure repeated on every backoff step is one Event, not a stream of them.
fn is_news(previous: &[Condition], reason: &str) -> bool {
    ![conditions::READY, conditions::SYNCED]
        .into_iter()
        .any(|t| conditions::find(previous, t).is_some_and(|c| c.reason == reason))
}

/// What the engine writes in the common part of status, besides the sync time.
struct Common<'a> {
    previous: &'a [Condition],
    verdicts: &'a Verdicts,
    /// The kind's own conditions, after the four.
    extra: Vec<(&'static str, Verdict)>,
    generation: Option<i64>,
    /// The id of the remote object reported, if one is.
    remote_id: Option<&'a str>,
    forget_id: bool,
}

/// Pure: fills the common part of status. Transition times move only when a condition
/// flips; the id is the reported remote object's, or none once it is forgotten, or the
/// one status already names. The external-id annotation alone never puts an id in status:
/// an id there is a record that this object holds it (see [`crate::tenancy`]), made only
/// by a pass that reported the remote object.
fn fill_common(common: &mut CommonStatus, c: Common<'_>, now: &Time) {
    common.observed_generation = c.generation;
    common.conditions = conditions::apply(c.previous, c.verdicts, c.generation, now);
    for (type_, verdict) in c.extra {
        let condition = conditions::one(c.previous, type_, &verdict, c.generation, now);
        common.conditions.push(condition);
    }
    if let Some(id) = c.remote_id {
        common.id = Some(id.to_string());
    } else if c.forget_id {
        common.id = None;
    }
}

/// Pure: whether `status` says what `current` says, the sync time aside: then nothing is
/// written (a write would only move the sync time, and wake every watcher).
fn unchanged<K: ManagedKind>(current: Option<&K::Status>, status: &K::Status) -> bool {
    let Some(current) = current else {
        return false;
    };
    let (mut a, mut b) = (current.clone(), status.clone());
    K::common_mut(&mut a).last_sync_time = None;
    K::common_mut(&mut b).last_sync_time = None;
    a == b
}

/// The timing a requeue is read with.
#[derive(Clone, Copy, Debug)]
struct Timing {
    poll: Duration,
    progress: Duration,
    stalled_recheck: Duration,
    backoff: crate::backoff::BackoffPolicy,
}

/// When the next pass comes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Next {
    /// The regular resync of an object the pass found as it should be, after this long:
    /// it waits in the resync table, to the second (see `crate::resync`).
    Resync(Duration),
    /// After this long, to the millisecond (the controller's scheduler); `succeeded`: the
    /// pass worked, and the object's backoff resets.
    In { delay: Duration, succeeded: bool },
    /// After the object's next backoff step, at least this long.
    Backoff(Option<Duration>),
}

/// Pure but for the jitter: the next pass of `requeue`, no later than `due` (a
/// time-driven change, such as a schedule boundary) for the regular ones.
fn next_pass(requeue: Requeue, t: Timing, due: impl FnOnce() -> Option<Duration>) -> Next {
    let due = |d: Duration| due().map_or(d, |due| d.min(due));
    let (delay, succeeded) = match requeue {
        // A time-driven change due before the resync (a schedule boundary) keeps its time.
        Requeue::Poll => {
            let resync = jitter(t.poll, 0.1);
            let delay = due(resync);
            if delay == resync {
                return Next::Resync(resync);
            }
            (delay, true)
        }
        Requeue::Progress => (due(jitter(t.progress.min(t.poll), 0.1)), true),
        Requeue::Now => (Duration::from_millis(10), false),
        Requeue::After(delay) => (delay, false),
        Requeue::Backoff(at_least) => return Next::Backoff(at_least),
        Requeue::Stalled => (due(t.backoff.jittered(t.stalled_recheck)), false),
    };
    Next::In { delay, succeeded }
}

impl<A: Adapter> Engine<A> {
    /// Reports `outcome`: the Event of a new situation, status, the Ready metric, and when
    /// to come back.
    pub(super) async fn report(
        &self,
        api: &Api<A::Kind>,
        seen: &Observed<A::Kind>,
        outcome: Outcome<A::Remote>,
    ) -> Result<Action, EngineError> {
        let obj = seen.obj.as_ref();
        if let Some((reason, warning, message)) = &outcome.event
            && is_news(seen.conditions(), reason)
        {
            self.shared
                .event(obj, *warning, reason, "Reconcile", message.clone())
                .await;
        }
        let status = self.status(
            &seen.key,
            obj,
            outcome.remote.as_ref(),
            &outcome.verdicts,
            outcome.seen,
            outcome.forget_id,
        );
        self.write_status(api, obj, status).await?;
        self.shared.metrics.set_ready(
            A::KIND,
            &seen.key,
            Some(Health {
                ready: outcome.verdicts.ready.status,
                stalled: outcome.verdicts.stalled.status,
            }),
        );
        let timing = Timing {
            poll: match &seen.annotations.poll_interval {
                Some(Ok(d)) => *d,
                _ => self.shared.config.poll_interval,
            },
            progress: self.shared.config.progress_interval,
            stalled_recheck: self.shared.config.stalled_recheck,
            backoff: self.shared.config.backoff,
        };
        let due = || {
            self.policy(&seen.key, obj, outcome.remote.as_ref())
                .look_again_in
        };
        let delay = match next_pass(outcome.requeue, timing, due) {
            // The regular next pass waits in the resync table, not in the controller's
            // scheduler (see `crate::resync`).
            Next::Resync(delay) => {
                self.succeeded(&seen.key);
                self.resync
                    .schedule(&seen.key, tokio::time::Instant::now(), delay);
                return Ok(Action::await_change());
            }
            Next::In { delay, succeeded } => {
                if succeeded {
                    self.succeeded(&seen.key);
                }
                delay
            }
            // A time-driven change (a timeout the adapter counts) comes no later than
            // due, backoff or not.
            Next::Backoff(at_least) => {
                let delay = self.failed(&seen.key, at_least);
                due().map_or(delay, |due| {
                    delay.min(due.max(at_least.unwrap_or_default()))
                })
            }
        };
        Ok(Action::requeue(delay))
    }

    /// Reports a paused object: status only, and no pass until it changes.
    pub(super) async fn report_paused(
        &self,
        api: &Api<A::Kind>,
        seen: &Observed<A::Kind>,
    ) -> Result<Action, EngineError> {
        let verdicts = paused(seen.last_ready.clone());
        let status = self.status(
            &seen.key,
            &seen.obj,
            None,
            &verdicts,
            Seen::default(),
            false,
        );
        self.write_status(api, &seen.obj, status).await?;
        Ok(Action::await_change())
    }

    /// The status `verdicts` and `remote` make for `obj` (under `key`), as data.
    pub(super) fn status(
        &self,
        key: &str,
        obj: &A::Kind,
        remote: Option<&A::Remote>,
        verdicts: &Verdicts,
        seen: Seen,
        forget_id: bool,
    ) -> <A::Kind as ManagedKind>::Status {
        let report = self.report_of(key, obj, remote, seen);
        let mut status = report.status;
        let previous = conditions_of(obj).to_vec();
        let common = Common {
            previous: &previous,
            verdicts,
            extra: report.conditions,
            generation: obj.meta().generation,
            remote_id: remote.map(Identified::id),
            forget_id,
        };
        let now = Time(Timestamp::now());
        fill_common(A::Kind::common_mut(&mut status), common, &now);
        status
    }

    /// Writes `status` when it changed, the sync time aside.
    pub(super) async fn write_status(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        status: <A::Kind as ManagedKind>::Status,
    ) -> Result<(), EngineError> {
        if unchanged::<A::Kind>(obj.current_status(), &status) {
            return Ok(());
        }
        self.apply_status(api, obj, status).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_crd::{NetworkVolume, NetworkVolumeStatus};

    fn at(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).unwrap())
    }

    fn common<'a>(previous: &'a [Condition], verdicts: &'a Verdicts) -> Common<'a> {
        Common {
            previous,
            verdicts,
            extra: Vec::new(),
            generation: Some(3),
            remote_id: None,
            forget_id: false,
        }
    }

    #[test]
    fn a_paused_object_keeps_its_ready_and_says_why_nothing_moves() {
        let v = paused(Verdict::yes("Available", "ok"));
        assert!(v.ready.status && !v.synced.status && !v.reconciling.status);
        assert_eq!(v.synced.reason, "Paused");
    }

    #[test]
    fn an_event_is_news_only_when_neither_ready_nor_synced_carries_its_reason() {
        let now = at(1_000);
        let stalled = Verdicts::stalled("InvalidSpec", "bad");
        let previous = conditions::apply(&[], &stalled, Some(1), &now);
        assert!(!is_news(&previous, "InvalidSpec"));
        assert!(is_news(&previous, "RateLimited"));
        assert!(is_news(&[], "InvalidSpec"));
    }

    #[test]
    fn the_common_status_names_the_remote_object_and_the_generation() {
        let verdicts = Verdicts::converged("ready");
        let mut status = CommonStatus::default();
        let c = Common {
            remote_id: Some("vol-1"),
            extra: vec![("Budget", Verdict::yes("WithinBudget", "ok"))],
            ..common(&[], &verdicts)
        };
        fill_common(&mut status, c, &at(1_000));
        assert_eq!(status.id.as_deref(), Some("vol-1"));
        assert_eq!(status.observed_generation, Some(3));
        let types: Vec<&str> = status.conditions.iter().map(|c| &*c.type_).collect();
        assert_eq!(
            types,
            ["Ready", "Synced", "Reconciling", "Stalled", "Budget"]
        );
    }

    #[test]
    fn transition_times_move_only_when_a_condition_flips() {
        let converged = Verdicts::converged("ready");
        let previous = conditions::apply(&[], &converged, Some(3), &at(1_000));
        let mut status = CommonStatus::default();
        fill_common(&mut status, common(&previous, &converged), &at(2_000));
        assert_eq!(status.conditions, previous);
    }

    #[test]
    fn the_id_is_reported_kept_or_forgotten_never_taken_from_the_annotation() {
        let verdicts = Verdicts::progressing("Replacing", "x");
        let kept = |id: Option<&str>, forget_id, remote: Option<&'static str>| {
            let mut status = CommonStatus {
                id: id.map(str::to_string),
                ..Default::default()
            };
            let c = Common {
                forget_id,
                remote_id: remote,
                ..common(&[], &verdicts)
            };
            fill_common(&mut status, c, &at(1_000));
            status.id
        };
        assert_eq!(kept(Some("vol-1"), false, None).as_deref(), Some("vol-1"));
        assert_eq!(kept(Some("vol-1"), true, None), None);
        assert_eq!(kept(None, false, Some("vol-9")).as_deref(), Some("vol-9"));
        // A pass that failed before it saw the remote object records nothing.
        assert_eq!(kept(None, false, None), None);
    }

    #[test]
    fn a_status_that_only_moves_the_sync_time_is_not_written() {
        let status = NetworkVolumeStatus::default();
        let mut synced = status.clone();
        synced.common.last_sync_time = Some(at(1_000));
        assert!(unchanged::<NetworkVolume>(Some(&synced), &status));
        assert!(!unchanged::<NetworkVolume>(None, &status));
        let mut other = status.clone();
        other.common.id = Some("vol-1".to_string());
        assert!(!unchanged::<NetworkVolume>(Some(&synced), &other));
    }

    fn timing() -> Timing {
        Timing {
            poll: Duration::from_secs(60),
            progress: Duration::from_secs(5),
            stalled_recheck: Duration::from_secs(1800),
            backoff: crate::backoff::BackoffPolicy::default(),
        }
    }

    fn delay(next: Next) -> Duration {
        match next {
            Next::Resync(delay) | Next::In { delay, .. } => delay,
            Next::Backoff(_) => panic!("want a delay, got {next:?}"),
        }
    }

    #[test]
    fn a_pass_that_worked_comes_back_at_the_poll_or_the_progress_interval() {
        let secs = Duration::from_secs;
        let poll = next_pass(Requeue::Poll, timing(), || None);
        assert!(matches!(poll, Next::Resync(_)), "{poll:?}");
        assert!((secs(54)..=secs(66)).contains(&delay(poll)));
        // While the platform changes, to the millisecond: not rounded up to the
        // resync table's second.
        let progress = next_pass(Requeue::Progress, timing(), || None);
        assert!(
            matches!(
                progress,
                Next::In {
                    succeeded: true,
                    ..
                }
            ),
            "{progress:?}"
        );
        assert!(
            (Duration::from_millis(4_500)..=Duration::from_millis(5_500))
                .contains(&delay(progress))
        );
        // A poll interval shorter than the progress interval wins.
        let short = Timing {
            poll: secs(2),
            ..timing()
        };
        assert!(
            delay(next_pass(Requeue::Progress, short, || None)) <= Duration::from_millis(2_200)
        );
    }

    #[test]
    fn a_time_driven_change_due_sooner_comes_first_and_on_time() {
        let due = Duration::from_secs(7);
        assert_eq!(
            next_pass(Requeue::Poll, timing(), || Some(due)),
            Next::In {
                delay: due,
                succeeded: true
            }
        );
        let later = Duration::from_secs(600);
        assert!(matches!(
            next_pass(Requeue::Poll, timing(), || Some(later)),
            Next::Resync(_)
        ));
    }

    #[test]
    fn other_requeues_leave_the_backoff_alone() {
        let secs = Duration::from_secs;
        assert_eq!(
            next_pass(Requeue::Now, timing(), || None),
            Next::In {
                delay: Duration::from_millis(10),
                succeeded: false
            }
        );
        assert_eq!(
            next_pass(Requeue::After(secs(3)), timing(), || Some(secs(1))),
            Next::In {
                delay: secs(3),
                succeeded: false
            }
        );
        assert_eq!(
            next_pass(Requeue::Backoff(Some(secs(30))), timing(), || None),
            Next::Backoff(Some(secs(30)))
        );
        let stalled = delay(next_pass(Requeue::Stalled, timing(), || None));
        assert!((secs(1440)..=secs(2160)).contains(&stalled));
    }
}
