//! Pure: when a run of failed requests is worth a log line. The elector tries every second
//! or two while the apiserver is away; a line for each try would bury the rest of the log,
//! so it says the first failure of a run, then one every [`REMIND_EVERY`], and how long the
//! run lasted once a request succeeds.

use std::time::Duration;

use tokio::time::Instant;

/// How often a run of failures is said again.
pub const REMIND_EVERY: Duration = Duration::from_secs(10);

/// A run of failed requests, if one is under way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Episode {
    started: Option<Instant>,
    said: Option<Instant>,
}

impl Episode {
    /// A request failed at `now`: how long the run has lasted if this failure is to be said.
    pub fn failed(&mut self, now: Instant) -> Option<Duration> {
        let started = *self.started.get_or_insert(now);
        let due = self.said.is_none_or(|said| now >= said + REMIND_EVERY);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_failure_of_a_run_is_said_then_one_every_10s_and_the_end() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut run = Episode::default();
        assert_eq!(run.succeeded(at(0)), None, "no run to end");
        assert_eq!(run.failed(at(0)), Some(Duration::ZERO));
        let said: Vec<u64> = (1..=25).filter(|s| run.failed(at(*s)).is_some()).collect();
        assert_eq!(said, [10, 20]);
        assert_eq!(run.succeeded(at(26)), Some(Duration::from_secs(26)));
        // A new run is said at once.
        assert_eq!(run.failed(at(27)), Some(Duration::ZERO));
    }
}
