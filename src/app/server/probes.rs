//! The kubelet's probes. `/readyz`: the process serves (it has started, whether it leads or
//! waits for the Lease), until it begins to stop or the apiserver has answered nothing for
//! longer than its limit (`--apiserver-outage-unready-after`); a follower must be Ready, or
//! a rolling update would wait for a new pod that waits for the old pod's Lease. `/healthz`: the
//! controllers make progress ([`gpucloud_engine::progress`]); a pass stuck beyond the stall
//! limit, or a controller that ended while the process runs, answers 503 so that the
//! kubelet restarts the process.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

use gpucloud_engine::apiserver_reach::ApiserverReach;
use gpucloud_engine::progress::Progress;

/// Readiness of the process: true from when it has started (CRDs checked, server bound)
/// until it begins to stop, whether it leads or follows.
#[derive(Clone, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    pub fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::SeqCst);
    }

    pub fn get(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// What the probes read.
#[derive(Clone)]
pub struct Probes {
    pub ready: Readiness,
    /// The controllers' passes and lives.
    pub progress: Arc<Progress>,
    /// How long a pass may run before the process counts as stalled.
    pub stall_limit: Duration,
    /// Whether the apiserver answers, as the watches and the Lease see it.
    pub apiserver: Arc<ApiserverReach>,
    /// How long the apiserver may answer nothing before the process is not Ready.
    pub outage_limit: Duration,
}

async fn healthz(State(probes): State<Probes>) -> (StatusCode, String) {
    let problems = probes.progress.problems(probes.stall_limit);
    if problems.is_empty() {
        return (StatusCode::OK, "ok".into());
    }
    let said: Vec<String> = problems.iter().map(ToString::to_string).collect();
    (
        StatusCode::SERVICE_UNAVAILABLE,
        format!("not live: {}", said.join("; ")),
    )
}

async fn readyz(State(probes): State<Probes>) -> (StatusCode, String) {
    if !probes.ready.get() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: starting or stopping".into(),
        );
    }
    match probes.apiserver.unreachable_for() {
        Some(away) if away > probes.outage_limit => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "not ready: the apiserver has answered nothing for {} s",
                away.as_secs()
            ),
        ),
        _ => (StatusCode::OK, "ready".into()),
    }
}

/// `/healthz` and `/readyz`, open to anyone (the kubelet sends no token).
pub fn routes(probes: Probes) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(probes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use tower::ServiceExt as _;

    async fn get(app: &Router, path: &str) -> (StatusCode, String) {
        let request = Request::get(path).body(Body::empty()).unwrap();
        let answer = app.clone().oneshot(request).await.unwrap();
        let status = answer.status();
        let body = axum::body::to_bytes(answer.into_body(), 1 << 16)
            .await
            .unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    fn probes() -> Probes {
        Probes {
            ready: Readiness::default(),
            progress: Arc::new(Progress::default()),
            stall_limit: Duration::from_secs(60),
            apiserver: Arc::new(ApiserverReach::new(Default::default())),
            outage_limit: Duration::from_secs(60),
        }
    }

    #[tokio::test]
    async fn an_apiserver_outage_makes_it_unready_only_past_the_limit() {
        let probes = Probes {
            outage_limit: Duration::from_millis(200),
            ..probes()
        };
        probes.ready.set(true);
        let app = routes(probes.clone());
        probes.apiserver.unanswered("Lease", &"connection refused");
        assert_eq!(
            get(&app, "/readyz").await.0,
            StatusCode::OK,
            "a short outage"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
        let (status, said) = get(&app, "/readyz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            said.contains("the apiserver has answered nothing"),
            "{said}"
        );
        probes.apiserver.answered();
        assert_eq!(get(&app, "/readyz").await, (StatusCode::OK, "ready".into()));
    }

    #[tokio::test]
    async fn ready_follows_the_flag_whatever_the_lease() {
        let probes = probes();
        let app = routes(probes.clone());
        assert_eq!(
            get(&app, "/readyz").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
        probes.ready.set(true);
        assert_eq!(get(&app, "/readyz").await, (StatusCode::OK, "ready".into()));
        probes.ready.set(false);
        assert_eq!(
            get(&app, "/readyz").await.0,
            StatusCode::SERVICE_UNAVAILABLE
        );
    }

    #[tokio::test]
    async fn health_fails_on_a_stuck_pass_naming_its_kind_and_recovers_when_it_ends() {
        let probes = Probes {
            stall_limit: Duration::from_millis(100),
            ..probes()
        };
        let app = routes(probes.clone());
        // No controllers (a follower): live.
        assert_eq!(get(&app, "/healthz").await, (StatusCode::OK, "ok".into()));
        let _life = probes.progress.controller("NetworkVolume");
        let pass = probes.progress.pass("NetworkVolume");
        assert_eq!(
            get(&app, "/healthz").await.0,
            StatusCode::OK,
            "within the limit"
        );
        tokio::time::sleep(Duration::from_millis(150)).await;
        let (status, body) = get(&app, "/healthz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            body.starts_with("not live: a NetworkVolume reconcile has run for"),
            "{body}"
        );
        drop(pass);
        assert_eq!(get(&app, "/healthz").await.0, StatusCode::OK);
    }

    #[tokio::test]
    async fn health_fails_when_a_controller_ended_unasked() {
        let probes = probes();
        let app = routes(probes.clone());
        drop(probes.progress.controller("Pod"));
        let (status, body) = get(&app, "/healthz").await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(body.contains("the Pod controller ended"), "{body}");
    }
}
