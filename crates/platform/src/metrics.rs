//! Metrics hooks: calls by surface, operation and status; latency; retries; time spent
//! waiting for the client's own rate limiter; what the platform's published quota has left.
//! The operator registers them in its registry.

use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::operation::Operation;
use super::v2::quota_gate::Quota;

/// A metric whose `# HELP` and `# TYPE` lines are served even while it has no series (a
/// family nothing has touched yet): `/metrics` then says every metric it can serve, which
/// is what a dashboard or an alert can be checked against. Register families wrapped in it.
#[derive(Clone, Debug)]
pub struct Described<M>(pub M);

impl<M: EncodeMetric> EncodeMetric for Described<M> {
    fn encode(&self, encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        self.0.encode(encoder)
    }

    fn metric_type(&self) -> prometheus_client::metrics::MetricType {
        self.0.metric_type()
    }

    fn is_empty(&self) -> bool {
        false
    }
}

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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QuotaLabels {
    /// The REST v2 route group the platform counts apart (`pods`, `catalog`, ...).
    group: String,
    /// The quota window (`minute`, `hour`, `day`).
    window: String,
}

/// A label value taken from an answer: short and plain, or not at all (a platform that
/// names its windows otherwise cannot fill the registry with series).
fn plain(value: &str) -> Option<String> {
    (!value.is_empty()
        && value.len() <= 32
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
    .then(|| value.to_owned())
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
    /// Calls left in each quota window, as the last REST v2 answer of its group said.
    quota_remaining: Family<QuotaLabels, Gauge>,
    /// The same as a fraction of the window's quota (when the policy header gives it).
    quota_ratio: Family<QuotaLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
}

impl Default for ClientMetrics {
    fn default() -> Self {
        Self {
            calls: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            retries: Family::default(),
            throttled: Family::new_with_constructor(latency_histogram),
            quota_remaining: Family::default(),
            quota_ratio: Family::default(),
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
            Described(self.calls.clone()),
        );
        registry.register(
            "platform_call_duration_seconds",
            "Latency of one platform API attempt",
            Described(self.latency.clone()),
        );
        registry.register(
            "platform_retries",
            "Attempts repeated after a retryable failure",
            Described(self.retries.clone()),
        );
        registry.register(
            "platform_throttle_wait_seconds",
            "Time spent waiting for the client-side rate limiter and concurrency cap",
            Described(self.throttled.clone()),
        );
        registry.register(
            "platform_ratelimit_remaining",
            "Calls left in a quota window of the platform, by REST v2 route group and window, as the last answer's RateLimit header said",
            Described(self.quota_remaining.clone()),
        );
        registry.register(
            "platform_ratelimit_remaining_ratio",
            "Calls left in a quota window as a fraction of its quota (RateLimit-Policy), by REST v2 route group and window",
            Described(self.quota_ratio.clone()),
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

    /// Records what an answer of route group `group` said of its quota windows.
    pub(crate) fn observe_quota(&self, group: &str, (states, policies): &Quota) {
        let Some(group) = plain(group) else { return };
        for state in states {
            let Some(window) = plain(&state.name) else {
                continue;
            };
            let labels = QuotaLabels {
                group: group.clone(),
                window,
            };
            self.quota_remaining
                .get_or_create(&labels)
                .set(i64::try_from(state.remaining).unwrap_or(i64::MAX));
            let quota = policies
                .iter()
                .find(|p| p.name == state.name)
                .map(|p| p.quota)
                .filter(|q| *q > 0);
            if let Some(quota) = quota {
                let ratio = (state.remaining as f64 / quota as f64).min(1.0);
                self.quota_ratio.get_or_create(&labels).set(ratio);
            }
        }
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

    #[test]
    fn families_without_series_are_described() {
        let mut registry = Registry::with_prefix("gpucloud");
        ClientMetrics::new().register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            "# TYPE gpucloud_platform_calls counter",
            "# TYPE gpucloud_platform_call_duration_seconds histogram",
            "# TYPE gpucloud_platform_ratelimit_remaining_ratio gauge",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(
            !text.contains("gpucloud_platform_calls_total{"),
            "no series: {text}"
        );
    }

    #[test]
    fn the_quota_left_is_a_gauge_by_group_and_window() {
        use crate::v2::ratelimit_headers::{parse_rate_limit, parse_rate_limit_policy};
        let m = ClientMetrics::new();
        let mut registry = Registry::with_prefix("gpucloud");
        m.register(&mut registry);
        let quota = |r: &str, p: &str| (parse_rate_limit(r), parse_rate_limit_policy(p));
        m.observe_quota(
            "pods",
            &quota(
                r#""minute";r=15;t=12, "hour";r=2800;t=1812, "bad name";r=1;t=1"#,
                r#""minute";q=60;w=60"#,
            ),
        );
        m.observe_quota(
            "catalog",
            &quota(r#""minute";r=0;t=3"#, r#""minute";q=60;w=60"#),
        );
        m.observe_quota("pods/x", &quota(r#""minute";r=1;t=3"#, ""));
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            r#"gpucloud_platform_ratelimit_remaining{group="pods",window="minute"} 15"#,
            r#"gpucloud_platform_ratelimit_remaining{group="pods",window="hour"} 2800"#,
            r#"gpucloud_platform_ratelimit_remaining_ratio{group="pods",window="minute"} 0.25"#,
            r#"gpucloud_platform_ratelimit_remaining_ratio{group="catalog",window="minute"} 0.0"#,
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        assert!(
            !text.contains(
                r#"gpucloud_platform_ratelimit_remaining_ratio{group="pods",window="hour"}"#
            ),
            "no policy, no ratio: {text}"
        );
        assert!(
            !text.contains("bad name") && !text.contains("pods/x"),
            "{text}"
        );
    }
}
