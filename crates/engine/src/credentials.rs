//! Which API key an object is managed with: its own `credentialsSecretRef`, or the
//! operator's default key (from a Secret or the environment).
//!
//! Keys read from Secrets are cached for a short while so that a thousand objects sharing
//! one Secret cost one read; the runner's re-reading of Secrets ([`crate::secret_recheck`])
//! drops an entry once the Secret changed, so a rotated key is used without a restart.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use tokio::time::Instant;

use gpucloud_crd::CredentialsSecretRef;
use gpucloud_platform::ApiKey;

use super::failure::Failure;

/// The reason of a failure for want of a Secret, or of the key inside it: the one failure
/// a Secret that merely appears (in its first reading) can end.
pub const SECRET_NOT_FOUND: &str = "CredentialsNotFound";

/// Where the operator's default key comes from.
#[derive(Clone, Debug)]
pub enum DefaultKey {
    /// A fixed key (from the environment or a file).
    Fixed(ApiKey),
    /// A key in a Secret, read through the same cache as per-object Secrets.
    Secret {
        namespace: String,
        name: String,
        key: String,
    },
    /// No default: every object must name a Secret.
    None,
}

/// An opaque identity of an account, derived from its key, so that snapshots are kept
/// per account without keeping keys around as map keys, and so that an object's claim can
/// say which account its remote object lives in.
///
/// It is the first 48 bits of the key's SHA-256: the same in every process and every
/// version (a claim written by one install is read by another), short enough to show, and
/// telling nothing of the key. The platform has no call that names the account behind a
/// key, so a rotated key of the same account has another fingerprint: the claim's check
/// proves the account by what the new key can see (`engine::claim`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AccountId(u64);

impl AccountId {
    /// The account of `key`.
    pub fn of(key: &ApiKey) -> Self {
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, key.expose().as_bytes());
        let mut first = [0u8; 8];
        first[2..].copy_from_slice(&digest.as_ref()[..6]);
        AccountId(u64::from_be_bytes(first))
    }

    /// Any account, for unit tests (here and in the kinds) that need one but never look
    /// at it.
    pub fn any() -> Self {
        AccountId(0)
    }

    /// The `n`th of several accounts, for unit tests that tell them apart.
    #[cfg(test)]
    pub(crate) fn nth(n: u64) -> Self {
        AccountId(n)
    }
}

/// Twelve hex digits, as claims carry it.
impl fmt::Display for AccountId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:012x}", self.0)
    }
}

/// A key, the account it stands for, and where it was read from.
#[derive(Clone, Debug)]
pub struct Credentials {
    pub key: ApiKey,
    pub account: AccountId,
    /// Where the key comes from, for messages that must say what to fix (never the key).
    pub source: String,
}

struct Cached {
    key: ApiKey,
    read_at: Instant,
}

/// Where a key read from a Secret comes from, for messages.
fn secret_source(namespace: &str, name: &str, field: &str, named_by: &str) -> String {
    format!("Secret {namespace}/{name}, key {field:?} (named by {named_by})")
}

/// Reads and caches API keys from Secrets.
pub struct CredentialResolver {
    client: kube::Client,
    default: DefaultKey,
    ttl: Duration,
    cache: parking_lot::Mutex<HashMap<(String, String, String), Cached>>,
}

impl CredentialResolver {
    pub fn new(client: kube::Client, default: DefaultKey, ttl: Duration) -> Self {
        Self {
            client,
            default,
            ttl,
            cache: parking_lot::Mutex::new(HashMap::new()),
        }
    }

    /// The key for an object in `namespace` with the given reference.
    pub async fn resolve(
        &self,
        namespace: &str,
        reference: Option<&CredentialsSecretRef>,
    ) -> Result<Credentials, Failure> {
        let (key, source) = match (reference, &self.default) {
            (Some(r), _) => (
                self.read_secret(namespace, &r.name, &r.key, "credentialsSecretRef")
                    .await?,
                secret_source(namespace, &r.name, &r.key, "spec.credentialsSecretRef"),
            ),
            (None, DefaultKey::Fixed(key)) => (
                key.clone(),
                "the operator's default key (GPUCLOUD_API_KEY or --api-key-file)".to_string(),
            ),
            (
                None,
                DefaultKey::Secret {
                    namespace,
                    name,
                    key,
                },
            ) => (
                self.read_secret(namespace, name, key, "the operator's --api-key-secret")
                    .await?,
                secret_source(namespace, name, key, "the operator's --api-key-secret"),
            ),
            (None, DefaultKey::None) => {
                return Err(Failure::permanent(
                    "CredentialsNotConfigured",
                    "no API key: set spec.credentialsSecretRef, or start the operator with --api-key-secret or GPUCLOUD_API_KEY",
                ));
            }
        };
        Ok(Credentials {
            account: AccountId::of(&key),
            key,
            source,
        })
    }

    async fn read_secret(
        &self,
        namespace: &str,
        name: &str,
        field: &str,
        what: &str,
    ) -> Result<ApiKey, Failure> {
        let cache_key = (namespace.to_string(), name.to_string(), field.to_string());
        if let Some(hit) = self
            .cache
            .lock()
            .get(&cache_key)
            .filter(|h| h.read_at.elapsed() < self.ttl)
        {
            return Ok(hit.key.clone());
        }
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        let secret = match secrets.get_opt(name).await {
            Ok(Some(secret)) => secret,
            Ok(None) => {
                return Err(Failure::permanent(
                    SECRET_NOT_FOUND,
                    format!("Secret {namespace}/{name} named by {what} does not exist"),
                ));
            }
            Err(kube::Error::Api(e)) if e.code == 403 => {
                return Err(Failure::permanent(
                    "CredentialsForbidden",
                    format!("the operator may not read Secret {namespace}/{name} named by {what}"),
                ));
            }
            Err(e) => {
                return Err(Failure::retryable(
                    "KubernetesUnavailable",
                    format!("could not read Secret {namespace}/{name}: {e}"),
                ));
            }
        };
        let raw = secret
            .data
            .as_ref()
            .and_then(|d| d.get(field))
            .map(|v| v.0.clone());
        let Some(raw) = raw else {
            return Err(Failure::permanent(
                SECRET_NOT_FOUND,
                format!("Secret {namespace}/{name} named by {what} has no key {field:?}"),
            ));
        };
        let text = String::from_utf8(raw).map_err(|_| {
            Failure::permanent(
                "CredentialsInvalid",
                format!("key {field:?} of Secret {namespace}/{name} is not UTF-8 text"),
            )
        })?;
        let key = ApiKey::new(text.trim()).map_err(|_| {
            Failure::permanent(
                "CredentialsInvalid",
                format!(
                    "key {field:?} of Secret {namespace}/{name} does not hold a usable API key"
                ),
            )
        })?;
        self.cache.lock().insert(
            cache_key,
            Cached {
                key: key.clone(),
                read_at: Instant::now(),
            },
        );
        Ok(key)
    }

    /// Drops what was cached from Secret `namespace/name`, after it changed.
    pub fn forget(&self, namespace: &str, name: &str) {
        self.cache
            .lock()
            .retain(|(ns, n, _), _| !(ns == namespace && n == name));
    }

    /// The Secret of the operator's default key, as `(namespace, name)`, if it has one.
    pub fn default_secret(&self) -> Option<(&str, &str)> {
        match &self.default {
            DefaultKey::Secret {
                namespace, name, ..
            } => Some((namespace, name)),
            _ => None,
        }
    }

    /// Whether `namespace/name` is the Secret of the operator's default key.
    pub fn is_default_secret(&self, namespace: &str, name: &str) -> bool {
        matches!(&self.default, DefaultKey::Secret { namespace: ns, name: n, .. } if ns == namespace && n == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_accounts_fingerprint_is_the_keys_sha256_in_every_process() {
        // The first 12 hex digits of sha256("rp_test_key_a"), computed elsewhere: a claim
        // written by one process must read the same in the next.
        let key = ApiKey::new("rp_test_key_a").unwrap();
        assert_eq!(AccountId::of(&key).to_string(), "158ddb77bf26");
        let other = ApiKey::new("rp_test_key_b").unwrap();
        assert_ne!(AccountId::of(&key), AccountId::of(&other));
        assert_eq!(AccountId::of(&key), AccountId::of(&key.clone()));
    }
}
