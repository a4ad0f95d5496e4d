//! Rate limits: the job API's table (rate per 10 s and concurrency, per key, per endpoint,
//! per operation) with the dynamic rule, and the registry's per-minute limit.
//!
//! Windows are sliding logs on the emulator's clock, so `--time-scale` shortens them too.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;

use super::clock::{Clock, Millis};
use super::error::ApiError;

/// The job API operations that have limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobOp {
    RunSync,
    Run,
    Status,
    Stream,
    Cancel,
    PurgeQueue,
    OpenAi,
    Requests,
}

/// One row of the limits table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub rate: u64,
    pub window_ms: Millis,
    pub concurrency: Option<u32>,
}

impl JobOp {
    /// The spec's table.
    pub fn rule(self) -> Rule {
        let (rate, concurrency) = match self {
            Self::RunSync => (2000, Some(400)),
            Self::Run => (1000, Some(200)),
            Self::Status => (2000, Some(400)),
            Self::Stream => (2000, Some(400)),
            Self::Cancel => (100, Some(20)),
            Self::PurgeQueue => (2, None),
            Self::OpenAi => (2000, Some(400)),
            Self::Requests => (10, Some(2)),
        };
        Rule {
            rate,
            window_ms: 10_000,
            concurrency,
        }
    }

    pub fn path(self) -> &'static str {
        match self {
            Self::RunSync => "/runsync",
            Self::Run => "/run",
            Self::Status => "/status",
            Self::Stream => "/stream",
            Self::Cancel => "/cancel",
            Self::PurgeQueue => "/purge-queue",
            Self::OpenAi => "/openai/*",
            Self::Requests => "/requests",
        }
    }
}

/// The effective rate: the higher of the base and running workers × requests per worker.
pub fn effective_rate(base: u64, running_workers: u32, requests_per_worker: u32) -> u64 {
    base.max(u64::from(running_workers) * u64::from(requests_per_worker))
}

#[derive(Debug, Default)]
struct Bucket {
    stamps: VecDeque<Millis>,
    in_flight: u32,
}

type Key = (usize, String, &'static str);

/// Sliding-window limiter.
#[derive(Clone)]
pub struct Limiter {
    clock: Clock,
    buckets: Arc<Mutex<HashMap<Key, Bucket>>>,
}

/// Holds one unit of concurrency until dropped.
pub struct Permit {
    limiter: Option<(Limiter, Key)>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some((limiter, key)) = self.limiter.take()
            && let Some(b) = limiter.buckets.lock().get_mut(&key)
        {
            b.in_flight = b.in_flight.saturating_sub(1);
        }
    }
}

/// Why a request was limited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Limited {
    Rate { limit: u64, retry_after_ms: Millis },
    Concurrency { limit: u32 },
}

impl Limiter {
    pub fn new(clock: Clock) -> Self {
        Self {
            clock,
            buckets: Arc::default(),
        }
    }

    pub fn reset(&self) {
        self.buckets.lock().clear();
    }

    /// Counts one request against `rule` (with `rate` as the effective rate).
    pub fn acquire(
        &self,
        key_index: usize,
        scope: &str,
        op: &'static str,
        rate: u64,
        rule: Rule,
    ) -> Result<Permit, Limited> {
        let now = self.clock.now();
        let key = (key_index, scope.to_string(), op);
        let mut buckets = self.buckets.lock();
        let bucket = buckets.entry(key.clone()).or_default();
        while bucket
            .stamps
            .front()
            .is_some_and(|&t| t + rule.window_ms <= now)
        {
            bucket.stamps.pop_front();
        }
        if bucket.stamps.len() as u64 >= rate {
            let oldest = bucket.stamps.front().copied().unwrap_or(now);
            return Err(Limited::Rate {
                limit: rate,
                retry_after_ms: (oldest + rule.window_ms).saturating_sub(now),
            });
        }
        if let Some(limit) = rule.concurrency
            && bucket.in_flight >= limit
        {
            return Err(Limited::Concurrency { limit });
        }
        bucket.stamps.push_back(now);
        if rule.concurrency.is_none() {
            return Ok(Permit { limiter: None });
        }
        bucket.in_flight += 1;
        drop(buckets);
        Ok(Permit {
            limiter: Some((self.clone(), key)),
        })
    }

    /// Requests counted in the sliding window of a bucket and the emulated milliseconds
    /// until the oldest of them leaves it (0 when none is counted).
    pub fn usage(
        &self,
        key_index: usize,
        scope: &str,
        op: &'static str,
        window_ms: Millis,
    ) -> (u64, Millis) {
        let now = self.clock.now();
        let buckets = self.buckets.lock();
        let Some(bucket) = buckets.get(&(key_index, scope.to_string(), op)) else {
            return (0, 0);
        };
        let live: Vec<Millis> = bucket
            .stamps
            .iter()
            .copied()
            .filter(|&t| t + window_ms > now)
            .collect();
        let reset = live
            .first()
            .map_or(0, |&t| (t + window_ms).saturating_sub(now));
        (live.len() as u64, reset)
    }

    /// Real seconds a client should wait, for `Retry-After`.
    pub fn retry_after_secs(&self, emulated_ms: Millis) -> u64 {
        self.clock.real_duration(emulated_ms).as_secs_f64().ceil() as u64
    }
}

/// The job API's 429.
pub fn job_limited(limiter: &Limiter, limited: Limited, op: JobOp, endpoint: &str) -> ApiError {
    match limited {
        Limited::Rate {
            limit,
            retry_after_ms,
        } => ApiError::too_many(
            format!(
                "rate limit exceeded: at most {limit} {} requests per 10 seconds on endpoint {endpoint}",
                op.path()
            ),
            limiter.retry_after_secs(retry_after_ms),
        ),
        Limited::Concurrency { limit } => ApiError::too_many(
            format!(
                "concurrency limit exceeded: at most {limit} concurrent {} requests on endpoint {endpoint}",
                op.path()
            ),
            1,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_rows() {
        assert_eq!(JobOp::Run.rule().rate, 1000);
        assert_eq!(JobOp::Run.rule().concurrency, Some(200));
        assert_eq!(JobOp::PurgeQueue.rule().concurrency, None);
        assert_eq!(JobOp::Requests.rule().rate, 10);
        assert_eq!(JobOp::Cancel.rule().concurrency, Some(20));
    }

    #[test]
    fn dynamic_rule_takes_the_higher() {
        assert_eq!(effective_rate(1000, 0, 50), 1000);
        assert_eq!(effective_rate(1000, 30, 50), 1500);
    }

    #[test]
    fn window_slides_on_the_emulated_clock() {
        let clock = Clock::new(1.0);
        let limiter = Limiter::new(clock.clone());
        let rule = JobOp::PurgeQueue.rule();
        assert!(limiter.acquire(0, "ep", "purge", 2, rule).is_ok());
        assert!(limiter.acquire(0, "ep", "purge", 2, rule).is_ok());
        let Err(Limited::Rate { limit: 2, .. }) = limiter.acquire(0, "ep", "purge", 2, rule) else {
            panic!("third purge in 10 s must be limited")
        };
        // Other keys and endpoints have their own windows.
        assert!(limiter.acquire(1, "ep", "purge", 2, rule).is_ok());
        assert!(limiter.acquire(0, "other", "purge", 2, rule).is_ok());
        clock.advance(10_000);
        assert!(limiter.acquire(0, "ep", "purge", 2, rule).is_ok());
    }

    #[test]
    fn usage_reports_the_window() {
        let clock = Clock::new(1.0);
        let limiter = Limiter::new(clock.clone());
        let rule = Rule {
            rate: 5,
            window_ms: 60_000,
            concurrency: None,
        };
        assert_eq!(limiter.usage(0, "registry", "d", 60_000), (0, 0));
        limiter.acquire(0, "registry", "d", 5, rule).unwrap();
        clock.advance(10_000);
        limiter.acquire(0, "registry", "d", 5, rule).unwrap();
        let (used, reset) = limiter.usage(0, "registry", "d", 60_000);
        assert_eq!(used, 2);
        assert!((49_000..=50_000).contains(&reset), "{reset}");
        clock.advance(50_000);
        assert_eq!(limiter.usage(0, "registry", "d", 60_000).0, 1);
    }

    #[test]
    fn concurrency_is_released_on_drop() {
        let limiter = Limiter::new(Clock::new(1.0));
        let rule = JobOp::Requests.rule();
        let a = limiter.acquire(0, "ep", "req", 10, rule).unwrap();
        let _b = limiter.acquire(0, "ep", "req", 10, rule).unwrap();
        assert_eq!(
            limiter.acquire(0, "ep", "req", 10, rule).err(),
            Some(Limited::Concurrency { limit: 2 })
        );
        drop(a);
        assert!(limiter.acquire(0, "ep", "req", 10, rule).is_ok());
    }
}
