//! The storage migration (`gpucloud-operator migrate-storage`) on a control plane of its own:
//! objects stored in `v1alpha1` by the CRDs of v0.1.0 (one version), the CRDs of this
//! release applied over them with the conversion webhook, the migration run, and then
//! `v1alpha1` taken out of the CRDs altogether: every object still reads, which it could not
//! if any were still stored in `v1alpha1`. Run through `scripts/test.sh`.

mod common;

use std::future::Future;
use std::time::Duration;

use gpucloud_operator::app::conversion::{self, Address, Certificate, Webhook};
use gpucloud_operator::cli::migrate_storage;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

use common::control_plane::OwnControlPlane;
use common::conversion::{versioned_api, wait_for_webhook};
use common::operator::install_crds;

const MANAGER: &str = "e2e-storage-migration";

/// Every CRD of this release with only the versions `keep` says, the first one stored.
fn crds_with(keep: impl Fn(&str) -> bool) -> Vec<CustomResourceDefinition> {
    gpucloud_operator::kinds::crds()
        .into_iter()
        .map(|mut crd| {
            crd.spec.versions.retain(|v| keep(&v.name));
            for (i, version) in crd.spec.versions.iter_mut().enumerate() {
                version.storage = i == 0;
                version.deprecated = None;
                version.deprecation_warning = None;
            }
            crd
        })
        .collect()
}

async fn apply(client: &Client, crds: &[CustomResourceDefinition]) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap();
        api.patch(
            &name,
            &PatchParams::apply(MANAGER).force(),
            &Patch::Apply(crd),
        )
        .await
        .unwrap_or_else(|e| panic!("apply {name}: {e}"));
    }
}

async fn stored_versions(client: &Client) -> Vec<Vec<String>> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut all = Vec::new();
    for crd in gpucloud_operator::kinds::crds() {
        let got = api.get(&crd.metadata.name.unwrap()).await.unwrap();
        all.push(
            got.status
                .and_then(|s| s.stored_versions)
                .unwrap_or_default(),
        );
    }
    all
}

/// The conversion webhook for `client`'s control plane, as the tests' harness runs it, until
/// `stop` resolves.
async fn webhook(client: &Client, stop: impl Future<Output = ()> + Send + 'static) {
    let port = common::operator::free_port();
    let crds = gpucloud_operator::cli::webhook::crd_names();
    conversion::start(
        client.clone(),
        Webhook {
            listen: ([127, 0, 0, 1], port).into(),
            certificate: Certificate::Own {
                namespace: "default".into(),
                secret: "gpucloud-operator-webhook-tls".into(),
                address: Address::Url(format!("https://127.0.0.1:{port}/convert")),
            },
            crds,
            check_every: Duration::from_secs(1),
            drain: Duration::ZERO,
        },
        stop,
    )
    .await
    .expect("the webhook starts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane binaries: run scripts/test.sh"]
async fn objects_stored_in_v1alpha1_move_to_v1beta1_and_v1alpha1_can_go() {
    let cp = OwnControlPlane::up("storage-migration");
    let client = cp.client().await;
    // v0.1.0: v1alpha1 only, stored.
    apply(&client, &crds_with(|v| v == "v1alpha1")).await;
    common::wait_until(Duration::from_secs(30), || async {
        versioned_api(&client, "default", "v1alpha1", "Pod")
            .list(&Default::default())
            .await
            .is_ok()
    })
    .await;
    let pods = versioned_api(&client, "default", "v1alpha1", "Pod");
    let volumes = versioned_api(&client, "default", "v1alpha1", "NetworkVolume");
    for i in 0..3 {
        let pod: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "gpucloud.io/v1alpha1", "kind": "Pod",
            "metadata": {"name": format!("p{i}")},
            "spec": {"image": "img:1", "dockerArgs": format!("serve {i}"), "gpu": {"types": ["NVIDIA A40"]}},
        }))
        .unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
    }
    let volume: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "gpucloud.io/v1alpha1", "kind": "NetworkVolume",
        "metadata": {"name": "data"}, "spec": {"sizeGb": 10, "dataCenterId": "EU-RO-1"},
    }))
    .unwrap();
    volumes
        .create(&PostParams::default(), &volume)
        .await
        .unwrap();

    // This release's CRDs (v1beta1 stored) and its webhook.
    install_crds(&client).await;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    webhook(&client, gpucloud_operator::app::stop::stopped(stop_rx)).await;
    wait_for_webhook(&client).await;
    let before = stored_versions(&client).await;
    assert!(
        before.iter().all(|v| v == &["v1alpha1", "v1beta1"]),
        "{before:?}"
    );

    let names = gpucloud_operator::cli::webhook::crd_names();
    let done = migrate_storage::migrate(&client, &names).await.unwrap();
    let rewritten = |crd: &str| done.iter().find(|m| m.crd == crd).unwrap().rewritten;
    assert_eq!(rewritten("pods.gpucloud.io"), 3);
    assert_eq!(rewritten("networkvolumes.gpucloud.io"), 1);
    assert_eq!(rewritten("endpoints.gpucloud.io"), 0);
    let after = stored_versions(&client).await;
    assert!(after.iter().all(|v| v == &["v1beta1"]), "{after:?}");
    // Run again: nothing left to do.
    let again = migrate_storage::migrate(&client, &names).await.unwrap();
    assert!(again.iter().all(|m| m.rewritten == 0), "{again:?}");

    // v1alpha1 taken out of the CRDs, and the webhook stopped: each object reads from
    // storage as v1beta1 as it is, with what v1alpha1 said (one still stored in v1alpha1
    // would need the webhook, which no longer answers).
    let _ = stop_tx.send(true);
    apply(&client, &crds_with(|v| v == "v1beta1")).await;
    let beta_pods = versioned_api(&client, "default", "v1beta1", "Pod");
    for i in 0..3 {
        let pod = beta_pods.get(&format!("p{i}")).await.unwrap();
        assert_eq!(
            pod.data["spec"]["args"],
            format!("serve {i}"),
            "{:?}",
            pod.data
        );
        assert_eq!(pod.data["spec"]["gpu"]["typeIds"], json!(["NVIDIA A40"]));
    }
    let volume = versioned_api(&client, "default", "v1beta1", "NetworkVolume")
        .get("data")
        .await
        .unwrap();
    assert_eq!(volume.data["spec"]["sizeGb"], 10);
}
