//! Uninstalling with the CRDs keeps the paid remote objects. Deleting a CRD deletes every
//! object of its kind (as `kubectl delete -k` of a base that listed the CRDs did); the
//! operator, still running, then sees each object go with `deletionPolicy: Delete`. It must
//! delete nothing on the platform: every remote object stays, is recorded as released
//! (with a `ReleasedCrdDeleting` Event on its object), and `orphans` does not offer it.
//!
//! Isolation: the CRDs are cluster-wide, and every suite on the test control plane shares
//! them (`Env::start` installs them, idempotently, for all suites running at once).
//! Deleting them there would delete the objects of every other suite mid-test. So this
//! suite brings up a control plane of its own, `tests/control-plane/cp.sh up --dir <tmp>`
//! (the same pinned binaries, cached by the shared one; a few seconds), runs the whole
//! scenario there (CRDs, operator, objects, record) and stops it at the end, failed or
//! not. The emulator is in-process, as in every suite. The operator signs in as that
//! control plane's admin: `OPERATOR_KUBECONFIG` (the ServiceAccount lane of
//! `scripts/test.sh`) belongs to the shared control plane; that the ServiceAccount of each
//! install may read the CRDs is `tests/install/rbac-variants.sh`'s and `tests/manifests.rs`'s.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use gpucloud_crd::{NetworkVolume, Pod};
use gpucloud_engine::released;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Resource;
use kube::api::{Api, DeleteParams};
use serde_json::json;

use common::control_plane::OwnControlPlane;
use common::operator::{Env, volume};
use common::pods::{self, pod, remote_status};
use common::sweep::orphans_on;

const TIMEOUT: Duration = Duration::from_secs(90);
const RELEASED_CRD_DELETING: &str = "ReleasedCrdDeleting";

fn crd_name<K: Resource<DynamicType = ()>>() -> String {
    format!("{}.{}", K::plural(&()), K::group(&()))
}

/// The platform deletes the emulator counted, by route: REST deletes (volumes, and pods on
/// REST v2) and GraphQL's pod terminations (the seed backend).
fn deletes(calls: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    calls
        .iter()
        .filter(|(route, _)| route.starts_with("DELETE ") || route.contains("podTerminate"))
        .map(|(route, n)| (route.clone(), *n))
        .collect()
}

/// Whether an Event with the reason of a CRD-forced release, naming `id`, is about `name`.
async fn told_kept(env: &Env, kind: &str, name: &str, id: &str) -> bool {
    env.events_about(kind, name).await.iter().any(|e| {
        e.reason.as_deref() == Some(RELEASED_CRD_DELETING)
            && e.note.as_deref().is_some_and(|n| n.contains(id))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane binaries: run scripts/test.sh"]
async fn deleting_the_crds_releases_every_remote_object_and_deletes_none() {
    let cp = OwnControlPlane::up("uninstall");
    let client = cp.client().await;
    let env = Env::start_on(client.clone(), client.clone(), "uninstall", pods::config()).await;
    let operator = env.operator(&[]);

    let delete = json!({"deletionPolicy": "Delete"});
    let volumes = ["data-a", "data-b"];
    let pod_names = ["train-a", "train-b"];
    for name in volumes {
        env.create(&volume(name, 10, delete.clone())).await;
    }
    for name in pod_names {
        env.create(&pod(name, delete.clone())).await;
    }
    let mut ids: BTreeMap<(&str, &str), String> = BTreeMap::new();
    for name in volumes {
        let nv: NetworkVolume = env
            .wait_for(name, TIMEOUT, "Ready", common::operator::is_ready)
            .await;
        ids.insert(
            ("NetworkVolume", name),
            nv.status.unwrap().common.id.unwrap(),
        );
    }
    for name in pod_names {
        let p: Pod = env.wait_for(name, TIMEOUT, "Ready", pods::is_ready).await;
        ids.insert(("Pod", name), pods::id_of(&p));
    }
    assert_eq!(
        deletes(&env.calls().await),
        BTreeMap::new(),
        "nothing deleted yet"
    );

    // The uninstall: the CRDs go while the operator runs, and take every object along.
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let names = [crd_name::<NetworkVolume>(), crd_name::<Pod>()];
    for name in &names {
        crds.delete(name, &DeleteParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete the CRD {name}: {e}"));
    }
    for name in &names {
        let gone = common::wait_until(TIMEOUT, || async {
            crds.get_opt(name).await.expect("read the CRD").is_none()
        })
        .await;
        assert!(
            gone,
            "the CRD {name} is still there: its objects kept their finalizer"
        );
    }

    // Not one delete reached the platform, and every remote object is still there.
    let calls = env.calls().await;
    assert_eq!(
        deletes(&calls),
        BTreeMap::new(),
        "the platform was asked to delete: {calls:?}"
    );
    let on_platform = env.platform_volume_ids().await;
    for name in volumes {
        let id = &ids[&("NetworkVolume", name)];
        assert!(
            on_platform.contains(id),
            "volume {id} of {name} is gone: {on_platform:?}"
        );
    }
    for name in pod_names {
        let id = &ids[&("Pod", name)];
        let status = remote_status(&env, id).await;
        assert!(
            status.as_deref().is_some_and(|s| s != "TERMINATED"),
            "pod {id} of {name}: {status:?}"
        );
    }

    // Each is recorded as released, and its object was told so.
    let record = released::read_record(&env.client, env.ns.name())
        .await
        .expect("read the released record");
    for ((kind, name), id) in &ids {
        assert!(
            record.ids_of(kind).contains(id),
            "{kind} {id} of {name} is not in the released record"
        );
        assert!(
            told_kept(&env, kind, name, id).await,
            "no {RELEASED_CRD_DELETING} Event naming {id} about {kind} {name}: {:?}",
            env.events_about(kind, name).await
        );
    }

    // `orphans` (the CRDs are gone, so the kinds hold no object) offers none of them.
    let (listed, ok) = orphans_on(&env, Some(&cp.kubeconfig), &[]);
    assert!(ok, "orphans failed: {listed}");
    for id in ids.values() {
        assert!(
            !listed.contains(id.as_str()),
            "{id} is offered for deletion: {listed}"
        );
    }
    assert!(listed.contains("0 orphan(s)"), "{listed}");
    println!(
        "{} remote objects kept through the CRDs' deletion, {} platform deletes",
        ids.len(),
        deletes(&env.calls().await).values().sum::<u64>()
    );

    operator.stop().await;
    env.emulator.shutdown().await;
    drop(cp);
}
