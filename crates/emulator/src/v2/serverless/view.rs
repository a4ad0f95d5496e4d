//! The answers of `/v2/serverless`: `Endpoint`, `ListEndpointWorkersResponse`,
//! `ListEndpointReleasesResponse`, built from the endpoint record and its runtime's workers.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use axum::http::HeaderMap;
use serde::Serialize;

use super::body::FlashBoot;
use crate::clock::{Clock, Millis};
use crate::jobs::rollout::WorkerSlot;
use crate::model::{CpuSelection, EndpointRecord, EndpointType, ReleaseChange, ScalerType};
use crate::state::World;
use crate::v2::timestamp;

/// `scheme://host` of the request, so request URLs reach this emulator however it was
/// addressed (`Host`, and `X-Forwarded-Proto` behind a TLS proxy).
pub fn origin(headers: &HeaderMap) -> String {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
    };
    let host = header("host")
        .filter(|h| {
            h.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .unwrap_or("localhost");
    let scheme = match header("x-forwarded-proto") {
        Some("https") => "https",
        _ => "http",
    };
    format!("{scheme}://{host}")
}

/// One of an endpoint's request URLs, `{origin}/{route}/{id}{path}` (then the job id
/// placeholder for the per-job ones): written as it is serialised rather than built first,
/// since a listing writes eight of them per endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Url<'a> {
    origin: &'a str,
    route: &'static str,
    id: &'a str,
    path: Cow<'a, str>,
    per_job: bool,
}

impl fmt::Display for Url<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let job = if self.per_job { JOB_ID } else { "" };
        write!(
            f,
            "{}/{}/{}{}{job}",
            self.origin, self.route, self.id, self.path
        )
    }
}

impl Serialize for Url<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueUrls<'a> {
    pub run: Url<'a>,
    pub run_sync: Url<'a>,
    pub status: Url<'a>,
    pub stream: Url<'a>,
    pub cancel: Url<'a>,
    pub retry: Url<'a>,
    pub purge_queue: Url<'a>,
    pub health: Url<'a>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadBalancerUrls<'a> {
    pub base: Url<'a>,
    pub health: Url<'a>,
}

// A value lives for one write of one endpoint: boxing the larger variant would allocate
// for every endpoint of a listing, which is what borrowing the URLs avoids.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum RequestUrls<'a> {
    Queue(QueueUrls<'a>),
    LoadBalancer(LoadBalancerUrls<'a>),
}

/// The job id placeholder of the per-job URLs. The document's examples write `{job_id}`, but
/// braces are not allowed in a URI (`format: uri`), so it is percent-encoded: replace
/// `%7Bjob_id%7D` (or the decoded `{job_id}`) with the job's id.
pub const JOB_ID: &str = "%7Bjob_id%7D";

/// Queue endpoints: the job API this emulator serves. Load-balancing endpoints: a base
/// under `/lb/{id}` and the health path from `HEALTH_CHECK_PATH` (default `/ping`); the
/// emulator does not serve worker-defined paths, so both answer 404.
pub fn request_urls<'a>(e: &'a EndpointRecord, origin: &'a str) -> RequestUrls<'a> {
    let url = |route, path: &'a str, per_job| Url {
        origin,
        route,
        id: &e.id,
        path: Cow::Borrowed(path),
        per_job,
    };
    match e.endpoint_type {
        EndpointType::Queue => RequestUrls::Queue(QueueUrls {
            run: url("v2", "/run", false),
            run_sync: url("v2", "/runsync", false),
            status: url("v2", "/status/", true),
            stream: url("v2", "/stream/", true),
            cancel: url("v2", "/cancel/", true),
            retry: url("v2", "/retry/", true),
            purge_queue: url("v2", "/purge-queue", false),
            health: url("v2", "/health", false),
        }),
        EndpointType::LoadBalancer => {
            let path = health_path(e.container.env.get("HEALTH_CHECK_PATH").map(String::as_str));
            RequestUrls::LoadBalancer(LoadBalancerUrls {
                base: url("lb", "", false),
                health: Url {
                    path,
                    ..url("lb", "", false)
                },
            })
        }
    }
}

/// The path the load balancer pings: `HEALTH_CHECK_PATH` (a leading `/` added when it has
/// none), `/ping` when unset, empty, or not something a URL path can hold as it is (the
/// answer's `health` must stay a valid URI).
pub fn health_path(var: Option<&str>) -> Cow<'_, str> {
    const PATH_PUNCTUATION: &str = "-._~!$&'()*+,;=:@%/";
    let Some(v) = var.map(str::trim).filter(|v| !v.is_empty() && *v != "/") else {
        return Cow::Borrowed("/ping");
    };
    if !v
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || PATH_PUNCTUATION.contains(c))
    {
        return Cow::Borrowed("/ping");
    }
    if v.starts_with('/') {
        Cow::Borrowed(v)
    } else {
        Cow::Owned(format!("/{v}"))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GpuView<'a> {
    pub pools: &'a [String],
    pub excluded_types: &'a [String],
    pub count: u64,
    pub allowed_cuda_versions: &'a [String],
    pub min_cuda_version: Option<&'a str>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkersView {
    pub min: u64,
    pub max: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ScalingView {
    #[serde(rename_all = "camelCase")]
    QueueDelay { queue_delay: f64 },
    #[serde(rename_all = "camelCase")]
    RequestCount { request_count: u64 },
}

/// The document's `Endpoint`, borrowed from the record (a listing writes thousands).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointView<'a> {
    pub id: &'a str,
    pub name: &'a str,
    #[serde(rename = "type")]
    pub endpoint_type: EndpointType,
    pub request_urls: RequestUrls<'a>,
    pub image: &'a str,
    pub args: &'a str,
    pub disk: u64,
    pub ports: &'a [String],
    pub env: &'a BTreeMap<String, String>,
    pub registry: Option<&'a str>,
    /// Absent on CPU endpoints; null on a GPU endpoint whose types are in no pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<Option<GpuView<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<&'a [CpuSelection]>,
    pub workers: WorkersView,
    pub scaling: ScalingView,
    pub data_center_ids: &'a [String],
    pub network_volumes: &'a [String],
    pub timeout: u64,
    pub flashboot: FlashBoot,
    pub created_at: String,
}

pub fn endpoint<'a>(e: &'a EndpointRecord, origin: &'a str, clock: &Clock) -> EndpointView<'a> {
    let cpu_endpoint = !e.cpu.is_empty();
    let queue_count =
        e.endpoint_type == EndpointType::Queue && e.scaler_type == ScalerType::RequestCount;
    EndpointView {
        id: &e.id,
        name: &e.name,
        endpoint_type: e.endpoint_type,
        request_urls: request_urls(e, origin),
        image: &e.container.image,
        args: &e.container.args,
        disk: e.container.disk,
        ports: &e.container.ports,
        env: &e.container.env,
        registry: e.container.registry.as_deref(),
        gpu: (!cpu_endpoint).then(|| {
            (!e.gpu_pools.is_empty()).then(|| GpuView {
                pools: &e.gpu_pools,
                excluded_types: &e.excluded_gpu_types,
                count: e.gpu_count,
                allowed_cuda_versions: &e.allowed_cuda_versions,
                min_cuda_version: e.min_cuda_version.as_deref(),
            })
        }),
        cpu: cpu_endpoint.then_some(e.cpu.as_slice()),
        workers: WorkersView {
            min: e.workers_min,
            max: e.workers_max,
            idle_timeout: (!queue_count).then_some(e.idle_timeout),
        },
        scaling: match e.scaler_type {
            ScalerType::QueueDelay => ScalingView::QueueDelay {
                queue_delay: e.queue_delay.unwrap_or(e.scaler_value as f64),
            },
            ScalerType::RequestCount => ScalingView::RequestCount {
                request_count: e.scaler_value,
            },
        },
        data_center_ids: &e.data_center_ids,
        network_volumes: &e.network_volume_ids,
        timeout: e.execution_timeout_ms,
        flashboot: match (e.flashboot, e.priority_flashboot) {
            (false, _) => FlashBoot::Off,
            (true, false) => FlashBoot::Flashboot,
            (true, true) => FlashBoot::PriorityFlashboot,
        },
        created_at: timestamp(clock, e.created_at_ms),
    }
}

// ---------------------------------------------------------------- workers

/// Where the emulator says an endpoint's workers run: the first GPU type of the selection
/// (none for CPU endpoints) in the first of `dataCenterIds`, else the first data center
/// with machines of that type (for CPU workers: with room on a machine of one of the
/// flavors, in their order), else the first data center.
pub fn placement(e: &EndpointRecord, world: &World) -> (Option<String>, Option<String>) {
    let gpu = e.gpu_type_ids.first().cloned();
    let dc = e.data_center_ids.first().cloned().or_else(|| match &gpu {
        Some(g) => world
            .cloud
            .machines()
            .iter()
            .find(|m| &m.gpu_type_id == g)
            .map(|m| m.data_center_id.clone()),
        // A CPU worker: the first data center with room for it among the flavors in order,
        // else where the first flavor has machines at all.
        None => e
            .cpu
            .iter()
            .find_map(|c| {
                world.cloud.machines().iter().find(|m| {
                    m.cpu_flavor.as_deref() == Some(c.id.as_str()) && m.free >= c.vcpu_count
                })
            })
            .or_else(|| {
                e.cpu.first().and_then(|c| {
                    world
                        .cloud
                        .machines()
                        .iter()
                        .find(|m| m.cpu_flavor.as_deref() == Some(c.id.as_str()))
                })
            })
            .map(|m| m.data_center_id.clone()),
    });
    let dc = dc.or_else(|| world.data_centers.first().map(|d| d.id.clone()));
    (gpu, dc)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum WorkerStatus {
    Running,
    Idle,
    /// Starting up, not yet ready: also a worker whose container never comes up (its image
    /// cannot be pulled or started). The document keeps UNHEALTHY for a worker that runs
    /// and fails its health checks, which such a worker never gets to.
    Initializing,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerView {
    pub id: String,
    pub status: WorkerStatus,
    pub is_stale: bool,
    pub version: u64,
    pub gpu_count: u64,
    pub image: Option<String>,
    /// Null until the worker runs (the document).
    pub uptime_seconds: Option<u64>,
    pub gpu_type_id: Option<String>,
    pub data_center_id: Option<String>,
    /// Null while it has not started.
    pub started_at: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct WorkerSummary {
    pub running: usize,
    pub idle: usize,
    pub initializing: usize,
    pub throttled: usize,
    pub unhealthy: usize,
    pub total: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkersAnswer {
    pub endpoint_version: u64,
    pub summary: WorkerSummary,
    pub workers: Vec<WorkerView>,
}

/// The image workers of `version` run.
fn image_of(e: &EndpointRecord, version: u64) -> Option<String> {
    e.releases
        .iter()
        .find(|r| r.version == version)
        .map(|r| r.image.clone())
}

/// What the workers list shows of the runtime beyond its slots.
#[derive(Debug, Clone, Copy)]
pub struct FleetState {
    pub version: u64,
    /// The workers' container cannot start: those not busy are INITIALIZING.
    pub failing: bool,
}

pub fn worker(
    e: &EndpointRecord,
    w: &WorkerSlot,
    fleet: FleetState,
    placed: &(Option<String>, Option<String>),
    clock: &Clock,
    now: Millis,
) -> WorkerView {
    // A worker busy with a job is up whatever was switched on since; any other worker of a
    // failing fleet never got its container started.
    let started = w.busy || !fleet.failing;
    WorkerView {
        id: w.id.clone(),
        status: if w.busy {
            WorkerStatus::Running
        } else if fleet.failing {
            WorkerStatus::Initializing
        } else {
            WorkerStatus::Idle
        },
        is_stale: w.version != fleet.version,
        version: w.version,
        gpu_count: if e.cpu.is_empty() { e.gpu_count } else { 0 },
        image: image_of(e, w.version),
        uptime_seconds: started.then(|| now.saturating_sub(w.started_at) / 1000),
        gpu_type_id: placed.0.clone(),
        data_center_id: placed.1.clone(),
        started_at: started.then(|| timestamp(clock, w.started_at)),
    }
}

pub fn workers(
    e: &EndpointRecord,
    placed: &(Option<String>, Option<String>),
    fleet: FleetState,
    slots: &[WorkerSlot],
    clock: &Clock,
) -> WorkersAnswer {
    let now = clock.now();
    let workers: Vec<WorkerView> = slots
        .iter()
        .map(|w| worker(e, w, fleet, placed, clock, now))
        .collect();
    let count = |s: WorkerStatus| workers.iter().filter(|w| w.status == s).count();
    WorkersAnswer {
        endpoint_version: fleet.version,
        summary: WorkerSummary {
            running: count(WorkerStatus::Running),
            idle: count(WorkerStatus::Idle),
            initializing: count(WorkerStatus::Initializing),
            throttled: 0,
            unhealthy: 0,
            total: workers.len(),
        },
        workers,
    }
}

// ---------------------------------------------------------------- releases

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutSummary {
    pub in_progress: bool,
    pub workers_on_latest: usize,
    pub workers_total: usize,
    pub percent_on_latest: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleaseView {
    pub id: String,
    pub version: u64,
    pub source: &'static str,
    pub build_id: Option<String>,
    pub created_by_user_id: String,
    pub worker_count: usize,
    pub created_at: String,
    pub diff: Vec<ReleaseChange>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReleasesAnswer {
    pub endpoint_version: u64,
    pub rollout: RolloutSummary,
    pub releases: Vec<ReleaseView>,
}

pub fn rollout(version: u64, slots: &[WorkerSlot]) -> RolloutSummary {
    let total = slots.len();
    let on_latest = slots.iter().filter(|w| w.version == version).count();
    RolloutSummary {
        in_progress: on_latest < total,
        workers_on_latest: on_latest,
        workers_total: total,
        percent_on_latest: (on_latest * 100).checked_div(total).unwrap_or(0),
    }
}

pub fn releases(
    e: &EndpointRecord,
    user_id: &str,
    version: u64,
    slots: &[WorkerSlot],
    clock: &Clock,
) -> ReleasesAnswer {
    ReleasesAnswer {
        endpoint_version: version,
        rollout: rollout(version, slots),
        releases: e
            .releases
            .iter()
            .rev()
            .map(|r| ReleaseView {
                id: r.id.clone(),
                version: r.version,
                source: "MANUAL",
                build_id: None,
                created_by_user_id: user_id.to_string(),
                worker_count: slots.iter().filter(|w| w.version == r.version).count(),
                created_at: timestamp(clock, r.created_at_ms),
                diff: r.diff.clone(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::Fixtures;

    fn world() -> World {
        World::from_fixtures(&Fixtures::built_in()).unwrap()
    }

    #[test]
    fn origin_follows_the_request() {
        let mut h = HeaderMap::new();
        assert_eq!(origin(&h), "http://localhost");
        h.insert("host", "127.0.0.1:8080".parse().unwrap());
        assert_eq!(origin(&h), "http://127.0.0.1:8080");
        h.insert("x-forwarded-proto", "https".parse().unwrap());
        assert_eq!(origin(&h), "https://127.0.0.1:8080");
        h.insert("host", "evil.example/path?x".parse().unwrap());
        assert_eq!(origin(&h), "https://localhost");
    }

    #[test]
    fn a_v1_endpoint_reads_as_a_v2_endpoint() {
        let w = world();
        let e = w.endpoints.values().next().unwrap();
        let clock = Clock::new(1.0);
        let v = serde_json::to_value(endpoint(e, "http://h:1", &clock)).unwrap();
        assert_eq!(v["type"], "QUEUE");
        assert_eq!(
            v["requestUrls"]["runSync"],
            format!("http://h:1/v2/{}/runsync", e.id)
        );
        assert_eq!(
            v["requestUrls"]["status"],
            format!("http://h:1/v2/{}/status/%7Bjob_id%7D", e.id)
        );
        assert_eq!(v["image"], w.templates[&e.template_id].image_name);
        assert_eq!(
            v["scaling"],
            serde_json::json!({"type": "QUEUE_DELAY", "queueDelay": 4.0})
        );
        assert_eq!(v["workers"]["idleTimeout"], 5);
        assert_eq!(v["timeout"], 600_000);
        assert_eq!(v["flashboot"], "OFF");
        assert!(v["gpu"]["pools"].as_array().is_some_and(|p| !p.is_empty()));
        assert!(v["gpu"]["minCudaVersion"].is_null());
        assert!(v.get("cpu").is_none());
    }

    #[test]
    fn idle_timeout_is_omitted_for_queue_request_count() {
        let w = world();
        let mut e = w.endpoints.values().next().unwrap().clone();
        e.scaler_type = ScalerType::RequestCount;
        let v = serde_json::to_value(endpoint(&e, "http://h", &Clock::new(1.0))).unwrap();
        assert!(v["workers"].get("idleTimeout").is_none());
        assert_eq!(v["scaling"]["requestCount"], 4);
        e.endpoint_type = EndpointType::LoadBalancer;
        let v = serde_json::to_value(endpoint(&e, "http://h", &Clock::new(1.0))).unwrap();
        assert_eq!(v["workers"]["idleTimeout"], 5);
        assert_eq!(
            v["requestUrls"]["health"],
            format!("http://h/lb/{}/ping", e.id)
        );
    }

    #[test]
    fn workers_of_a_failing_image_are_initializing_and_never_started() {
        let w = world();
        let e = w.endpoints.values().next().unwrap();
        let clock = Clock::new(1.0);
        clock.advance(90_000);
        let mut busy = WorkerSlot::new("busy".into(), 1, 0);
        busy.busy = true;
        let slots = vec![WorkerSlot::new("stuck".into(), 1, 0), busy];
        let placed = (Some("NVIDIA A40".to_string()), Some("US-TX-3".to_string()));
        let answer = |failing| {
            let fleet = FleetState {
                version: 1,
                failing,
            };
            serde_json::to_value(workers(e, &placed, fleet, &slots, &clock)).unwrap()
        };
        let v = answer(true);
        assert_eq!(
            v["summary"],
            serde_json::json!({"running": 1, "idle": 0, "initializing": 1, "throttled": 0, "unhealthy": 0, "total": 2})
        );
        let stuck = &v["workers"][0];
        assert_eq!(stuck["status"], "INITIALIZING");
        assert!(stuck["uptimeSeconds"].is_null() && stuck["startedAt"].is_null());
        // Placed all the same: the document nulls these only until placement.
        assert_eq!(stuck["gpuTypeId"], "NVIDIA A40");
        assert_eq!(v["workers"][1]["uptimeSeconds"], 90);
        let v = answer(false);
        assert_eq!(v["workers"][0]["status"], "IDLE");
        assert!(v["workers"][0]["uptimeSeconds"].as_u64() >= Some(90));
        assert!(v["workers"][0]["startedAt"].is_string());
    }

    #[test]
    fn the_health_path_follows_health_check_path() {
        assert_eq!(health_path(None), "/ping");
        assert_eq!(health_path(Some("")), "/ping");
        assert_eq!(health_path(Some("/healthz")), "/healthz");
        assert_eq!(health_path(Some("ready")), "/ready");
        assert_eq!(health_path(Some("/v1/health")), "/v1/health");
        // Not a URL path as it is: the default, so `health` stays a URI.
        assert_eq!(health_path(Some("/a b")), "/ping");
        assert_eq!(health_path(Some("/x?y#z")), "/ping");
    }

    #[test]
    fn rollout_counts() {
        let slots = vec![
            WorkerSlot::new("a".into(), 1, 0),
            WorkerSlot::new("b".into(), 2, 0),
        ];
        let r = rollout(2, &slots);
        assert!(r.in_progress);
        assert_eq!(
            (r.workers_on_latest, r.workers_total, r.percent_on_latest),
            (1, 2, 50)
        );
        let r = rollout(2, &[]);
        assert!(!r.in_progress);
        assert_eq!(r.percent_on_latest, 0);
    }
}
