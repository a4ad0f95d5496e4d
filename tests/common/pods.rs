//! What the Pod suites share: the GPU types they ask for, an emulator whose pods boot fast,
//! a Pod manifest, and a look at the platform's side.

use gpucloud_crd::{Pod, PodSpec};
use gpucloud_emulator::EmulatorConfig;
use gpucloud_platform as platform;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use super::merged;
use super::operator::{Env, ready_now};

pub const RTX4090: &str = "NVIDIA GeForce RTX 4090";
pub const A40: &str = "NVIDIA A40";
/// The emulator's name of a deploy on this run's backend.
pub fn deploy() -> &'static str {
    super::backend::routes().deploy_pod
}

/// The emulator with pods that boot in 300 ms, so that Running comes quickly.
pub fn config() -> EmulatorConfig {
    EmulatorConfig {
        pod_boot_ms: 300,
        ..EmulatorConfig::default()
    }
}

/// A Pod asking for one RTX 4090 or else an A40, with `extra` merged into its spec.
pub fn pod(name: &str, extra: serde_json::Value) -> Pod {
    let spec = merged(
        json!({
            "image": "ghcr.io/acme/train:1",
            "ports": ["8888/http", "22/tcp"],
            "gpu": {"typeIds": [RTX4090, A40], "count": 1},
        }),
        extra,
    );
    let spec: PodSpec = serde_json::from_value(spec).unwrap();
    Pod::new(name, spec)
}

/// Ready=True for the object's current generation.
pub fn is_ready(p: &Pod) -> bool {
    ready_now(p)
}

pub fn id_of(p: &Pod) -> String {
    p.status.as_ref().unwrap().common.id.clone().unwrap()
}

/// Every pod on the platform, as the account sees it.
pub async fn remote_pods(env: &Env) -> Vec<platform::Pod> {
    env.platform.graphql().my_pods().await.unwrap()
}

/// The platform's desired status of pod `id` (`RUNNING`, `EXITED`...), if it exists.
pub async fn remote_status(env: &Env, id: &str) -> Option<String> {
    remote_pods(env)
        .await
        .into_iter()
        .find(|p| p.id == id)
        .map(|p| p.desired_status)
}

/// Merges `spec` into the object's spec, as `kubectl patch --type=merge` would.
pub async fn patch_spec<K>(api: &Api<K>, name: &str, spec: serde_json::Value)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": spec })),
    )
    .await
    .unwrap();
}

/// (reason, note) of every Event about the Pod `name`.
pub async fn pod_events(env: &Env, name: &str) -> Vec<(String, String)> {
    env.events_about("Pod", name)
        .await
        .into_iter()
        .map(|e| (e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
        .collect()
}
