//! What the emulated account used, over time, for billing: network volume sizes and
//! serverless worker time. (Pods' running and stopped stretches are kept by the `Cloud`,
//! which makes every pod state change.)

use super::clock::Millis;
use super::model::EndpointRecord;
use std::collections::HashMap;

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
    pub gpu_count: u64,
    /// vCPUs of a CPU worker.
    pub vcpus: u32,
    /// CPU flavor of a CPU worker (its price per vCPU).
    pub cpu_flavor: Option<String>,
    pub from: Millis,
    pub to: Millis,
}

impl WorkerSpan {
    /// A worker of endpoint `e`, up from `from` to `to`: its first GPU type and GPU count, or
    /// for a CPU endpoint its first flavor and that flavor's vCPU count (the compute the
    /// emulator places its workers on).
    pub fn of(e: &EndpointRecord, from: Millis, to: Millis) -> Self {
        let cpu = e.cpu.first();
        Self {
            endpoint_id: e.id.clone(),
            gpu_type_id: if cpu.is_some() {
                None
            } else {
                e.gpu_type_ids.first().cloned()
            },
            gpu_count: if cpu.is_some() { 0 } else { e.gpu_count },
            vcpus: cpu.map_or(0, |c| c.vcpu_count),
            cpu_flavor: cpu.map(|c| c.id.clone()),
            from,
            to,
        }
    }
}

/// The usage ledger of the world.
#[derive(Debug, Clone, Default)]
pub struct UsageLedger {
    volumes: Vec<VolumeInterval>,
    /// The index in `volumes` of each volume's open stretch.
    open_volumes: HashMap<String, usize>,
    workers: Vec<WorkerSpan>,
}

impl UsageLedger {
    /// Brings the stretches of volume `id` in line with the volume as it is now (size in
    /// GB, high-performance tier; `None` once deleted): a new volume opens a stretch, a
    /// resized or retiered one closes its stretch and opens another, a deleted one closes
    /// its stretch. The open stretches are indexed by volume, so a call costs the same
    /// with 100,000 volumes as with one.
    pub fn observe_volume(&mut self, id: &str, current: Option<(u32, bool)>, now: Millis) {
        if let Some(&i) = self.open_volumes.get(id) {
            let open = &mut self.volumes[i];
            if current == Some((open.size_gb, open.high_performance)) {
                return;
            }
            open.to = Some(now.max(open.from));
            self.open_volumes.remove(id);
        }
        if let Some((size, hp)) = current {
            self.open_volumes.insert(id.to_string(), self.volumes.len());
            self.volumes.push(VolumeInterval {
                volume_id: id.to_string(),
                size_gb: size,
                high_performance: hp,
                from: now,
                to: None,
            });
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
        l.observe_volume("a", Some((100, false)), 0);
        l.observe_volume("b", Some((10, true)), 10);
        // Nothing changed: no new stretch.
        l.observe_volume("a", Some((100, false)), 15);
        l.observe_volume("b", Some((10, true)), 15);
        assert_eq!(l.volumes().len(), 2);
        l.observe_volume("a", Some((200, false)), 20);
        l.observe_volume("b", None, 30);
        // A volume already gone stays closed.
        l.observe_volume("b", None, 40);
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
            cpu_flavor: None,
            from: 0,
            to: 1000,
        });
        assert_eq!(l.workers().len(), 1);
    }
}
