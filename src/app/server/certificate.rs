//! The server's certificate: the PEM files of a directory (`tls.crt`, `tls.key`: what a
//! cert-manager Certificate's Secret holds, mounted as a volume), or else a self-signed one
//! made at start. Prometheus scrapes the self-signed one with `insecureSkipVerify`, as the
//! kubelet does its HTTPS probes: the token is then still encrypted on the pod network,
//! though the scraper does not know whom it talks to; a certificate from files, with its CA
//! given to Prometheus, closes that too.

use std::path::Path;
use std::sync::Arc;

use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::crypto::aws_lc_rs;
use tokio_rustls::rustls::pki_types::pem::{self, PemObject};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::error::ServerError;

/// The certificate chain's file in `--metrics-cert-dir`.
pub const CERT_FILE: &str = "tls.crt";
/// The private key's file in `--metrics-cert-dir`.
pub const KEY_FILE: &str = "tls.key";

/// The TLS configuration of the server: the files of `cert_dir`, or a self-signed
/// certificate. HTTP/1.1 only, which is what the server speaks.
pub fn server_config(cert_dir: Option<&Path>) -> Result<Arc<ServerConfig>, ServerError> {
    let (chain, key) = match cert_dir {
        Some(dir) => (
            read_chain(&dir.join(CERT_FILE))?,
            read_key(&dir.join(KEY_FILE))?,
        ),
        None => self_signed()?,
    };
    config_of(chain, key)
}

/// The TLS configuration of a server whose certificate chain and key are the PEM texts
/// `chain` and `key` (such as those a Secret holds). The error never shows the key.
pub fn pem_server_config(chain: &[u8], key: &[u8]) -> Result<Arc<ServerConfig>, ServerError> {
    let chain = CertificateDer::pem_slice_iter(chain)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| ServerError::Certificate("the certificate is not PEM".into()))?;
    let key = PrivateKeyDer::from_pem_slice(key)
        .map_err(|_| ServerError::Certificate("the key is not a PEM private key".into()))?;
    config_of(chain, key)
}

fn config_of(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<ServerConfig>, ServerError> {
    // The provider named, not the process default: aws-lc-rs is the one kube's TLS builds.
    let mut config = ServerConfig::builder_with_provider(Arc::new(aws_lc_rs::default_provider()))
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn read(path: &Path) -> Result<Vec<u8>, ServerError> {
    std::fs::read(path).map_err(|err| ServerError::CertificateFile {
        path: path.to_path_buf(),
        reason: err.to_string(),
    })
}

fn read_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, ServerError> {
    let refused = |reason: String| ServerError::CertificateFile {
        path: path.to_path_buf(),
        reason,
    };
    let chain = CertificateDer::pem_slice_iter(&read(path)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| refused(format!("not PEM certificates: {err}")))?;
    if chain.is_empty() {
        return Err(refused("no PEM certificate".into()));
    }
    Ok(chain)
}

/// The key file's content never reaches an error: only what kind of failure it was.
fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, ServerError> {
    PrivateKeyDer::from_pem_slice(&read(path)?).map_err(|err| ServerError::CertificateFile {
        path: path.to_path_buf(),
        reason: match err {
            pem::Error::NoItemsFound => "no PEM private key".into(),
            _ => "not a PEM private key (PKCS#8, PKCS#1 or SEC1)".into(),
        },
    })
}

/// A new key pair (ECDSA P-256) and a certificate for `localhost` signed by itself, made
/// in memory; the key is never written anywhere.
fn self_signed() -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), ServerError> {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])?;
    let key = PrivatePkcs8KeyDer::from(made.signing_key.serialize_der());
    Ok((vec![made.cert.der().clone()], PrivateKeyDer::Pkcs8(key)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_pair(dir: &Path) {
        let made = rcgen::generate_simple_self_signed(vec!["metrics.example".to_string()])
            .expect("a certificate");
        std::fs::write(dir.join(CERT_FILE), made.cert.pem()).unwrap();
        std::fs::write(dir.join(KEY_FILE), made.signing_key.serialize_pem()).unwrap();
    }

    #[test]
    fn a_self_signed_certificate_is_made_without_files() {
        let config = server_config(None).expect("a self-signed configuration");
        assert_eq!(config.alpn_protocols, vec![b"http/1.1".to_vec()]);
    }

    #[test]
    fn the_certificate_is_read_from_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        write_pair(dir.path());
        server_config(Some(dir.path())).expect("the files' configuration");
    }

    #[test]
    fn a_missing_or_bad_file_is_named_and_the_key_is_not_shown() {
        let dir = tempfile::tempdir().unwrap();
        let missing = server_config(Some(dir.path())).unwrap_err().to_string();
        assert!(missing.contains(CERT_FILE), "{missing}");

        write_pair(dir.path());
        let garbage =
            "-----BEGIN PRIVATE KEY-----\nnot-base64-secret!\n-----END PRIVATE KEY-----\n";
        std::fs::write(dir.path().join(KEY_FILE), garbage).unwrap();
        let bad_key = server_config(Some(dir.path())).unwrap_err().to_string();
        assert!(bad_key.contains(KEY_FILE), "{bad_key}");
        assert!(!bad_key.contains("secret"), "the key's content: {bad_key}");

        std::fs::write(dir.path().join(CERT_FILE), "no PEM here").unwrap();
        let no_cert = server_config(Some(dir.path())).unwrap_err().to_string();
        assert!(no_cert.contains("no PEM certificate"), "{no_cert}");
    }
}
