//! The v2 REST rate limits: per key and per route group (`pods`, `catalog`, `billing`, ...),
//! fixed minute, hour and day windows on the emulator clock.
//!
//! Every answer to an authenticated request carries `RateLimit` (remaining `r` and seconds to
//! the window's reset `t`) and `RateLimit-Policy` (quota `q`, window length `w`); a request
//! over any quota is a 429 problem with `Retry-After` and is not counted. The middleware also
//! authenticates (401 before anything is counted) and leaves the [`Caller`] for handlers.

use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::problem::Problem;
use super::request::{Caller, authenticate};
use crate::state::App;

pub use crate::quota::{Decision, Quota, V2Limiter};

pub const RATE_LIMIT: &str = "ratelimit";
pub const RATE_LIMIT_POLICY: &str = "ratelimit-policy";

/// The route group of a v2 path: `/v2/pods/abc/action` is `pods`.
pub fn route_group(path: &str) -> &str {
    path.trim_start_matches('/')
        .split('/')
        .nth(1)
        .unwrap_or_default()
}

/// Authenticates, counts and labels every v2 REST request.
pub async fn layer(State(app): State<App>, mut req: Request, next: Next) -> Response {
    let caller = match authenticate(&app, req.headers()) {
        Ok(c) => c,
        Err(p) => return p.into_response(),
    };
    let decision = app
        .v2_limits
        .take(caller.key_index, route_group(req.uri().path()));
    let mut response = match decision.retry_after {
        Some(secs) => Problem::too_many(secs).into_response(),
        None => {
            req.extensions_mut().insert::<Caller>(caller);
            next.run(req).await
        }
    };
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&decision.remaining) {
        headers.insert(RATE_LIMIT, v);
    }
    if let Ok(v) = HeaderValue::from_str(&decision.policy) {
        headers.insert(RATE_LIMIT_POLICY, v);
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_the_segment_after_v2() {
        assert_eq!(route_group("/v2/pods"), "pods");
        assert_eq!(route_group("/v2/pods/abc/action"), "pods");
        assert_eq!(route_group("/v2/catalog/gpus/x"), "catalog");
        assert_eq!(route_group("/v2/network-volumes"), "network-volumes");
    }
}
