//! The one error type of the operator's HTTP server: its listener, its certificate and the
//! reviews that guard `/metrics`. No variant carries a bearer token or a private key.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("could not listen: {0}")]
    Listen(#[from] std::io::Error),
    #[error("the certificate in {path}: {reason}")]
    CertificateFile { path: PathBuf, reason: String },
    #[error("the certificate: {0}")]
    Certificate(String),
    #[error("could not make a self-signed certificate: {0}")]
    SelfSigned(#[from] rcgen::Error),
    #[error("the TLS configuration: {0}")]
    Tls(#[from] tokio_rustls::rustls::Error),
    #[error("the TokenReview failed: {0}")]
    TokenReview(#[source] kube::Error),
    #[error("the SubjectAccessReview failed: {0}")]
    AccessReview(#[source] kube::Error),
}
