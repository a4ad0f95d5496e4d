//! `run --namespace-selector`: the operator watches the namespaces whose labels match, as
//! they come and go, without a restart and without listing the others again. Namespace A
//! matches from the start; namespace B is created matching later, then unlabelled: its
//! objects are let go of (not deleted, on the platform or in the cluster) while A is still
//! managed; labelled again, B is managed again. The proof that nothing else listed again
//! is the operator's own count of listings per watch and namespace
//! (`gpucloud_watch_listings_total`), read over its `/metrics`. A real kube-apiserver, the
//! emulator over real HTTP, the operator in-process. Run through `scripts/test.sh` (they
//! need `KUBECONFIG`).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use gpucloud_crd::NetworkVolume;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

use common::calls::{calls_since, watch_listings};
use common::operator::{Env, free_port, is_ready, volume};
use common::{TestNamespace, wait_gone, wait_until};

const TIMEOUT: Duration = Duration::from_secs(60);
const VOLUMES: usize = 3;

/// `gpucloud_watch_listings_total` by `(kind, resource, namespace)`, from one scrape.
async fn listings(port: u16) -> BTreeMap<(String, String, String), u64> {
    let url = format!("http://127.0.0.1:{port}/metrics");
    let text = reqwest::get(&url)
        .await
        .expect("scrape /metrics")
        .text()
        .await
        .expect("/metrics text");
    watch_listings(&text)
}

/// The watches the operator keeps in each namespace it watches, as `(kind, resource)`:
/// every kind with a controller watches its own objects; the Budgets watch the kinds whose
/// cost they count. No watch lists Secrets: the operator only reads those its objects name.
fn watches_of_a_namespace() -> Vec<(String, String)> {
    let mut watches = Vec::new();
    for kind in gpucloud_operator::kinds::KINDS {
        if kind.controller.is_none() {
            continue;
        }
        let name = (kind.crd)().spec.names.kind;
        watches.push((name.clone(), name.clone()));
        if name == "Budget" {
            for member in ["Pod", "Endpoint", "Cluster"] {
                watches.push((name.clone(), member.to_string()));
            }
        }
    }
    watches
}

/// The value of the one series of `/metrics` that starts with `series`, if present.
async fn gauge(port: u16, series: &str) -> Option<i64> {
    let url = format!("http://127.0.0.1:{port}/metrics");
    let text = reqwest::get(&url).await.ok()?.text().await.ok()?;
    text.lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit_once(' '))
        .and_then(|(_, v)| v.parse().ok())
}

/// The listings of watches in `namespace`.
fn of_namespace(
    all: &BTreeMap<(String, String, String), u64>,
    namespace: &str,
) -> BTreeMap<(String, String), u64> {
    all.iter()
        .filter(|((_, _, ns), _)| ns == namespace)
        .map(|((kind, resource, _), n)| ((kind.clone(), resource.clone()), *n))
        .collect()
}

async fn set_label(client: &kube::Client, namespace: &str, key: &str, value: Option<&str>) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .patch(
            namespace,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {key: value}}})),
        )
        .await
        .expect("label the namespace");
}

/// Creates `count` volumes `prefix-i` (10 GB, deleted with their object) in `namespace`.
async fn create_volumes(client: &kube::Client, namespace: &str, prefix: &str) -> Vec<String> {
    let api: Api<NetworkVolume> = Api::namespaced(client.clone(), namespace);
    let mut names = Vec::new();
    for i in 0..VOLUMES {
        let name = format!("{prefix}-{i}");
        api.create(
            &PostParams::default(),
            &volume(&name, 10, json!({"deletionPolicy": "Delete"})),
        )
        .await
        .expect("create a NetworkVolume");
        names.push(name);
    }
    names
}

/// Waits until `check` holds of volume `name` in `namespace`; the volume.
async fn wait_volume(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    what: &str,
    check: impl Fn(&NetworkVolume) -> bool,
) -> NetworkVolume {
    let api: Api<NetworkVolume> = Api::namespaced(client.clone(), namespace);
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let nv = api.get(name).await.expect("get the NetworkVolume");
        if check(&nv) {
            return nv;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{namespace}/{name}: {what} not reached within {TIMEOUT:?}; last seen: {nv:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn grows_to(size: i32) -> impl Fn(&NetworkVolume) -> bool {
    move |nv| is_ready(nv) && nv.metadata.generation == Some(2) && nv.spec.size_gb == size
}

fn remote_id(nv: &NetworkVolume) -> String {
    nv.status
        .as_ref()
        .and_then(|s| s.common.id.clone())
        .expect("a Ready volume has its remote id")
}

async fn grow(client: &kube::Client, namespace: &str, name: &str, size: i32) {
    let api: Api<NetworkVolume> = Api::namespaced(client.clone(), namespace);
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"sizeGb": size}})),
    )
    .await
    .expect("grow the NetworkVolume");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn namespaces_come_and_go_without_relisting_the_others() {
    let env = Env::start("nssel-a").await;
    let client = env.client.clone();
    let a = env.ns.name().to_string();
    // The emulator starts with volumes of its own (a demo account's): what is left at the
    // end must be exactly those.
    let seeded = env.platform_volume_ids().await;
    // Unique per test: concurrent suites label their own namespaces with their own key.
    let key = format!("gpucloud-test/{a}");
    set_label(&client, &a, &key, Some("yes")).await;
    let a_volumes = create_volumes(&client, &a, "a").await;

    let port = free_port();
    let flags: Vec<String> = env
        .flags(&[
            &format!("--namespace-selector={key}=yes"),
            &format!("--metrics-addr=127.0.0.1:{port}"),
        ])
        .into_iter()
        .filter(|f| !f.starts_with("--namespaces="))
        .collect();
    let op = env.operator_with_flags(&flags);
    for name in &a_volumes {
        wait_volume(&client, &a, name, "Ready", is_ready).await;
    }
    // The baseline is taken once every watch of A has made its first listing: the kinds
    // start together, but on a loaded apiserver one may list A after the volumes are Ready.
    let expected = watches_of_a_namespace();
    let settled = wait_until(TIMEOUT, || {
        let (expected, a) = (&expected, &a);
        async move {
            let now = of_namespace(&listings(port).await, a);
            expected.iter().all(|watch| now.contains_key(watch))
        }
    })
    .await;
    let before = listings(port).await;
    let a_before = of_namespace(&before, &a);
    assert!(
        settled,
        "not every watch of A listed within {TIMEOUT:?}: expected {expected:?}, seen {a_before:?}"
    );
    for watch in &expected {
        assert_eq!(
            a_before.get(watch),
            Some(&1),
            "{watch:?} listed A once at start: {a_before:?}"
        );
    }

    // B comes: created with the label, then its volumes.
    let b_ns = TestNamespace::create_labelled(&client, "nssel-b", &[(key.as_str(), "yes")]).await;
    let b = b_ns.name().to_string();
    let b_volumes = create_volumes(&client, &b, "b").await;
    let mut b_ready = Vec::new();
    for name in &b_volumes {
        b_ready.push(wait_volume(&client, &b, name, "Ready", is_ready).await);
    }
    let after = listings(port).await;
    assert_eq!(
        of_namespace(&after, &a),
        a_before,
        "B's coming made no watch of A list again"
    );
    assert_eq!(
        of_namespace(&after, &b).get(&("NetworkVolume".into(), "NetworkVolume".into())),
        Some(&1),
        "B's volumes listed once, by a watch of B alone: {after:?}"
    );
    assert_eq!(
        after.get(&(String::new(), "Namespace".into(), String::new())),
        before.get(&(String::new(), "Namespace".into(), String::new())),
        "the Namespace watch did not list again either"
    );

    // B goes: the label removed. Its objects leave the operator's store (the managed
    // gauge forgets them), and nothing of them is deleted.
    set_label(&client, &b, &key, None).await;
    let managed = "gpucloud_managed_objects{kind=\"NetworkVolume\",ready=\"true\"}";
    let let_go = wait_until(TIMEOUT, || async {
        gauge(port, "gpucloud_watched_namespaces ").await == Some(1)
            && gauge(port, managed).await == Some(VOLUMES as i64)
    })
    .await;
    assert!(
        let_go,
        "B's volumes not let go of: watched namespaces {:?}, Ready volumes {:?}",
        gauge(port, "gpucloud_watched_namespaces ").await,
        gauge(port, managed).await
    );
    let calls_before = env.calls().await;
    let b_first = &b_ready[0];
    grow(&client, &b, &b_volumes[0], 20).await;
    // A's volumes passed over twice more each (they are polled every 2 s): had B's edit
    // reached the operator, its pass would have come by then.
    op.wait_more_passes("NetworkVolume", 2 * VOLUMES as u64)
        .await;
    let unmanaged = Api::<NetworkVolume>::namespaced(client.clone(), &b)
        .get(&b_volumes[0])
        .await
        .expect("B's volume is still there");
    assert_eq!(unmanaged.metadata.generation, Some(2));
    assert_eq!(
        serde_json::to_value(&unmanaged.status).unwrap(),
        serde_json::to_value(&b_first.status).unwrap(),
        "the operator no longer writes the status of B's volume"
    );
    let writes: BTreeMap<String, u64> = calls_since(&calls_before, &env.calls().await)
        .into_iter()
        .filter(|(route, _)| !route.starts_with("GET "))
        .collect();
    assert!(
        writes.is_empty(),
        "no platform write while only B changed: {writes:?}"
    );
    for nv in &b_ready {
        let remote = env
            .remote_volume(&remote_id(nv))
            .await
            .expect("B's remote volumes are not deleted");
        assert_eq!(remote.size, 10, "B's growth did not reach the platform");
    }

    // A is still managed: a change there reaches the platform.
    grow(&client, &a, &a_volumes[0], 20).await;
    let grown = wait_volume(&client, &a, &a_volumes[0], "grown to 20", grows_to(20)).await;
    let remote = env
        .remote_volume(&remote_id(&grown))
        .await
        .expect("A's volume");
    assert_eq!(remote.size, 20);

    // B labelled again: managed again from its listing, the change made meanwhile applied.
    set_label(&client, &b, &key, Some("yes")).await;
    let regrown = wait_volume(&client, &b, &b_volumes[0], "grown to 20", grows_to(20)).await;
    assert_eq!(
        remote_id(&regrown),
        remote_id(b_first),
        "the same remote volume"
    );
    assert_eq!(
        env.remote_volume(&remote_id(&regrown))
            .await
            .expect("B's volume")
            .size,
        20
    );
    assert_eq!(
        of_namespace(&listings(port).await, &a),
        a_before,
        "B's going and coming back made no watch of A list again"
    );

    // Everything deleted through the operator: nothing left on the platform.
    let dp = DeleteParams::default();
    let lp = ListParams::default();
    for ns in [&a, &b] {
        let api: Api<NetworkVolume> = Api::namespaced(client.clone(), ns);
        api.delete_collection(&dp, &lp)
            .await
            .expect("delete the volumes");
    }
    for (ns, names) in [(&a, &a_volumes), (&b, &b_volumes)] {
        let api: Api<NetworkVolume> = Api::namespaced(client.clone(), ns);
        for name in names {
            assert!(
                wait_gone(&api, name, TIMEOUT).await,
                "{ns}/{name} not deleted"
            );
        }
    }
    assert_eq!(
        env.platform_volume_ids().await,
        seeded,
        "volumes of the test left on the platform"
    );
    b_ns.delete_and_wait(&client).await;
    env.finish(op).await;
}
