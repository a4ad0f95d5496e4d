//! The Secret that holds the webhook's certificate when the install makes its own: read by
//! every replica, so that all of them serve the certificate the CRDs' `caBundle` vouches
//! for, and made by whichever replica finds it missing, expiring or for other names first
//! (the apiserver lets one create or replace win; the others read what it stored).

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use tracing::info;

use super::certs::WebhookCerts;
use super::error::WebhookError;

const CA: &str = "ca.crt";
const CERT: &str = "tls.crt";
const KEY: &str = "tls.key";
/// When the serving certificate expires (RFC 3339), so that it is not parsed to know.
const NOT_AFTER: &str = "gpucloud.io/not-after";
/// The names the certificate is for, comma-separated.
const NAMES: &str = "gpucloud.io/names";

/// The certificates of Secret `name` of `api` for `names`: made and stored first when the
/// Secret is missing, expiring or for other names.
pub async fn ensure(
    api: &Api<Secret>,
    name: &str,
    names: &[String],
) -> Result<WebhookCerts, WebhookError> {
    let failed = |source| WebhookError::Secret {
        secret: name.to_string(),
        source,
    };
    // Twice at most: a lost race reads what the winner stored.
    for _ in 0..2 {
        let now = Timestamp::now();
        let existing = api.get_opt(name).await.map_err(failed)?;
        if let Some(secret) = &existing
            && let Ok(certs) = read(secret, name)
            && certs.good_for(names, now)
        {
            return Ok(certs);
        }
        let made = WebhookCerts::make(names, now)?;
        let mut secret = written(name, &made);
        let stored = match existing {
            Some(old) => {
                secret.metadata.resource_version = old.metadata.resource_version;
                api.replace(name, &PostParams::default(), &secret).await
            }
            None => api.create(&PostParams::default(), &secret).await,
        };
        match stored {
            Ok(_) => {
                info!(secret = name, not_after = %made.not_after, "made the conversion webhook's certificate");
                return Ok(made);
            }
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(source) => return Err(failed(source)),
        }
    }
    let secret = api.get(name).await.map_err(failed)?;
    read(&secret, name)
}

/// Pure: the Secret that stores `certs`.
fn written(name: &str, certs: &WebhookCerts) -> Secret {
    let data = [
        (CA, &certs.ca_pem),
        (CERT, &certs.cert_pem),
        (KEY, &certs.key_pem),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
    .collect();
    let annotations = BTreeMap::from([
        (NOT_AFTER.to_string(), certs.not_after.to_string()),
        (NAMES.to_string(), certs.names.join(",")),
    ]);
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            annotations: Some(annotations),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(data),
        ..Default::default()
    }
}

/// Pure: the certificates `secret` holds. The error says what is missing, never a value.
fn read(secret: &Secret, name: &str) -> Result<WebhookCerts, WebhookError> {
    let wrong = |reason: String| WebhookError::SecretContent {
        secret: name.to_string(),
        reason,
    };
    let data = secret.data.clone().unwrap_or_default();
    let text = |key: &str| {
        data.get(key)
            .and_then(|v| String::from_utf8(v.0.clone()).ok())
            .ok_or_else(|| wrong(format!("no {key}")))
    };
    let annotations = secret.metadata.annotations.clone().unwrap_or_default();
    let not_after = annotations
        .get(NOT_AFTER)
        .and_then(|v| v.parse::<Timestamp>().ok())
        .ok_or_else(|| wrong(format!("no {NOT_AFTER}")))?;
    let names = annotations
        .get(NAMES)
        .map(|v| v.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    Ok(WebhookCerts {
        ca_pem: text(CA)?,
        cert_pem: text(CERT)?,
        key_pem: text(KEY)?,
        not_after,
        names,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_certificate_reads_back_the_same() {
        let names = vec!["webhook.ns.svc".to_string()];
        let made = WebhookCerts::make(&names, Timestamp::now()).unwrap();
        let secret = written("tls", &made);
        assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
        let back = read(&secret, "tls").unwrap();
        assert!(back == made, "{back:?} != {made:?}");
    }

    #[test]
    fn a_secret_without_the_certificate_says_what_is_missing_and_no_value() {
        let names = vec!["webhook.ns.svc".to_string()];
        let made = WebhookCerts::make(&names, Timestamp::now()).unwrap();
        let mut secret = written("tls", &made);
        secret.data.as_mut().unwrap().remove(CERT);
        let err = read(&secret, "tls").unwrap_err().to_string();
        assert!(err.contains("no tls.crt"), "{err}");
        assert!(!err.contains("PRIVATE"), "{err}");
    }
}
