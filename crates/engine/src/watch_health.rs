//! Whether each watch is connected to the apiserver.
//!
//! - [`Failure`] sorts a failed request by what must follow: a 410 relists at once, anything
//!   else is retried after a short, capped backoff.
//! - [`WatchHealth`] is one watch's connection: counted in `gpucloud_watches_disconnected`
//!   (by kind) while it is not connected, and said in the log when it goes and comes back.
//!
//! Each watch also tells the process's [`crate::apiserver_reach::ApiserverReach`] whether
//! the apiserver answered.

use std::fmt::Display;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::metrics::Metrics;

/// Why a request to the apiserver failed, as it bears on what follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// 410 Gone or Expired: the version asked for is no longer there (etcd compacted it, or
    /// it is older than a restarted apiserver's watch cache). Only a new listing helps, and
    /// it helps at once.
    Expired,
    /// No answer (connection refused or reset, timeout, TLS), or the apiserver could not
    /// serve the request (429, 5xx: its storage is away, or it is starting).
    Unavailable,
    /// The apiserver answered and refused (403, 404, 400…): it is there.
    Refused,
}

impl Failure {
    /// From an HTTP status code the apiserver answered with.
    pub fn of_status(code: u16) -> Self {
        match code {
            410 => Failure::Expired,
            429 | 500..=599 => Failure::Unavailable,
            _ => Failure::Refused,
        }
    }

    /// From a failed call of the Kubernetes client.
    pub fn of(error: &kube::Error) -> Self {
        match error {
            kube::Error::Api(status) => Self::of_status(status.code),
            _ => Failure::Unavailable,
        }
    }

    /// Whether the apiserver answered at all.
    pub fn answered(self) -> bool {
        self != Failure::Unavailable
    }
}

/// One watch's connection, counted in `gpucloud_watches_disconnected` while it is not
/// connected: from its start until its first answer, and from a failed request until one
/// is answered again. Dropped with its watch (a namespace no longer watched, a controller
/// stopped), it counts no more.
pub struct WatchHealth {
    metrics: Arc<Metrics>,
    kind: &'static str,
    resource: String,
    namespace: String,
    /// Since when it is not connected; `None` while connected.
    down_since: Option<Instant>,
    /// Whether a failure was seen since it was last connected (its start is none).
    failed: bool,
}

impl WatchHealth {
    /// A watch about to start, not connected yet.
    pub fn new(metrics: Arc<Metrics>, kind: &'static str, resource: &str, namespace: &str) -> Self {
        metrics.watch_disconnected(kind, 1);
        Self {
            metrics,
            kind,
            resource: resource.to_string(),
            namespace: namespace.to_string(),
            down_since: Some(Instant::now()),
            failed: false,
        }
    }

    /// The apiserver answered the watch's list or watch request.
    pub fn connected(&mut self) {
        self.metrics.apiserver.answered();
        let Some(since) = self.down_since.take() else {
            return;
        };
        self.metrics.watch_disconnected(self.kind, -1);
        if std::mem::take(&mut self.failed) {
            info!(
                kind = self.kind,
                resource = %self.resource,
                namespace = %self.namespace,
                disconnected_s = since.elapsed().as_secs_f64(),
                "watch connected again"
            );
        }
    }

    /// A request of the watch failed; `retry_in` is when it is asked again.
    pub fn failed(&mut self, failure: Failure, error: &dyn Display, retry_in: Duration) {
        if failure.answered() {
            self.metrics.apiserver.answered();
        } else {
            self.metrics.apiserver.unanswered(&self.resource, error);
        }
        if failure == Failure::Expired {
            // Answered: the watch relists at once and is connected if that listing is.
            info!(kind = self.kind, resource = %self.resource, namespace = %self.namespace,
                %error, "watch expired: listing again at once");
            return;
        }
        self.failed = true;
        if self.down_since.is_some() {
            debug!(kind = self.kind, resource = %self.resource, namespace = %self.namespace,
                %error, retry_in_ms = retry_in.as_millis() as u64, "watch still disconnected");
            return;
        }
        self.down_since = Some(Instant::now());
        self.metrics.watch_disconnected(self.kind, 1);
        warn!(kind = self.kind, resource = %self.resource, namespace = %self.namespace,
            %error, retry_in_ms = retry_in.as_millis() as u64, "watch disconnected: retrying");
    }
}

impl Drop for WatchHealth {
    fn drop(&mut self) {
        if self.down_since.is_some() {
            self.metrics.watch_disconnected(self.kind, -1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_410_relists_and_only_no_answer_counts_as_away() {
        assert_eq!(Failure::of_status(410), Failure::Expired);
        for code in [429, 500, 503, 504] {
            assert_eq!(Failure::of_status(code), Failure::Unavailable, "{code}");
        }
        for code in [400, 401, 403, 404, 409] {
            assert_eq!(Failure::of_status(code), Failure::Refused, "{code}");
        }
        let refused = kube::Error::Service("connection refused".into());
        assert_eq!(Failure::of(&refused), Failure::Unavailable);
        assert!(!Failure::Unavailable.answered());
        assert!(Failure::Expired.answered() && Failure::Refused.answered());
    }

    #[tokio::test]
    async fn the_gauge_counts_a_watch_until_it_connects_and_while_it_is_away() {
        let metrics = Arc::new(Metrics::new());
        let count = |m: &Metrics| m.watches_disconnected("NetworkVolume");
        let mut health = WatchHealth::new(metrics.clone(), "NetworkVolume", "NetworkVolume", "a");
        assert_eq!(count(&metrics), 1, "not connected before its first answer");
        health.connected();
        assert_eq!(count(&metrics), 0);
        let refused = "connection refused";
        health.failed(Failure::Unavailable, &refused, Duration::from_millis(200));
        health.failed(Failure::Unavailable, &refused, Duration::from_millis(400));
        assert_eq!(count(&metrics), 1, "one watch, however many failures");
        assert!(metrics.apiserver.unreachable_for().is_some());
        // A 410 is an answer: the apiserver is back, the watch relists.
        health.failed(
            Failure::Expired,
            &"too old resource version",
            Duration::ZERO,
        );
        assert!(metrics.apiserver.unreachable_for().is_none());
        health.connected();
        assert_eq!(count(&metrics), 0);
        health.failed(Failure::Unavailable, &refused, Duration::from_millis(200));
        let other = WatchHealth::new(metrics.clone(), "NetworkVolume", "NetworkVolume", "b");
        assert_eq!(count(&metrics), 2);
        drop(health);
        drop(other);
        assert_eq!(count(&metrics), 0, "a watch that goes counts no more");
    }
}
