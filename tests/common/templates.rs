//! What the Template and RegistryCredential suites share: a capture of every log line of
//! the process (to prove no login or Secret value reaches one), manifests, Secrets, and
//! reads of the emulator's world.

use std::time::Duration;

use gpucloud_crd::{Endpoint, RegistryCredential, Template};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::merged;
use super::operator::Env;

pub const TIMEOUT: Duration = Duration::from_secs(60);
/// Distinctive values, so that a leak cannot hide in other text.
pub const PASSWORD: &str = "pw-Q7mZ-never-print-1";
pub const PASSWORD_2: &str = "pw-Q7mZ-never-print-2";
pub const USERNAME: &str = "robot-Q7mZ-user";
pub const ENV_SECRET: &str = "env-Q7mZ-secret-value";
pub const EXAMPLE_PASSWORD: &str = "replace-me";

// --------------------------------------------------------------------------- log capture

pub use super::log_capture::captured;

/// Every log line of the process (operator, client, emulator) at DEBUG, installed before
/// `Env::start` would install its own subscriber.
pub fn capture_logs() {
    super::log_capture::capture_logs_with(
        "info,gpucloud_operator=debug,gpucloud_engine=debug,gpucloud_policy=debug,gpucloud_platform=debug,gpucloud_emulator=debug",
    );
}

pub async fn start(prefix: &str) -> Env {
    capture_logs();
    Env::start(prefix).await
}

// --------------------------------------------------------------------------- helpers

pub fn docker_config(registry: &str, username: &str, password: &str) -> String {
    json!({"auths": {registry: {"username": username, "password": password}}}).to_string()
}

pub async fn put_secret(env: &Env, name: &str, type_: &str, key: &str, value: &str) {
    let secrets: Api<Secret> = env.api();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": name},
        "type": type_,
        "stringData": {key: value},
    }))
    .unwrap();
    secrets
        .patch(
            name,
            &PatchParams::apply("e2e-templates").force(),
            &Patch::Apply(&secret),
        )
        .await
        .expect("Secret applied");
}

/// Applies the docker login Secret `name` of type `type_` for `ghcr.io` as `USERNAME`.
pub async fn put_login(env: &Env, name: &str, type_: &str, password: &str) {
    let config = docker_config("ghcr.io", USERNAME, password);
    put_secret(env, name, type_, ".dockerconfigjson", &config).await;
}

/// Creates the RegistryCredential `ghcr` for `ghcr.io` from the login Secret `login`.
pub async fn create_ghcr_credential(env: &Env) -> RegistryCredential {
    create(env, registry_credential("ghcr", "login", "ghcr.io"))
        .await
        .expect("RegistryCredential created")
}

pub async fn create<K>(env: &Env, manifest: Value) -> Result<K, kube::Error>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
{
    let obj: K = serde_json::from_value(manifest).expect("a manifest of the kind");
    env.api::<K>().create(&PostParams::default(), &obj).await
}

pub fn registry_credential(name: &str, secret: &str, registry: &str) -> Value {
    json!({
        "apiVersion": "gpucloud.io/v1beta1", "kind": "RegistryCredential",
        "metadata": {"name": name},
        "spec": {"secretRef": {"name": secret}, "registry": registry},
    })
}

pub fn template(name: &str, spec: Value) -> Value {
    let base = merged(
        json!({"image": "registry.example.com/acme/worker:1", "serverless": true}),
        spec,
    );
    json!({
        "apiVersion": "gpucloud.io/v1beta1", "kind": "Template",
        "metadata": {"name": name},
        "spec": base,
    })
}

pub fn endpoint(name: &str, spec: Value) -> Value {
    let base = merged(
        json!({"gpu": {"typeIds": ["NVIDIA A40"]}, "workersMin": 0, "workersMax": 1, "idleTimeout": "5s"}),
        spec,
    );
    json!({
        "apiVersion": "gpucloud.io/v1beta1", "kind": "Endpoint",
        "metadata": {"name": name},
        "spec": base,
    })
}

/// The emulator's whole state, read at one instant.
pub async fn platform(env: &Env) -> Value {
    env.emulator.admin().state().await.expect("emulator state")
}

pub fn ids(state: &Value, collection: &str) -> Vec<String> {
    state[collection]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect()
}

pub fn record<'a>(state: &'a Value, collection: &str, id: &str) -> Option<&'a Value> {
    state[collection]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)
}

pub fn id_of<K: gpucloud_crd::ManagedKind>(obj: &K) -> String {
    obj.current_status()
        .and_then(|s| K::common(s).id.clone())
        .expect("status.id")
}

/// No login, password or Secret value in the logs, the namespace's Events, or the status
/// of any object of the namespace.
pub async fn assert_no_secret_anywhere(env: &Env, secrets: &[&str]) {
    let events: Api<K8sEvent> = env.api();
    let events = serde_json::to_string(&events.list(&Default::default()).await.unwrap()).unwrap();
    let templates = serde_json::to_string(
        &env.api::<Template>()
            .list(&Default::default())
            .await
            .unwrap(),
    )
    .unwrap();
    let credentials = serde_json::to_string(
        &env.api::<RegistryCredential>()
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|c| &c.status)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let endpoints = serde_json::to_string(
        &env.api::<Endpoint>()
            .list(&Default::default())
            .await
            .unwrap(),
    )
    .unwrap();
    let logs = captured();
    assert!(!logs.is_empty(), "the log capture is not working");
    for (what, text) in [
        ("logs", &logs),
        ("Events", &events),
        ("Templates", &templates),
        ("RegistryCredential statuses", &credentials),
        ("Endpoints", &endpoints),
    ] {
        for secret in secrets {
            assert!(
                !text.contains(secret),
                "a Secret value appeared in the {what}"
            );
        }
    }
}

// --------------------------------------------------------------------------- tests
