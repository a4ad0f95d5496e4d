//! `/v2/billing/...`: what the emulated account ran, priced by the catalog, in time buckets
//! on the emulator's clock.
//!
//! Pods are billed from the cloud's running/stopped stretches (compute at the pod's hourly
//! cost, disk per GB), Instant Clusters from their member pods' stretches priced the same
//! way ([`clusters`]), network volumes from the usage ledger (GB x a per-GB-month price),
//! serverless from recorded worker time (the pool's price per GPU, or per vCPU).

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::collections::BTreeMap;

use jiff::tz::TimeZone;
use jiff::{SignedDuration, Span, Timestamp, ToSpan, civil};
use serde::Deserialize;
use serde_json::{Value, json};

use super::problem::{Problem, V2Result};
use super::request::{Caller, IntParam, V2Query, Violations};
use crate::clock::{Clock, Millis, rfc3339_secs};
use crate::pods::PodInterval;
use crate::state::{App, World};
use crate::usage::WorkerSpan;

mod clusters;

use clusters::ClusterHistory;
pub use clusters::{ClusterAmounts, cluster_records};

pub fn routes() -> Router<App> {
    Router::new()
        .route("/v2/billing", get(aggregate))
        .route("/v2/billing/pods", get(history::<PodHistory>))
        .route("/v2/billing/serverless", get(history::<ServerlessHistory>))
        .route("/v2/billing/endpoints", get(endpoints))
        .route(
            "/v2/billing/network-volumes",
            get(history::<NetworkVolumeHistory>),
        )
        .route("/v2/billing/clusters", get(history::<ClusterHistory>))
}

/// Hours in the month the per-GB-month prices are spread over.
const HOURS_PER_MONTH: f64 = 730.0;
/// Container and volume disk of a running pod, USD per GB-month.
pub const POD_DISK_RUNNING_GB_MONTH: f64 = 0.10;
/// Volume disk of a stopped pod, USD per GB-month.
pub const POD_DISK_STOPPED_GB_MONTH: f64 = 0.20;
/// Network volume storage, USD per GB-month.
pub const VOLUME_STANDARD_GB_MONTH: f64 = 0.07;
pub const VOLUME_HIGH_PERFORMANCE_GB_MONTH: f64 = 0.14;
/// The earliest instant an RFC 3339 timestamp writes (0001-01-01T00:00:00Z, a Monday, so
/// the start of a bucket of every size): no window starts before it.
pub const RFC3339_MIN: Timestamp = Timestamp::constant(-62_135_596_800, 0);
/// The latest second both RFC 3339 and the date library hold (jiff's `Timestamp::MAX` is
/// 9999-12-30T22:00:00.999999999Z, short of RFC 3339's 9999-12-31T23:59:59Z): no window
/// ends after it.
pub const RFC3339_MAX: Timestamp = Timestamp::constant(253_402_207_200, 0);
/// Default window when no start is given.
const DEFAULT_DAYS: i64 = 30;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum BucketSize {
    Hour,
    #[default]
    Day,
    Week,
    Month,
    Year,
}

impl BucketSize {
    fn as_str(self) -> &'static str {
        match self {
            Self::Hour => "hour",
            Self::Day => "day",
            Self::Week => "week",
            Self::Month => "month",
            Self::Year => "year",
        }
    }

    /// Start of the bucket holding `t` (weeks start on Monday, all in UTC).
    pub fn floor(self, t: Timestamp) -> Timestamp {
        let at = TimeZone::UTC.to_datetime(t);
        let date = at.date();
        let start = match self {
            Self::Hour => date.at(at.hour(), 0, 0, 0),
            Self::Day => date.at(0, 0, 0, 0),
            Self::Week => {
                let back = i64::from(date.weekday().to_monday_zero_offset());
                date.checked_sub(back.days()).unwrap_or(date).at(0, 0, 0, 0)
            }
            Self::Month => date.first_of_month().at(0, 0, 0, 0),
            Self::Year => date.first_of_year().at(0, 0, 0, 0),
        };
        utc(start).unwrap_or(t)
    }

    /// Start of the bucket after the one starting at `start`.
    pub fn next(self, start: Timestamp) -> Timestamp {
        self.step(start, 1).unwrap_or(Timestamp::MAX)
    }

    /// `start` moved by `n` buckets, on the UTC calendar (months and years are not a fixed
    /// number of hours); `None` past what the date library holds (a span or a date out of
    /// its range), never a panic.
    fn step(self, start: Timestamp, n: i64) -> Option<Timestamp> {
        let span = match self {
            Self::Hour => Span::new().try_hours(n),
            Self::Day => Span::new().try_days(n),
            Self::Week => Span::new().try_weeks(n),
            Self::Month => Span::new().try_months(n),
            Self::Year => Span::new().try_years(n),
        }
        .ok()?;
        utc(TimeZone::UTC.to_datetime(start).checked_add(span).ok()?)
    }
}

/// The instant of a civil time in UTC (`None` out of range).
fn utc(at: civil::DateTime) -> Option<Timestamp> {
    TimeZone::UTC.to_timestamp(at).ok()
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct BillingQuery {
    #[serde(default)]
    start_time: Option<String>,
    #[serde(default)]
    end_time: Option<String>,
    #[serde(default)]
    bucket_size: Option<BucketSize>,
    #[serde(default)]
    last_n: Option<IntParam>,
    #[serde(default)]
    pod_id: Option<String>,
    #[serde(default)]
    serverless_id: Option<String>,
    #[serde(default)]
    network_volume_id: Option<String>,
    #[serde(default)]
    cluster_id: Option<String>,
}

/// The resolved, bucket-aligned window, within what RFC 3339 writes. Its buckets are never
/// enumerated: each usage stretch names the few it falls in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    pub bucket: BucketSize,
    start: Timestamp,
    end: Timestamp,
}

impl Window {
    pub fn start(&self) -> Timestamp {
        self.start
    }

    pub fn end(&self) -> Timestamp {
        self.end
    }

    /// End of the bucket that starts at `start`, cut at the window's end (only the last
    /// bucket of a window clamped to year 9999 is cut).
    pub fn bucket_end(&self, start: Timestamp) -> Timestamp {
        self.bucket.next(start).min(self.end)
    }

    fn query_json(&self) -> Value {
        json!({
            "startTime": rfc3339_secs(self.start()),
            "endTime": rfc3339_secs(self.end()),
            "bucketSize": self.bucket.as_str(),
        })
    }
}

fn parse_time(field: &str, value: &str) -> V2Result<Timestamp> {
    value.parse::<Timestamp>().map_err(|_| {
        Problem::unprocessable(vec![format!(
            "{field}: must be an RFC 3339 date-time (got {value:?})"
        )])
    })
}

/// Resolves the document's window rules: `lastN` or `startTime`/`endTime` (not both),
/// defaults of 30 days ago and now, start snapped down and end snapped up to buckets. The
/// document bounds neither `lastN` nor the window's length: a window reaching past what RFC
/// 3339 writes (years 0001..9999) is clamped to it.
pub fn resolve_window(
    now: Timestamp,
    bucket: BucketSize,
    start: Option<Timestamp>,
    end: Option<Timestamp>,
    last_n: Option<u64>,
) -> V2Result<Window> {
    let (start, end) = match last_n {
        Some(_) if start.is_some() || end.is_some() => {
            return Err(Problem::bad_request(
                "lastN: mutually exclusive with startTime/endTime; send one or the other",
            ));
        }
        Some(n) => {
            let current = bucket.floor(now);
            // n - 1 buckets before the current one in one step; beyond the date library's
            // range (or i64) the window starts as early as it can.
            let first = i64::try_from(n.saturating_sub(1))
                .ok()
                .and_then(|back| bucket.step(current, -back))
                .unwrap_or(RFC3339_MIN);
            (first, bucket.next(current))
        }
        None => {
            let start =
                bucket.floor(start.unwrap_or(now - SignedDuration::from_hours(24 * DEFAULT_DAYS)));
            let end = end.unwrap_or(now);
            let snapped = bucket.floor(end);
            let end = if snapped == end {
                end
            } else {
                bucket.next(snapped)
            };
            (start, end)
        }
    };
    let (start, end) = (start.max(RFC3339_MIN), end.min(RFC3339_MAX));
    if start >= end {
        return Err(Problem::bad_request("startTime: must be before endTime"));
    }
    Ok(Window { bucket, start, end })
}

fn window_of(clock: &Clock, q: &BillingQuery) -> V2Result<Window> {
    let mut v = Violations::new();
    v.range(q.last_n.map(|n| n.0), "lastN", Some(1), None);
    v.finish()?;
    let start = q
        .start_time
        .as_deref()
        .map(|s| parse_time("startTime", s))
        .transpose()?;
    let end = q
        .end_time
        .as_deref()
        .map(|s| parse_time("endTime", s))
        .transpose()?;
    let last_n = q.last_n.map(|n| n.as_u64().max(1));
    resolve_window(
        clock.wall(),
        q.bucket_size.unwrap_or_default(),
        start,
        end,
        last_n,
    )
}

/// Hours of [from, to) inside [a, b), all in emulated ms (`to` = now while open).
fn overlap_hours(from: Millis, to: Millis, a: i64, b: i64) -> f64 {
    let lo = (from as i64).max(a);
    let hi = (to as i64).min(b);
    if hi > lo {
        (hi - lo) as f64 / 3_600_000.0
    } else {
        0.0
    }
}

fn touches(from: Millis, to: Millis, a: i64, b: i64) -> bool {
    // Overlaps [a, b), or is an empty stretch starting inside it.
    let (from, to) = (from as i64, to as i64);
    from < b && (to > a || from >= a)
}

fn money(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// (resource id, bucket start, amounts) rows of one kind of resource, by bucket.
pub type Rows<A> = Vec<(String, Timestamp, A)>;

/// One resource's amounts in one bucket, as a per-resource history prints and totals them.
pub trait Amounts: Default + Copy {
    fn add(&mut self, o: &Self);
    fn json(&self) -> Value;
}

/// Pod amounts of one pod in one bucket: (gpu, cpu, disk).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct PodAmounts {
    pub gpu: f64,
    pub cpu: f64,
    pub disk: f64,
}

impl PodAmounts {
    fn total(&self) -> f64 {
        self.gpu + self.cpu + self.disk
    }
}

impl Amounts for PodAmounts {
    fn add(&mut self, o: &Self) {
        self.gpu += o.gpu;
        self.cpu += o.cpu;
        self.disk += o.disk;
    }

    fn json(&self) -> Value {
        json!({
            "totalAmount": money(self.total()),
            "gpuAmount": money(self.gpu),
            "cpuAmount": money(self.cpu),
            "diskAmount": money(self.disk),
        })
    }
}

/// Serverless amounts of one endpoint in one bucket: worker time on GPUs and on vCPUs.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct ServerlessAmounts {
    pub gpu: f64,
    pub cpu: f64,
}

impl Amounts for ServerlessAmounts {
    fn add(&mut self, o: &Self) {
        self.gpu += o.gpu;
        self.cpu += o.cpu;
    }

    fn json(&self) -> Value {
        json!({
            "totalAmount": money(self.gpu + self.cpu),
            "gpuAmount": money(self.gpu),
            "cpuAmount": money(self.cpu),
            "diskAmount": 0.0,
            "feeAmount": 0.0,
        })
    }
}

/// Storage amounts of one network volume in one bucket, by volume type.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct VolumeAmounts {
    pub standard: f64,
    pub high_performance: f64,
}

impl Amounts for VolumeAmounts {
    fn add(&mut self, o: &Self) {
        self.standard += o.standard;
        self.high_performance += o.high_performance;
    }

    fn json(&self) -> Value {
        json!({
            "totalAmount": money(self.standard + self.high_performance),
            "standardAmount": money(self.standard),
            "highPerformanceAmount": money(self.high_performance),
        })
    }
}

/// (resource id, bucket start, amounts) for every resource with usage in a bucket, by
/// bucket and in the order the resources first show there; `only` keeps one resource.
/// `stretch` says whose usage an item is and when it ran, `price` what its hours inside a
/// bucket cost; the amounts of one resource in one bucket are summed. Buckets without usage
/// have no rows: each stretch walks only the buckets it overlaps inside the window, so the
/// work follows the usage, not the window's length.
fn bucket_records<'i, T: 'i, A: Amounts>(
    clock: &Clock,
    w: &Window,
    only: Option<&str>,
    items: impl Iterator<Item = &'i T>,
    stretch: impl Fn(&T) -> (&str, Millis, Millis),
    price: impl Fn(&'i T, f64) -> A,
) -> Rows<A> {
    let mut buckets: BTreeMap<Timestamp, Vec<(String, A)>> = BTreeMap::new();
    let (lo, hi) = (clock.emulated_at(w.start()), clock.emulated_at(w.end()));
    for it in items {
        let (id, from, to) = stretch(it);
        if only.is_some_and(|o| o != id) || !touches(from, to, lo, hi) {
            continue;
        }
        // The bucket the stretch starts in, or the window's first: a window's start is a
        // bucket boundary, so the floor never falls before it.
        let mut start = w.bucket.floor(clock.wall_at(from).max(w.start()));
        while start < w.end() {
            let end = w.bucket_end(start);
            let (a, b) = (clock.emulated_at(start), clock.emulated_at(end));
            if !touches(from, to, a, b) {
                break;
            }
            let amounts = price(it, overlap_hours(from, to, a, b));
            let rows = buckets.entry(start).or_default();
            match rows.iter_mut().find(|(r, _)| r == id) {
                Some((_, sum)) => sum.add(&amounts),
                None => rows.push((id.to_owned(), amounts)),
            }
            start = end;
        }
    }
    buckets
        .into_iter()
        .flat_map(|(start, rows)| rows.into_iter().map(move |(id, a)| (id, start, a)))
        .collect()
}

/// What one stretch of a pod's life costs over `h` hours: compute and disk while it runs,
/// its volume disk while it is stopped.
fn interval_amounts(it: &PodInterval, h: f64) -> PodAmounts {
    if it.running {
        let compute = h * it.cost_per_hr;
        PodAmounts {
            gpu: if it.cpu { 0.0 } else { compute },
            cpu: if it.cpu { compute } else { 0.0 },
            disk: h
                * (it.container_disk_gb as f64 + it.volume_gb as f64)
                * POD_DISK_RUNNING_GB_MONTH
                / HOURS_PER_MONTH,
        }
    } else {
        PodAmounts {
            disk: h * (it.volume_gb as f64) * POD_DISK_STOPPED_GB_MONTH / HOURS_PER_MONTH,
            ..PodAmounts::default()
        }
    }
}

/// (pod id, bucket start, amounts) for every standalone pod that existed in a bucket
/// (cluster members bill to their cluster).
pub fn pod_records(
    world: &World,
    clock: &Clock,
    w: &Window,
    pod_id: Option<&str>,
) -> Rows<PodAmounts> {
    let now = clock.now();
    let standalone = world
        .cloud
        .pod_usage()
        .iter()
        .filter(|it| it.cluster_id.is_none());
    bucket_records(
        clock,
        w,
        pod_id,
        standalone,
        |it| (it.pod_id.as_str(), it.from, it.to.unwrap_or(now)),
        interval_amounts,
    )
}

/// (volume id, bucket start, amounts) for every network volume that existed in a bucket.
pub fn volume_records(
    world: &World,
    clock: &Clock,
    w: &Window,
    volume_id: Option<&str>,
) -> Rows<VolumeAmounts> {
    let now = clock.now();
    bucket_records(
        clock,
        w,
        volume_id,
        world.usage.volumes().iter(),
        |it| (it.volume_id.as_str(), it.from, it.to.unwrap_or(now)),
        |it, h| {
            let price = if it.high_performance {
                VOLUME_HIGH_PERFORMANCE_GB_MONTH
            } else {
                VOLUME_STANDARD_GB_MONTH
            };
            let amount = h * f64::from(it.size_gb) * price / HOURS_PER_MONTH;
            if it.high_performance {
                VolumeAmounts {
                    standard: 0.0,
                    high_performance: amount,
                }
            } else {
                VolumeAmounts {
                    standard: amount,
                    high_performance: 0.0,
                }
            }
        },
    )
}

/// The worker time of every endpoint that runs now, from its runtime: priced as its
/// record's first GPU type times its GPU count, or for a CPU endpoint as its first flavor's
/// serverless price per vCPU times the flavor's vCPU count.
pub fn live_worker_spans(app: &App, world: &World) -> Vec<WorkerSpan> {
    let runtimes = app.runtimes.read();
    let mut spans = Vec::new();
    for (id, rt) in runtimes.iter() {
        let Some(record) = world.endpoints.get(id) else {
            continue;
        };
        for (from, to) in rt.machine_spans() {
            spans.push(WorkerSpan::of(record, from, to));
        }
    }
    spans
}

/// (endpoint id, bucket start, amounts) of recorded worker time: the ledger's and `live`.
pub fn serverless_records(
    world: &World,
    clock: &Clock,
    w: &Window,
    endpoint_id: Option<&str>,
    live: &[WorkerSpan],
) -> Rows<ServerlessAmounts> {
    let spans = world.usage.workers().iter().chain(live);
    bucket_records(
        clock,
        w,
        endpoint_id,
        spans,
        |s| (s.endpoint_id.as_str(), s.from, s.to),
        |s, h| match &s.gpu_type_id {
            Some(g) => {
                let price = world
                    .cloud
                    .gpu_type(g)
                    .and_then(|g| g.serverless_price.or(g.secure_price))
                    .unwrap_or(0.0);
                ServerlessAmounts {
                    gpu: h * price * s.gpu_count as f64,
                    cpu: 0.0,
                }
            }
            None => {
                let per_vcpu = s
                    .cpu_flavor
                    .as_deref()
                    .and_then(|f| world.cloud.cpu_type(f))
                    .map_or(0.0, |c| c.serverless_price_per_vcpu);
                ServerlessAmounts {
                    gpu: 0.0,
                    cpu: h * per_vcpu * f64::from(s.vcpus),
                }
            }
        },
    )
}

fn bucket_json(w: &Window, start: Timestamp) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    m.insert("startTime".into(), json!(rfc3339_secs(start)));
    m.insert("endTime".into(), json!(rfc3339_secs(w.bucket_end(start))));
    m
}

fn merge(mut base: serde_json::Map<String, Value>, extra: Value) -> Value {
    if let Value::Object(o) = extra {
        base.extend(o);
    }
    Value::Object(base)
}

/// Every component of the aggregate, in the document's names.
#[derive(Debug, Default, Clone, Copy)]
struct Aggregate {
    pod: PodAmounts,
    serverless: ServerlessAmounts,
    storage: VolumeAmounts,
    cluster: ClusterAmounts,
}

impl Aggregate {
    fn add(&mut self, o: &Self) {
        self.pod.add(&o.pod);
        self.serverless.add(&o.serverless);
        self.storage.add(&o.storage);
        self.cluster.add(&o.cluster);
    }

    fn json(&self) -> Value {
        let total = self.pod.total()
            + self.serverless.gpu
            + self.serverless.cpu
            + self.storage.standard
            + self.storage.high_performance
            + self.cluster.total();
        json!({
            "totalAmount": money(total),
            "podGpuAmount": money(self.pod.gpu),
            "podCpuAmount": money(self.pod.cpu),
            "podDiskAmount": money(self.pod.disk),
            "serverlessGpuAmount": money(self.serverless.gpu),
            "serverlessCpuAmount": money(self.serverless.cpu),
            "serverlessDiskAmount": 0.0,
            "serverlessFeeAmount": 0.0,
            "storageStandardAmount": money(self.storage.standard),
            "storageHighPerformanceAmount": money(self.storage.high_performance),
            "endpointAmount": 0.0,
            "clusterGpuAmount": money(self.cluster.gpu),
            "clusterDiskAmount": money(self.cluster.disk),
            "clusterNetworkingAmount": money(self.cluster.networking),
        })
    }
}

async fn aggregate(
    State(app): State<App>,
    _caller: Caller,
    V2Query(q): V2Query<BillingQuery>,
) -> V2Result<Response> {
    let w = window_of(&app.clock, &q)?;
    let world = app.world.lock();
    // Only the buckets some resource has a row in, as the per-resource histories list them.
    let mut buckets: BTreeMap<Timestamp, Aggregate> = BTreeMap::new();
    for (_, start, a) in pod_records(&world, &app.clock, &w, None) {
        buckets.entry(start).or_default().pod.add(&a);
    }
    for (_, start, a) in volume_records(&world, &app.clock, &w, None) {
        buckets.entry(start).or_default().storage.add(&a);
    }
    for (_, start, a) in cluster_records(&world, &app.clock, &w, None) {
        buckets.entry(start).or_default().cluster.add(&a);
    }
    let live = live_worker_spans(&app, &world);
    for (_, start, a) in serverless_records(&world, &app.clock, &w, None, &live) {
        buckets.entry(start).or_default().serverless.add(&a);
    }
    let mut totals = Aggregate::default();
    let records: Vec<Value> = buckets
        .iter()
        .map(|(start, b)| {
            totals.add(b);
            merge(bucket_json(&w, *start), b.json())
        })
        .collect();
    Ok(axum::Json(json!({
        "records": records,
        "metadata": {"query": w.query_json(), "recordCount": records.len(), "totals": totals.json()},
    }))
    .into_response())
}

fn distinct<'a>(ids: impl Iterator<Item = &'a String>) -> usize {
    let mut v: Vec<&String> = ids.collect();
    v.sort();
    v.dedup();
    v.len()
}

/// One of the per-resource histories: which records it lists and the names it answers in.
trait History {
    type Amounts: Amounts;
    /// Name of the resource id in every record and of its filter in the echoed query.
    const ID_FIELD: &'static str;
    /// Name of the count of distinct resources in the metadata.
    const UNIQUE_COUNT: &'static str;
    /// The query's filter on the resource id.
    fn filter(q: &BillingQuery) -> Option<&str>;
    fn records(app: &App, world: &World, w: &Window, filter: Option<&str>) -> Rows<Self::Amounts>;
}

/// `/v2/billing/pods`.
struct PodHistory;

impl History for PodHistory {
    type Amounts = PodAmounts;
    const ID_FIELD: &'static str = "podId";
    const UNIQUE_COUNT: &'static str = "uniquePodCount";

    fn filter(q: &BillingQuery) -> Option<&str> {
        q.pod_id.as_deref()
    }

    fn records(app: &App, world: &World, w: &Window, filter: Option<&str>) -> Rows<PodAmounts> {
        pod_records(world, &app.clock, w, filter)
    }
}

/// `/v2/billing/serverless`.
struct ServerlessHistory;

impl History for ServerlessHistory {
    type Amounts = ServerlessAmounts;
    const ID_FIELD: &'static str = "serverlessId";
    const UNIQUE_COUNT: &'static str = "uniqueServerlessCount";

    fn filter(q: &BillingQuery) -> Option<&str> {
        q.serverless_id.as_deref()
    }

    fn records(
        app: &App,
        world: &World,
        w: &Window,
        filter: Option<&str>,
    ) -> Rows<ServerlessAmounts> {
        let live = live_worker_spans(app, world);
        serverless_records(world, &app.clock, w, filter, &live)
    }
}

/// `/v2/billing/network-volumes`.
struct NetworkVolumeHistory;

impl History for NetworkVolumeHistory {
    type Amounts = VolumeAmounts;
    const ID_FIELD: &'static str = "networkVolumeId";
    const UNIQUE_COUNT: &'static str = "uniqueNetworkVolumeCount";

    fn filter(q: &BillingQuery) -> Option<&str> {
        q.network_volume_id.as_deref()
    }

    fn records(app: &App, world: &World, w: &Window, filter: Option<&str>) -> Rows<VolumeAmounts> {
        volume_records(world, &app.clock, w, filter)
    }
}

/// A per-resource history: a record per resource and bucket, named by its id, and totals
/// over all of them.
async fn history<H: History>(
    State(app): State<App>,
    _caller: Caller,
    V2Query(q): V2Query<BillingQuery>,
) -> V2Result<Response> {
    let w = window_of(&app.clock, &q)?;
    let filter = H::filter(&q);
    // The world is read only for the rows: the lock goes before the answer is built.
    let rows = H::records(&app, &app.world.lock(), &w, filter);
    let mut totals = H::Amounts::default();
    let records: Vec<Value> = rows
        .iter()
        .map(|(id, start, a)| {
            totals.add(a);
            let mut r = merge(bucket_json(&w, *start), a.json());
            r[H::ID_FIELD] = json!(id);
            r
        })
        .collect();
    let mut query = w.query_json();
    query[H::ID_FIELD] = json!(filter);
    let mut metadata = json!({"query": query, "recordCount": records.len()});
    metadata[H::UNIQUE_COUNT] = json!(distinct(rows.iter().map(|r| &r.0)));
    metadata["totals"] = totals.json();
    Ok(axum::Json(json!({"records": records, "metadata": metadata})).into_response())
}

/// Public endpoints: the emulated account never calls any, so no bucket has billing and
/// there are no records.
async fn endpoints(
    State(app): State<App>,
    _caller: Caller,
    V2Query(q): V2Query<BillingQuery>,
) -> V2Result<Response> {
    let w = window_of(&app.clock, &q)?;
    Ok(axum::Json(json!({
        "records": [],
        "metadata": {"query": w.query_json(), "recordCount": 0, "totals": {"totalAmount": 0.0}},
    }))
    .into_response())
}

#[cfg(test)]
mod tests;
