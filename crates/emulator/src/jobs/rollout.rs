//! Which workers of an endpoint run which configuration version, and when stale ones are
//! replaced: pure functions over the worker table, on the emulator clock.
//!
//! A release makes every worker not on the new version stale. The stale workers are
//! replaced one at a time, oldest first: the k-th (k = 0, 1, ...) at
//! `release time + (k + 1) × interval`. A worker busy with a job at its time is replaced
//! when the job ends (the job finishes on the old version). The replacement is a new worker
//! (new id, start time = the replacement time) on the current version. A newer release
//! reschedules every stale worker from its own time.

use std::collections::BTreeMap;

use crate::clock::Millis;

/// One worker as the rollover and the worker listing see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerSlot {
    /// Public id; a replacement gets a new one.
    pub id: String,
    pub version: u64,
    pub started_at: Millis,
    pub busy: bool,
    /// When it last became idle (its start, or the end of its last job).
    pub idle_since: Millis,
    /// When it is due to be replaced by a worker on the current version.
    pub replace_at: Option<Millis>,
}

impl WorkerSlot {
    pub fn new(id: String, version: u64, now: Millis) -> Self {
        Self {
            id,
            version,
            started_at: now,
            busy: false,
            idle_since: now,
            replace_at: None,
        }
    }
}

/// Schedules the replacement of every worker not on `version`, oldest first.
pub fn schedule(
    slots: &mut BTreeMap<u64, WorkerSlot>,
    version: u64,
    released_at: Millis,
    interval_ms: Millis,
) {
    let mut stale: Vec<(Millis, u64)> = slots
        .iter()
        .filter(|(_, w)| w.version != version)
        .map(|(key, w)| (w.started_at, *key))
        .collect();
    stale.sort_unstable();
    for (k, (_, key)) in stale.into_iter().enumerate() {
        if let Some(w) = slots.get_mut(&key) {
            w.replace_at = Some(released_at + (k as u64 + 1) * interval_ms);
        }
    }
}

/// Replaces every idle worker whose time has come by a worker on `version`; returns how
/// many were replaced.
pub fn replace_due(
    slots: &mut BTreeMap<u64, WorkerSlot>,
    version: u64,
    now: Millis,
    mut new_id: impl FnMut() -> String,
) -> usize {
    let mut replaced = 0;
    for w in slots.values_mut() {
        let Some(due) = w.replace_at else { continue };
        if w.busy || due > now {
            continue;
        }
        let at = due.max(w.idle_since);
        *w = WorkerSlot::new(new_id(), version, at);
        replaced += 1;
    }
    replaced
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(starts: &[Millis]) -> BTreeMap<u64, WorkerSlot> {
        starts
            .iter()
            .enumerate()
            .map(|(i, &s)| (i as u64, WorkerSlot::new(format!("w{i}"), 1, s)))
            .collect()
    }

    fn ids(n: &mut u32) -> String {
        *n += 1;
        format!("new{n}")
    }

    #[test]
    fn one_worker_per_interval_oldest_first() {
        // Worker 1 started first, so it goes first.
        let mut t = table(&[200, 100]);
        schedule(&mut t, 2, 1_000, 30_000);
        assert_eq!(t[&1].replace_at, Some(31_000));
        assert_eq!(t[&0].replace_at, Some(61_000));
        let mut n = 0;
        assert_eq!(replace_due(&mut t, 2, 30_999, || ids(&mut n)), 0);
        assert_eq!(replace_due(&mut t, 2, 31_000, || ids(&mut n)), 1);
        assert_eq!(t[&1].version, 2);
        assert_eq!(t[&1].started_at, 31_000);
        assert_eq!(t[&1].id, "new1");
        assert_eq!(t[&1].replace_at, None);
        assert_eq!(t[&0].version, 1);
        // Read late: the replacement still started at its scheduled time.
        assert_eq!(replace_due(&mut t, 2, 500_000, || ids(&mut n)), 1);
        assert_eq!(t[&0].started_at, 61_000);
        assert!(t.values().all(|w| w.version == 2));
    }

    #[test]
    fn a_busy_worker_is_replaced_when_its_job_ends() {
        let mut t = table(&[0]);
        schedule(&mut t, 2, 0, 30_000);
        t.get_mut(&0).unwrap().busy = true;
        let mut n = 0;
        assert_eq!(replace_due(&mut t, 2, 40_000, || ids(&mut n)), 0);
        let w = t.get_mut(&0).unwrap();
        w.busy = false;
        w.idle_since = 45_000;
        assert_eq!(replace_due(&mut t, 2, 50_000, || ids(&mut n)), 1);
        assert_eq!(t[&0].started_at, 45_000);
    }

    #[test]
    fn a_newer_release_reschedules_everyone_not_on_it() {
        let mut t = table(&[0, 10]);
        schedule(&mut t, 2, 0, 30_000);
        let mut n = 0;
        replace_due(&mut t, 2, 30_000, || ids(&mut n));
        assert_eq!(t[&0].version, 2);
        schedule(&mut t, 3, 40_000, 30_000);
        // Worker 1 (started 10, version 1) is older than the replacement (started 30 000).
        assert_eq!(t[&1].replace_at, Some(70_000));
        assert_eq!(t[&0].replace_at, Some(100_000));
    }

    #[test]
    fn workers_on_the_version_are_left_alone() {
        let mut t = table(&[0]);
        schedule(&mut t, 1, 0, 30_000);
        assert_eq!(t[&0].replace_at, None);
    }
}
