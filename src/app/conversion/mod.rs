//! The conversion webhook: the apiserver posts a `ConversionReview` to `/convert` over TLS
//! whenever an object must be read or written in a version other than the one it is stored
//! in (`v1alpha1` and `v1beta1`, [`gpucloud_crd::conversion`]). Every replica serves it,
//! leader or not, from before its controllers start: the apiserver may call any of them,
//! and the operator's own reads of objects stored in `v1alpha1` go through it.
//!
//! Its certificate ([`Certificate`]): files in a directory (cert-manager's Secret, mounted;
//! cert-manager's cainjector then fills the CRDs' `caBundle`), or made by the install
//! itself: a CA and a serving certificate kept in a Secret ([`secret`], [`certs`]), with
//! the CRDs pointed at the webhook and its CA by the operator ([`crds`]).

pub mod certs;
pub mod crds;
mod error;
mod review;
pub mod secret;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::post;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::core::conversion::ConversionReview;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tracing::{info, warn};

pub use crds::{Address, Trust};
pub use error::WebhookError;

use crate::app::server::{TlsListener, pem_server_config, tls_config};

/// The largest review the webhook reads: a list of objects the apiserver converts at once.
const BODY_LIMIT: usize = 64 * 1024 * 1024;

/// Where the webhook's certificate comes from.
#[derive(Clone, Debug)]
pub enum Certificate {
    /// `tls.crt` and `tls.key` in this directory (a cert-manager Certificate's Secret,
    /// mounted). With `address`, the CRDs are pointed at it with cert-manager's
    /// `inject-ca-from` the Certificate `certificate` (NAMESPACE/NAME); without, they are
    /// left as the install wrote them.
    Files {
        dir: PathBuf,
        pointed: Option<(Address, String)>,
    },
    /// Made by the install: kept in Secret `secret` of `namespace`, for the names the
    /// apiserver reaches the webhook by; the CRDs are pointed at `address` with its CA.
    Own {
        namespace: String,
        secret: String,
        address: Address,
    },
}

/// How the webhook is served.
#[derive(Clone, Debug)]
pub struct Webhook {
    pub listen: SocketAddr,
    pub certificate: Certificate,
    /// The CRDs to point at the webhook (with [`Certificate::Own`]).
    pub crds: Vec<String>,
    /// How often the CRDs are checked and pointed at the webhook again.
    pub check_every: Duration,
    /// How long `/convert` is still served once shutdown is asked: while the process is no
    /// longer Ready, so that the apiserver's conversions move to another replica before
    /// this one stops listening.
    pub drain: Duration,
}

/// A webhook that listens.
pub struct Started {
    /// The address it is bound to.
    pub address: SocketAddr,
    /// Ends once it has stopped serving: the drain after shutdown, then open requests.
    pub stopped: JoinHandle<()>,
}

/// The router: `POST /convert`.
pub fn router() -> Router {
    Router::new()
        .route(crds::PATH, post(convert))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
}

async fn convert(axum::Json(review): axum::Json<ConversionReview>) -> axum::Json<ConversionReview> {
    axum::Json(review::answer(review))
}

/// The names a certificate made by the install is for, from the address it is reached at.
fn names_of(address: &Address) -> Vec<String> {
    match address {
        Address::Service {
            namespace, name, ..
        } => certs::service_names(namespace, name),
        Address::Url(url) => {
            let host = url
                .split("://")
                .nth(1)
                .and_then(|rest| rest.split(['/', ':']).next())
                .unwrap_or("localhost");
            vec![host.to_string()]
        }
    }
}

/// Starts the webhook, serving until [`Webhook::drain`] after `shutdown` resolves: with
/// [`Certificate::Own`], makes or reads its certificate; points the CRDs at it (checked
/// again every [`Webhook::check_every`]) once it is bound. Returns once it listens, so
/// that a failure to start stops the caller's start.
pub async fn start(
    kube: kube::Client,
    webhook: Webhook,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<Started, WebhookError> {
    // Bound before the CRDs name it: a conversion sent at once waits in the backlog
    // rather than being refused.
    let listen_failed = |source| WebhookError::Listen {
        addr: webhook.listen,
        source,
    };
    let tcp = TcpListener::bind(webhook.listen)
        .await
        .map_err(listen_failed)?;
    let bound = tcp.local_addr().map_err(listen_failed)?;
    let (config, want) = match &webhook.certificate {
        Certificate::Files { dir, pointed } => {
            let want = pointed.as_ref().map(|(address, certificate)| {
                crds::wanted(address, &Trust::InjectedFrom(certificate.clone()))
            });
            (tls_config(Some(dir))?, want)
        }
        Certificate::Own {
            namespace,
            secret,
            address,
        } => {
            let secrets: Api<Secret> = Api::namespaced(kube.clone(), namespace);
            let made = secret::ensure(&secrets, secret, &names_of(address)).await?;
            let config = pem_server_config(made.cert_pem.as_bytes(), made.key_pem.as_bytes())?;
            (
                config,
                Some(crds::wanted(address, &Trust::Bundle(made.ca_pem))),
            )
        }
    };
    let checker = match want {
        Some(want) => {
            let api: Api<CustomResourceDefinition> = Api::all(kube.clone());
            crds::point_at_webhook(&api, &webhook.crds, &want).await?;
            let names = webhook.crds.clone();
            let every = webhook.check_every;
            Some(tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    if let Err(err) = crds::point_at_webhook(&api, &names, &want).await {
                        warn!(error = %err, "could not check the CRDs' conversion; trying again");
                    }
                }
            }))
        }
        None => None,
    };
    let listener = TlsListener::new(tcp, config).map_err(listen_failed)?;
    info!(address = %bound, "serving the conversion webhook on /convert");
    let drain = webhook.drain;
    let shutdown = async move {
        shutdown.await;
        if !drain.is_zero() {
            info!(
                drain_ms = drain.as_millis() as u64,
                "still serving the conversion webhook while the apiserver moves to another replica"
            );
            tokio::time::sleep(drain).await;
        }
    };
    let stopped = tokio::spawn(async move {
        let served = axum::serve(listener, router())
            .with_graceful_shutdown(shutdown)
            .await;
        if let Some(checker) = checker {
            checker.abort();
        }
        if let Err(err) = served {
            warn!(error = %err, "the conversion webhook stopped serving");
        }
    });
    Ok(Started {
        address: bound,
        stopped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_names_its_host() {
        assert_eq!(
            names_of(&Address::Url("https://127.0.0.1:9443/convert".into())),
            ["127.0.0.1"]
        );
        assert_eq!(
            names_of(&Address::Service {
                namespace: "ns".into(),
                name: "hook".into(),
                port: 443
            }),
            ["hook.ns.svc", "hook.ns.svc.cluster.local"]
        );
    }
}
