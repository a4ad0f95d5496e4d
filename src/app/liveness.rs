//! How long a reconcile may run before the liveness probe counts the process as stalled
//! (`--liveness-stall-timeout`), when the flag does not say.
//!
//! A pass makes its platform calls one after another, and the client bounds each call (see
//! `gpucloud_platform::transport`): at most `max_retries + 1` attempts, each limited to
//! `--platform-timeout` after a wait of at most `max_retry_after` for the platform's
//! published quota, with waits between attempts of at most `max_retry_after` (a
//! `Retry-After`) or `max_delay` (the backoff). A healthy operator on a slow platform
//! can meet that worst case, so the limit is twice it: a pass whose two calls both went
//! the whole way still ends before it. At the default 30 s that is 17 minutes; a pass of a
//! healthy operator takes seconds.

use std::time::Duration;

use gpucloud_platform::RetryConfig;

/// Pure: the longest one platform call can take with `platform_timeout` per attempt and
/// the client's retry policy `retry`.
pub fn longest_platform_call(platform_timeout: Duration, retry: &RetryConfig) -> Duration {
    let attempts = u32::try_from(retry.max_retries + 1).unwrap_or(u32::MAX);
    let retries = attempts - 1;
    let between = retry.max_retry_after.max(retry.max_delay);
    (platform_timeout + retry.max_retry_after) * attempts + between * retries
}

/// Pure: the stall limit: `given`, else twice [`longest_platform_call`] with the client's
/// default retry policy.
pub fn stall_limit(given: Option<Duration>, platform_timeout: Duration) -> Duration {
    given.unwrap_or_else(|| longest_platform_call(platform_timeout, &RetryConfig::default()) * 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_call_at_its_worst_is_every_attempt_waited_for_and_timed_out() {
        let retry = RetryConfig::default();
        // 6 attempts of (30 s quota wait + 30 s), 5 waits of 30 s between them.
        assert_eq!(
            longest_platform_call(Duration::from_secs(30), &retry),
            Duration::from_secs(6 * 60 + 5 * 30)
        );
    }

    #[test]
    fn the_default_limit_outlasts_two_calls_at_their_worst_and_grows_with_the_timeout() {
        let at_30s = stall_limit(None, Duration::from_secs(30));
        assert_eq!(at_30s, Duration::from_secs(17 * 60));
        let retry = RetryConfig::default();
        assert!(at_30s >= longest_platform_call(Duration::from_secs(30), &retry) * 2);
        let at_5m = stall_limit(None, Duration::from_secs(300));
        assert!(at_5m > at_30s);
        assert!(at_5m >= longest_platform_call(Duration::from_secs(300), &retry) * 2);
    }

    #[test]
    fn a_given_limit_wins() {
        assert_eq!(
            stall_limit(Some(Duration::from_secs(3)), Duration::from_secs(600)),
            Duration::from_secs(3)
        );
    }
}
