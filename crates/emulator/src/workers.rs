//! Worker scaling rules of a serverless endpoint, as pure functions.
//!
//! Workers scale up with the queue (never for lowPriority jobs) between `workersMin` and
//! `workersMax`, and an idle worker retires after the endpoint's idle timeout unless that
//! would take the endpoint below `workersMin`.

use crate::model::ScalerType;

/// An endpoint's worker settings, in emulated milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkerSettings {
    pub min: u32,
    pub max: u32,
    pub idle_timeout_ms: u64,
    pub execution_timeout_ms: u64,
    pub scaler_type: ScalerType,
    pub scaler_value: u32,
}

/// How many workers to start now.
///
/// `queued` counts only jobs that may trigger scaling (not lowPriority ones). With
/// `QUEUE_DELAY` every waiting job gets a worker at once (the emulator has no queue delay
/// worth waiting for); with `REQUEST_COUNT` one worker serves `scalerValue` queued jobs.
pub fn workers_to_start(live: u32, busy: u32, queued: u32, s: &WorkerSettings) -> u32 {
    let idle = live.saturating_sub(busy);
    let wanted_for_queue = match s.scaler_type {
        ScalerType::QueueDelay => queued.saturating_sub(idle),
        ScalerType::RequestCount => {
            let per = s.scaler_value.max(1);
            queued.div_ceil(per).saturating_sub(idle)
        }
    };
    let target = (live + wanted_for_queue).max(s.min).min(s.max);
    target.saturating_sub(live)
}

/// Whether an idle worker should stop.
pub fn should_retire(live: u32, idle_for_ms: u64, s: &WorkerSettings) -> bool {
    live > s.max || (live > s.min && idle_for_ms >= s.idle_timeout_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(min: u32, max: u32) -> WorkerSettings {
        WorkerSettings {
            min,
            max,
            idle_timeout_ms: 5_000,
            execution_timeout_ms: 600_000,
            scaler_type: ScalerType::QueueDelay,
            scaler_value: 4,
        }
    }

    #[test]
    fn scales_with_the_queue_up_to_max() {
        let s = settings(0, 3);
        assert_eq!(workers_to_start(0, 0, 0, &s), 0);
        assert_eq!(workers_to_start(0, 0, 2, &s), 2);
        assert_eq!(workers_to_start(0, 0, 10, &s), 3);
        assert_eq!(workers_to_start(3, 3, 10, &s), 0);
        // Idle workers take queued jobs first.
        assert_eq!(workers_to_start(2, 0, 2, &s), 0);
    }

    #[test]
    fn min_workers_always_run() {
        assert_eq!(workers_to_start(0, 0, 0, &settings(2, 3)), 2);
        assert_eq!(workers_to_start(0, 0, 0, &settings(0, 0)), 0);
        assert_eq!(workers_to_start(0, 0, 5, &settings(0, 0)), 0);
    }

    #[test]
    fn request_count_scaler() {
        let mut s = settings(0, 10);
        s.scaler_type = ScalerType::RequestCount;
        assert_eq!(workers_to_start(0, 0, 9, &s), 3);
    }

    #[test]
    fn retirement() {
        let s = settings(1, 3);
        assert!(!should_retire(2, 4_999, &s));
        assert!(should_retire(2, 5_000, &s));
        assert!(!should_retire(1, 100_000, &s));
        assert!(should_retire(4, 0, &s));
    }
}
