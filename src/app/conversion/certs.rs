//! The webhook's certificate when the install makes its own (no cert-manager): a CA made
//! for it and a serving certificate for the webhook's Service names, signed by that CA. The
//! CA's key signs once and is dropped: it is never stored, so nothing can sign another
//! certificate with it. What is kept (in a Secret, [`super::secret`]) is the CA's
//! certificate, for the CRDs' `caBundle`, and the serving certificate and its key.

use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

/// How long a made certificate is valid.
pub const VALIDITY: Duration = Duration::from_secs(5 * 365 * 24 * 3600);
const ONE_DAY: Duration = Duration::from_secs(24 * 3600);
/// A certificate with less than this left is made again at start.
pub const RENEW_BEFORE: Duration = Duration::from_secs(180 * 24 * 3600);

/// The PEM texts the webhook serves and the CRDs trust.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookCerts {
    /// The CA's certificate: the CRDs' `caBundle`.
    pub ca_pem: String,
    /// The serving certificate.
    pub cert_pem: String,
    /// The serving certificate's private key.
    pub key_pem: String,
    /// When the serving certificate stops being valid.
    pub not_after: Timestamp,
    /// The DNS names it is for.
    pub names: Vec<String>,
}

// The key stays out of debug output.
impl std::fmt::Debug for WebhookCerts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookCerts")
            .field("not_after", &self.not_after)
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

impl WebhookCerts {
    /// A new CA and a serving certificate for `names`, valid from `now` for [`VALIDITY`].
    pub fn make(names: &[String], now: Timestamp) -> Result<Self, rcgen::Error> {
        // Valid from the day before (a node's clock may lag), to the day.
        let day = |at: Timestamp| {
            let date = at.to_zoned(TimeZone::UTC).date();
            rcgen::date_time_ymd(i32::from(date.year()), date.month() as u8, date.day() as u8)
        };
        let not_before = day(now - ONE_DAY);
        let not_after_ts = now + VALIDITY - ONE_DAY;
        let not_after = day(not_after_ts);

        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        ca.distinguished_name = name("gpucloud-operator conversion webhook CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        ca.not_before = not_before;
        ca.not_after = not_after;
        let ca_key = KeyPair::generate()?;
        let ca_cert = ca.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca, ca_key);

        let mut serving = CertificateParams::new(names.to_vec())?;
        serving.distinguished_name = name(names.first().map_or("webhook", String::as_str));
        serving.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        serving.not_before = not_before;
        serving.not_after = not_after;
        let key = KeyPair::generate()?;
        let cert = serving.signed_by(&key, &issuer)?;
        Ok(Self {
            ca_pem: ca_cert.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            not_after: not_after_ts,
            names: names.to_vec(),
        })
    }

    /// Whether these serve `names` and stay valid past `now` + [`RENEW_BEFORE`].
    pub fn good_for(&self, names: &[String], now: Timestamp) -> bool {
        self.names == names && self.not_after > now + RENEW_BEFORE
    }
}

/// The DNS names of a Service's webhook: the forms the apiserver may check.
pub fn service_names(namespace: &str, service: &str) -> Vec<String> {
    vec![
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
    ]
}

fn name(common: &str) -> DistinguishedName {
    let mut name = DistinguishedName::new();
    name.push(DnType::CommonName, common);
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names() -> Vec<String> {
        service_names("gpucloud-system", "gpucloud-operator-webhook")
    }

    #[test]
    fn the_serving_certificate_is_signed_by_the_ca_for_the_service_names() {
        use std::sync::Arc;
        use tokio_rustls::rustls::RootCertStore;
        use tokio_rustls::rustls::client::WebPkiServerVerifier;
        use tokio_rustls::rustls::client::danger::ServerCertVerifier;
        use tokio_rustls::rustls::crypto::aws_lc_rs;
        use tokio_rustls::rustls::pki_types::pem::PemObject;
        use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};

        let made = WebhookCerts::make(&names(), Timestamp::now()).unwrap();
        assert!(made.key_pem.contains("PRIVATE KEY"));
        // A TLS client that trusts only the CA accepts the serving certificate for the name.
        let mut roots = RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(made.ca_pem.as_bytes()).unwrap())
            .unwrap();
        let verifier = WebPkiServerVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(aws_lc_rs::default_provider()),
        )
        .build()
        .unwrap();
        let cert = CertificateDer::from_pem_slice(made.cert_pem.as_bytes()).unwrap();
        let check = |name: &'static str| {
            let server = ServerName::try_from(name).unwrap();
            verifier.verify_server_cert(&cert, &[], &server, &[], UnixTime::now())
        };
        check("gpucloud-operator-webhook.gpucloud-system.svc")
            .expect("the CA vouches for the webhook's name");
        assert!(check("evil.example").is_err(), "only for its names");
    }

    #[test]
    fn certificates_are_made_again_before_they_expire_or_when_the_names_change() {
        let now = Timestamp::now();
        let made = WebhookCerts::make(&names(), now).unwrap();
        assert!(made.good_for(&names(), now));
        let late = now + (VALIDITY - RENEW_BEFORE) + Duration::from_secs(1);
        assert!(!made.good_for(&names(), late));
        assert!(!made.good_for(&service_names("other", "gpucloud-operator-webhook"), now));
    }

    #[test]
    fn the_key_is_not_in_debug_output() {
        let made = WebhookCerts::make(&names(), Timestamp::now()).unwrap();
        let shown = format!("{made:?}");
        assert!(!shown.contains("PRIVATE KEY"), "{shown}");
    }
}
