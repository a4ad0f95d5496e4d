//! The job API under `/v2/{endpoint_id}`: the eight operations, `/openai/*` and `/requests`.
//!
//! Order of checks for every call: the key (401), write access for writes (403), the
//! endpoint (404), the rate limit of the operation with the dynamic rule (429), then the
//! request itself (400/413).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::model::{
    RUN_PAYLOAD_LIMIT, RUNSYNC_PAYLOAD_LIMIT, Submission, TTL_MAX, TTL_MIN, WAIT_DEFAULT, WAIT_MAX,
    WAIT_MIN, parse_submission,
};
use super::runtime::{EndpointRuntime, health_body};
use crate::error::ApiError;
use crate::ratelimit::{JobOp, Permit, effective_rate, job_limited};
use crate::state::App;

type Result<T> = std::result::Result<T, ApiError>;

struct Admitted {
    rt: Arc<EndpointRuntime>,
    _permit: Option<Permit>,
}

/// Every operation of the job API, for what it must pass before it runs.
#[derive(Debug, Clone, Copy)]
enum Operation {
    Run,
    RunSync,
    Status,
    Stream,
    Cancel,
    Retry,
    PurgeQueue,
    Health,
    Requests,
    OpenAi,
}

impl Operation {
    /// The rate limit the operation counts against; `/retry` and `/health` have none.
    fn limit(self) -> Option<JobOp> {
        match self {
            Self::Run => Some(JobOp::Run),
            Self::RunSync => Some(JobOp::RunSync),
            Self::Status => Some(JobOp::Status),
            Self::Stream => Some(JobOp::Stream),
            Self::Cancel => Some(JobOp::Cancel),
            Self::PurgeQueue => Some(JobOp::PurgeQueue),
            Self::Requests => Some(JobOp::Requests),
            Self::OpenAi => Some(JobOp::OpenAi),
            Self::Retry | Self::Health => None,
        }
    }

    /// For a write, what a read-only key is refused (the 403 names it); `None` for a read.
    fn write(self) -> Option<&'static str> {
        match self {
            Self::Run | Self::RunSync | Self::OpenAi => Some("submit jobs"),
            Self::Cancel => Some("cancel jobs"),
            Self::Retry => Some("retry jobs"),
            Self::PurgeQueue => Some("purge queues"),
            Self::Status | Self::Stream | Self::Health | Self::Requests => None,
        }
    }
}

/// Auth, endpoint lookup and rate limiting shared by every operation.
fn admit(
    app: &App,
    headers: &HeaderMap,
    endpoint_id: &str,
    operation: Operation,
) -> Result<Admitted> {
    let caller = app.keys.bearer_or_bare(headers)?;
    if let Some(what) = operation.write() {
        caller.require_write(what)?;
    }
    let rt = app
        .runtime(endpoint_id)
        .ok_or_else(|| ApiError::not_found(format!("endpoint {endpoint_id} not found")))?;
    let permit = match operation.limit() {
        None => None,
        Some(op) => {
            let rule = op.rule();
            let rate = effective_rate(rule.rate, rt.live_workers(), app.config.requests_per_worker);
            Some(
                app.limiter
                    .acquire(caller.key_index, endpoint_id, op.path(), rate, rule)
                    .map_err(|l| job_limited(&app.limiter, l, op, endpoint_id))?,
            )
        }
    };
    Ok(Admitted {
        rt,
        _permit: permit,
    })
}

fn query_int(q: &HashMap<String, String>, name: &str, min: u64, max: u64) -> Result<Option<u64>> {
    match q.get(name) {
        None => Ok(None),
        Some(v) => match v.parse::<u64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(Some(n)),
            _ => Err(ApiError::bad_request(format!(
                "{name}: must be an integer between {min} and {max} (milliseconds)"
            ))),
        },
    }
}

pub async fn run(
    State(app): State<App>,
    Path(endpoint_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let a = admit(&app, &headers, &endpoint_id, Operation::Run)?;
    let sub = parse_submission(&body, RUN_PAYLOAD_LIMIT, "/run")?;
    let job = a.rt.submit(sub, None);
    Ok(Json(json!({"id": job.id, "status": "IN_QUEUE"})).into_response())
}

/// Submits a sync job and waits up to `wait` emulated ms for a final state.
async fn submit_and_wait(
    app: &App,
    rt: &Arc<EndpointRuntime>,
    sub: Submission,
    wait: u64,
) -> Result<Value> {
    let job = rt.submit(sub, Some(wait));
    let deadline = app.clock.now().saturating_add(wait);
    loop {
        let done = job.done.notified();
        tokio::pin!(done);
        done.as_mut().enable();
        let (finished, body) = rt.sync_result(&job.id)?;
        if finished || app.clock.now() >= deadline {
            return Ok(body);
        }
        tokio::select! {
            _ = &mut done => {}
            _ = app.clock.sleep_until(deadline) => {}
        }
    }
}

pub async fn runsync(
    State(app): State<App>,
    Path(endpoint_id): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let a = admit(&app, &headers, &endpoint_id, Operation::RunSync)?;
    let wait = query_int(&q, "wait", WAIT_MIN, WAIT_MAX)?.unwrap_or(WAIT_DEFAULT);
    let sub = parse_submission(&body, RUNSYNC_PAYLOAD_LIMIT, "/runsync")?;
    let body = submit_and_wait(&app, &a.rt, sub, wait).await?;
    Ok(Json(body).into_response())
}

pub async fn status(
    State(app): State<App>,
    Path((endpoint_id, job_id)): Path<(String, String)>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response> {
    let a = admit(&app, &headers, &endpoint_id, Operation::Status)?;
    let ttl = query_int(&q, "ttl", TTL_MIN, TTL_MAX)?;
    Ok(Json(a.rt.status(&job_id, ttl)?).into_response())
}

pub async fn stream(
    State(app): State<App>,
    Path((endpoint_id, job_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response> {
    let a = admit(&app, &headers, &endpoint_id, Operation::Stream)?;
    Ok(Json(a.rt.stream(&job_id)?).into_response())
}

pub async fn cancel(
    State(app): State<App>,
    Path((endpoint_id, job_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response> {
    let a = admit(&app, &headers, &endpoint_id, Operation::Cancel)?;
    Ok(Json(a.rt.cancel(&job_id)?).into_response())
}

pub async fn retry(
    State(app): State<App>,
    Path((endpoint_id, job_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response> {
    let a = admit(&app, &headers, &endpoint_id, Operation::Retry)?;
    Ok(Json(a.rt.retry(&job_id)?).into_response())
}

pub async fn purge_queue(
    State(app): State<App>,
    Path(endpoint_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response> {
    let a = admit(&app, &headers, &endpoint_id, Operation::PurgeQueue)?;
    let removed = a.rt.purge();
    Ok(Json(json!({"removed": removed, "status": "completed"})).into_response())
}

pub async fn health(
    State(app): State<App>,
    Path(endpoint_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response> {
    let a = admit(&app, &headers, &endpoint_id, Operation::Health)?;
    Ok(Json(health_body(&a.rt.health())).into_response())
}

/// `GET /requests`: the endpoint's retained jobs, `{id, status}` each.
pub async fn requests(
    State(app): State<App>,
    Path(endpoint_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response> {
    let a = admit(&app, &headers, &endpoint_id, Operation::Requests)?;
    Ok(Json(json!({"requests": a.rt.list()})).into_response())
}

/// `POST /openai/*`: the body becomes a sync job's input (so the built-in handler's keys
/// work); the answer is the job's output, as an OpenAI-compatible worker would return it.
pub async fn openai(
    State(app): State<App>,
    Path((endpoint_id, _path)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let a = admit(&app, &headers, &endpoint_id, Operation::OpenAi)?;
    let wrapped = match serde_json::from_slice::<Value>(&body) {
        Ok(Value::Object(input)) => json!({"input": input}),
        _ => return Err(ApiError::bad_request("body: must be a JSON object")),
    };
    let sub = parse_submission(
        wrapped.to_string().as_bytes(),
        RUNSYNC_PAYLOAD_LIMIT,
        "/openai",
    )?;
    let result = submit_and_wait(&app, &a.rt, sub, WAIT_DEFAULT).await?;
    match result["status"].as_str() {
        Some("COMPLETED") => Ok(Json(result["output"].clone()).into_response()),
        Some("FAILED") | Some("TIMED_OUT") => Err(ApiError::internal(format!(
            "worker error: {}",
            result["error"].as_str().unwrap_or("job failed")
        ))),
        _ => Ok((StatusCode::ACCEPTED, Json(result)).into_response()),
    }
}
