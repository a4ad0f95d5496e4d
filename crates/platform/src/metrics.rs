//! Metrics hooks: calls by surface, operation and status; latency; retries; time spent
//! waiting for the client's own rate limiter. The operator registers them in its registry.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::operation::Operation;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    surface: &'static str,
    operation: &'static str,
    /// The HTTP status, or `timeout` / `connect` / `error` when there was no answer.
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OpLabels {
    surface: &'static str,
    operation: &'static str,
}

fn latency_histogram() -> Histogram {
    // 1 ms .. ~65 s: loopback emulator calls up to a long /runsync.
    Histogram::new(exponential_buckets(0.001, 2.0, 17))
}

/// The client's metrics. Cheap to clone (the families are reference counted).
#[derive(Clone, Debug)]
pub struct ClientMetrics {
    calls: Family<CallLabels, Counter>,
    latency: Family<OpLabels, Histogram, fn() -> Histogram>,
    retries: Family<OpLabels, Counter>,
    throttled: Family<OpLabels, Histogram, fn() -> Histogram>,
}

impl Default for ClientMetrics {
    fn default() -> Self {
        Self {
            calls: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            retries: Family::default(),
            throttled: Family::new_with_constructor(latency_histogram),
        }
    }
}

impl ClientMetrics {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the families to `registry` (under the prefix the caller chose, if any).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "platform_calls",
            "Platform API calls (attempts) by surface, operation and HTTP status",
            self.calls.clone(),
        );
        registry.register(
            "platform_call_duration_seconds",
            "Latency of one platform API attempt",
            self.latency.clone(),
        );
        registry.register(
            "platform_retries",
            "Attempts repeated after a retryable failure",
            self.retries.clone(),
        );
        registry.register(
            "platform_throttle_wait_seconds",
            "Time spent waiting for the client-side rate limiter and concurrency cap",
            self.throttled.clone(),
        );
    }

    fn op(op: Operation) -> OpLabels {
        OpLabels {
            surface: op.surface().as_str(),
            operation: op.name(),
        }
    }

    pub(crate) fn observe_call(&self, op: Operation, status: &str, elapsed: Duration) {
        self.calls
            .get_or_create(&CallLabels {
                surface: op.surface().as_str(),
                operation: op.name(),
                status: status.to_owned(),
            })
            .inc();
        self.latency
            .get_or_create(&Self::op(op))
            .observe(elapsed.as_secs_f64());
    }

    pub(crate) fn observe_retry(&self, op: Operation) {
        self.retries.get_or_create(&Self::op(op)).inc();
    }

    pub(crate) fn observe_throttle(&self, op: Operation, waited: Duration) {
        self.throttled
            .get_or_create(&Self::op(op))
            .observe(waited.as_secs_f64());
    }

    /// Attempts of `op` that ended with `status` so far (for tests and the CLI).
    pub fn calls(&self, op: Operation, status: &str) -> u64 {
        self.calls
            .get_or_create(&CallLabels {
                surface: op.surface().as_str(),
                operation: op.name(),
                status: status.to_owned(),
            })
            .get()
    }

    /// Retries of `op` so far.
    pub fn retries(&self, op: Operation) -> u64 {
        self.retries.get_or_create(&Self::op(op)).get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_encodes() {
        let m = ClientMetrics::new();
        m.observe_call(Operation::JobRun, "200", Duration::from_millis(3));
        m.observe_call(Operation::JobRun, "200", Duration::from_millis(4));
        m.observe_call(Operation::JobRun, "timeout", Duration::from_secs(30));
        m.observe_retry(Operation::JobStatus);
        m.observe_throttle(Operation::JobRun, Duration::from_millis(1));
        assert_eq!(m.calls(Operation::JobRun, "200"), 2);
        assert_eq!(m.calls(Operation::JobRun, "timeout"), 1);
        assert_eq!(m.retries(Operation::JobStatus), 1);

        let mut registry = Registry::with_prefix("gpucloud");
        m.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        assert!(
            text.contains(
                r#"gpucloud_platform_calls_total{surface="jobs",operation="jobs.run",status="200"} 2"#
            ),
            "{text}"
        );
        assert!(
            text.contains("gpucloud_platform_call_duration_seconds_bucket"),
            "{text}"
        );
    }
}
