//! The orphan sweep as a user runs it: the `gpucloud-operator orphans` binary against the
//! test's cluster and emulator.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use gpucloud_crd::ManagedKind;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;

use super::operator::{API_KEY, Env};

/// Runs `gpucloud-operator orphans EXTRA` against the test's cluster and emulator; its
/// standard output, and whether it succeeded. Fails the test if the key shows anywhere.
pub fn orphans(env: &Env, extra: &[&str]) -> (String, bool) {
    orphans_on(env, None, extra)
}

/// [`orphans`] against the cluster of `kubeconfig` (a suite's own control plane) instead of
/// the one of `KUBECONFIG`.
pub fn orphans_on(env: &Env, kubeconfig: Option<&Path>, extra: &[&str]) -> (String, bool) {
    let base = env.emulator.base_url();
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpucloud-operator"));
    if let Some(path) = kubeconfig {
        command.env("KUBECONFIG", path);
    }
    let out = command
        .arg("orphans")
        .arg(format!("--api-url={base}/v2"))
        .arg(format!("--rest-url={base}/v1"))
        .arg(format!("--graphql-url={base}/graphql"))
        .arg(format!("--platform-api={}", super::backend::backend()))
        // The operator's namespace in the tests: the install's Lease and its record.
        .arg(format!("--operator-namespace={}", env.ns.name()))
        .args(extra)
        .env("GPUCLOUD_API_KEY", API_KEY)
        .env_remove("GPUCLOUD_LEADER_ELECTION_NAMESPACE")
        .output()
        .expect("run gpucloud-operator orphans");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stdout.contains(API_KEY) && !stderr.contains(API_KEY),
        "the key leaked"
    );
    if !out.status.success() {
        eprintln!("orphans failed: {stderr}");
    }
    (stdout, out.status.success())
}

/// Deletes object `name` of kind `K` without the operator (its finalizers removed by
/// hand), as after a lost install, and waits until it is gone.
pub async fn delete_behind_its_back<K: ManagedKind>(env: &Env, name: &str) {
    let api = env.api::<K>();
    api.delete(name, &DeleteParams::default()).await.unwrap();
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let gone = super::wait_gone(&api, name, Duration::from_secs(60)).await;
    assert!(gone, "{name} is still in the cluster");
}
