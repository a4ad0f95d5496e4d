//! Whether the controllers make progress, for the liveness probe (`/healthz`): each kind's
//! controller says when it runs and when it ended ([`Progress::controller`]), and when each
//! of its passes starts and ends ([`Progress::pass`]). A pass that has run longer than the
//! stall limit, or a controller that ended without being asked to stop, is a process that
//! no longer does its job, which a restart mends; [`problems`] (pure) says so from the
//! facts. A process whose controllers never started (a follower waiting for its Lease)
//! has nothing to report and is live. A process that leads again after it lost its Lease
//! starts its controllers again: each start of a kind is a new registration, and only the
//! latest one's end counts.
//!
//! Kinds are named by their `kind` string only: the engine knows none of them.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// The life of one kind's controller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Life {
    Running,
    /// Ended after it was asked to stop (the process is stopping).
    Stopped,
    /// Ended without being asked: it panicked, or its loop returned early.
    Ended,
}

/// What the verdict reads of one kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindProgress {
    pub kind: &'static str,
    pub life: Life,
    /// When the oldest pass under way started.
    pub oldest_pass: Option<Instant>,
}

/// Why the process is not live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// A pass of `kind` has run for `running_for`, longer than the stall limit.
    Stalled {
        kind: &'static str,
        running_for: Duration,
        limit: Duration,
    },
    /// The controller of `kind` ended while the process runs.
    Ended { kind: &'static str },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stalled {
                kind,
                running_for,
                limit,
            } => write!(
                f,
                "a {kind} reconcile has run for {:.2}s, longer than the stall limit of {}s",
                running_for.as_secs_f64(),
                limit.as_secs_f64()
            ),
            Self::Ended { kind } => {
                write!(f, "the {kind} controller ended while the process runs")
            }
        }
    }
}

/// Pure: what keeps the process from being live, given each kind's progress, `now` and the
/// stall `limit`; none: live. A pass exactly at the limit is not yet stalled.
pub fn problems(kinds: &[KindProgress], now: Instant, limit: Duration) -> Vec<Problem> {
    kinds
        .iter()
        .filter_map(|k| match (k.life, k.oldest_pass) {
            (Life::Ended, _) => Some(Problem::Ended { kind: k.kind }),
            (Life::Running, Some(started)) => {
                let running_for = now.saturating_duration_since(started);
                (running_for > limit).then_some(Problem::Stalled {
                    kind: k.kind,
                    running_for,
                    limit,
                })
            }
            (Life::Running | Life::Stopped, _) => None,
        })
        .collect()
}

/// The progress of every kind's controller in this process.
#[derive(Debug, Default)]
pub struct Progress {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    next_pass: u64,
    next_start: u64,
    kinds: BTreeMap<&'static str, KindState>,
}

#[derive(Debug)]
struct KindState {
    /// Which start of the kind's controller this is: a guard of an earlier start, dropped
    /// late, must not mark a controller started since as ended.
    start: u64,
    life: Life,
    /// The passes under way, by a number of their own, with when each started.
    passes: HashMap<u64, Instant>,
}

impl Progress {
    /// Marks `kind`'s controller as running, until the returned guard is dropped: then it
    /// is stopped if [`ControllerLife::until`]'s shutdown had resolved, else ended. A kind
    /// started again (a new term of leadership) is running again, whatever its last start
    /// left.
    pub fn controller(self: &Arc<Self>, kind: &'static str) -> ControllerLife {
        let mut state = self.state.lock();
        state.next_start += 1;
        let start = state.next_start;
        state.kinds.insert(
            kind,
            KindState {
                start,
                life: Life::Running,
                passes: HashMap::new(),
            },
        );
        ControllerLife {
            progress: self.clone(),
            kind,
            start,
            asked: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Marks a pass of `kind` as under way from now until the returned guard is dropped
    /// (the pass ended, or was cut).
    pub fn pass(self: &Arc<Self>, kind: &'static str) -> PassUnderWay {
        let mut state = self.state.lock();
        state.next_pass += 1;
        let id = state.next_pass;
        if let Some(k) = state.kinds.get_mut(kind) {
            k.passes.insert(id, Instant::now());
        }
        PassUnderWay {
            progress: self.clone(),
            kind,
            id,
        }
    }

    /// Each kind's progress now.
    pub fn snapshot(&self) -> Vec<KindProgress> {
        self.state
            .lock()
            .kinds
            .iter()
            .map(|(kind, k)| KindProgress {
                kind,
                life: k.life,
                oldest_pass: k.passes.values().min().copied(),
            })
            .collect()
    }

    /// What keeps the process from being live now (see [`problems`]).
    pub fn problems(&self, limit: Duration) -> Vec<Problem> {
        problems(&self.snapshot(), Instant::now(), limit)
    }
}

/// A controller marked as running (see [`Progress::controller`]).
pub struct ControllerLife {
    progress: Arc<Progress>,
    kind: &'static str,
    start: u64,
    asked: Arc<AtomicBool>,
}

impl ControllerLife {
    /// `shutdown`, noting when it resolves that the controller was asked to stop.
    pub fn until<F: Future<Output = ()>>(&self, shutdown: F) -> impl Future<Output = ()> + use<F> {
        let asked = self.asked.clone();
        async move {
            shutdown.await;
            asked.store(true, Ordering::SeqCst);
        }
    }
}

impl Drop for ControllerLife {
    fn drop(&mut self) {
        let life = if self.asked.load(Ordering::SeqCst) {
            Life::Stopped
        } else {
            Life::Ended
        };
        let mut state = self.progress.state.lock();
        if let Some(k) = state
            .kinds
            .get_mut(self.kind)
            .filter(|k| k.start == self.start)
        {
            k.life = life;
            k.passes.clear();
        }
    }
}

/// A pass marked as under way (see [`Progress::pass`]).
pub struct PassUnderWay {
    progress: Arc<Progress>,
    kind: &'static str,
    id: u64,
}

impl Drop for PassUnderWay {
    fn drop(&mut self) {
        if let Some(k) = self.progress.state.lock().kinds.get_mut(self.kind) {
            k.passes.remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(60);

    fn kind(kind: &'static str, life: Life, oldest_pass: Option<Instant>) -> KindProgress {
        KindProgress {
            kind,
            life,
            oldest_pass,
        }
    }

    #[test]
    fn a_pass_longer_than_the_limit_is_a_stall_naming_its_kind_and_how_long() {
        let now = Instant::now() + Duration::from_secs(1000);
        let kinds = [
            kind("Pod", Life::Running, Some(now - Duration::from_secs(5))),
            kind(
                "NetworkVolume",
                Life::Running,
                Some(now - Duration::from_secs(61)),
            ),
        ];
        let found = problems(&kinds, now, LIMIT);
        assert_eq!(
            found,
            [Problem::Stalled {
                kind: "NetworkVolume",
                running_for: Duration::from_secs(61),
                limit: LIMIT,
            }]
        );
        let said = found[0].to_string();
        assert!(
            said.contains("NetworkVolume")
                && said.contains("run for 61.00s")
                && said.contains("limit of 60s"),
            "{said}"
        );
    }

    #[test]
    fn passes_within_the_limit_and_idle_controllers_are_live() {
        let now = Instant::now() + Duration::from_secs(1000);
        let kinds = [
            kind("Pod", Life::Running, Some(now - LIMIT)),
            kind("Endpoint", Life::Running, None),
        ];
        assert_eq!(problems(&kinds, now, LIMIT), []);
    }

    #[test]
    fn a_controller_that_ended_unasked_is_a_problem_and_one_that_was_stopped_is_not() {
        let now = Instant::now();
        let kinds = [
            kind("Pod", Life::Ended, None),
            kind("Template", Life::Stopped, None),
        ];
        assert_eq!(
            problems(&kinds, now, LIMIT),
            [Problem::Ended { kind: "Pod" }]
        );
    }

    #[test]
    fn no_controllers_at_all_is_live() {
        // A follower waiting for the Lease has started none.
        assert_eq!(problems(&[], Instant::now(), LIMIT), []);
        assert_eq!(Arc::new(Progress::default()).problems(LIMIT), []);
    }

    #[tokio::test(start_paused = true)]
    async fn the_guards_record_passes_and_how_a_controller_ended() {
        let progress = Arc::new(Progress::default());
        let life = progress.controller("Pod");
        let pass = progress.pass("Pod");
        tokio::time::advance(Duration::from_secs(61)).await;
        let late = progress.pass("Pod");
        assert!(
            matches!(progress.problems(LIMIT)[..], [Problem::Stalled { kind: "Pod", running_for, .. }] if running_for == Duration::from_secs(61)),
            "the oldest pass counts: {:?}",
            progress.problems(LIMIT)
        );
        drop(pass);
        assert_eq!(progress.problems(LIMIT), [], "the stuck pass ended");
        drop(late);

        // Asked to stop: stopped, not ended.
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let asked = life.until(async {
            let _ = rx.await;
        });
        tx.send(()).unwrap();
        asked.await;
        drop(life);
        assert_eq!(progress.snapshot()[0].life, Life::Stopped);

        // Gone without being asked (a panic unwinds through the guard): ended.
        let other = progress.controller("Template");
        drop(other);
        assert_eq!(
            progress.problems(LIMIT),
            [Problem::Ended { kind: "Template" }]
        );
    }

    #[tokio::test]
    async fn a_controller_stopped_with_its_term_and_started_again_runs_again() {
        let progress = Arc::new(Progress::default());
        let life = |kind| {
            progress
                .snapshot()
                .iter()
                .find(|k| k.kind == kind)
                .unwrap()
                .life
        };
        // The first term: stopped by its term's stop (leadership lost), which is no problem.
        let first = progress.controller("Pod");
        first.until(async {}).await;
        drop(first);
        assert_eq!(life("Pod"), Life::Stopped);
        assert_eq!(progress.problems(LIMIT), []);

        // The next term starts the kind again: running.
        let second = progress.controller("Pod");
        assert_eq!(life("Pod"), Life::Running);

        // A guard of an earlier start that goes only now (a task cut late, never asked)
        // does not mark the running controller as ended.
        let third = progress.controller("Pod");
        drop(second);
        assert_eq!(life("Pod"), Life::Running);
        assert_eq!(progress.problems(LIMIT), []);
        drop(third);
        assert_eq!(life("Pod"), Life::Ended, "the latest start's end counts");
    }
}
