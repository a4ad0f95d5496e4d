//! Two installs that share an install name, each with its own platform account: two
//! `gpucloud-operator run` processes with default flags (no `--install`, no leader
//! election), two platforms, one namespace. The second process says at start-up that the
//! name is in use and does not act; once the first is gone, it finds the objects claimed
//! under its name with another account, says so, and leaves them alone. Nothing is
//! created twice, no status id flips, nothing leaks on either platform. A real
//! kube-apiserver, two emulators over real HTTP, operators as child processes. Run through
//! `scripts/test.sh` (they need `KUBECONFIG`).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use gpucloud_crd::NetworkVolume;
use gpucloud_emulator::{self as emulator, ApiKey as EmulatorKey, EmulatorConfig};
use gpucloud_platform::{ApiKey, BaseUrls, PlatformClient, PlatformConfig};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use common::operator::{Env, OperatorProcess, is_ready, volume};

const OBJECTS: usize = 20;
const TIMEOUT: Duration = Duration::from_secs(60);
const OTHER_KEY: &str = "second-account-key";

fn create_route() -> &'static str {
    common::backend::routes().create_volume
}

/// The flags a new user would pass: where the platform is, the key, the namespace. No
/// install name, no identity, no leader election; the Lease's namespace is the test's so
/// that concurrent suites do not meet.
fn default_flags(env: &Env, base: &str, secret: &str) -> Vec<String> {
    let ns = env.ns.name();
    env.flags(&[
        &format!("--rest-url={base}/v1"),
        &format!("--graphql-url={base}/graphql"),
        &format!("--serverless-url={base}/v2"),
        &format!("--registry-url={base}"),
        &format!("--api-url={base}/v2"),
        &format!("--api-key-secret={ns}/{secret}"),
    ])
    .into_iter()
    .filter(|f| !f.starts_with("--identity"))
    .collect()
}

/// Every object's status id, by name.
async fn ids(api: &Api<NetworkVolume>) -> BTreeMap<String, Option<String>> {
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|nv| {
            let id = nv.status.as_ref().and_then(|s| s.common.id.clone());
            (nv.name_any(), id)
        })
        .collect()
}

/// Watches the ids for `period`: every sample must equal `want`.
async fn assert_ids_hold(
    api: &Api<NetworkVolume>,
    want: &BTreeMap<String, Option<String>>,
    period: Duration,
) {
    let until = tokio::time::Instant::now() + period;
    while tokio::time::Instant::now() < until {
        assert_eq!(&ids(api).await, want, "a status id flipped");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

async fn lease_events(env: &Env, reason: &str) -> Vec<K8sEvent> {
    let events: Api<K8sEvent> = env.api();
    events
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.reason.as_deref() == Some(reason)
                && e.regarding
                    .as_ref()
                    .is_some_and(|r| r.kind.as_deref() == Some("Lease"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn two_processes_with_one_install_name_and_two_accounts_neither_fight_nor_leak() {
    let env = Env::start("install-name").await;
    let api: Api<NetworkVolume> = env.api();
    let config_b = EmulatorConfig {
        api_keys: vec![EmulatorKey {
            key: OTHER_KEY.into(),
            read_only: false,
        }],
        ..EmulatorConfig::default()
    };
    let platform_b = emulator::start(config_b, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("the second platform");
    let secrets: Api<Secret> = env.api();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "second-account"},
        "stringData": {"apiKey": OTHER_KEY}
    }))
    .unwrap();
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let base_a = env.emulator.base_url();
    let base_b = platform_b.base_url();
    let flags_a = default_flags(&env, &base_a, common::operator::KEY_SECRET);
    let flags_b = default_flags(&env, &base_b, "second-account");

    let a = OperatorProcess::spawn(&flags_a);
    assert!(
        common::wait_until(TIMEOUT, || async {
            common::lease::holder(&env).await.is_some()
        })
        .await,
        "the first process never held its install's Lease"
    );
    let holder_a = common::lease::holder(&env).await.unwrap();
    let b = OperatorProcess::spawn(&flags_b);
    for i in 0..OBJECTS {
        let nv = volume(
            &format!("vol-{i:02}"),
            10,
            json!({"deletionPolicy": "Delete"}),
        );
        env.create(&nv).await;
    }
    for i in 0..OBJECTS {
        env.wait_for(&format!("vol-{i:02}"), TIMEOUT, "Ready", is_ready)
            .await;
    }
    let settled = ids(&api).await;
    assert!(settled.values().all(Option::is_some), "{settled:?}");

    // The second process said at start-up that the name is in use, and does not act.
    let said = common::wait_until(TIMEOUT, || async {
        b.log().contains("is in use by another running process")
    })
    .await;
    assert!(
        said,
        "no conflict line in the second process's log:\n{}",
        b.log()
    );
    assert!(b.log().contains(&holder_a), "the line names the holder");
    // The Warning Event on the Lease is written after the line.
    let warned = common::wait_until(TIMEOUT, || async {
        !lease_events(&env, "InstallNameInUse").await.is_empty()
    })
    .await;
    assert!(warned, "no InstallNameInUse Event on the Lease");
    assert_ids_hold(&api, &settled, Duration::from_secs(5)).await;
    let admin_b = platform_b.admin();
    assert_eq!(admin_b.call_count(create_route()).await.unwrap(), 0);

    // The first process goes: the second holds the name now, finds every object claimed
    // under it with another account, says so, and leaves them alone.
    a.terminate().await;
    let took = common::wait_until(TIMEOUT, || async {
        common::lease::holder(&env)
            .await
            .is_some_and(|h| h != holder_a)
    })
    .await;
    assert!(took, "the second process never held the Lease");
    let told = common::wait_until(TIMEOUT, || async {
        let mut all = true;
        for i in 0..OBJECTS {
            let name = format!("vol-{i:02}");
            let events = env.events_about("NetworkVolume", &name).await;
            all &= events
                .iter()
                .any(|e| e.reason.as_deref() == Some("InstallNameConflict"));
        }
        all
    })
    .await;
    assert!(
        told,
        "not every object got an InstallNameConflict Event:\n{}",
        b.log()
    );
    assert!(b.log().contains("install name conflict"), "{}", b.log());
    assert_ids_hold(&api, &settled, Duration::from_secs(5)).await;
    assert_eq!(
        admin_b.call_count(create_route()).await.unwrap(),
        0,
        "the second account created volumes"
    );
    let admin_a = env.emulator.admin();
    assert_eq!(
        admin_a.call_count(create_route()).await.unwrap(),
        OBJECTS as u64,
        "the first account created a volume twice"
    );
    b.terminate().await;

    // The first install comes back and the objects are deleted: nothing is left on
    // either platform.
    let a = OperatorProcess::spawn(&flags_a);
    for i in 0..OBJECTS {
        api.delete(&format!("vol-{i:02}"), &DeleteParams::default())
            .await
            .unwrap();
    }
    let gone = common::wait_until(TIMEOUT, || async { ids(&api).await.is_empty() }).await;
    assert!(gone, "the objects were not deleted:\n{}", a.log());
    // The operator names a volume `<namespace>-<name>-<uid>`; the fixtures' own volumes stay.
    let ours = |name: &str| name.starts_with(&format!("{}-", env.ns.name()));
    let left_a = env.remote_volumes_where(ours).await;
    assert!(
        left_a.is_empty(),
        "leaked on the first platform: {left_a:?}"
    );
    let urls = BaseUrls::single_host(&base_b).unwrap();
    let client_b =
        PlatformClient::new(PlatformConfig::new(urls, ApiKey::new(OTHER_KEY).unwrap())).unwrap();
    let mut left_b = client_b.rest().list_network_volumes().await.unwrap();
    left_b.retain(|v| ours(&v.name));
    assert!(
        left_b.is_empty(),
        "leaked on the second platform: {left_b:?}"
    );
    a.terminate().await;
}
