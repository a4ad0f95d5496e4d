//! Client-side rate limiting and concurrency caps, so that a burst of work is spread out
//! under the platform's limits instead of earning a storm of 429s.
//!
//! The job API's limits are per endpoint and operation (the spec's table); each endpoint id
//! gets its own bucket. REST, GraphQL and the registry have one bucket each, with limits the
//! spec does not give: they are configurable and default to generous values.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use parking_lot::Mutex;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::operation::LimitClass;

/// A platform limit: `count` calls per `per`, and at most `concurrent` in flight.
#[derive(Clone, Debug, PartialEq)]
pub struct RateSpec {
    pub count: u32,
    pub per: Duration,
    pub concurrent: Option<u32>,
}

impl RateSpec {
    pub const fn new(count: u32, per: Duration, concurrent: Option<u32>) -> Self {
        Self {
            count,
            per,
            concurrent,
        }
    }
}

const TEN_S: Duration = Duration::from_secs(10);

/// The limits the client keeps to.
#[derive(Clone, Debug, PartialEq)]
pub struct RateLimits {
    /// Off: no waiting at all (benchmarks, or a server known to have no limits).
    pub enabled: bool,
    /// Fraction of each platform limit the client allows itself (0 < headroom <= 1). Below 1
    /// leaves room for other clients of the same account and for clock differences.
    pub headroom: f64,
    pub job_runsync: RateSpec,
    pub job_run: RateSpec,
    pub job_status: RateSpec,
    pub job_stream: RateSpec,
    pub job_cancel: RateSpec,
    pub job_purge_queue: RateSpec,
    /// `/retry` and `/health`, absent from the spec's table: kept as tight as `/cancel`.
    pub job_other: RateSpec,
    pub rest: RateSpec,
    pub registry: RateSpec,
    pub graphql: RateSpec,
    /// REST v2: a cap on bursts and concurrency only. The platform's own quota comes back
    /// in every answer's `RateLimit` headers, which the client follows per key.
    pub rest_v2: RateSpec,
}

impl Default for RateLimits {
    /// The spec's job API table; REST and GraphQL allow large bursts (the operator creates
    /// many objects at once) and the registry a per-minute window, as its 429 detail says.
    fn default() -> Self {
        Self {
            enabled: true,
            headroom: 0.9,
            job_runsync: RateSpec::new(2000, TEN_S, Some(400)),
            job_run: RateSpec::new(1000, TEN_S, Some(200)),
            job_status: RateSpec::new(2000, TEN_S, Some(400)),
            job_stream: RateSpec::new(2000, TEN_S, Some(400)),
            job_cancel: RateSpec::new(100, TEN_S, Some(20)),
            job_purge_queue: RateSpec::new(2, TEN_S, None),
            job_other: RateSpec::new(100, TEN_S, Some(20)),
            rest: RateSpec::new(5000, TEN_S, Some(64)),
            registry: RateSpec::new(60, Duration::from_secs(60), Some(4)),
            graphql: RateSpec::new(5000, TEN_S, Some(64)),
            rest_v2: RateSpec::new(5000, TEN_S, Some(64)),
        }
    }
}

impl RateLimits {
    /// No client-side limits.
    pub fn unlimited() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    pub fn spec(&self, class: LimitClass) -> &RateSpec {
        match class {
            LimitClass::JobRunSync => &self.job_runsync,
            LimitClass::JobRun => &self.job_run,
            LimitClass::JobStatus => &self.job_status,
            LimitClass::JobStream => &self.job_stream,
            LimitClass::JobCancel => &self.job_cancel,
            LimitClass::JobPurgeQueue => &self.job_purge_queue,
            LimitClass::JobOther => &self.job_other,
            LimitClass::Rest => &self.rest,
            LimitClass::Registry => &self.registry,
            LimitClass::Graphql => &self.graphql,
            LimitClass::RestV2 => &self.rest_v2,
        }
    }
}

/// Turns "at most `count` per `per`" into a GCRA quota that never exceeds it in any window
/// of length `per`, wherever the server's window starts: a burst of a tenth of the budget,
/// the rest spread evenly (with 1 % slack so the last cell falls outside the window).
pub(crate) fn quota_for(spec: &RateSpec, headroom: f64) -> Option<Quota> {
    if spec.count == 0 || spec.per.is_zero() {
        return None;
    }
    let headroom = if headroom.is_finite() {
        headroom.clamp(0.01, 1.0)
    } else {
        1.0
    };
    let count = ((f64::from(spec.count) * headroom).floor() as u32).max(1);
    let burst = (count / 10).max(1);
    let sustained = count - burst;
    let period = if sustained == 0 {
        spec.per.mul_f64(1.01)
    } else {
        spec.per.mul_f64(1.01 / f64::from(sustained))
    };
    Some(Quota::with_period(period)?.allow_burst(NonZeroU32::new(burst)?))
}

struct Bucket {
    rate: Option<DefaultKeyedRateLimiter<String>>,
    concurrent: Option<u32>,
    semaphores: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// Holds while a call is in flight; dropping it frees the concurrency slot.
#[derive(Debug)]
pub(crate) struct Permit {
    _slot: Option<OwnedSemaphorePermit>,
}

/// All buckets, shared by every clone of the client (and every API key it is used with:
/// being conservative costs a little speed, overshooting costs 429s).
pub(crate) struct Limiters {
    buckets: HashMap<LimitClass, Bucket>,
}

const ALL_CLASSES: [LimitClass; 11] = [
    LimitClass::JobRunSync,
    LimitClass::JobRun,
    LimitClass::JobStatus,
    LimitClass::JobStream,
    LimitClass::JobCancel,
    LimitClass::JobPurgeQueue,
    LimitClass::JobOther,
    LimitClass::Rest,
    LimitClass::Registry,
    LimitClass::Graphql,
    LimitClass::RestV2,
];

/// Buckets of endpoints not seen for a while are dropped beyond this many keys.
const KEYS_BEFORE_CLEANUP: usize = 1024;

impl Limiters {
    pub(crate) fn new(limits: &RateLimits) -> Self {
        let buckets = ALL_CLASSES
            .iter()
            .map(|&class| {
                let spec = limits.spec(class);
                let bucket = if limits.enabled {
                    Bucket {
                        rate: quota_for(spec, limits.headroom).map(RateLimiter::keyed),
                        concurrent: spec.concurrent.filter(|c| *c > 0),
                        semaphores: Mutex::new(HashMap::new()),
                    }
                } else {
                    Bucket {
                        rate: None,
                        concurrent: None,
                        semaphores: Mutex::new(HashMap::new()),
                    }
                };
                (class, bucket)
            })
            .collect();
        Self { buckets }
    }

    /// Waits for a concurrency slot, then for the rate limit. The slot is taken first so
    /// that calls released together by the rate limiter cannot pile up behind a full
    /// semaphore and then leave in one burst.
    pub(crate) async fn acquire(&self, class: LimitClass, key: &str) -> Permit {
        let Some(bucket) = self.buckets.get(&class) else {
            return Permit { _slot: None };
        };
        let slot = match bucket.concurrent {
            Some(max) => {
                let sem = {
                    let mut map = bucket.semaphores.lock();
                    if map.len() > KEYS_BEFORE_CLEANUP {
                        map.retain(|_, s| Arc::strong_count(s) > 1);
                    }
                    map.entry(key.to_owned())
                        .or_insert_with(|| Arc::new(Semaphore::new(max as usize)))
                        .clone()
                };
                // The semaphore is never closed, so acquisition cannot fail.
                sem.acquire_owned().await.ok()
            }
            None => None,
        };
        if let Some(rate) = &bucket.rate {
            let key = key.to_owned();
            if rate.len() > KEYS_BEFORE_CLEANUP {
                rate.retain_recent();
            }
            rate.until_key_ready(&key).await;
        }
        Permit { _slot: slot }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;
    use std::collections::VecDeque;

    /// Greedily takes every cell the quota allows for `total`, stepping the fake clock by
    /// 1 ms, and returns the largest number of cells seen in any window of `per`.
    fn max_in_window(spec: &RateSpec, headroom: f64, total: Duration) -> usize {
        let clock = FakeRelativeClock::default();
        let limiter =
            RateLimiter::direct_with_clock(quota_for(spec, headroom).unwrap(), clock.clone());
        let step = Duration::from_millis(1);
        let mut now = Duration::ZERO;
        let mut window: VecDeque<Duration> = VecDeque::new();
        let mut worst = 0;
        while now < total {
            while limiter.check().is_ok() {
                window.push_back(now);
            }
            while window.front().is_some_and(|t| now - *t >= spec.per) {
                window.pop_front();
            }
            worst = worst.max(window.len());
            clock.advance(step);
            now += step;
        }
        worst
    }

    #[test]
    fn no_window_ever_exceeds_the_spec_table() {
        let limits = RateLimits::default();
        for class in ALL_CLASSES.iter().filter(|c| {
            !matches!(
                c,
                LimitClass::Rest | LimitClass::Graphql | LimitClass::Registry | LimitClass::RestV2
            )
        }) {
            let spec = limits.spec(*class);
            let worst = max_in_window(spec, 1.0, Duration::from_secs(35));
            assert!(
                worst <= spec.count as usize,
                "{class:?}: {worst} > {}",
                spec.count
            );
            // And the budget is actually used, not wasted.
            assert!(
                worst as f64 >= f64::from(spec.count) * 0.9 - 1.0,
                "{class:?}: {worst}"
            );
        }
    }

    #[test]
    fn headroom_scales_the_budget() {
        let spec = RateSpec::new(1000, TEN_S, None);
        let worst = max_in_window(&spec, 0.5, Duration::from_secs(25));
        assert!((450..=500).contains(&worst), "{worst}");
    }

    #[test]
    fn zero_limits_mean_no_limiter() {
        assert!(quota_for(&RateSpec::new(0, TEN_S, None), 1.0).is_none());
        assert!(quota_for(&RateSpec::new(5, Duration::ZERO, None), 1.0).is_none());
    }

    #[tokio::test]
    async fn concurrency_is_capped_per_key() {
        let mut limits = RateLimits::unlimited();
        limits.enabled = true;
        limits.job_cancel = RateSpec::new(1_000_000, TEN_S, Some(2));
        let limiters = Limiters::new(&limits);
        let a1 = limiters.acquire(LimitClass::JobCancel, "ep-a").await;
        let _a2 = limiters.acquire(LimitClass::JobCancel, "ep-a").await;
        // Another endpoint has its own slots.
        let _b1 = limiters.acquire(LimitClass::JobCancel, "ep-b").await;
        let third = limiters.acquire(LimitClass::JobCancel, "ep-a");
        tokio::pin!(third);
        assert!(
            tokio::time::timeout(Duration::from_millis(50), &mut third)
                .await
                .is_err(),
            "a third call on ep-a must wait"
        );
        drop(a1);
        tokio::time::timeout(Duration::from_secs(1), third)
            .await
            .expect("slot freed");
    }

    #[tokio::test]
    async fn disabled_limits_never_wait() {
        let limiters = Limiters::new(&RateLimits::unlimited());
        for _ in 0..10_000 {
            let _p = limiters.acquire(LimitClass::JobPurgeQueue, "ep").await;
        }
    }
}
