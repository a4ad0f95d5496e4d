//! The orphan sweep end to end: an operator process deploys a pod and is killed, the Pod
//! object is then deleted from the cluster (its finalizer removed by hand, as after a lost
//! install), and `gpucloud-operator orphans` (the real binary, with a kubeconfig and a key)
//! finds the pod and, with `--delete --yes`, terminates it; a pod released on purpose
//! (`deletionPolicy: Orphan`) is left alone. Run through `scripts/test.sh`.

mod common;

use std::process::Command;
use std::time::Duration;

use gpucloud_operator::crd::Pod;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use common::operator::{API_KEY, Env};
use common::pods::{config, id_of, is_ready, pod, remote_pods};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `gpucloud-operator orphans EXTRA` against the test's cluster and emulator; its
/// standard output, and whether it succeeded.
fn orphans(env: &Env, extra: &[&str]) -> (String, bool) {
    let base = env.emulator.base_url();
    let out = Command::new(env!("CARGO_BIN_EXE_gpucloud-operator"))
        .arg("orphans")
        .arg(format!("--api-url={base}/v2"))
        .arg(format!("--rest-url={base}/v1"))
        .arg(format!("--graphql-url={base}/graphql"))
        .arg(format!("--platform-api={}", common::backend::backend()))
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_pod_left_by_a_killed_operator_is_listed_and_deleted_a_released_one_is_not() {
    let env = Env::start_with("orphans", config()).await;
    let api: Api<Pod> = env.api();
    let first = env.operator_process(&[]);

    // Released on purpose: deletionPolicy Orphan.
    api.create(
        &PostParams::default(),
        &pod("kept", json!({"deletionPolicy": "Orphan"})),
    )
    .await
    .unwrap();
    let kept = env.wait_for("kept", TIMEOUT, "Ready", is_ready).await;
    let kept_id = id_of(&kept);
    api.delete("kept", &DeleteParams::default()).await.unwrap();
    let released = common::wait_until(TIMEOUT, || async {
        api.get_opt("kept").await.unwrap().is_none()
    })
    .await;
    assert!(released, "the kept Pod was not released");

    // Deployed, then the operator dies and the object goes without it.
    api.create(&PostParams::default(), &pod("lost", json!({})))
        .await
        .unwrap();
    let lost = env.wait_for("lost", TIMEOUT, "Ready", is_ready).await;
    let lost_id = id_of(&lost);
    let lost_cost = lost.status.as_ref().unwrap().cost_per_hour.unwrap();
    first.kill();
    api.delete("lost", &DeleteParams::default()).await.unwrap();
    api.patch(
        "lost",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    let gone = common::wait_until(TIMEOUT, || async {
        api.get_opt("lost").await.unwrap().is_none()
    })
    .await;
    assert!(gone, "the lost Pod object is still there");

    let (listed, ok) = orphans(&env, &[]);
    assert!(ok, "{listed}");
    assert!(listed.contains(&lost_id), "{listed}");
    assert!(
        !listed.contains(&kept_id),
        "a released pod is no orphan: {listed}"
    );
    assert!(
        listed.contains(&format!("1 orphan(s), {lost_cost:.3} per hour")),
        "{listed}"
    );

    let (deleted, ok) = orphans(&env, &["--delete", "--yes"]);
    assert!(ok, "{deleted}");
    assert!(
        deleted.contains(&format!("terminated pod {lost_id}")),
        "{deleted}"
    );
    let remote = remote_pods(&env).await;
    assert!(
        remote
            .iter()
            .all(|p| p.id != lost_id || p.desired_status == "TERMINATED"),
        "the orphan is still on the platform"
    );
    assert!(
        remote
            .iter()
            .any(|p| p.id == kept_id && p.desired_status == "RUNNING"),
        "the released pod must stay"
    );
    let (after, ok) = orphans(&env, &[]);
    assert!(ok && after.contains("0 orphan(s)"), "{after}");

    let operator = env.operator(&[]);
    env.finish(operator).await;
}
