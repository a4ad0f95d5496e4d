//! Fault injection and call counting.
//!
//! Routes are named `METHOD /path/pattern` as the router declares them
//! (`POST /v1/endpoints`, `GET /v2/{endpoint_id}/status/{job_id}`) or `graphql:<field>` for a
//! top-level GraphQL field (`graphql:podFindAndDeployOnDemand`). A rule's route pattern may
//! use `*` or `{...}` for any segment, a literal segment of a real path (`POST /v2/abc/run`
//! targets one endpoint), `*` as the method, or `graphql:*`.

use std::collections::{BTreeMap, HashMap};

use axum::http::StatusCode;
use parking_lot::Mutex;
use rand::Rng;
use serde::{Deserialize, Serialize};

use super::clock::Millis;
use super::error::ApiError;

/// An error rate and/or latency on a route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FaultRule {
    pub route: String,
    /// 0.0..=1.0: share of calls answered with `status` instead of being served.
    #[serde(default)]
    pub error_rate: f64,
    #[serde(default = "default_status")]
    pub status: u16,
    /// Real milliseconds added before the call is served.
    #[serde(default)]
    pub latency_ms: u64,
    /// Real milliseconds added after the call is served, before the answer goes out: the
    /// call has taken effect while the caller still waits (a caller killed meanwhile never
    /// learns of it).
    #[serde(default)]
    pub answer_latency_ms: u64,
}

fn default_status() -> u16 {
    500
}

/// A 429 burst: the next `count` matching calls, or every matching call until `until`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Burst {
    pub route: Option<String>,
    pub remaining: Option<u32>,
    pub until: Option<Millis>,
}

/// "Create succeeded, but the answer was a 500" for the next `remaining` creates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Create500 {
    pub route: Option<String>,
    pub remaining: u32,
}

/// Routes that create something remote; "succeed but answer 500" applies to these.
pub const CREATE_ROUTES: &[&str] = &[
    "POST /v1/endpoints",
    "POST /v1/networkvolumes",
    "POST /v1/templates",
    "POST /v1/containerregistryauth",
    "graphql:podFindAndDeployOnDemand",
    "POST /v2/pods",
    "POST /v2/clusters",
    "POST /v2/serverless",
    "POST /v2/network-volumes",
    "POST /v2/templates",
    "POST /v2/registries",
];

#[derive(Debug, Default)]
struct Inner {
    rules: Vec<FaultRule>,
    bursts: Vec<Burst>,
    create_500: Vec<Create500>,
    calls: HashMap<String, u64>,
}

/// What to do with one call.
#[derive(Debug, Default)]
pub struct Action {
    pub latency_ms: u64,
    pub answer_latency_ms: u64,
    pub error: Option<ApiError>,
}

/// One call as the emulator received it, with the real instant it arrived: lets an
/// in-process caller (a benchmark) measure how soon a call follows what it did.
#[derive(Clone, Debug)]
pub struct CallSeen {
    /// `METHOD /route/pattern`, as counted.
    pub route: String,
    /// The real path, with ids.
    pub path: String,
    pub at: std::time::Instant,
}

/// Announces calls to in-process subscribers; costs nothing while there are none.
#[derive(Debug)]
struct CallFeed(tokio::sync::broadcast::Sender<CallSeen>);

impl Default for CallFeed {
    fn default() -> Self {
        // A subscriber that falls this far behind misses calls (and is told so).
        Self(tokio::sync::broadcast::channel(4096).0)
    }
}

#[derive(Debug, Default)]
pub struct Faults {
    inner: Mutex<Inner>,
    feed: CallFeed,
}

impl Faults {
    pub fn add_rule(&self, rule: FaultRule) -> Result<(), String> {
        if !(0.0..=1.0).contains(&rule.error_rate) {
            return Err("errorRate: must be between 0 and 1".into());
        }
        if StatusCode::from_u16(rule.status).is_err() || rule.status < 400 {
            return Err("status: must be an HTTP error status (400..599)".into());
        }
        if rule.route.trim().is_empty() {
            return Err("route: required".into());
        }
        self.inner.lock().rules.push(rule);
        Ok(())
    }

    pub fn add_burst(&self, burst: Burst) {
        self.inner.lock().bursts.push(burst);
    }

    pub fn add_create_500(&self, c: Create500) {
        self.inner.lock().create_500.push(c);
    }

    pub fn rules(&self) -> Vec<FaultRule> {
        self.inner.lock().rules.clone()
    }

    /// Removes rules, bursts and pending create failures (not the call counts).
    pub fn clear(&self) {
        let mut inner = self.inner.lock();
        inner.rules.clear();
        inner.bursts.clear();
        inner.create_500.clear();
    }

    pub fn calls(&self) -> BTreeMap<String, u64> {
        self.inner
            .lock()
            .calls
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }

    pub fn clear_calls(&self) {
        self.inner.lock().calls.clear();
    }

    /// Every call received from now on, as it arrives.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<CallSeen> {
        self.feed.0.subscribe()
    }

    pub fn dump(&self) -> serde_json::Value {
        let inner = self.inner.lock();
        serde_json::json!({
            "rules": inner.rules,
            "bursts": inner.bursts,
            "create500": inner.create_500,
        })
    }

    /// Counts a call to `route` (whose real path is `path`) and decides its fate.
    pub fn on_call(&self, route: &str, path: &str, now: Millis) -> Action {
        if self.feed.0.receiver_count() > 0 {
            let _ = self.feed.0.send(CallSeen {
                route: route.to_string(),
                path: path.to_string(),
                at: std::time::Instant::now(),
            });
        }
        let mut inner = self.inner.lock();
        *inner.calls.entry(route.to_string()).or_default() += 1;
        let mut action = Action::default();
        if inner.rules.is_empty() && inner.bursts.is_empty() {
            return action;
        }
        inner
            .bursts
            .retain(|b| b.remaining != Some(0) && b.until.is_none_or(|u| now < u));
        if let Some(burst) = inner.bursts.iter_mut().find(|b| {
            b.route
                .as_deref()
                .is_none_or(|r| route_matches(r, route, path))
        }) {
            if let Some(n) = burst.remaining.as_mut() {
                *n -= 1;
            }
            action.error = Some(ApiError::too_many(
                "rate limit exceeded (injected 429 burst); retry with exponential backoff",
                1,
            ));
            return action;
        }
        let mut rng = rand::rng();
        for rule in inner
            .rules
            .iter()
            .filter(|r| route_matches(&r.route, route, path))
        {
            action.latency_ms += rule.latency_ms;
            action.answer_latency_ms += rule.answer_latency_ms;
            if action.error.is_none()
                && rule.error_rate > 0.0
                && rng.random::<f64>() < rule.error_rate
            {
                let status =
                    StatusCode::from_u16(rule.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                let mut err = ApiError::new(status, format!("injected fault on {route}"));
                if status == StatusCode::TOO_MANY_REQUESTS {
                    err.retry_after = Some(1);
                }
                action.error = Some(err);
            }
        }
        action
    }

    /// Whether this successful create must be answered with a 500 (and uses one up).
    pub fn take_create_500(&self, route: &str, path: &str) -> bool {
        if !CREATE_ROUTES.contains(&route) {
            return false;
        }
        let mut inner = self.inner.lock();
        let Some(c) = inner.create_500.iter_mut().find(|c| {
            c.remaining > 0
                && c.route
                    .as_deref()
                    .is_none_or(|r| route_matches(r, route, path))
        }) else {
            return false;
        };
        c.remaining -= 1;
        inner.create_500.retain(|c| c.remaining > 0);
        true
    }
}

/// Whether a rule's `pattern` names the call `route` (a router pattern) at `path`.
pub fn route_matches(pattern: &str, route: &str, path: &str) -> bool {
    let pattern = pattern.trim();
    if pattern == route {
        return true;
    }
    if let Some(op) = pattern.strip_prefix("graphql:") {
        return route
            .strip_prefix("graphql:")
            .is_some_and(|r| op == "*" || op == r);
    }
    let (Some((pm, pp)), Some((rm, rp))) = (pattern.split_once(' '), route.split_once(' ')) else {
        return false;
    };
    if pm != "*" && !pm.eq_ignore_ascii_case(rm) {
        return false;
    }
    let pat: Vec<&str> = pp.trim().split('/').collect();
    let tmpl: Vec<&str> = rp.split('/').collect();
    let real: Vec<&str> = path.split('/').collect();
    if pat.len() != tmpl.len() {
        return false;
    }
    pat.iter().enumerate().all(|(i, p)| {
        *p == "*" || p.starts_with('{') || *p == tmpl[i] || real.get(i).is_some_and(|r| r == p)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "POST /v2/{endpoint_id}/run";

    #[test]
    fn matching() {
        assert!(route_matches(
            "POST /v1/endpoints",
            "POST /v1/endpoints",
            "/v1/endpoints"
        ));
        assert!(!route_matches(
            "GET /v1/endpoints",
            "POST /v1/endpoints",
            "/v1/endpoints"
        ));
        assert!(route_matches(
            "* /v1/endpoints",
            "POST /v1/endpoints",
            "/v1/endpoints"
        ));
        assert!(route_matches(RUN, RUN, "/v2/abc/run"));
        assert!(route_matches("POST /v2/abc/run", RUN, "/v2/abc/run"));
        assert!(!route_matches("POST /v2/xyz/run", RUN, "/v2/abc/run"));
        assert!(route_matches("POST /v2/*/run", RUN, "/v2/abc/run"));
        assert!(route_matches("graphql:podStop", "graphql:podStop", ""));
        assert!(route_matches("graphql:*", "graphql:podStop", ""));
        assert!(!route_matches("graphql:podResume", "graphql:podStop", ""));
    }

    #[test]
    fn error_rate_one_always_fails_and_counts() {
        let f = Faults::default();
        f.add_rule(FaultRule {
            route: "POST /v1/endpoints".into(),
            error_rate: 1.0,
            status: 503,
            latency_ms: 0,
            answer_latency_ms: 0,
        })
        .unwrap();
        let a = f.on_call("POST /v1/endpoints", "/v1/endpoints", 0);
        assert_eq!(a.error.unwrap().status.as_u16(), 503);
        assert!(
            f.on_call("GET /v1/endpoints", "/v1/endpoints", 0)
                .error
                .is_none()
        );
        assert_eq!(f.calls()["POST /v1/endpoints"], 1);
        assert!(
            f.add_rule(FaultRule {
                route: "x".into(),
                error_rate: 2.0,
                status: 500,
                latency_ms: 0,
                answer_latency_ms: 0,
            })
            .is_err()
        );
    }

    #[test]
    fn subscribers_see_each_call_with_its_arrival() {
        let f = Faults::default();
        f.on_call("GET /v1/endpoints", "/v1/endpoints", 0);
        let mut seen = f.subscribe();
        let before = std::time::Instant::now();
        f.on_call(
            "PATCH /v2/network-volumes/{id}",
            "/v2/network-volumes/v1",
            0,
        );
        let call = seen.try_recv().expect("the call after subscribing");
        assert_eq!(call.route, "PATCH /v2/network-volumes/{id}");
        assert_eq!(call.path, "/v2/network-volumes/v1");
        assert!(call.at >= before && call.at <= std::time::Instant::now());
        assert!(
            seen.try_recv().is_err(),
            "calls before subscribing are not replayed"
        );
    }

    #[test]
    fn answer_latency_is_reported_apart_from_latency() {
        let f = Faults::default();
        f.add_rule(
            serde_json::from_value(serde_json::json!({
                "route": "graphql:podFindAndDeployOnDemand", "answerLatencyMs": 250
            }))
            .unwrap(),
        )
        .unwrap();
        let a = f.on_call("graphql:podFindAndDeployOnDemand", "/graphql", 0);
        assert_eq!((a.latency_ms, a.answer_latency_ms), (0, 250));
        assert!(a.error.is_none());
    }

    #[test]
    fn bursts_by_count_and_time() {
        let f = Faults::default();
        f.add_burst(Burst {
            route: None,
            remaining: Some(2),
            until: None,
        });
        assert!(f.on_call(RUN, "/v2/a/run", 0).error.is_some());
        assert!(f.on_call(RUN, "/v2/a/run", 0).error.is_some());
        assert!(f.on_call(RUN, "/v2/a/run", 0).error.is_none());
        f.add_burst(Burst {
            route: Some(RUN.into()),
            remaining: None,
            until: Some(100),
        });
        assert_eq!(
            f.on_call(RUN, "/v2/a/run", 50)
                .error
                .unwrap()
                .status
                .as_u16(),
            429
        );
        assert!(f.on_call(RUN, "/v2/a/run", 100).error.is_none());
    }

    #[test]
    fn create_500_only_for_creates() {
        let f = Faults::default();
        f.add_create_500(Create500 {
            route: None,
            remaining: 1,
        });
        assert!(!f.take_create_500("GET /v1/endpoints", "/v1/endpoints"));
        assert!(f.take_create_500("graphql:podFindAndDeployOnDemand", ""));
        assert!(!f.take_create_500("graphql:podFindAndDeployOnDemand", ""));
    }
}
