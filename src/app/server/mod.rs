//! The operator's HTTP server: `/metrics`, `/healthz`, `/readyz`. With `--metrics-auth
//! kubernetes` it speaks HTTPS ([`certificate`], [`https`]) and `/metrics` wants a bearer
//! token whose identity may `get` the non-resource URL `/metrics` ([`guard`]), as the
//! apiserver says ([`review`], [`verdict`]) and a cache remembers for a minute ([`cache`]).
//! The probes stay open: the kubelet sends no token.

mod bearer;
mod cache;
mod certificate;
mod error;
mod guard;
mod https;
mod review;
mod verdict;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use gpucloud_engine::metrics::Metrics;

pub use certificate::server_config as tls_config;
pub use error::ServerError;
pub use https::TlsListener;

use guard::MetricsGuard;
use review::{ApiserverReviewer, Reviewer};

/// Readiness of the process: true once it leads (or needs no election) and its
/// controllers run.
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

/// Who may read `/metrics` (`--metrics-auth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MetricsAuth {
    /// HTTPS, and a bearer token the apiserver accepts whose identity may get `/metrics`.
    Kubernetes,
    /// Plain HTTP, and anyone who reaches the port.
    None,
}

/// How the server is reached: its address, who may read `/metrics`, and where its
/// certificate is (none: a self-signed one).
#[derive(Clone, Debug)]
pub struct Serving {
    pub addr: SocketAddr,
    pub auth: MetricsAuth,
    pub cert_dir: Option<PathBuf>,
}

async fn metrics(State(metrics): State<Arc<Metrics>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        metrics.encode(),
    )
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(ready): State<Readiness>) -> (StatusCode, &'static str) {
    if ready.get() {
        (StatusCode::OK, "ready")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: waiting for leadership or start-up",
        )
    }
}

fn metrics_routes(metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/metrics", get(self::metrics))
        .with_state(metrics)
}

fn probe_routes(ready: Readiness) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(ready)
}

/// The router with an open `/metrics`, separate from the listener so tests can drive it.
pub fn router(metrics: Arc<Metrics>, ready: Readiness) -> Router {
    metrics_routes(metrics).merge(probe_routes(ready))
}

/// The router with `/metrics` behind `guard`, and the probes open.
fn guarded_router<R: Reviewer>(
    metrics: Arc<Metrics>,
    ready: Readiness,
    guard: Arc<MetricsGuard<R>>,
) -> Router {
    guard::protect(metrics_routes(metrics), guard).merge(probe_routes(ready))
}

/// Binds the address of `serving` and serves until `shutdown` resolves: plain HTTP with an
/// open `/metrics`, or HTTPS with `/metrics` reviewed through `kube`. Returns the bound
/// address.
pub async fn serve(
    serving: &Serving,
    metrics: Arc<Metrics>,
    ready: Readiness,
    kube: &kube::Client,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<SocketAddr, ServerError> {
    let tcp = tokio::net::TcpListener::bind(serving.addr).await?;
    let bound = tcp.local_addr()?;
    match serving.auth {
        MetricsAuth::None => {
            let app = router(metrics, ready);
            tokio::spawn(async move {
                let served = axum::serve(tcp, app).with_graceful_shutdown(shutdown);
                if let Err(err) = served.await {
                    tracing::error!(error = %err, "metrics server stopped");
                }
            });
        }
        MetricsAuth::Kubernetes => {
            let tls = certificate::server_config(serving.cert_dir.as_deref())?;
            let guard = Arc::new(MetricsGuard::new(ApiserverReviewer::new(kube.clone())));
            let app = guarded_router(metrics, ready, guard);
            let listener = https::TlsListener::new(tcp, tls)?;
            tokio::spawn(async move {
                let served = axum::serve(listener, app).with_graceful_shutdown(shutdown);
                if let Err(err) = served.await {
                    tracing::error!(error = %err, "metrics server stopped");
                }
            });
        }
    }
    Ok(bound)
}
