//! The platform's published REST API v2 (`/v2/pods`, `/v2/clusters`, `/v2/catalog/...`,
//! `/v2/billing/...`, `/v2/serverless`, ...), served on the same world as the seed surfaces:
//! a pod created here is the pod GraphQL lists and stops.
//!
//! Shared pieces: [`problem`] (the problem+json error), [`request`] (caller, body and query
//! parsing with 422s naming the field), [`limits`] (per key and route group windows with the
//! `RateLimit` headers). Each route group module exposes `routes()`; [`routes`] merges them
//! and [`mounted`] puts them behind the rate-limit layer. Static paths such as `/v2/pods`
//! win over the job API's `/v2/{endpoint_id}/...` in the router.

pub mod billing;
pub mod catalog;
pub mod clusters;
pub mod container;
pub mod event_stream;
pub mod integer;
pub mod limits;
pub mod listing;
pub mod object;
pub mod pods;
pub mod problem;
pub mod records;
pub mod registries;
pub mod request;
pub mod rules;
pub mod serverless;
pub mod templates;
pub mod volumes;

use axum::Router;
use axum::middleware;

use super::clock::{Clock, Millis};
use super::state::App;

pub use problem::{Problem, V2Result};
pub use request::{
    Caller, CommaList, Int, IntParam, V2Query, Violations, not_null, nullable, parse_body,
    parse_query,
};

/// The first path segment after `/v2` of every v2 REST resource.
pub const GROUPS: &[&str] = &[
    "pods",
    "catalog",
    "billing",
    "serverless",
    "templates",
    "network-volumes",
    "registries",
    "clusters",
    "account",
];

/// Every v2 REST route, one `routes()` per group.
pub fn routes() -> Router<App> {
    Router::new()
        .merge(pods::routes())
        .merge(catalog::routes())
        .merge(billing::routes())
        .merge(serverless::routes())
        .merge(templates::routes())
        .merge(volumes::routes())
        .merge(registries::routes())
        .merge(clusters::routes())
}

/// [`routes`] behind authentication and the rate limits.
pub fn mounted(app: &App) -> Router<App> {
    let routes = routes();
    if routes.has_routes() {
        routes.route_layer(middleware::from_fn_with_state(app.clone(), limits::layer))
    } else {
        routes
    }
}

/// Whether `path` belongs to the v2 REST API (not the job API under the same prefix).
/// `/v2/registries/delegations` is the seed registry surface and keeps its own errors.
pub fn is_rest_path(path: &str) -> bool {
    let mut segments = path.trim_start_matches('/').split('/');
    segments.next() == Some("v2")
        && segments.next().is_some_and(|g| GROUPS.contains(&g))
        && !path.starts_with("/v2/registries/delegations")
}

/// An emulated instant as the RFC 3339 UTC timestamp the document shows (`2026-06-01T12:00:00Z`).
pub fn timestamp(clock: &Clock, at: Millis) -> String {
    super::clock::rfc3339_secs(clock.wall_at(at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rest_paths_are_told_from_job_paths() {
        assert!(is_rest_path("/v2/pods"));
        assert!(is_rest_path("/v2/catalog/gpus/x"));
        assert!(is_rest_path("/v2/network-volumes"));
        assert!(!is_rest_path("/v2/ep-demo0001/run"));
        assert!(!is_rest_path("/v1/endpoints"));
        assert!(!is_rest_path("/v2/registries/delegations"));
        assert!(!is_rest_path("/graphql"));
    }

    #[test]
    fn timestamps_are_rfc3339_seconds() {
        let clock = Clock::new(1.0);
        let t = timestamp(&clock, 0);
        assert!(t.ends_with('Z') && t.len() == 20, "{t}");
    }
}
