//! The one error type of the conversion webhook: its certificate, its Secret, the CRDs it
//! points at itself, and its listener. No variant carries a private key.

#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    #[error("could not make the webhook's certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("the webhook's TLS configuration: {0}")]
    Tls(#[from] crate::app::server::ServerError),
    #[error("the Secret {secret} that holds the webhook's certificate: {source}")]
    Secret {
        secret: String,
        #[source]
        source: kube::Error,
    },
    #[error("the Secret {secret} does not hold a webhook certificate: {reason}")]
    SecretContent { secret: String, reason: String },
    #[error("could not point the CustomResourceDefinition {crd} at the webhook: {source}")]
    Crd {
        crd: String,
        #[source]
        source: kube::Error,
    },
    #[error("could not listen on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
}
