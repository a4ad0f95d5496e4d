//! The quota windows of every API key the client speaks with, shared by all its clones:
//! v2 calls wait here for a spent window's reset instead of earning a 429.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use reqwest::header::HeaderMap;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::ratelimit_headers::{
    Admission, QuotaState, RATE_LIMIT, RATE_LIMIT_POLICY, parse_rate_limit, parse_rate_limit_policy,
};

/// Entries of keys not used for a while are dropped beyond this many.
const KEYS_BEFORE_CLEANUP: usize = 256;
/// Calls waiting for a first answer look again at least this often (a wake-up between
/// their check and their wait is not lost for longer).
const RECHECK: Duration = Duration::from_millis(50);

/// Identifies an API key without holding it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct KeyId(u64);

impl KeyId {
    pub(crate) fn of(key: &str) -> Self {
        let mut h = DefaultHasher::new();
        key.hash(&mut h);
        Self(h.finish())
    }
}

#[derive(Default)]
pub(crate) struct QuotaGate {
    keys: Mutex<HashMap<KeyId, QuotaState>>,
    /// Wakes calls waiting for an answer.
    answered: Notify,
}

/// A call admitted through the gate; dropping it marks the call ended.
pub(crate) struct Pass {
    gate: Arc<QuotaGate>,
    key: KeyId,
}

impl Drop for Pass {
    fn drop(&mut self) {
        if let Some(state) = self.gate.keys.lock().get_mut(&self.key) {
            state.finish();
        }
        self.gate.answered.notify_waiters();
    }
}

impl QuotaGate {
    /// Waits until `key` may make a call. A wait longer than `max_wait` is not made: the
    /// error says how long, so the caller can come back then.
    pub(crate) async fn admit(
        self: &Arc<Self>,
        key: KeyId,
        max_wait: Duration,
    ) -> Result<Pass, Duration> {
        loop {
            let now = Instant::now();
            let decision = {
                let mut keys = self.keys.lock();
                if keys.len() > KEYS_BEFORE_CLEANUP {
                    keys.retain(|_, s| !s.is_idle(now));
                }
                keys.entry(key).or_default().admit(now)
            };
            match decision {
                Admission::Go => {
                    return Ok(Pass {
                        gate: self.clone(),
                        key,
                    });
                }
                Admission::WaitForAnswer => {
                    let _ = tokio::time::timeout(RECHECK, self.answered.notified()).await;
                }
                Admission::WaitUntil(until) => {
                    let wait = until.saturating_duration_since(now);
                    if wait > max_wait {
                        return Err(wait);
                    }
                    tracing::debug!(
                        wait_ms = wait.as_millis() as u64,
                        "platform quota spent, waiting for the window to reset"
                    );
                    tokio::time::sleep_until(until).await;
                }
            }
        }
    }

    /// Takes in an answer's `RateLimit` headers (and a 429's delay). Call after the pass
    /// of the call is dropped, so that it no longer counts as in flight.
    pub(crate) fn observe(&self, key: KeyId, headers: &HeaderMap, retry_after: Option<Duration>) {
        let text = |name: &str| {
            headers
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let states = parse_rate_limit(&text(RATE_LIMIT));
        let policies = parse_rate_limit_policy(&text(RATE_LIMIT_POLICY));
        let now = Instant::now();
        {
            let mut keys = self.keys.lock();
            let state = keys.entry(key).or_default();
            state.observe(now, &states, &policies);
            if let Some(delay) = retry_after {
                state.block(now, delay);
            }
        }
        self.answered.notify_waiters();
    }
}
