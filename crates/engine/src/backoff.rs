//! Exponential backoff with jitter. How many passes of an object failed in a row is kept in
//! its record (`engine::records`), which a pass that works clears; this is the delay that
//! count gives.

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

    /// How long to wait after the `failures`-th failure in a row: the base delay, jittered;
    /// a longer wait the platform asked for (Retry-After) wins.
    pub fn delay_after(&self, failures: u32, at_least: Option<Duration>) -> Duration {
        let delay = self.jittered(self.base_delay(failures));
        at_least.map_or(delay, |min| delay.max(min))
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
    fn doubles_up_to_the_cap() {
        let b = exact();
        let delays: Vec<u64> = (1..=8).map(|n| b.delay_after(n, None).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60]);
    }

    #[test]
    fn retry_after_is_honoured() {
        let b = exact();
        assert_eq!(
            b.delay_after(1, Some(Duration::from_secs(30))).as_secs(),
            30
        );
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
