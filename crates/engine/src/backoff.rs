//! Per-object exponential backoff with jitter that resets on success.
//!
//! kube-runtime's `error_policy` never hears of successes, so the attempt counts live
//! here, keyed by object, and the reconcile clears an object's count when a pass works.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use rand::Rng;

/// Bounds of the backoff.
#[derive(Clone, Copy, Debug)]
pub struct BackoffPolicy {
    pub initial: Duration,
    pub max: Duration,
    /// Fraction of the delay added or removed at random, so objects that failed together
    /// do not retry together.
    pub jitter: f64,
}

impl Default for BackoffPolicy {
    fn default() -> Self {
        Self {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(300),
            jitter: 0.2,
        }
    }
}

impl BackoffPolicy {
    /// The delay before attempt `failures + 1`, without jitter.
    pub fn base_delay(&self, failures: u32) -> Duration {
        let factor = 2u32.saturating_pow(failures.saturating_sub(1).min(20));
        self.initial.saturating_mul(factor).min(self.max)
    }

    /// `delay` moved by up to `jitter` either way.
    pub fn jittered(&self, delay: Duration) -> Duration {
        if self.jitter <= 0.0 {
            return delay;
        }
        let spread = rand::rng().random_range(-self.jitter..=self.jitter);
        delay.mul_f64(1.0 + spread)
    }
}

/// `d` moved by up to `fraction` either way: a periodic requeue of many objects spread out.
pub fn jitter(d: Duration, fraction: f64) -> Duration {
    BackoffPolicy {
        initial: d,
        max: d,
        jitter: fraction,
    }
    .jittered(d)
}

/// Failure counts by object.
pub struct Backoffs<K> {
    policy: BackoffPolicy,
    failures: parking_lot::Mutex<HashMap<K, u32>>,
}

impl<K: Eq + Hash + Clone> Backoffs<K> {
    pub fn new(policy: BackoffPolicy) -> Self {
        Self {
            policy,
            failures: parking_lot::Mutex::new(HashMap::new()),
        }
    }

    /// Records a failure of `key` and returns how long to wait before the next try. A
    /// longer wait the platform asked for (Retry-After) wins.
    pub fn fail(&self, key: &K, at_least: Option<Duration>) -> Duration {
        let failures = {
            let mut map = self.failures.lock();
            let n = map.entry(key.clone()).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        let delay = self.policy.jittered(self.policy.base_delay(failures));
        at_least.map_or(delay, |min| delay.max(min))
    }

    /// Forgets the failures of `key` after a pass that worked.
    pub fn succeed(&self, key: &K) {
        self.failures.lock().remove(key);
    }

    pub fn failures(&self, key: &K) -> u32 {
        self.failures.lock().get(key).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact() -> BackoffPolicy {
        BackoffPolicy {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(60),
            jitter: 0.0,
        }
    }

    #[test]
    fn doubles_up_to_the_cap_and_resets() {
        let b = Backoffs::new(exact());
        let delays: Vec<u64> = (0..8).map(|_| b.fail(&"a", None).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60]);
        assert_eq!(
            b.fail(&"other", None).as_secs(),
            1,
            "objects back off independently"
        );
        b.succeed(&"a");
        assert_eq!(b.failures(&"a"), 0);
        assert_eq!(b.fail(&"a", None).as_secs(), 1);
    }

    #[test]
    fn retry_after_is_honoured() {
        let b = Backoffs::new(exact());
        assert_eq!(b.fail(&"a", Some(Duration::from_secs(30))).as_secs(), 30);
    }

    #[test]
    fn jitter_stays_within_bounds() {
        let policy = BackoffPolicy {
            jitter: 0.2,
            ..exact()
        };
        for _ in 0..1000 {
            let d = policy.jittered(Duration::from_secs(10)).as_secs_f64();
            assert!((8.0..=12.0).contains(&d), "{d}");
        }
    }
}
