//! The API versions against the real apiserver and the conversion webhook scripts/test.sh
//! runs for it: objects written in `v1alpha1` read in `v1beta1` and back, every kind, and the
//! operator (which reads `v1beta1`) reconciling objects written in either. Run through
//! `scripts/test.sh`.

mod common;

use std::time::Duration;

use gpucloud_crd::Pod;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use common::conversion::{versioned_api, wait_for_webhook};
use common::operator::{Env, install_crds};
use common::pods::{config, id_of, is_ready, remote_pods};
use common::{TestNamespace, kube_client};

const TIMEOUT: Duration = Duration::from_secs(40);

fn alpha(kind: &str, name: &str, spec: Value) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "gpucloud.io/v1alpha1", "kind": kind,
        "metadata": {"name": name}, "spec": spec,
    }))
    .unwrap()
}

/// Each kind in `v1alpha1`, with every field `v1beta1` names or shapes otherwise, and what
/// `v1beta1` says of it.
fn every_kind() -> Vec<(&'static str, Value, Value)> {
    vec![
        (
            "Pod",
            json!({"image": "img:1", "dockerArgs": "serve --port 80",
                "gpu": {"types": ["NVIDIA A40"], "count": 2}}),
            json!({"args": "serve --port 80", "gpu": {"typeIds": ["NVIDIA A40"], "count": 2}}),
        ),
        (
            "Endpoint",
            json!({"templateId": "t", "gpuTypeIds": ["NVIDIA A40"], "gpuCount": 2,
                "idleTimeoutSeconds": 90, "executionTimeoutMs": 600500}),
            json!({"gpu": {"typeIds": ["NVIDIA A40"], "count": 2}, "idleTimeout": "1m30s",
                "executionTimeout": "10m1s"}),
        ),
        (
            "Cluster",
            json!({"type": "TRAINING", "image": "img:1", "args": "torchrun",
                "compute": {"gpuTypes": ["NVIDIA H100 80GB HBM3"], "gpuCountPerPod": 8, "podCount": 3}}),
            json!({"args": "torchrun", "gpu": {"typeIds": ["NVIDIA H100 80GB HBM3"], "count": 8},
                "nodeCount": 3}),
        ),
        (
            "Template",
            json!({"image": "img:1", "args": "serve", "ports": ["8000/http"]}),
            json!({"args": "serve", "ports": ["8000/http"]}),
        ),
        (
            "NetworkVolume",
            json!({"sizeGb": 10, "dataCenterId": "EU-RO-1"}),
            json!({"sizeGb": 10, "dataCenterId": "EU-RO-1"}),
        ),
        (
            "RegistryCredential",
            json!({"secretRef": {"name": "ghcr"}, "registry": "ghcr.io"}),
            json!({"secretRef": {"name": "ghcr"}, "registry": "ghcr.io"}),
        ),
        (
            "Budget",
            json!({"maxCostPerHour": 2.5}),
            json!({"maxCostPerHour": 2.5}),
        ),
    ]
}

/// Whether every field of `want` is in `have` with the same value.
fn holds(have: &Value, want: &Value) -> bool {
    match (have, want) {
        (Value::Object(have), Value::Object(want)) => want
            .iter()
            .all(|(k, w)| have.get(k).is_some_and(|h| holds(h, w))),
        _ => have == want,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn every_kind_written_in_v1alpha1_reads_in_v1beta1_and_back_unchanged() {
    let client = kube_client().await;
    install_crds(&client).await;
    wait_for_webhook(&client).await;
    let ns = TestNamespace::create(&client, "conversion").await;
    for (kind, written, in_beta) in every_kind() {
        let old = versioned_api(&client, ns.name(), "v1alpha1", kind);
        let new = versioned_api(&client, ns.name(), "v1beta1", kind);
        old.create(&PostParams::default(), &alpha(kind, "x", written.clone()))
            .await
            .unwrap_or_else(|e| panic!("{kind} in v1alpha1 is admitted: {e}"));
        let read = new.get("x").await.unwrap();
        assert_eq!(
            read.types.as_ref().unwrap().api_version,
            "gpucloud.io/v1beta1"
        );
        assert!(
            holds(&read.data["spec"], &in_beta),
            "{kind} in v1beta1: {} does not hold {in_beta}",
            read.data["spec"]
        );
        let back = old.get("x").await.unwrap();
        assert!(
            holds(&back.data["spec"], &written),
            "{kind} back in v1alpha1: {} is not {written}",
            back.data["spec"]
        );
        // What v1beta1 cannot say stays out of the way of the v1beta1 reader...
        for gone in [
            "dockerArgs",
            "gpuTypeIds",
            "gpuCount",
            "compute",
            "idleTimeoutSeconds",
        ] {
            assert!(
                read.data["spec"].get(gone).is_none(),
                "{kind}: {gone} in v1beta1"
            );
        }
        // ...and an edit in v1beta1 keeps it for the v1alpha1 reader.
        new.patch(
            "x",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"edited": "in-v1beta1"}}})),
        )
        .await
        .unwrap();
        let after = old.get("x").await.unwrap();
        assert!(
            holds(&after.data["spec"], &written),
            "{kind} after an edit: {}",
            after.data["spec"]
        );
    }
    ns.delete_and_wait(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_v1alpha1_manifest_the_apiserver_cannot_say_in_v1beta1_is_refused_naming_the_field() {
    let client = kube_client().await;
    install_crds(&client).await;
    wait_for_webhook(&client).await;
    let ns = TestNamespace::create(&client, "conversion-refused").await;
    let old = versioned_api(&client, ns.name(), "v1alpha1", "Endpoint");
    // The frozen v1alpha1 schema's rule refuses the shorthand beside `gpu`.
    let both = alpha(
        "Endpoint",
        "both",
        json!({"templateId": "t", "gpuTypeIds": ["A"], "gpu": {"typeIds": ["A"]}}),
    );
    let err = old
        .create(&PostParams::default(), &both)
        .await
        .expect_err("the shorthand with gpu");
    assert!(err.to_string().contains("gpuTypeIds"), "{err}");
    ns.delete_and_wait(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn the_operator_reconciles_objects_written_in_either_version() {
    let env = Env::start_with("conversion-op", config()).await;
    wait_for_webhook(&env.client).await;
    let op = env.operator(&[]);
    let old = versioned_api(&env.client, env.ns.name(), "v1alpha1", "Pod");
    old.create(
        &PostParams::default(),
        &alpha(
            "Pod",
            "old",
            json!({"image": "img:1", "dockerArgs": "serve", "gpu": {"types": [common::pods::RTX4090]}}),
        ),
    )
    .await
    .unwrap();
    env.create(&common::pods::pod("new", json!({"args": "train"})))
        .await;
    let mut args = Vec::new();
    for name in ["old", "new"] {
        let ready: Pod = env.wait_for(name, TIMEOUT, "Ready", is_ready).await;
        let id = id_of(&ready);
        let remote = remote_pods(&env).await.into_iter().find(|p| p.id == id);
        args.push(remote.and_then(|p| p.docker_args));
    }
    assert_eq!(
        args,
        [Some("serve".to_string()), Some("train".to_string())],
        "the platform runs what each version said"
    );
    // Status written by the operator in v1beta1 reads in v1alpha1 too.
    let status = old.get("new").await.unwrap().data["status"].clone();
    assert_eq!(status["phase"], "Running", "{status}");
    env.finish(op).await;
}
