//! Proves the test harness: the control plane that `scripts/test.sh` starts is a real
//! kube-apiserver with etcd and the controllers the later suites rely on (namespace
//! deletion, garbage collection), and it enforces CEL transition rules.
//!
//! Needs `KUBECONFIG` pointing at that control plane, hence `#[ignore]` for a bare
//! `cargo test`; `scripts/test.sh` runs it with `--include-ignored`.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::ApiResource;
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

use common::{TestNamespace, kube_client, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn namespace_secret_and_lease_round_trip() {
    let client = kube_client().await;
    let ns = TestNamespace::create(&client, "harness").await;

    let secrets: Api<Secret> = Api::namespaced(client.clone(), ns.name());
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("api-key".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "apiKey".to_string(),
            ByteString(b"not-a-real-key".to_vec()),
        )])),
        ..Default::default()
    };
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let read = secrets.get("api-key").await.unwrap();
    assert_eq!(read.data.unwrap()["apiKey"].0, b"not-a-real-key");

    let leases: Api<Lease> = Api::namespaced(client.clone(), ns.name());
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some("leader".into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("replica-a".into()),
            lease_duration_seconds: Some(15),
            ..Default::default()
        }),
    };
    let created = leases.create(&PostParams::default(), &lease).await.unwrap();
    // A stale resourceVersion must be refused: leader election depends on it.
    let mut stale = created.clone();
    leases
        .patch(
            "leader",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"holderIdentity": "replica-b"}})),
        )
        .await
        .unwrap();
    stale.spec.as_mut().unwrap().holder_identity = Some("replica-c".into());
    let err = leases
        .replace("leader", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref e) if e.code == 409),
        "want 409, got {err}"
    );

    ns.delete_and_wait(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn watch_sees_a_config_map_change() {
    let client = kube_client().await;
    let ns = TestNamespace::create(&client, "harness").await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("settings".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("colour".to_string(), "red".to_string())])),
        ..Default::default()
    };
    config_maps
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();

    let mut events = watcher(config_maps.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    // The initial list delivers the object as it was created.
    let first = events.try_next().await.unwrap().unwrap();
    assert_eq!(first.data.unwrap()["colour"], "red");

    config_maps
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"colour": "blue"}})),
        )
        .await
        .unwrap();
    let changed = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let cm = events.try_next().await.unwrap().unwrap();
            if cm.data.as_ref().unwrap()["colour"] == "blue" {
                return cm;
            }
        }
    })
    .await
    .expect("the change did not arrive over the watch within 20 s");
    assert_eq!(changed.metadata.name.as_deref(), Some("settings"));

    ns.delete_and_wait(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn garbage_collector_removes_dependents() {
    let client = kube_client().await;
    let ns = TestNamespace::create(&client, "harness").await;
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    let owner = config_maps
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("owner".into()),
                    ..Default::default()
                },
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let dependent = ConfigMap {
        metadata: ObjectMeta {
            name: Some("dependent".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "owner".into(),
                uid: owner.metadata.uid.clone().unwrap(),
                ..Default::default()
            }]),
            ..Default::default()
        },
        ..Default::default()
    };
    config_maps
        .create(&PostParams::default(), &dependent)
        .await
        .unwrap();
    config_maps
        .delete("owner", &DeleteParams::background())
        .await
        .unwrap();

    let gone = wait_until(Duration::from_secs(60), || async {
        config_maps.get_opt("dependent").await.unwrap().is_none()
    })
    .await;
    assert!(
        gone,
        "the garbage collector did not remove the dependent within 60 s"
    );

    ns.delete_and_wait(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn cel_transition_rule_refuses_a_violating_update() {
    let client = kube_client().await;
    let ns = TestNamespace::create(&client, "harness").await;
    let group = format!("{}.harness.gpucloud.io", ns.name());
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("disks.{group}")},
        "spec": {
            "group": group,
            "names": {"kind": "Disk", "plural": "disks", "singular": "disk"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {
                        "type": "object",
                        "properties": {"sizeGb": {
                            "type": "integer",
                            "x-kubernetes-validations": [{
                                "rule": "self >= oldSelf",
                                "message": "sizeGb may only grow"
                            }]
                        }}
                    }}
                }}
            }]
        }
    }))
    .unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let crd_name = format!("disks.{group}");
    let established = wait_until(Duration::from_secs(30), || async {
        let crd = crds.get(&crd_name).await.unwrap();
        crd.status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    })
    .await;
    assert!(established, "the CRD was not Established within 30 s");

    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(&group, "v1", "Disk"), "disks");
    let disks: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns.name(), &resource);
    let disk: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1"),
        "kind": "Disk",
        "metadata": {"name": "data"},
        "spec": {"sizeGb": 10}
    }))
    .unwrap();
    // Right after Established the new type can still be missing from discovery for a moment.
    let created = wait_until(Duration::from_secs(30), || async {
        disks.create(&PostParams::default(), &disk).await.is_ok()
    })
    .await;
    assert!(created, "could not create a Disk within 30 s");

    let grow = Patch::Merge(json!({"spec": {"sizeGb": 20}}));
    disks
        .patch("data", &PatchParams::default(), &grow)
        .await
        .unwrap();

    let shrink = Patch::Merge(json!({"spec": {"sizeGb": 5}}));
    let err = disks
        .patch("data", &PatchParams::default(), &shrink)
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 422, "{status:?}");
            assert!(
                status.message.contains("sizeGb may only grow"),
                "{}",
                status.message
            );
            assert!(status.message.contains("spec.sizeGb"), "{}", status.message);
        }
        other => panic!("want a 422 from the apiserver, got {other}"),
    }
    let still = disks.get("data").await.unwrap();
    assert_eq!(still.data["spec"]["sizeGb"], 20);

    crds.delete(&crd_name, &DeleteParams::default())
        .await
        .unwrap();
    ns.delete_and_wait(&client).await;
}
