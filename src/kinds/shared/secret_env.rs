//! Environment variables whose values may come from Secrets (`valueFrom.secretKeyRef`),
//! resolved for the platform. The values go to the platform and nowhere else: failures
//! name the variable, the Secret and the key, never a value.

use std::collections::HashMap;

use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use gpucloud_crd::ManagedKind;
use gpucloud_crd::container::EnvVar;

use gpucloud_engine::adapter::secrets_with_credentials;
use gpucloud_engine::context::Shared;
use gpucloud_engine::failure::Failure;

/// `(name, value)` of every variable of `env`, in order, with Secrets read from `ns` (each
/// once). Failure messages name the entry as `spec.env[i] (NAME)`.
pub async fn resolve(
    shared: &Shared,
    ns: &str,
    env: &[EnvVar],
) -> Result<Vec<(String, String)>, Failure> {
    let secrets: Api<Secret> = Api::namespaced(shared.kube.clone(), ns);
    let mut read: HashMap<String, Option<Secret>> = HashMap::new();
    let mut out = Vec::new();
    for (i, var) in env.iter().enumerate() {
        if let Some(v) = &var.value {
            out.push((var.name.clone(), v.clone()));
            continue;
        }
        let Some(from) = &var.value_from else {
            out.push((var.name.clone(), String::new()));
            continue;
        };
        let r = &from.secret_key_ref;
        if !read.contains_key(&r.name) {
            let secret = secrets.get_opt(&r.name).await.map_err(|e| {
                Failure::retryable(
                    "KubernetesUnavailable",
                    format!("could not read Secret {}: {e}", r.name),
                )
            })?;
            read.insert(r.name.clone(), secret);
        }
        let field = format!("spec.env[{i}] ({})", var.name);
        let Some(secret) = read.get(&r.name).and_then(Option::as_ref) else {
            return Err(Failure::permanent(
                "SecretNotFound",
                format!("{field}: Secret {} does not exist in {ns}", r.name),
            ));
        };
        let value = secret
            .data
            .as_ref()
            .and_then(|d| d.get(&r.key))
            .map(|b| String::from_utf8(b.0.clone()))
            .or_else(|| {
                secret
                    .string_data
                    .as_ref()
                    .and_then(|d| d.get(&r.key))
                    .map(|s| Ok(s.clone()))
            });
        match value {
            Some(Ok(v)) => out.push((var.name.clone(), v)),
            Some(Err(_)) => {
                return Err(Failure::permanent(
                    "InvalidSecretValue",
                    format!("{field}: key {} of Secret {} is not UTF-8", r.key, r.name),
                ));
            }
            None => {
                return Err(Failure::permanent(
                    "SecretKeyNotFound",
                    format!("{field}: Secret {} has no key {}", r.name, r.key),
                ));
            }
        }
    }
    Ok(out)
}

/// Names of the Secrets `env` reads.
pub fn secret_names(env: &[EnvVar]) -> impl Iterator<Item = String> + '_ {
    env.iter()
        .filter_map(|e| e.value_from.as_ref())
        .map(|f| f.secret_key_ref.name.clone())
}

/// The Secrets an object whose variables are `env` reads, for `Actuator::secrets`: its
/// credentials Secret and those `env` names, sorted and each once.
pub fn secrets_read<K: ManagedKind>(obj: &K, env: &[EnvVar]) -> Vec<String> {
    secrets_with_credentials(obj, secret_names(env))
}
