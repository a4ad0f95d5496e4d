//! The record of remote objects released on purpose, against the real apiserver: releases
//! land in shards made on first use, a full shard continues in an overflow part, many
//! releases at once all count (RELEASES, default 20,000), the single ConfigMap of earlier
//! versions still counts after an upgrade, and the operator's orphan census and the
//! `orphans` command leave every released id alone, wherever it is recorded.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::time::{Duration, Instant};

use futures::StreamExt;
use gpucloud_crd::NetworkVolume;
use gpucloud_engine::released::{self, LEGACY, Record, key_of, layout};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use serde_json::json;

use common::operator::{Env, free_port, is_ready, volume};
use common::sweep::{delete_behind_its_back, orphans};
use common::{TestNamespace, kube_client};

const TIMEOUT: Duration = Duration::from_secs(60);
const MANAGER: &str = "e2e-released-record";

/// Every ConfigMap the record's label finds in `namespace`, by name.
async fn parts(client: &kube::Client, namespace: &str) -> BTreeMap<String, ConfigMap> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let listed = api
        .list(&ListParams::default().labels(&layout::selector()))
        .await
        .expect("list the record's parts");
    listed
        .items
        .into_iter()
        .map(|c| (c.metadata.name.clone().unwrap_or_default(), c))
        .collect()
}

async fn record(writer: &released::Writer, id: &str) {
    writer
        .record("NetworkVolume", id, "team/vol")
        .await
        .unwrap_or_else(|e| panic!("record {id}: {e}"));
}

/// `count` volume ids whose keys fall in `shard`.
fn ids_in_shard(shard: u8, prefix: &str, count: usize) -> Vec<String> {
    (0..)
        .map(|i| format!("{prefix}{i}"))
        .filter(|id| layout::shard_of(&key_of("NetworkVolume", id)) == shard)
        .take(count)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn many_releases_at_once_land_in_their_shards_and_all_count() {
    let client = kube_client().await;
    let ns = TestNamespace::create(&client, "released-many").await;
    let n: usize = std::env::var("RELEASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let ids: Vec<String> = (0..n).map(|i| format!("v{i:06}")).collect();
    let writer = released::Writer::new(client.clone(), ns.name(), MANAGER);
    let started = Instant::now();
    futures::stream::iter(&ids)
        .for_each_concurrent(64, |id| {
            let writer = &writer;
            async move { record(writer, id).await }
        })
        .await;
    let took = started.elapsed();
    println!(
        "{n} releases recorded in {:.1} s ({:.0} per second)",
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64()
    );

    let found = parts(&client, ns.name()).await;
    assert_eq!(
        found.len(),
        layout::SHARDS.min(n),
        "one first part per shard used"
    );
    for (name, part) in &found {
        let (shard, number) = layout::parse_part_name(name).expect("a part's name");
        assert_eq!(number, 0, "no shard is full at {n}: {name}");
        for key in part.data.iter().flatten().map(|(k, _)| k) {
            assert_eq!(layout::shard_of(key), shard, "{key} is in {name}");
        }
    }
    let record = released::read_record(&client, ns.name())
        .await
        .expect("read the record");
    let expected: HashSet<String> = ids.into_iter().collect();
    assert_eq!(record.ids_of("NetworkVolume"), expected);
    assert!(record.ids_of("Pod").is_empty());
    // Its 256 ConfigMaps go with the namespace, in the namespace controller's time, which
    // the lanes running beside stretch: a bound on a hang, not a figure.
    ns.delete_and_wait_within(&client, Duration::from_secs(300))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_full_shard_continues_in_overflow_parts() {
    let client = kube_client().await;
    let ns = TestNamespace::create(&client, "released-full").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    let fill = |shard: u8, bytes: usize| -> ConfigMap {
        serde_json::from_value(json!({
            "metadata": {"name": layout::part_name(shard, 0),
                         "labels": {layout::LABEL: layout::LABEL_VALUE}},
            "data": {"filler": "x".repeat(bytes)},
        }))
        .unwrap()
    };
    // Shard 0x10 past the mark but with room: the next entry lands there and the one
    // after moves on. Shard 0x20 with no room at all (the apiserver counts the values
    // against 1 MiB): it refuses, and the entry goes to the next part at once.
    let nearly = layout::PART_FULL_BYTES + 10 * 1024;
    let brim = 1024 * 1024 - 4;
    for (shard, bytes) in [(0x10, nearly), (0x20, brim)] {
        api.create(&PostParams::default(), &fill(shard, bytes))
            .await
            .expect("fill a shard");
    }
    let in_10 = ids_in_shard(0x10, "a", 3);
    let in_20 = ids_in_shard(0x20, "b", 2);
    let writer = released::Writer::new(client.clone(), ns.name(), MANAGER);
    for id in in_10.iter().chain(&in_20) {
        record(&writer, id).await;
    }

    let found = parts(&client, ns.name()).await;
    let keys_of = |name: &str| -> HashSet<String> {
        found
            .get(name)
            .unwrap_or_else(|| panic!("no part {name} in {:?}", found.keys()))
            .data
            .iter()
            .flatten()
            .map(|(k, _)| k.clone())
            .collect()
    };
    let key = |id: &String| key_of("NetworkVolume", id);
    let first_10 = keys_of(&layout::part_name(0x10, 0));
    assert!(first_10.contains(&key(&in_10[0])), "the margin took it");
    let next_10 = keys_of(&layout::part_name(0x10, 1));
    assert_eq!(next_10, [key(&in_10[1]), key(&in_10[2])].into());
    assert!(!keys_of(&layout::part_name(0x20, 0)).contains(&key(&in_20[0])));
    let next_20 = keys_of(&layout::part_name(0x20, 1));
    assert_eq!(next_20, in_20.iter().map(key).collect());

    let record = released::read_record(&client, ns.name()).await.unwrap();
    let all: HashSet<String> = in_10.iter().chain(&in_20).cloned().collect();
    assert_eq!(record.ids_of("NetworkVolume"), all);
    ns.delete_and_wait(&client).await;
}

/// The operator's `gpucloud_orphans` for network volumes, from its `/metrics`.
async fn volume_orphans(port: u16) -> Option<i64> {
    let text = reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("gpucloud_orphans{kind=\"NetworkVolume\"} "))
        .and_then(|v| v.trim().parse().ok())
}

fn id_of(nv: &NetworkVolume) -> String {
    nv.status
        .as_ref()
        .and_then(|s| s.common.id.clone())
        .expect("status.id")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn released_ids_are_no_orphans_in_shards_or_in_the_legacy_config_map() {
    let env = Env::start("released-record").await;
    let ns = env.ns.name().to_string();
    // The record is in the test's own namespace (Env's operators hold their Lease there),
    // not shared with other suites.
    let operator = env.operator(&[]);
    let api: Api<NetworkVolume> = env.api();
    let mut ids = BTreeMap::new();
    for name in ["kept", "old", "lost"] {
        env.create(&volume(name, 10, json!({"deletionPolicy": "Orphan"})))
            .await;
        let nv = env.wait_for(name, TIMEOUT, "Ready", is_ready).await;
        ids.insert(name, id_of(&nv));
    }
    // Released by the operator: recorded in its shard.
    api.delete("kept", &DeleteParams::default()).await.unwrap();
    assert!(
        common::wait_gone(&api, "kept", TIMEOUT).await,
        "not released"
    );
    let kept_key = key_of("NetworkVolume", &ids["kept"]);
    let shard = layout::part_name(layout::shard_of(&kept_key), 0);
    let found = parts(&env.client, &ns).await;
    assert_eq!(
        found
            .get(&shard)
            .and_then(|c| c.data.as_ref())
            .and_then(|d| d.get(&kept_key))
            .map(String::as_str),
        Some(format!("{ns}/kept").as_str()),
        "the release is in {shard}: {:?}",
        found.keys()
    );
    operator.stop().await;

    // Lost without the operator: `old` was released by an earlier version, which kept the
    // whole record in one unlabelled ConfigMap; `lost` is an orphan.
    delete_behind_its_back::<NetworkVolume>(&env, "old").await;
    delete_behind_its_back::<NetworkVolume>(&env, "lost").await;
    let legacy: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": LEGACY},
        "data": {key_of("NetworkVolume", &ids["old"]): format!("{ns}/old")},
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(env.client.clone(), &ns)
        .create(&PostParams::default(), &legacy)
        .await
        .expect("the legacy record");
    let record: Record = released::read_record(&env.client, &ns).await.unwrap();
    let released_ids: HashSet<String> = [ids["kept"].clone(), ids["old"].clone()].into();
    assert_eq!(record.ids_of("NetworkVolume"), released_ids);

    // The operator's census after the upgrade: one orphan, the lost one.
    let port = free_port();
    let operator = env.operator(&[
        &format!("--metrics-addr=127.0.0.1:{port}"),
        "--orphan-census-interval=2s",
    ]);
    let counted =
        common::wait_until(TIMEOUT, || async { volume_orphans(port).await == Some(1) }).await;
    assert!(
        counted,
        "gpucloud_orphans: {:?}",
        volume_orphans(port).await
    );

    // And the command a person runs.
    let (listed, ok) = orphans(&env, &["--kind=network-volume"]);
    assert!(ok, "{listed}");
    assert!(listed.contains(&ids["lost"]), "{listed}");
    assert!(listed.contains("1 orphan(s)"), "{listed}");
    for name in ["kept", "old"] {
        assert!(!listed.contains(&ids[name]), "{name} is released: {listed}");
    }
    env.finish(operator).await;
}
