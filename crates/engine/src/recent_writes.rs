//! When this process last changed each object's remote object, for as long as that can
//! still matter.
//!
//! A pass needs a listing that started after the last change it made (see
//! `engine::observe::listing_need`), but only while that change is younger than the oldest
//! listing a pass would take anyway (the poll interval). An older entry changes nothing,
//! so entries are swept once they are that old: after creating 10,000 objects, the table
//! would otherwise keep a name and an instant for each of them for good.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

#[derive(Debug)]
pub struct RecentWrites {
    /// By `namespace/name`.
    at: HashMap<String, Instant>,
    /// An entry this old no longer matters.
    relevant_for: Duration,
    last_sweep: Instant,
}

impl RecentWrites {
    pub fn new(relevant_for: Duration, now: Instant) -> Self {
        Self {
            at: HashMap::new(),
            relevant_for,
            last_sweep: now,
        }
    }

    /// Records a change of `key`'s remote object at `now`; sweeps what no longer matters,
    /// at most once per `relevant_for`.
    pub fn record(&mut self, key: String, now: Instant) {
        if now.saturating_duration_since(self.last_sweep) >= self.relevant_for {
            self.sweep(now);
        }
        self.at.insert(key, now);
    }

    /// When `key`'s remote object was last changed, if that still matters at `now`.
    pub fn get(&self, key: &str, now: Instant) -> Option<Instant> {
        self.at
            .get(key)
            .copied()
            .filter(|at| now.saturating_duration_since(*at) < self.relevant_for)
    }

    pub fn forget(&mut self, key: &str) {
        self.at.remove(key);
    }

    pub fn len(&self) -> usize {
        self.at.len()
    }

    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    fn sweep(&mut self, now: Instant) {
        self.last_sweep = now;
        let relevant_for = self.relevant_for;
        self.at
            .retain(|_, at| now.saturating_duration_since(*at) < relevant_for);
        super::shrink_after_burst(&mut self.at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLL: Duration = Duration::from_secs(60);

    #[test]
    fn a_change_matters_for_one_poll_interval() {
        let t0 = Instant::now();
        let mut writes = RecentWrites::new(POLL, t0);
        writes.record("ns/a".into(), t0);
        assert_eq!(writes.get("ns/a", t0 + POLL / 2), Some(t0));
        assert_eq!(writes.get("ns/a", t0 + POLL), None);
        assert_eq!(writes.get("ns/b", t0), None);
    }

    #[test]
    fn a_burst_is_swept_and_its_room_given_back() {
        let t0 = Instant::now();
        let mut writes = RecentWrites::new(POLL, t0);
        for i in 0..10_000 {
            writes.record(format!("ns/nv-{i}"), t0);
        }
        let burst = writes.at.capacity();
        writes.record("ns/later".into(), t0 + POLL);
        assert_eq!(writes.len(), 1, "only the change that still matters");
        assert!(writes.at.capacity() < burst / 16);
        writes.forget("ns/later");
        assert!(writes.is_empty());
    }

    #[test]
    fn no_sweep_runs_within_an_interval_of_the_last() {
        let t0 = Instant::now();
        let mut writes = RecentWrites::new(POLL, t0);
        writes.record("ns/a".into(), t0);
        writes.record("ns/b".into(), t0 + POLL / 2);
        assert_eq!(writes.len(), 2);
    }
}
