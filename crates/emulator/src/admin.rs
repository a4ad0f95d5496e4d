//! The admin surface under `/_emulator/` (faults, inspection, clock, reset) and
//! [`AdminClient`], a typed client for it over real HTTP.
//!
//! Reachable only from loopback, or from anywhere with the header
//! `x-emulator-admin-token: <token>` when an admin token is configured.
//!
//! Quotas a benchmark at scale lifts: the REST v2 quota per key and route group
//! (`POST /_emulator/v2-quota`, [`AdminClient::set_v2_quota`]; `EmulatorConfig::v2_quota` or
//! `--v2-requests-per-*` set it at start). The account has no cap on how many records it
//! holds (network volumes, templates, ...): only the request quotas limit a run. The job API's
//! limits follow the endpoint's workers (`EmulatorConfig::requests_per_worker`) and the
//! registry delegations' per-minute window is `--registry-requests-per-minute`.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::error::ApiError;
use super::faults::{Burst, Create500, FaultRule};
use super::start_failure::StartFailure;
use super::state::App;

pub const TOKEN_HEADER: &str = "x-emulator-admin-token";

/// Lets loopback callers and token holders through.
pub async fn guard(
    State(app): State<App>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request,
    next: Next,
) -> Response {
    let token_ok = app.config.admin_token.as_deref().is_some_and(|t| {
        req.headers()
            .get(TOKEN_HEADER)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v == t)
    });
    if peer.ip().is_loopback() || token_ok {
        next.run(req).await
    } else {
        ApiError::forbidden("the admin surface is reachable from loopback or with the admin token")
            .into_response()
    }
}

fn parse<T: for<'de> Deserialize<'de>>(body: &Bytes) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("body: {e}")))
}

pub async fn state(State(app): State<App>) -> Json<Value> {
    Json(app.dump())
}

pub async fn calls(State(app): State<App>) -> Json<BTreeMap<String, u64>> {
    Json(app.faults.calls())
}

pub async fn clear_calls(State(app): State<App>) -> StatusCode {
    app.faults.clear_calls();
    StatusCode::NO_CONTENT
}

pub async fn list_faults(State(app): State<App>) -> Json<Value> {
    Json(app.faults.dump())
}

pub async fn add_fault(State(app): State<App>, body: Bytes) -> Result<StatusCode, ApiError> {
    let rule: FaultRule = parse(&body)?;
    app.faults.add_rule(rule).map_err(ApiError::bad_request)?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn clear_faults(State(app): State<App>) -> StatusCode {
    app.faults.clear();
    StatusCode::NO_CONTENT
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BurstRequest {
    /// Route pattern; all routes when absent.
    #[serde(default)]
    pub route: Option<String>,
    /// Number of calls answered 429.
    #[serde(default)]
    pub count: Option<u32>,
    /// Or: every call for this many emulated milliseconds.
    #[serde(default)]
    pub duration_ms: Option<u64>,
}

pub async fn burst(State(app): State<App>, body: Bytes) -> Result<StatusCode, ApiError> {
    let b: BurstRequest = parse(&body)?;
    if b.count.is_none() && b.duration_ms.is_none() {
        return Err(ApiError::bad_request(
            "count or durationMs: one is required",
        ));
    }
    app.faults.add_burst(Burst {
        route: b.route,
        remaining: b.count,
        until: b.duration_ms.map(|d| app.clock.now() + d),
    });
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StockRequest {
    pub gpu_type_id: String,
    /// true: secure cloud, false: community cloud; absent: both.
    #[serde(default)]
    pub secure_cloud: Option<bool>,
    #[serde(default)]
    pub data_center_id: Option<String>,
    /// Free GPUs after the change (in each chosen cloud).
    pub count: u32,
}

pub async fn stock(State(app): State<App>, body: Bytes) -> Result<StatusCode, ApiError> {
    let s: StockRequest = parse(&body)?;
    app.world
        .lock()
        .cloud
        .set_stock(
            &s.gpu_type_id,
            s.secure_cloud,
            s.data_center_id.as_deref(),
            s.count,
        )
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MachinesRequest {
    pub gpu_type_id: String,
    pub data_center_id: String,
    /// true (the default): secure cloud; false: community cloud.
    #[serde(default)]
    pub secure_cloud: Option<bool>,
    /// Free machines after the change.
    pub machines: u32,
    pub gpus_per_machine: u32,
}

pub async fn machines(State(app): State<App>, body: Bytes) -> Result<StatusCode, ApiError> {
    let r: MachinesRequest = parse(&body)?;
    app.world
        .lock()
        .cloud
        .set_machines(
            &r.gpu_type_id,
            &r.data_center_id,
            r.secure_cloud.unwrap_or(true),
            r.machines,
            r.gpus_per_machine,
        )
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StockViewRequest {
    /// true: `lowestPrice` keeps reporting the stock of this moment; false: live again.
    pub frozen: bool,
}

pub async fn stock_view(State(app): State<App>, body: Bytes) -> Result<StatusCode, ApiError> {
    let v: StockViewRequest = parse(&body)?;
    let mut world = app.world.lock();
    if v.frozen {
        world.cloud.freeze_stock_view();
    } else {
        world.cloud.thaw_stock_view();
    }
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Create500Request {
    pub count: u32,
    #[serde(default)]
    pub route: Option<String>,
}

pub async fn create_500(State(app): State<App>, body: Bytes) -> Result<StatusCode, ApiError> {
    let c: Create500Request = parse(&body)?;
    app.faults.add_create_500(Create500 {
        route: c.route,
        remaining: c.count,
    });
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GpuUtilisationRequest {
    pub pod_id: String,
    /// Utilisation every GPU of the pod reports from now on, 0 to 100; absent: back to
    /// the usual figures.
    #[serde(default)]
    pub percent: Option<f64>,
}

/// Sets the GPU utilisation a pod reports on both surfaces (a pod's `idleStop` is
/// tested with it).
pub async fn gpu_utilisation(State(app): State<App>, body: Bytes) -> Result<StatusCode, ApiError> {
    let r: GpuUtilisationRequest = parse(&body)?;
    if r.percent.is_some_and(|p| !(0.0..=100.0).contains(&p)) {
        return Err(ApiError::bad_request("percent: must be from 0 to 100"));
    }
    let mut world = app.world.lock();
    let pod = world
        .cloud
        .pod_mut(&r.pod_id)
        .map_err(|e| ApiError::not_found(e.to_string()))?;
    pod.gpu_util_percent = r.percent;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FailImageRequest {
    /// Exactly the image name a pod is created with (tag included).
    pub image: String,
    pub failure: StartFailure,
}

/// Every pod of the image that starts from now on (and every one still booting) never gets
/// its container up: it stays STARTING and its system log says why.
pub async fn fail_image(State(app): State<App>, body: Bytes) -> Result<StatusCode, ApiError> {
    let r: FailImageRequest = parse(&body)?;
    let now = app.clock.now();
    app.world
        .lock()
        .cloud
        .fail_image(&r.image, r.failure, now, app.config.pod_boot_ms);
    app.refresh_worker_failures();
    tracing::info!(image = %r.image, failure = ?r.failure, "admin: image fails to start");
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FailRegistryLoginRequest {
    pub registry_id: String,
}

/// Every pull with this registry credential is refused from now on.
pub async fn fail_registry_login(
    State(app): State<App>,
    body: Bytes,
) -> Result<StatusCode, ApiError> {
    let r: FailRegistryLoginRequest = parse(&body)?;
    let now = app.clock.now();
    app.world
        .lock()
        .cloud
        .fail_registry_login(&r.registry_id, now, app.config.pod_boot_ms);
    app.refresh_worker_failures();
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostRequest {
    pub pod_id: String,
    /// true: other tenants take every free GPU of the pod's host; false: they leave.
    pub full: bool,
}

pub async fn host(State(app): State<App>, body: Bytes) -> Result<StatusCode, ApiError> {
    let r: HostRequest = parse(&body)?;
    let mut world = app.world.lock();
    let done = if r.full {
        world.cloud.fill_host(&r.pod_id)
    } else {
        world.cloud.free_host(&r.pod_id)
    };
    done.map_err(|e| ApiError::not_found(e.to_string()))?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PriceMarkupRequest {
    /// A GPU type id or a CPU flavor id of the catalog.
    pub type_id: String,
    pub factor: f64,
}

pub async fn price_markup(State(app): State<App>, body: Bytes) -> Result<StatusCode, ApiError> {
    let r: PriceMarkupRequest = parse(&body)?;
    app.world
        .lock()
        .cloud
        .set_price_markup(&r.type_id, r.factor)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CpuStockRequest {
    pub flavor_id: String,
    pub data_center_id: String,
    pub vcpus_free: u32,
}

pub async fn cpu_stock(State(app): State<App>, body: Bytes) -> Result<StatusCode, ApiError> {
    let r: CpuStockRequest = parse(&body)?;
    app.world
        .lock()
        .cloud
        .set_cpu_stock(&r.flavor_id, &r.data_center_id, r.vcpus_free)
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdvanceRequest {
    pub ms: u64,
}

pub async fn advance(State(app): State<App>, body: Bytes) -> Result<Json<Value>, ApiError> {
    let a: AdvanceRequest = parse(&body)?;
    app.clock.advance(a.ms);
    // Expiry is lazy on reads, but sweep now so the state dump agrees at once.
    app.sweep();
    Ok(Json(json!({"now": app.clock.now()})))
}

pub async fn clock(State(app): State<App>) -> Json<Value> {
    Json(json!({"now": app.clock.now(), "scale": app.clock.scale()}))
}

/// `POST /_emulator/v2-quota`: the REST v2 quota per key and route group from the next
/// request on; a window left out keeps its quota.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct V2QuotaRequest {
    pub minute: Option<u64>,
    pub hour: Option<u64>,
    pub day: Option<u64>,
}

/// Answers the quota now in force.
pub async fn v2_quota(State(app): State<App>, body: Bytes) -> Result<Json<Value>, ApiError> {
    let r: V2QuotaRequest = parse(&body)?;
    let mut quota = app.v2_limits.quota();
    quota.minute = r.minute.unwrap_or(quota.minute);
    quota.hour = r.hour.unwrap_or(quota.hour);
    quota.day = r.day.unwrap_or(quota.day);
    app.v2_limits.set_quota(quota);
    tracing::info!(
        minute = quota.minute,
        hour = quota.hour,
        day = quota.day,
        "REST v2 quota set"
    );
    Ok(Json(
        json!({"minute": quota.minute, "hour": quota.hour, "day": quota.day}),
    ))
}

pub async fn reset(State(app): State<App>) -> StatusCode {
    app.reset();
    StatusCode::NO_CONTENT
}

// ------------------------------------------------------------------ client

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("admin request failed: {0}")]
    Http(#[from] reqwest::Error),
    #[error("admin request refused with {status}: {body}")]
    Refused { status: u16, body: String },
}

/// Typed client for the `/_emulator/` routes.
#[derive(Debug, Clone)]
pub struct AdminClient {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl AdminClient {
    /// `base` is the emulator's base URL (`http://127.0.0.1:PORT`).
    pub fn new(base: impl Into<String>, token: Option<String>) -> Self {
        Self {
            base: base.into(),
            token,
            http: reqwest::Client::new(),
        }
    }

    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, AdminError> {
        let mut req = self
            .http
            .request(method, format!("{}/_emulator/{path}", self.base));
        if let Some(t) = &self.token {
            req = req.header(TOKEN_HEADER, t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await?;
        let status = resp.status();
        let text = resp.text().await?;
        if !status.is_success() {
            return Err(AdminError::Refused {
                status: status.as_u16(),
                body: text,
            });
        }
        Ok(if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        })
    }

    async fn post(&self, path: &str, body: Value) -> Result<(), AdminError> {
        self.send(reqwest::Method::POST, path, Some(body))
            .await
            .map(|_| ())
    }

    /// Answers `rate` (0..=1) of the calls to `route` with `status`.
    pub async fn set_error_rate(
        &self,
        route: &str,
        rate: f64,
        status: u16,
    ) -> Result<(), AdminError> {
        self.post(
            "faults",
            json!({"route": route, "errorRate": rate, "status": status}),
        )
        .await
    }

    /// Adds `latency_ms` real milliseconds to every call to `route`.
    pub async fn add_latency(&self, route: &str, latency_ms: u64) -> Result<(), AdminError> {
        self.post("faults", json!({"route": route, "latencyMs": latency_ms}))
            .await
    }

    /// Serves every call to `route` at once but holds its answer for `latency_ms` real
    /// milliseconds: the call has taken effect while its caller still waits.
    pub async fn delay_answers(&self, route: &str, latency_ms: u64) -> Result<(), AdminError> {
        self.post(
            "faults",
            json!({"route": route, "answerLatencyMs": latency_ms}),
        )
        .await
    }

    /// Answers the next `count` calls (to `route`, or to any route) with 429.
    pub async fn burst_429(&self, route: Option<&str>, count: u32) -> Result<(), AdminError> {
        self.post("burst", json!({"route": route, "count": count}))
            .await
    }

    /// Answers every call (to `route`, or any) with 429 for `duration_ms` emulated ms.
    pub async fn burst_429_for(
        &self,
        route: Option<&str>,
        duration_ms: u64,
    ) -> Result<(), AdminError> {
        self.post("burst", json!({"route": route, "durationMs": duration_ms}))
            .await
    }

    /// Sets the free GPUs of a type; `secure_cloud` None sets both clouds.
    pub async fn set_stock(
        &self,
        gpu_type_id: &str,
        secure_cloud: Option<bool>,
        count: u32,
    ) -> Result<(), AdminError> {
        self.post(
            "stock",
            json!({"gpuTypeId": gpu_type_id, "secureCloud": secure_cloud, "count": count}),
        )
        .await
    }

    /// Makes the free secure-cloud stock of a GPU type in one data center exactly
    /// `machines` machines of `gpus_per_machine` GPUs each (the shape cluster creates are
    /// placed on: one member per machine, all in one data center). Other data centers keep
    /// theirs.
    pub async fn set_machines(
        &self,
        gpu_type_id: &str,
        data_center_id: &str,
        machines: u32,
        gpus_per_machine: u32,
    ) -> Result<(), AdminError> {
        self.post(
            "machines",
            json!({"gpuTypeId": gpu_type_id, "dataCenterId": data_center_id,
                   "machines": machines, "gpusPerMachine": gpus_per_machine}),
        )
        .await
    }

    /// Freezes the stock `gpuTypes { lowestPrice }` and the REST v2 catalog availability
    /// report at what it is now: later changes to the machines (deploys,
    /// [`AdminClient::set_stock`]) reach deploys (GraphQL and `POST /v2/pods`) but not the
    /// listings, as with the real platform's cached stock figures.
    pub async fn freeze_stock_view(&self) -> Result<(), AdminError> {
        self.post("stock-view", json!({"frozen": true})).await
    }

    /// `gpuTypes { lowestPrice }` and the v2 catalog report the machines as they are again.
    pub async fn thaw_stock_view(&self) -> Result<(), AdminError> {
        self.post("stock-view", json!({"frozen": false})).await
    }

    /// The next `count` successful creates are answered with a 500 (the object exists).
    pub async fn fail_next_creates(&self, count: u32) -> Result<(), AdminError> {
        self.post("create-500", json!({"count": count})).await
    }

    /// Same, for one create route only (`POST /v1/endpoints`, `POST /v2/pods`,
    /// `graphql:podFindAndDeployOnDemand`, ...).
    pub async fn fail_next_creates_on(&self, route: &str, count: u32) -> Result<(), AdminError> {
        self.post("create-500", json!({"count": count, "route": route}))
            .await
    }

    /// Removes every fault (not the call counts).
    pub async fn clear_faults(&self) -> Result<(), AdminError> {
        self.send(reqwest::Method::DELETE, "faults", None)
            .await
            .map(|_| ())
    }

    /// The whole state as JSON.
    pub async fn state(&self) -> Result<Value, AdminError> {
        self.send(reqwest::Method::GET, "state", None).await
    }

    /// Calls per route since start or the last reset.
    pub async fn calls(&self) -> Result<BTreeMap<String, u64>, AdminError> {
        let v = self.send(reqwest::Method::GET, "calls", None).await?;
        Ok(serde_json::from_value(v).unwrap_or_default())
    }

    /// Calls to one route (`POST /v1/endpoints`, `graphql:podStop`, ...).
    pub async fn call_count(&self, route: &str) -> Result<u64, AdminError> {
        Ok(self.calls().await?.get(route).copied().unwrap_or(0))
    }

    pub async fn clear_calls(&self) -> Result<(), AdminError> {
        self.send(reqwest::Method::DELETE, "calls", None)
            .await
            .map(|_| ())
    }

    /// Makes every GPU of pod `pod_id` report `percent` utilisation (`None`: the usual
    /// figures again).
    pub async fn set_gpu_utilisation(
        &self,
        pod_id: &str,
        percent: Option<f64>,
    ) -> Result<(), AdminError> {
        self.post(
            "gpu-utilisation",
            json!({"podId": pod_id, "percent": percent}),
        )
        .await
    }

    /// Every pod that starts with exactly this image name from now on fails to start in that
    /// way; so do those of the image still booting. The pod stays STARTING, bills, and its
    /// system log stream repeats the failure every 20 s. Serverless workers of an endpoint
    /// running this image stay INITIALIZING and take no job.
    pub async fn fail_image(&self, image: &str, failure: StartFailure) -> Result<(), AdminError> {
        self.post("fail-image", json!({"image": image, "failure": failure}))
            .await
    }

    /// Every pod created with this registry credential (v2 `registry`) fails to pull:
    /// [`StartFailure::RegistryAuthRefused`]; the workers of an endpoint using it stay
    /// INITIALIZING and take no job.
    pub async fn fail_registry_login(&self, registry_id: &str) -> Result<(), AdminError> {
        self.post("fail-registry-login", json!({"registryId": registry_id}))
            .await
    }

    /// Other tenants take every free GPU of the host a (stopped) pod is tied to: its
    /// `start` is refused with the platform's host-full message until [`Self::free_host`]
    /// or a reset.
    pub async fn fill_host(&self, pod_id: &str) -> Result<(), AdminError> {
        self.post("host", json!({"podId": pod_id, "full": true}))
            .await
    }

    /// What [`Self::fill_host`] took on the pod's host is free again.
    pub async fn free_host(&self, pod_id: &str) -> Result<(), AdminError> {
        self.post("host", json!({"podId": pod_id, "full": false}))
            .await
    }

    /// Pods created from now on with this GPU type id or CPU flavor id cost `factor` times
    /// the catalog's price (their `cost` and their billing); the catalog keeps quoting the
    /// list price.
    pub async fn set_price_markup(&self, type_id: &str, factor: f64) -> Result<(), AdminError> {
        self.post("price-markup", json!({"typeId": type_id, "factor": factor}))
            .await
    }

    /// The free vCPUs of a CPU flavor in one data center (other data centers keep theirs).
    pub async fn set_cpu_stock(
        &self,
        flavor_id: &str,
        data_center_id: &str,
        vcpus_free: u32,
    ) -> Result<(), AdminError> {
        self.post(
            "cpu-stock",
            json!({"flavorId": flavor_id, "dataCenterId": data_center_id, "vcpusFree": vcpus_free}),
        )
        .await
    }

    /// The REST v2 quota per key and route group (`POST /_emulator/v2-quota`) from the next
    /// request on, until a reset brings the configured one back. A benchmark lifts it to
    /// measure the operator rather than the quota.
    pub async fn set_v2_quota(&self, quota: crate::quota::Quota) -> Result<(), AdminError> {
        let body = V2QuotaRequest {
            minute: Some(quota.minute),
            hour: Some(quota.hour),
            day: Some(quota.day),
        };
        self.post("v2-quota", json!(body)).await
    }

    /// Moves the emulator's clock forward by `ms` emulated milliseconds.
    pub async fn advance_clock(&self, ms: u64) -> Result<(), AdminError> {
        self.post("clock/advance", json!({"ms": ms})).await
    }

    /// Back to the fixtures; faults, counts and limits cleared.
    pub async fn reset(&self) -> Result<(), AdminError> {
        self.send(reqwest::Method::POST, "reset", None)
            .await
            .map(|_| ())
    }
}
