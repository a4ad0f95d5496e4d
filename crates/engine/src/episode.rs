//! Pure: when a run of failed requests is worth a log line. Whatever retries every second
//! or two while the apiserver is away (a watch, the Lease) would bury the rest of the log
//! with a line per try; this says the first failure of a run, then one every
//! `remind_every`, and how long the run lasted once a request succeeds.

use std::time::Duration;

use tokio::time::Instant;

/// A run of failed requests, if one is under way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Episode {
    remind_every: Duration,
    started: Option<Instant>,
    said: Option<Instant>,
}

impl Episode {
    /// No run under way; a run is said again every `remind_every`.
    pub fn new(remind_every: Duration) -> Self {
        Self {
            remind_every,
            started: None,
            said: None,
        }
    }

    /// A request failed at `now`: how long the run has lasted if this failure is to be said
    /// (zero for the first of a run).
    pub fn failed(&mut self, now: Instant) -> Option<Duration> {
        let started = *self.started.get_or_insert(now);
        let due = self.said.is_none_or(|said| now >= said + self.remind_every);
        if !due {
            return None;
        }
        self.said = Some(now);
        Some(now.saturating_duration_since(started))
    }

    /// A request succeeded at `now`: how long the run of failures it ends lasted, if any.
    pub fn succeeded(&mut self, now: Instant) -> Option<Duration> {
        let started = self.started.take()?;
        self.said = None;
        Some(now.saturating_duration_since(started))
    }

    /// When the run under way began; `None` when there is none.
    pub fn since(&self) -> Option<Instant> {
        self.started
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failure_of_a_run_is_said_then_one_per_interval_and_the_end() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut run = Episode::new(Duration::from_secs(10));
        assert_eq!(run.succeeded(at(0)), None, "no run to end");
        assert_eq!(run.failed(at(0)), Some(Duration::ZERO));
        assert_eq!(run.since(), Some(at(0)));
        let said: Vec<u64> = (1..=25).filter(|s| run.failed(at(*s)).is_some()).collect();
        assert_eq!(said, [10, 20]);
        assert_eq!(run.succeeded(at(26)), Some(Duration::from_secs(26)));
        assert_eq!(run.since(), None);
        // A new run is said at once.
        assert_eq!(run.failed(at(27)), Some(Duration::ZERO));
    }

    #[test]
    fn the_reminder_follows_its_interval() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut run = Episode::new(Duration::from_secs(30));
        assert_eq!(run.failed(at(0)), Some(Duration::ZERO));
        assert_eq!(run.failed(at(3)), None);
        assert_eq!(run.failed(at(31)), Some(Duration::from_secs(31)));
        assert_eq!(run.failed(at(40)), None);
        assert_eq!(run.succeeded(at(45)), Some(Duration::from_secs(45)));
    }
}
