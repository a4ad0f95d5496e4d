//! The REST v2 quota as the platform keeps it: per key and per route group (`pods`,
//! `catalog`, `billing`, ...), fixed minute, hour and day windows on the emulator clock.
//! The world keeps the counts; the v2 surface's middleware (`v2::limits`) asks and answers.
//!
//! The quota is the configured one (`EmulatorConfig::v2_quota`) until a test or a benchmark
//! sets another through the admin surface (`POST /_emulator/v2-quota`,
//! `AdminClient::set_v2_quota`): creating 100,000 volumes at the default 600 a minute would
//! take most of a week. A reset brings the configured quota back.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::clock::{Clock, Millis};

/// Requests allowed per window, per key and route group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    pub minute: u64,
    pub hour: u64,
    pub day: u64,
}

impl Default for Quota {
    /// Roomy enough for a schema-driven test run against one group, small enough that a test
    /// can reach it.
    fn default() -> Self {
        Self {
            minute: 600,
            hour: 20_000,
            day: 200_000,
        }
    }
}

const WINDOWS: [(&str, Millis); 3] = [("minute", 60_000), ("hour", 3_600_000), ("day", 86_400_000)];

#[derive(Debug, Default, Clone, Copy)]
struct Window {
    index: u64,
    used: u64,
}

/// What the limiter decided for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// `RateLimit` header value.
    pub remaining: String,
    /// `RateLimit-Policy` header value.
    pub policy: String,
    /// Real seconds to wait, when the request is over a quota.
    pub retry_after: Option<u64>,
}

/// Fixed-window counters.
#[derive(Debug)]
pub struct V2Limiter {
    clock: Clock,
    /// The quota of the configuration, which a reset brings back.
    configured: Quota,
    /// The quota in force, behind the counters' lock: a change applies to the next request.
    counters: Mutex<Counters>,
}

#[derive(Debug)]
struct Counters {
    quota: Quota,
    windows: HashMap<(usize, String), [Window; 3]>,
}

impl V2Limiter {
    pub fn new(clock: Clock, quota: Quota) -> Self {
        Self {
            clock,
            configured: quota,
            counters: Mutex::new(Counters {
                quota,
                windows: HashMap::new(),
            }),
        }
    }

    /// The quota in force.
    pub fn quota(&self) -> Quota {
        self.counters.lock().quota
    }

    /// Puts `quota` in force from the next request on; what each window used so far still
    /// counts against it.
    pub fn set_quota(&self, quota: Quota) {
        self.counters.lock().quota = quota;
    }

    /// Forgets every count and brings the configured quota back.
    pub fn reset(&self) {
        let mut counters = self.counters.lock();
        counters.windows.clear();
        counters.quota = self.configured;
    }

    /// Counts one request of key `key_index` to `group`, unless a window is exhausted.
    pub fn take(&self, key_index: usize, group: &str) -> Decision {
        let now = self.clock.now();
        let mut counters = self.counters.lock();
        let quota = counters.quota;
        let quotas = [quota.minute, quota.hour, quota.day];
        let windows = counters
            .windows
            .entry((key_index, group.to_string()))
            .or_insert_with(|| [Window::default(); 3]);
        for (w, (_, len)) in windows.iter_mut().zip(WINDOWS) {
            let index = now / len;
            if w.index != index {
                *w = Window { index, used: 0 };
            }
        }
        let reset_in = |len: Millis| -> u64 {
            let ms = len - now % len;
            self.clock.real_duration(ms).as_secs_f64().ceil() as u64
        };
        let over: Vec<usize> = (0..3).filter(|&i| windows[i].used >= quotas[i]).collect();
        let retry_after = over.iter().map(|&i| reset_in(WINDOWS[i].1).max(1)).max();
        if retry_after.is_none() {
            for w in windows.iter_mut() {
                w.used += 1;
            }
        }
        let remaining = (0..3)
            .map(|i| {
                format!(
                    "\"{}\";r={};t={}",
                    WINDOWS[i].0,
                    quotas[i].saturating_sub(windows[i].used),
                    reset_in(WINDOWS[i].1)
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        // Like `t` and `Retry-After`, the window length is told in real seconds: under a
        // fast clock a caller must be able to pace itself by its own clock.
        let policy = (0..3)
            .map(|i| {
                format!(
                    "\"{}\";q={};w={}",
                    WINDOWS[i].0,
                    quotas[i],
                    (self.clock.real_duration(WINDOWS[i].1).as_secs_f64().ceil() as u64).max(1)
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        Decision {
            remaining,
            policy,
            retry_after,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(minute: u64) -> (Clock, V2Limiter) {
        let clock = Clock::new(1.0);
        let l = V2Limiter::new(
            clock.clone(),
            Quota {
                minute,
                hour: 100,
                day: 1000,
            },
        );
        (clock, l)
    }

    #[test]
    fn headers_count_down_and_reset_with_the_window() {
        let (clock, l) = limiter(2);
        let d = l.take(0, "pods");
        assert!(d.retry_after.is_none());
        assert!(
            d.remaining.starts_with("\"minute\";r=1;t="),
            "{}",
            d.remaining
        );
        assert!(d.remaining.contains("\"hour\";r=99;"), "{}", d.remaining);
        assert_eq!(
            d.policy,
            "\"minute\";q=2;w=60, \"hour\";q=100;w=3600, \"day\";q=1000;w=86400"
        );
        assert!(l.take(0, "pods").retry_after.is_none());
        let over = l.take(0, "pods");
        let wait = over.retry_after.expect("third call in a minute is over");
        assert!((1..=60).contains(&wait), "{wait}");
        assert!(over.remaining.starts_with("\"minute\";r=0;"));
        // Refused calls are not counted against the longer windows.
        assert!(
            over.remaining.contains("\"hour\";r=98;"),
            "{}",
            over.remaining
        );
        // Other groups and keys have their own counters.
        assert!(l.take(0, "catalog").retry_after.is_none());
        assert!(l.take(1, "pods").retry_after.is_none());
        clock.advance(60_000);
        assert!(l.take(0, "pods").retry_after.is_none());
        l.reset();
        assert!(l.take(0, "pods").remaining.starts_with("\"minute\";r=1;"));
    }

    #[test]
    fn a_quota_set_while_running_applies_to_the_next_request_until_a_reset() {
        let (_clock, l) = limiter(1);
        assert!(l.take(0, "network-volumes").retry_after.is_none());
        assert!(l.take(0, "network-volumes").retry_after.is_some());
        let lifted = Quota {
            minute: 1_000_000,
            hour: 1_000_000,
            day: 1_000_000,
        };
        l.set_quota(lifted);
        assert_eq!(l.quota(), lifted);
        let d = l.take(0, "network-volumes");
        assert!(d.retry_after.is_none(), "{d:?}");
        // The call refused before the change was not counted; the first one was.
        assert!(d.remaining.starts_with("\"minute\";r=999998;"), "{d:?}");
        assert!(d.policy.starts_with("\"minute\";q=1000000;"), "{d:?}");
        l.reset();
        assert_eq!(l.quota().minute, 1);
        assert!(l.take(0, "network-volumes").retry_after.is_none());
        assert!(l.take(0, "network-volumes").retry_after.is_some());
    }
}
