//! The operator's HTTP server: `/metrics`, `/healthz`, `/readyz`. With `--metrics-auth
//! kubernetes` it speaks HTTPS ([`certificate`], [`https`]) and `/metrics` wants a bearer
//! token whose identity may `get` the non-resource URL `/metrics` ([`guard`]), as the
//! apiserver says ([`review`], [`verdict`]) and a cache remembers for a minute ([`cache`]).
//! The probes ([`probes`]) stay open: the kubelet sends no token.

mod bearer;
mod cache;
mod certificate;
mod error;
mod guard;
mod https;
mod probes;
mod review;
mod verdict;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

use gpucloud_engine::metrics::Metrics;

pub use certificate::{pem_server_config, server_config as tls_config};
pub use error::ServerError;
pub use https::TlsListener;
pub use probes::{Probes, Readiness};

use guard::MetricsGuard;
use review::{ApiserverReviewer, Reviewer};

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

fn metrics_routes(metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/metrics", get(self::metrics))
        .with_state(metrics)
}

/// The router with an open `/metrics`, separate from the listener so tests can drive it.
pub fn router(metrics: Arc<Metrics>, probes: Probes) -> Router {
    metrics_routes(metrics).merge(probes::routes(probes))
}

/// The router with `/metrics` behind `guard`, and the probes open.
fn guarded_router<R: Reviewer>(
    metrics: Arc<Metrics>,
    probes: Probes,
    guard: Arc<MetricsGuard<R>>,
) -> Router {
    guard::protect(metrics_routes(metrics), guard).merge(probes::routes(probes))
}

/// Binds the address of `serving` and serves until `shutdown` resolves: plain HTTP with an
/// open `/metrics`, or HTTPS with `/metrics` reviewed through `kube`. Returns the bound
/// address.
pub async fn serve(
    serving: &Serving,
    metrics: Arc<Metrics>,
    probes: Probes,
    kube: &kube::Client,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<SocketAddr, ServerError> {
    let tcp = tokio::net::TcpListener::bind(serving.addr).await?;
    let bound = tcp.local_addr()?;
    match serving.auth {
        MetricsAuth::None => {
            let app = router(metrics, probes);
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
            let app = guarded_router(metrics, probes, guard);
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
