//! An object that goes leaves nothing of itself in the engine, whichever way it goes: its
//! object deleted, its namespace deleted, or its labels no longer matching the install's
//! selector. The proof is the operator's own gauges of what it keeps per object, read over
//! its `/metrics`: the records of its passes (`gpucloud_engine_records`), the resync table
//! (`gpucloud_resync_scheduled`) and the Ready series (`gpucloud_managed_objects`), each
//! first seen counting the objects, then at zero. A real kube-apiserver, the emulator over
//! real HTTP, the operator in-process. Run through `scripts/test.sh` (they need
//! `KUBECONFIG`).

mod common;

use std::time::Duration;

use gpucloud_crd::NetworkVolume;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use common::http::metrics_text;
use common::operator::{Env, free_port, is_ready, volume};
use common::{TestNamespace, wait_gone, wait_until};

const TIMEOUT: Duration = Duration::from_secs(60);
const KIND: &str = "kind=\"NetworkVolume\"";

/// The sum of the series of `metric` for NetworkVolumes in one scrape of `port`.
async fn gauge(port: u16, metric: &str) -> Option<i64> {
    let text = metrics_text(port).await?;
    let prefix = format!("{metric}{{");
    Some(
        text.lines()
            .filter(|l| l.starts_with(&prefix) && l.contains(KIND))
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<i64>().ok())
            .sum(),
    )
}

/// What the operator keeps per NetworkVolume: (Ready series, resync entries, records).
async fn kept(port: u16) -> (i64, i64, i64) {
    let (managed, scheduled, records) = (
        gauge(port, "gpucloud_managed_objects").await,
        gauge(port, "gpucloud_resync_scheduled").await,
        gauge(port, "gpucloud_engine_records").await,
    );
    (
        managed.unwrap_or(-1),
        scheduled.unwrap_or(-1),
        records.unwrap_or(-1),
    )
}

async fn create(client: &kube::Client, namespace: &str, name: &str) {
    let api: Api<NetworkVolume> = Api::namespaced(client.clone(), namespace);
    let mut nv = volume(name, 10, json!({"deletionPolicy": "Delete"}));
    nv.metadata.labels = Some([("tier".to_string(), "kept".to_string())].into());
    api.create(&PostParams::default(), &nv)
        .await
        .expect("create a NetworkVolume");
}

async fn wait_ready(client: &kube::Client, namespace: &str, name: &str) {
    let api: Api<NetworkVolume> = Api::namespaced(client.clone(), namespace);
    let ready = wait_until(TIMEOUT, || {
        let api = api.clone();
        async move { api.get(name).await.is_ok_and(|nv| is_ready(&nv)) }
    })
    .await;
    assert!(ready, "{namespace}/{name} not Ready within {TIMEOUT:?}");
}

#[tokio::test]
#[ignore = "needs the control plane (scripts/test.sh)"]
async fn an_object_gone_in_every_way_leaves_nothing_in_the_engine() {
    let env = Env::start("forget-a").await;
    let client = env.client.clone();
    let a = env.ns.name().to_string();
    // The namespaces this operator watches carry a label of this test's own.
    let key = format!("gpucloud-test/{a}");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .patch(
            &a,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {&key: "yes"}}})),
        )
        .await
        .expect("label namespace A");
    let b_ns = TestNamespace::create_labelled(&client, "forget-b", &[(key.as_str(), "yes")]).await;
    let b = b_ns.name().to_string();

    let port = free_port();
    let flags: Vec<String> = env
        .flags(&[
            &format!("--namespace-selector={key}=yes"),
            "--selector=tier=kept",
            &format!("--metrics-addr=127.0.0.1:{port}"),
            // Long enough that nothing leaves the tables on its own while the test runs:
            // the resync of a converged object, the record of its create's last write.
            "--poll-interval=10m",
        ])
        .into_iter()
        .filter(|f| !f.starts_with("--namespaces="))
        .collect();
    let op = env.operator_with_flags(&flags);
    create(&client, &a, "deleted").await;
    create(&client, &a, "unselected").await;
    create(&client, &b, "in-namespace").await;
    wait_ready(&client, &a, "deleted").await;
    wait_ready(&client, &a, "unselected").await;
    wait_ready(&client, &b, "in-namespace").await;

    // The positive sign: while they are managed, the gauges count the three volumes in
    // each table (a record keeps each create's last write for a poll interval).
    let counted = wait_until(TIMEOUT, || async { kept(port).await == (3, 3, 3) }).await;
    assert!(
        counted,
        "the gauges never counted the three converged volumes in each table: {:?}",
        kept(port).await
    );

    // Each goes its own way.
    let api_a: Api<NetworkVolume> = Api::namespaced(client.clone(), &a);
    api_a
        .delete("deleted", &DeleteParams::default())
        .await
        .expect("delete a volume");
    api_a
        .patch(
            "unselected",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": null}}})),
        )
        .await
        .expect("unlabel a volume");
    namespaces
        .delete(&b, &DeleteParams::default())
        .await
        .expect("delete namespace B");
    assert!(
        wait_gone(&api_a, "deleted", TIMEOUT).await,
        "the deleted volume is still there"
    );
    assert!(
        wait_gone(&namespaces, &b, TIMEOUT).await,
        "namespace B is still there"
    );

    let forgotten = wait_until(TIMEOUT, || async { kept(port).await == (0, 0, 0) }).await;
    assert!(
        forgotten,
        "the engine still keeps something of a volume that went: (Ready series, resync \
         entries, records) = {:?}",
        kept(port).await
    );

    // The unselected volume is no longer this install's: its finalizer is let go of by
    // hand, as a person moving it to another install would, so that the namespace can go.
    api_a
        .patch(
            "unselected",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("drop the finalizer");
    env.finish(op).await;
}
