//! Registry delegation API: `GET /v2/registries/delegations` (bearer auth).
//!
//! 401 for a missing or wrong key, 403 for keys configured without registry access, 404 for
//! an unknown delegation id, and a 429 whose detail names the per-minute window.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::auth::Caller;
use super::error::ApiError;
use super::ratelimit::{Limited, Rule};
use super::state::App;

const WINDOW_MS: u64 = 60_000;

fn admit(app: &App, headers: &HeaderMap) -> Result<Caller, ApiError> {
    let caller = app.keys.bearer(headers)?;
    let key = &app.config.api_keys[caller.key_index].key;
    if app.config.registry_forbidden_keys.iter().any(|k| k == key) {
        return Err(ApiError::forbidden(
            "this API key has no access to container registry delegations",
        ));
    }
    let limit = u64::from(app.config.registry_requests_per_minute);
    let rule = Rule {
        rate: limit,
        window_ms: WINDOW_MS,
        concurrency: None,
    };
    match app
        .limiter
        .acquire(caller.key_index, "registry", "delegations", limit, rule)
    {
        Ok(_permit) => Ok(caller),
        Err(limited) => {
            let retry_after_ms = match limited {
                Limited::Rate { retry_after_ms, .. } => retry_after_ms,
                Limited::Concurrency { .. } => 1_000,
            };
            Err(ApiError::too_many(
                format!(
                    "rate limit exceeded: at most {limit} registry requests per minute per API key; retry with exponential backoff"
                ),
                app.limiter.retry_after_secs(retry_after_ms),
            ))
        }
    }
}

pub async fn list(State(app): State<App>, headers: HeaderMap) -> Result<Response, ApiError> {
    admit(&app, &headers)?;
    let world = app.world.lock();
    Ok(Json(json!({ "delegations": world.delegations })).into_response())
}

pub async fn get(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    admit(&app, &headers)?;
    let world = app.world.lock();
    let d = world
        .delegations
        .iter()
        .find(|d| d.id == id)
        .ok_or_else(|| ApiError::not_found(format!("registry delegation {id} not found")))?;
    Ok(Json(d).into_response())
}
