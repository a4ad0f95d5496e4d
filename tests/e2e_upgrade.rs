//! An upgrade from the previous release, as a user makes it. The operator of the release
//! `tests/upgrade/previous-release` names (built from this repository's history by
//! `tests/upgrade/build.sh`, which `scripts/test.sh` runs) installs its own CRDs, and
//! converges objects of every kind written in its API version (`tests/upgrade/objects.yaml`);
//! one Pod is then stopped. It stops; this tree's CRDs are applied over its own, and this
//! tree's operator starts, serving the conversion webhook and pointing the CRDs at it.
//!
//! What must hold: every object Ready again (read in the new version) after the new
//! operator's own passes over it, with not one write to the platform (no create, no rename,
//! no start of the stopped pod), every remote object under the same id and name; then,
//! everything deleted, nothing left on the platform but the volume whose policy keeps it.
//!
//! Isolation: the CRDs are cluster-wide, and the previous release's differ from the ones
//! every other suite shares, so the suite brings up a control plane of its own
//! (`common::control_plane`), signed in as its admin.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use gpucloud_emulator::EmulatorConfig;
use gpucloud_operator::demo::apply::{apply_objects, parse_documents};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use common::calls::writes;
use common::control_plane::OwnControlPlane;
use common::conversion::{versioned_api, wait_for_webhook};
use common::operator::{Env, free_port};
use common::passes::wait_passes_on;
use common::process::OperatorProcess;

const TIMEOUT: Duration = Duration::from_secs(120);
const KINDS: [&str; 7] = [
    "RegistryCredential",
    "Template",
    "Endpoint",
    "NetworkVolume",
    "Cluster",
    "Budget",
    "Pod",
];
/// The Pod the test stops under the previous release, and the volume its policy keeps.
const STOPPED_POD: &str = "paused";
const KEPT_VOLUME: &str = "datasets";
const BUDGET: &str = "team-a";
/// The platform's collections, as the emulator's state names them.
const COLLECTIONS: [&str; 6] = [
    "pods",
    "networkVolumes",
    "templates",
    "endpoints",
    "registries",
    "clusters",
];

/// The previous release: its operator binary and the CRDs it installed.
struct PreviousRelease {
    binary: PathBuf,
    crds: String,
}

fn previous_release() -> PreviousRelease {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = match std::env::var("GPUCLOUD_PREVIOUS_RELEASE") {
        Ok(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            let out = Command::new(root.join("tests/upgrade/build.sh"))
                .arg("--path")
                .output()
                .expect("run tests/upgrade/build.sh --path");
            PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
        }
    };
    let binary = dir.join("gpucloud-operator");
    let crds = std::fs::read_to_string(dir.join("crds.yaml"));
    match (binary.is_file(), crds) {
        (true, Ok(crds)) => PreviousRelease { binary, crds },
        _ => panic!(
            "the previous release is not built in {}: run tests/upgrade/build.sh (scripts/test.sh does)",
            dir.display()
        ),
    }
}

/// The objects the test applies, as `tests/upgrade/objects.yaml` writes them.
const OBJECTS: &str = include_str!("upgrade/objects.yaml");

/// How many objects of the operator's kinds `OBJECTS` holds.
fn manifest_objects() -> usize {
    parse_documents(OBJECTS, "tests/upgrade/objects.yaml")
        .expect("tests/upgrade/objects.yaml parses")
        .iter()
        .filter(|o| {
            o.types
                .as_ref()
                .is_some_and(|t| t.api_version.starts_with("gpucloud.io/"))
        })
        .count()
}

/// Applies the documents of `text` (CRDs, or objects into `namespace`) server-side, as
/// `kubectl apply --server-side` does.
async fn apply(client: &Client, namespace: &str, text: &str, what: &str) {
    let objects = parse_documents(text, what).unwrap_or_else(|e| panic!("{what}: {e}"));
    apply_objects(client, namespace, &objects, "kubectl")
        .await
        .unwrap_or_else(|e| panic!("apply {what}: {e}"));
}

/// Waits until every CRD of the group is Established and serves `version`.
async fn wait_served(client: &Client, version: &str) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let served = common::wait_until(Duration::from_secs(30), || async {
        let listed = crds.list(&ListParams::default()).await.expect("list CRDs");
        let ours: Vec<_> = listed
            .items
            .iter()
            .filter(|c| c.spec.group == "gpucloud.io")
            .collect();
        ours.len() == KINDS.len()
            && ours.iter().all(|c| {
                c.spec
                    .versions
                    .iter()
                    .any(|v| v.name == version && v.served)
                    && c.status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .is_some_and(|cs| {
                            cs.iter()
                                .any(|c| c.type_ == "Established" && c.status == "True")
                        })
            })
    })
    .await;
    assert!(served, "the CRDs do not serve {version} within 30 s");
}

/// Every object of every kind in the test's namespace, read in `version`, by (kind, name).
async fn objects(env: &Env, version: &str) -> BTreeMap<(String, String), DynamicObject> {
    let mut all = BTreeMap::new();
    for kind in KINDS {
        let api = versioned_api(&env.client, env.ns.name(), version, kind);
        for obj in api.list(&ListParams::default()).await.expect("list").items {
            all.insert((kind.to_string(), obj.name_any()), obj);
        }
    }
    all
}

/// The condition `type_` of `obj`'s status, for its current generation.
fn condition_now<'a>(obj: &'a DynamicObject, type_: &str) -> Option<&'a Value> {
    let status = obj.data.get("status")?;
    if status.get("observedGeneration")?.as_i64() != obj.metadata.generation {
        return None;
    }
    status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

/// Whether `obj` has settled as it should on this backend: Ready, or for a Cluster on the
/// seed backend (which has no clusters) Stalled as unsupported.
fn settled(kind: &str, obj: &DynamicObject) -> bool {
    if kind == "Cluster" && !common::backend::is_v2() {
        return condition_now(obj, "Stalled")
            .is_some_and(|c| c["status"] == "True" && c["reason"] == "UnsupportedByBackend");
    }
    condition_now(obj, "Ready").is_some_and(|c| c["status"] == "True")
}

/// Waits until every object read in `version` has settled, and the stopped pod (once
/// `stopped`) says so; the objects as last read.
async fn wait_settled(
    env: &Env,
    version: &str,
    stopped: bool,
) -> BTreeMap<(String, String), DynamicObject> {
    let deadline = Instant::now() + TIMEOUT;
    let expected = manifest_objects();
    loop {
        let all = objects(env, version).await;
        let unsettled: Vec<_> = all
            .iter()
            .filter(|((kind, name), obj)| {
                !settled(kind, obj)
                    || (stopped && name == STOPPED_POD && obj.data["status"]["phase"] != "Stopped")
            })
            .map(|((kind, name), obj)| format!("{kind} {name}: {}", obj.data["status"]))
            .collect();
        if all.len() == expected && unsettled.is_empty() {
            return all;
        }
        assert!(
            Instant::now() < deadline,
            "not settled in {version} within {TIMEOUT:?} ({} objects): {unsettled:#?}",
            all.len()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Each object's remote id (`status.id`), by (kind, name); a Budget and, on the seed
/// backend, a Cluster have none.
fn ids(all: &BTreeMap<(String, String), DynamicObject>) -> BTreeMap<(String, String), String> {
    all.iter()
        .filter_map(|(key, obj)| {
            let id = obj.data["status"]["id"].as_str()?;
            Some((key.clone(), id.to_string()))
        })
        .collect()
}

/// What the platform holds, collection by collection: each record's id, with its name
/// (and a pod's desired status).
async fn platform(env: &Env) -> BTreeMap<String, BTreeMap<String, String>> {
    let state = common::templates::platform(env).await;
    COLLECTIONS
        .iter()
        .map(|collection| {
            let records = state[*collection]
                .as_array()
                .unwrap_or_else(|| panic!("no {collection} in the emulator's state"))
                .iter()
                .map(|r| {
                    let id = r["id"].as_str().expect("an id").to_string();
                    let what = format!("{} {}", r["name"], r["desiredStatus"]);
                    (id, what)
                })
                .collect();
            (collection.to_string(), records)
        })
        .collect()
}

/// Waits until the operator serving `/metrics` on `port` has passed over every object of
/// `all` twice: once when it started, once more a poll later; once only for the seed
/// backend's Cluster, stalled, which waits for a change to its spec. The Budget's
/// controller counts no passes (it writes nothing to the platform): the test clears the
/// Budget's status instead, so that a Ready Budget is the new operator's word.
async fn wait_passes_over_each(port: u16, all: &BTreeMap<(String, String), DynamicObject>) {
    for kind in KINDS.into_iter().filter(|k| *k != "Budget") {
        let n = all.keys().filter(|(k, _)| k == kind).count() as u64;
        let each = if kind == "Cluster" && !common::backend::is_v2() {
            1
        } else {
            2
        };
        wait_passes_on(port, kind, 0, each * n).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane binaries and the previous release: run scripts/test.sh"]
async fn an_upgrade_from_the_previous_release_keeps_every_object_and_writes_nothing() {
    let previous = previous_release();
    let cp = OwnControlPlane::up("upgrade");
    let client = cp.client().await;
    apply(&client, "", &previous.crds, "the previous release's CRDs").await;
    wait_served(&client, "v1alpha1").await;
    let config = EmulatorConfig {
        pod_boot_ms: 300,
        ..EmulatorConfig::default()
    };
    let env = Env::start_on_installed(client.clone(), client.clone(), "upgrade", config).await;
    let at_start = platform(&env).await;

    // The previous release converges the objects, and one Pod is stopped.
    let old =
        OperatorProcess::spawn_binary(&previous.binary, Some(&cp.kubeconfig), &env.flags(&[]));
    apply(
        &client,
        env.ns.name(),
        OBJECTS,
        "tests/upgrade/objects.yaml",
    )
    .await;
    wait_settled(&env, "v1alpha1", false).await;
    versioned_api(&client, env.ns.name(), "v1alpha1", "Pod")
        .patch(
            STOPPED_POD,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"desiredState": "Stopped"}})),
        )
        .await
        .expect("stop the pod");
    let before = wait_settled(&env, "v1alpha1", true).await;
    let ids_before = ids(&before);
    let platform_before = platform(&env).await;
    let stopped_id = &ids_before[&("Pod".to_string(), STOPPED_POD.to_string())];
    assert!(
        platform_before["pods"][stopped_id].ends_with("\"EXITED\""),
        "{STOPPED_POD} is not stopped on the platform: {}",
        platform_before["pods"][stopped_id]
    );
    old.terminate().await;
    versioned_api(&client, env.ns.name(), "v1alpha1", "Budget")
        .patch_status(
            BUDGET,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": null})),
        )
        .await
        .expect("clear the Budget's status");

    // The upgrade: this tree's CRDs over the previous release's, then this tree's operator.
    let calls_before = env.calls().await;
    let began = Instant::now();
    apply(
        &client,
        "",
        include_str!("../deploy/crds/gpucloud.io.yaml"),
        "deploy/crds/gpucloud.io.yaml",
    )
    .await;
    wait_served(&client, "v1beta1").await;
    let port = free_port();
    let metrics = format!("--metrics-addr=127.0.0.1:{port}");
    let webhook_port = free_port();
    let listen = format!("--conversion-webhook-addr=127.0.0.1:{webhook_port}");
    let url = format!("--conversion-webhook-url=https://127.0.0.1:{webhook_port}/convert");
    let new = env.operator_process_on(
        &cp.kubeconfig,
        &[
            &metrics,
            &listen,
            &url,
            "--conversion-webhook-check-interval=1s",
        ],
    );
    wait_for_webhook(&client).await;
    wait_passes_over_each(port, &before).await;
    let after = wait_settled(&env, "v1beta1", true).await;
    let converged = began.elapsed();

    let written = writes(&calls_before, &env.calls().await);
    assert_eq!(
        written,
        BTreeMap::new(),
        "the upgrade wrote to the platform"
    );
    assert_eq!(ids(&after), ids_before, "an object's remote id changed");
    assert_eq!(
        platform(&env).await,
        platform_before,
        "the platform's objects changed (a create, a rename, a start or a delete)"
    );
    for ((kind, name), obj) in &after {
        assert_eq!(
            obj.types.as_ref().map(|t| t.api_version.as_str()),
            Some("gpucloud.io/v1beta1"),
            "{kind} {name}"
        );
    }
    println!(
        "UPGRADE from {}: {} objects of {} kinds settled again {:.1} s after the new CRDs, \
         0 platform writes, {} remote ids unchanged",
        previous.binary.display(),
        after.len(),
        KINDS.len(),
        converged.as_secs_f64(),
        ids_before.len()
    );

    // Everything deleted: the platform holds what it held at the start, and the kept volume.
    for kind in KINDS {
        let api = versioned_api(&client, env.ns.name(), "v1beta1", kind);
        api.delete_collection(&DeleteParams::default(), &ListParams::default())
            .await
            .unwrap_or_else(|e| panic!("delete every {kind}: {e}"));
    }
    let gone = common::wait_until(TIMEOUT, || async {
        objects(&env, "v1beta1").await.is_empty()
    })
    .await;
    if !gone {
        let left: Vec<String> = objects(&env, "v1beta1")
            .await
            .iter()
            .map(|((kind, name), obj)| {
                let finalizers = obj.metadata.finalizers.clone().unwrap_or_default();
                format!("{kind} {name} {finalizers:?}: {}", obj.data["status"])
            })
            .collect();
        panic!("objects still there after {TIMEOUT:?}: {left:#?}");
    }
    let kept_id = &ids_before[&("NetworkVolume".to_string(), KEPT_VOLUME.to_string())];
    let mut expected = at_start.clone();
    expected.get_mut("networkVolumes").expect("volumes").insert(
        kept_id.clone(),
        platform_before["networkVolumes"][kept_id].clone(),
    );
    let left = platform(&env).await;
    assert_eq!(left, expected, "the platform after everything was deleted");

    new.terminate().await;
    env.ns.delete_and_wait(&client).await;
    env.emulator.shutdown().await;
    drop(cp);
}
