//! Prometheus metrics of the operator, served on `/metrics`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use gpucloud_platform::ClientMetrics;
use gpucloud_platform::metrics::Described;

use super::apiserver_reach::ApiserverReach;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    kind: &'static str,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

/// One watch: the kind whose controller runs it (empty for the process's Namespace
/// watch), what it lists, and its namespace (empty when it covers every namespace).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WatchLabels {
    kind: String,
    resource: String,
    namespace: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GuardrailLabels {
    guardrail: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReadyLabels {
    kind: &'static str,
    ready: &'static str,
}

/// What the metrics keep of one object: its Ready and Stalled conditions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Health {
    /// Ready is True.
    pub ready: bool,
    /// Stalled is True: only a change of spec (or of something outside) helps.
    pub stalled: bool,
}

/// The counts of one kind's objects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    ready: i64,
    not_ready: i64,
    stalled: i64,
}

/// Ready and Stalled by object, and the counts by kind kept along: every reconcile records
/// its object's conditions, so neither a recount of every object nor a copy of every
/// object's name per call (both grow with the number of objects) is affordable.
#[derive(Debug, Default)]
struct ReadyTally {
    /// Health by a hash of kind and key: the key itself is in the watch cache already; a
    /// second copy here would cost its length again for every object (16 bytes an entry).
    by_object: HashMap<u64, Health>,
    counts: HashMap<&'static str, Counts>,
}

impl ReadyTally {
    fn key_hash(kind: &str, key: &str) -> u64 {
        crate::fingerprint::of((kind, key))
    }

    /// Records `health` (`None`: gone) and returns the kind's counts.
    fn set(&mut self, kind: &'static str, key: &str, health: Option<Health>) -> Counts {
        let entry = Self::key_hash(kind, key);
        let before = match health {
            Some(h) => self.by_object.insert(entry, h),
            None => self.by_object.remove(&entry),
        };
        let counts = self.counts.entry(kind).or_default();
        let mut count = |h: Health, by: i64| {
            if h.ready {
                counts.ready += by
            } else {
                counts.not_ready += by
            }
            if h.stalled {
                counts.stalled += by
            }
        };
        if let Some(h) = before {
            count(h, -1);
        }
        if let Some(h) = health {
            count(h, 1);
        }
        *counts
    }
}

fn duration_histogram() -> Histogram {
    // 1 ms .. ~33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// The gauges of what the engine keeps per object, registered in `registry`.
fn register_remembered(
    registry: &mut Registry,
) -> (Family<KindLabels, Gauge>, Family<KindLabels, Gauge>) {
    let engine_records = Family::<KindLabels, Gauge>::default();
    registry.register(
        "engine_records",
        "Objects the engine keeps a record of between passes (its own writes not yet seen back, failures in a row, a create whose outcome is unknown), by kind; 0 once every object has converged or gone",
        Described(engine_records.clone()),
    );
    let resync_scheduled = Family::<KindLabels, Gauge>::default();
    registry.register(
        "resync_scheduled",
        "Converged objects waiting for their next drift check, by kind",
        Described(resync_scheduled.clone()),
    );
    (engine_records, resync_scheduled)
}

/// A gauge of a figure with a fraction, by kind.
type FloatFamily = Family<KindLabels, Gauge<f64, std::sync::atomic::AtomicU64>>;

/// The orphan census's gauges, registered in `registry`.
fn register_orphans(registry: &mut Registry) -> (Family<KindLabels, Gauge>, FloatFamily) {
    let orphans = Family::<KindLabels, Gauge>::default();
    registry.register(
        "orphans",
        "Remote objects that carry the operator's marker but have no object in the cluster, by kind",
        Described(orphans.clone()),
    );
    let orphan_cost = Family::<KindLabels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
    registry.register(
        "orphan_cost_per_hour",
        "What the orphans of a kind cost per hour, where the platform reports it (pods)",
        Described(orphan_cost.clone()),
    );
    (orphans, orphan_cost)
}

/// Everything the operator measures.
pub struct Metrics {
    pub registry: parking_lot::Mutex<Registry>,
    reconciles: Family<ResultLabels, Counter>,
    reconcile_duration: Family<KindLabels, Histogram, fn() -> Histogram>,
    managed: Family<ReadyLabels, Gauge>,
    stalled: Family<KindLabels, Gauge>,
    /// 1 while this process leads (or runs without leader election).
    leader: Gauge,
    snapshot_age: Family<KindLabels, Gauge<f64, std::sync::atomic::AtomicU64>>,
    claimed_elsewhere: Family<KindLabels, Counter>,
    /// Pods stopped by a cost guardrail (schedule, maxRuntime, idleStop).
    guardrail_stops: Family<GuardrailLabels, Counter>,
    /// Remote objects with the operator's marker and no object, by kind.
    orphans: Family<KindLabels, Gauge>,
    orphan_cost: FloatFamily,
    /// Log streams held open to the platform (a starting pod's system log), by kind.
    log_streams: Family<KindLabels, Gauge>,
    /// Listings each watch made: its first, and one per relisting after it fell behind.
    watch_listings: Family<WatchLabels, Counter>,
    /// Namespaces `--namespace-selector` selects right now.
    watched_namespaces: Gauge,
    /// Watches not connected to the apiserver right now, by the kind whose controller runs
    /// them (see [`crate::watch_health::WatchHealth`]).
    watches_disconnected: Family<KindLabels, Gauge>,
    /// What this process has seen of the apiserver: whether, and since when, it answers.
    pub apiserver: Arc<ApiserverReach>,
    /// Ready and Stalled by kind and object, to keep the managed and stalled gauges exact.
    ready_by_object: parking_lot::Mutex<ReadyTally>,
    engine_records: Family<KindLabels, Gauge>,
    resync_scheduled: Family<KindLabels, Gauge>,
    pub platform: ClientMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let platform = ClientMetrics::new();
        let mut registry = Registry::with_prefix("gpucloud");
        let reconciles = Family::<ResultLabels, Counter>::default();
        let reconcile_duration =
            Family::<KindLabels, Histogram, fn() -> Histogram>::new_with_constructor(
                duration_histogram,
            );
        let managed = Family::<ReadyLabels, Gauge>::default();
        let stalled = Family::<KindLabels, Gauge>::default();
        let leader = Gauge::default();
        let snapshot_age =
            Family::<KindLabels, Gauge<f64, std::sync::atomic::AtomicU64>>::default();
        registry.register(
            "reconciles",
            "Reconciles by kind and result",
            Described(reconciles.clone()),
        );
        registry.register(
            "reconcile_duration_seconds",
            "Time one reconcile took",
            Described(reconcile_duration.clone()),
        );
        registry.register(
            "managed_objects",
            "Managed objects by kind and Ready",
            Described(managed.clone()),
        );
        registry.register(
            "stalled_objects",
            "Managed objects whose Stalled condition is True, by kind",
            Described(stalled.clone()),
        );
        registry.register(
            "leader",
            "1 while this process holds the leader-election Lease or runs without leader election, else 0",
            leader.clone(),
        );
        registry.register(
            "snapshot_age_seconds",
            "Age of the oldest shared listing of remote objects, by kind",
            Described(snapshot_age.clone()),
        );
        let claimed_elsewhere = Family::<KindLabels, Counter>::default();
        registry.register(
            "objects_claimed_elsewhere",
            "Objects this install left alone because another install claims them",
            Described(claimed_elsewhere.clone()),
        );
        let guardrail_stops = Family::<GuardrailLabels, Counter>::default();
        registry.register(
            "pod_guardrail_stops",
            "Pods stopped by a cost guardrail, by guardrail (schedule, maxRuntime, idleStop)",
            Described(guardrail_stops.clone()),
        );
        let (orphans, orphan_cost) = register_orphans(&mut registry);
        let log_streams = Family::<KindLabels, Gauge>::default();
        registry.register(
            "log_streams_open",
            "Log streams held open to the platform right now, by kind (pods: the system logs of pods that are starting)",
            Described(log_streams.clone()),
        );
        let watch_listings = Family::<WatchLabels, Counter>::default();
        registry.register(
            "watch_listings",
            "Listings of the Kubernetes API each watch made (the first, then one per relisting), by kind, resource and namespace",
            Described(watch_listings.clone()),
        );
        let watched_namespaces = Gauge::default();
        registry.register(
            "watched_namespaces",
            "Namespaces the namespace selector (--namespace-selector) matches right now",
            watched_namespaces.clone(),
        );
        let watches_disconnected = Family::<KindLabels, Gauge>::default();
        registry.register(
            "watches_disconnected",
            "Watches of the Kubernetes API not connected right now (the apiserver does not answer them), by the kind whose controller runs them",
            Described(watches_disconnected.clone()),
        );
        let (engine_records, resync_scheduled) = register_remembered(&mut registry);
        let unreachable = Gauge::default();
        registry.register(
            "apiserver_unreachable",
            "1 while the apiserver answers none of this process's requests (its watches and its Lease), else 0",
            unreachable.clone(),
        );
        platform.register(&mut registry);
        Self {
            watch_listings,
            watched_namespaces,
            watches_disconnected,
            apiserver: Arc::new(ApiserverReach::new(unreachable)),
            log_streams,
            orphans,
            orphan_cost,
            registry: parking_lot::Mutex::new(registry),
            reconciles,
            reconcile_duration,
            managed,
            stalled,
            leader,
            snapshot_age,
            claimed_elsewhere,
            guardrail_stops,
            ready_by_object: parking_lot::Mutex::new(ReadyTally::default()),
            engine_records,
            resync_scheduled,
            platform,
        }
    }

    /// A watch started a listing: the watch of `resource` for `kind`'s controller in
    /// `namespace` (empty: every namespace).
    pub fn watch_listed(&self, kind: &str, resource: &str, namespace: &str) {
        self.watch_listings
            .get_or_create(&WatchLabels {
                kind: kind.to_string(),
                resource: resource.to_string(),
                namespace: namespace.to_string(),
            })
            .inc();
    }

    /// How many namespaces the namespace selector matches now.
    pub fn set_watched_namespaces(&self, count: usize) {
        self.watched_namespaces
            .set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// A pod was stopped by the guardrail `guardrail` (`schedule`, `maxRuntime`, `idleStop`).
    pub fn guardrail_stop(&self, guardrail: &'static str) {
        self.guardrail_stops
            .get_or_create(&GuardrailLabels { guardrail })
            .inc();
    }

    /// An object found claimed by another install (counted once per object and process).
    pub fn claimed_elsewhere(&self, kind: &'static str) {
        self.claimed_elsewhere
            .get_or_create(&KindLabels { kind })
            .inc();
    }

    pub fn reconciled(&self, kind: &'static str, result: &'static str, took: Duration) {
        self.reconciles
            .get_or_create(&ResultLabels { kind, result })
            .inc();
        self.reconcile_duration
            .get_or_create(&KindLabels { kind })
            .observe(took.as_secs_f64());
    }

    /// Records whether an object is Ready and whether it is Stalled (`None`: it is gone).
    pub fn set_ready(&self, kind: &'static str, key: &str, health: Option<Health>) {
        let counts = self.ready_by_object.lock().set(kind, key, health);
        for (ready, n) in [("true", counts.ready), ("false", counts.not_ready)] {
            self.managed
                .get_or_create(&ReadyLabels { kind, ready })
                .set(n);
        }
        self.stalled
            .get_or_create(&KindLabels { kind })
            .set(counts.stalled);
    }

    /// How many objects of `kind` the engine keeps a record of, and how many wait for a
    /// resync.
    pub fn set_remembered(&self, kind: &'static str, records: usize, scheduled: usize) {
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.engine_records
            .get_or_create(&KindLabels { kind })
            .set(count(records));
        self.resync_scheduled
            .get_or_create(&KindLabels { kind })
            .set(count(scheduled));
    }

    /// `delta` more (or, negative, fewer) watches of `kind` not connected.
    pub fn watch_disconnected(&self, kind: &'static str, delta: i64) {
        self.watches_disconnected
            .get_or_create(&KindLabels { kind })
            .inc_by(delta);
    }

    /// Watches of `kind` not connected right now.
    pub fn watches_disconnected(&self, kind: &'static str) -> i64 {
        self.watches_disconnected
            .get_or_create(&KindLabels { kind })
            .get()
    }

    /// Whether this process leads: it holds the leader-election Lease, or runs without
    /// leader election.
    pub fn set_leader(&self, leading: bool) {
        self.leader.set(i64::from(leading));
    }

    /// The orphan census of `kind`: how many, and what they cost per hour.
    pub fn set_orphans(&self, kind: &'static str, count: usize, cost_per_hour: f64) {
        let labels = KindLabels { kind };
        self.orphans
            .get_or_create(&labels)
            .set(i64::try_from(count).unwrap_or(i64::MAX));
        self.orphan_cost.get_or_create(&labels).set(cost_per_hour);
    }

    /// How many log streams `kind` holds open to the platform.
    pub fn set_log_streams(&self, kind: &'static str, open: usize) {
        self.log_streams
            .get_or_create(&KindLabels { kind })
            .set(i64::try_from(open).unwrap_or(i64::MAX));
    }

    pub fn snapshot_age(&self, kind: &'static str, age: Duration) {
        self.snapshot_age
            .get_or_create(&KindLabels { kind })
            .set(age.as_secs_f64());
    }

    /// The text exposition of every metric.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        let registry = self.registry.lock();
        prometheus_client::encoding::text::encode(&mut out, &registry)
            .expect("writing to a String cannot fail");
        out
    }

    /// A reconcile count, for tests.
    pub fn reconcile_count(&self, kind: &'static str, result: &'static str) -> u64 {
        self.reconciles
            .get_or_create(&ResultLabels { kind, result })
            .get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn health(ready: bool, stalled: bool) -> Option<Health> {
        Some(Health { ready, stalled })
    }

    #[test]
    fn managed_objects_gauge_counts_by_ready() {
        let m = Metrics::new();
        m.set_ready("NetworkVolume", "a/x", health(true, false));
        m.set_ready("NetworkVolume", "a/y", health(false, false));
        m.set_ready("NetworkVolume", "a/y", health(true, false));
        m.set_ready("Pod", "a/p", health(false, false));
        m.set_ready("NetworkVolume", "a/x", None);
        let text = m.encode();
        assert!(
            text.contains(r#"gpucloud_managed_objects{kind="NetworkVolume",ready="true"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"gpucloud_managed_objects{kind="NetworkVolume",ready="false"} 0"#),
            "{text}"
        );
        assert!(
            text.contains(r#"gpucloud_managed_objects{kind="Pod",ready="false"} 1"#),
            "{text}"
        );
    }

    #[test]
    fn stalled_objects_gauge_follows_each_objects_last_state() {
        let m = Metrics::new();
        m.set_ready("Pod", "a/p", health(false, true));
        m.set_ready("Pod", "a/q", health(false, true));
        m.set_ready("Template", "a/t", health(false, false));
        let text = m.encode();
        assert!(
            text.contains(r#"gpucloud_stalled_objects{kind="Pod"} 2"#),
            "{text}"
        );
        assert!(
            text.contains(r#"gpucloud_stalled_objects{kind="Template"} 0"#),
            "{text}"
        );
        // One recovers (Ready again), one is deleted.
        m.set_ready("Pod", "a/p", health(true, false));
        m.set_ready("Pod", "a/q", None);
        let text = m.encode();
        assert!(
            text.contains(r#"gpucloud_stalled_objects{kind="Pod"} 0"#),
            "{text}"
        );
        assert!(
            text.contains(r#"gpucloud_managed_objects{kind="Pod",ready="true"} 1"#),
            "{text}"
        );
    }

    #[test]
    fn the_tally_counts_each_object_once() {
        let counts = |ready, not_ready, stalled| Counts {
            ready,
            not_ready,
            stalled,
        };
        let mut t = ReadyTally::default();
        assert_eq!(t.set("Pod", "a/p", health(false, true)), counts(0, 1, 1));
        assert_eq!(
            t.set("Pod", "a/p", health(false, true)),
            counts(0, 1, 1),
            "same state again"
        );
        assert_eq!(t.set("Pod", "a/p", health(true, false)), counts(1, 0, 0));
        assert_eq!(t.set("Pod", "a/q", health(true, false)), counts(2, 0, 0));
        assert_eq!(
            t.set("NetworkVolume", "a/p", health(false, true)),
            counts(0, 1, 1),
            "kinds apart"
        );
        assert_eq!(t.set("Pod", "a/p", None), counts(1, 0, 0));
        assert_eq!(t.set("Pod", "a/p", None), counts(1, 0, 0), "gone twice");
        assert_eq!(t.set("Pod", "a/q", None), counts(0, 0, 0));
    }

    #[test]
    fn the_leader_gauge_says_whether_this_process_leads() {
        let m = Metrics::new();
        assert!(
            m.encode().contains("gpucloud_leader 0"),
            "not leading at start"
        );
        m.set_leader(true);
        assert!(m.encode().contains("gpucloud_leader 1"));
        m.set_leader(false);
        assert!(m.encode().contains("gpucloud_leader 0"));
    }

    #[test]
    fn reconciles_are_counted() {
        let m = Metrics::new();
        m.reconciled("Pod", "ok", Duration::from_millis(3));
        m.reconciled("Pod", "ok", Duration::from_millis(5));
        assert_eq!(m.reconcile_count("Pod", "ok"), 2);
        assert!(m.encode().contains("gpucloud_reconcile_duration_seconds"));
    }
}
