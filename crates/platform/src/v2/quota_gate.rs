//! The quota windows of every API key the client speaks with, shared by all its clones:
//! v2 calls wait here for a spent window's reset instead of earning a 429.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use parking_lot::Mutex;
use reqwest::header::HeaderMap;
use tokio::sync::Notify;
use tokio::time::Instant;

use url::Url;

use super::ratelimit_headers::{
    Admission, QuotaState, RATE_LIMIT, RATE_LIMIT_POLICY, WindowPolicy, WindowState,
    parse_rate_limit, parse_rate_limit_policy,
};

/// Entries of keys not used for a while are dropped beyond this many.
const KEYS_BEFORE_CLEANUP: usize = 256;
/// Calls waiting for a first answer look again at least this often (a wake-up between
/// their check and their wait is not lost for longer).
const RECHECK: Duration = Duration::from_millis(50);

/// The keys of [`KeyId`]'s hash, drawn once per process: an id is only compared with
/// another of the same process, and a hash of an API key under keys nobody else knows
/// tells nothing of the key.
static KEY_ID_KEYS: LazyLock<RandomState> = LazyLock::new(RandomState::new);

/// Identifies an API key without holding it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct KeyId(u64);

impl KeyId {
    pub(crate) fn of(key: &str) -> Self {
        Self(KEY_ID_KEYS.hash_one(key))
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

    /// Takes in an answer's `RateLimit` windows as [`read_headers`] gives them (and a
    /// 429's delay). Call after the pass of the call is dropped, so that it no longer
    /// counts as in flight.
    pub(crate) fn observe(
        &self,
        key: KeyId,
        (states, policies): &Quota,
        retry_after: Option<Duration>,
    ) {
        let now = Instant::now();
        {
            let mut keys = self.keys.lock();
            let state = keys.entry(key).or_default();
            state.observe(now, states, policies);
            if let Some(delay) = retry_after {
                state.block(now, delay);
            }
        }
        self.answered.notify_waiters();
    }
}

/// The windows an answer's `RateLimit` and `RateLimit-Policy` headers describe.
pub(crate) type Quota = (Vec<WindowState>, Vec<WindowPolicy>);

/// Reads an answer's `RateLimit` and `RateLimit-Policy` headers (each may come as
/// several header lines).
pub(crate) fn read_headers(headers: &HeaderMap) -> Quota {
    let text = |name: &str| {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect::<Vec<_>>()
            .join(", ")
    };
    (
        parse_rate_limit(&text(RATE_LIMIT)),
        parse_rate_limit_policy(&text(RATE_LIMIT_POLICY)),
    )
}

/// The route group of a REST v2 call, which the platform's quota counts apart: the first
/// segment of `url`'s path below the v2 base `api` (`{api}/pods/abc/stop` is `pods`),
/// `other` for a URL outside it.
pub(crate) fn route_group<'a>(api: &Url, url: &'a Url) -> &'a str {
    let base = api.path().trim_end_matches('/');
    url.path()
        .strip_prefix(base)
        .and_then(|rest| rest.strip_prefix('/'))
        .and_then(|rest| rest.split('/').next())
        .filter(|group| !group.is_empty())
        .unwrap_or("other")
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn the_route_group_is_the_segment_below_the_base() {
        let api = Url::parse("https://api.example.com/v2").unwrap();
        let group = |u: &str| route_group(&api, &Url::parse(u).unwrap()).to_owned();
        assert_eq!(group("https://api.example.com/v2/pods"), "pods");
        assert_eq!(
            group("https://api.example.com/v2/pods/abc/stop?x=1"),
            "pods"
        );
        assert_eq!(
            group("https://api.example.com/v2/network-volumes/v"),
            "network-volumes"
        );
        assert_eq!(group("https://api.example.com/v2"), "other");
        assert_eq!(group("https://api.example.com/graphql"), "other");
        let under = Url::parse("http://127.0.0.1:8080/prefix/v2/").unwrap();
        let url = Url::parse("http://127.0.0.1:8080/prefix/v2/catalog/gpus").unwrap();
        assert_eq!(route_group(&under, &url), "catalog");
    }

    #[test]
    fn headers_on_several_lines_are_read_as_one_list() {
        let mut h = HeaderMap::new();
        h.append(RATE_LIMIT, HeaderValue::from_static(r#""minute";r=5;t=10"#));
        h.append(RATE_LIMIT, HeaderValue::from_static(r#""hour";r=50;t=100"#));
        h.append(
            RATE_LIMIT_POLICY,
            HeaderValue::from_static(r#""minute";q=10;w=60"#),
        );
        let (states, policies) = read_headers(&h);
        assert_eq!(states.len(), 2);
        assert_eq!(policies.len(), 1);
        assert!(read_headers(&HeaderMap::new()).0.is_empty());
    }
}
