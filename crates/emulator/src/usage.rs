//! What the emulated account used, over time, for billing: network volume sizes and
//! serverless worker time. (Pods' running and stopped stretches are kept by the `Cloud`,
//! which makes every pod state change.)

use super::clock::Millis;
use std::collections::{HashMap, HashSet};

/// A network volume at one size and tier for a stretch of time.
#[derive(Debug, Clone, PartialEq)]
pub struct VolumeInterval {
    pub volume_id: String,
    pub size_gb: u32,
    pub high_performance: bool,
    pub from: Millis,
    /// Open while `None`.
    pub to: Option<Millis>,
}

/// A serverless worker that was up from `from` to `to`.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkerSpan {
    pub endpoint_id: String,
    /// GPU type of the worker; `None` for a CPU worker.
    pub gpu_type_id: Option<String>,
    pub gpu_count: u32,
    /// vCPUs of a CPU worker.
    pub vcpus: u32,
    pub from: Millis,
    pub to: Millis,
}

/// The usage ledger of the world.
#[derive(Debug, Clone, Default)]
pub struct UsageLedger {
    volumes: Vec<VolumeInterval>,
    workers: Vec<WorkerSpan>,
}

impl UsageLedger {
    /// Brings the volume stretches in line with the volumes that exist now (`id`, size in
    /// GB, high-performance tier): a new volume opens a stretch, a resized or retiered one
    /// closes its stretch and opens another, a deleted one closes its stretch.
    pub fn observe_volumes<'a>(
        &mut self,
        current: impl IntoIterator<Item = (&'a str, u32, bool)>,
        now: Millis,
    ) {
        // Called on every request: with 10,000 volumes, comparing every stretch with every
        // volume cost 10^8 comparisons a request and made the emulator the bottleneck of
        // the 10,000-volume benchmark. An index keeps it linear.
        let current: Vec<(&'a str, u32, bool)> = current.into_iter().collect();
        let index: HashMap<&str, (u32, bool)> = current
            .iter()
            .map(|&(id, size, hp)| (id, (size, hp)))
            .collect();
        let mut still_open: HashSet<&str> = HashSet::with_capacity(current.len());
        for open in self.volumes.iter_mut().filter(|v| v.to.is_none()) {
            match index.get_key_value(open.volume_id.as_str()) {
                Some((id, &(size, hp))) if size == open.size_gb && hp == open.high_performance => {
                    still_open.insert(id);
                }
                _ => open.to = Some(now.max(open.from)),
            }
        }
        for (id, size, hp) in current {
            if !still_open.contains(id) {
                self.volumes.push(VolumeInterval {
                    volume_id: id.to_string(),
                    size_gb: size,
                    high_performance: hp,
                    from: now,
                    to: None,
                });
            }
        }
    }

    /// Records worker time of a serverless endpoint (the serverless runtime's hook).
    pub fn record_worker_span(&mut self, span: WorkerSpan) {
        self.workers.push(span);
    }

    pub fn volumes(&self) -> &[VolumeInterval] {
        &self.volumes
    }

    pub fn workers(&self) -> &[WorkerSpan] {
        &self.workers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volume_stretches_follow_creates_resizes_and_deletes() {
        let mut l = UsageLedger::default();
        l.observe_volumes([("a", 100, false)], 0);
        l.observe_volumes([("a", 100, false), ("b", 10, true)], 10);
        // Nothing changed: no new stretch.
        l.observe_volumes([("a", 100, false), ("b", 10, true)], 15);
        assert_eq!(l.volumes().len(), 2);
        l.observe_volumes([("a", 200, false), ("b", 10, true)], 20);
        l.observe_volumes([("a", 200, false)], 30);
        let v = l.volumes();
        assert_eq!(v.len(), 3);
        assert_eq!((v[0].size_gb, v[0].from, v[0].to), (100, 0, Some(20)));
        assert_eq!(
            (v[1].volume_id.as_str(), v[1].from, v[1].to),
            ("b", 10, Some(30))
        );
        assert_eq!((v[2].size_gb, v[2].from, v[2].to), (200, 20, None));
    }

    #[test]
    fn worker_spans_are_kept() {
        let mut l = UsageLedger::default();
        l.record_worker_span(WorkerSpan {
            endpoint_id: "ep".into(),
            gpu_type_id: Some("g".into()),
            gpu_count: 1,
            vcpus: 0,
            from: 0,
            to: 1000,
        });
        assert_eq!(l.workers().len(), 1);
    }
}
