//! Proves that the harness fails a test whose operator does not stop cleanly
//! (`common::shutdown`): a process that does not exit on SIGTERM, a Lease left held, a
//! panic in the operator's log or outside the tests' code; and reads the reconcile passes
//! that "nothing happened" checks wait for (`common::passes`) and the state a recorded
//! object is filed under (`common::recording`).
//!
//! Needs `KUBECONFIG` pointing at the test control plane, hence `#[ignore]` for a bare
//! `cargo test`; `scripts/test.sh` runs it with `--include-ignored` (on the v2 lane only:
//! it tests the harness, not a backend).

mod common;

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::api::{Api, ObjectMeta, PostParams};

use common::operator::Env;
use common::passes::reconcile_passes;
use common::shutdown::{self, LeaseOf};
use common::{TestNamespace, kube_client};

async fn lease_held_by(ns: &TestNamespace, holder: &str) -> LeaseOf {
    let client = kube_client().await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), ns.name());
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some("gpucloud-operator".into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(holder.into()),
            lease_duration_seconds: Some(15),
            ..Default::default()
        }),
    };
    leases.create(&PostParams::default(), &lease).await.unwrap();
    LeaseOf {
        client,
        namespace: ns.name().to_string(),
        name: "gpucloud-operator".into(),
        identity: "this-operator".into(),
    }
}

/// The message of the panic `check` ends in; the test fails if it does not panic.
async fn panic_of(check: impl Future<Output = ()>) -> String {
    let Err(panic) = AssertUnwindSafe(check).catch_unwind().await else {
        panic!("the check passed");
    };
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_lease_still_held_under_the_operators_identity_fails_the_stop() {
    let client = kube_client().await;
    let ns = TestNamespace::create(&client, "harness-held").await;
    let lease = lease_held_by(&ns, "this-operator").await;
    let message = panic_of(lease.assert_released()).await;
    assert!(
        message.contains("stopped without releasing its Lease"),
        "{message}"
    );
    ns.delete_and_wait(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_lease_held_by_another_or_gone_passes_the_stop() {
    let client = kube_client().await;
    let ns = TestNamespace::create(&client, "harness-other").await;
    let lease = lease_held_by(&ns, "the-next-replica").await;
    lease.assert_released().await;
    let gone = LeaseOf {
        name: "no-such-lease".into(),
        ..lease
    };
    gone.assert_released().await;
    ns.delete_and_wait(&client).await;
}

/// A frozen process (SIGSTOP) cannot act on SIGTERM: the stop waits out the grace period,
/// kills it and fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_process_that_does_not_exit_on_sigterm_fails_the_stop() {
    let env = Env::start("harness-frozen").await;
    let operator = env.operator_process(&[]);
    let running = common::wait_until(Duration::from_secs(30), || async {
        common::lease::holder(&env).await.is_some()
    })
    .await;
    assert!(running, "the operator never held its Lease");
    operator.freeze();
    let message = panic_of(operator.terminate()).await;
    assert!(
        message.contains("did not exit within 30s of SIGTERM"),
        "{message}"
    );
    let client = env.client.clone();
    env.ns.delete_and_wait(&client).await;
}

#[test]
#[should_panic(expected = "the operator process panicked")]
fn a_panic_in_the_operators_log_fails_the_stop() {
    shutdown::assert_log_has_no_panic(
        "INFO started\nthread 'tokio-runtime-worker' panicked at src/app/run.rs:1:1:\nboom\n",
    );
}

#[test]
fn only_panics_outside_the_tests_code_are_foreign() {
    assert!(shutdown::is_foreign("src/app/run.rs"));
    assert!(shutdown::is_foreign("crates/engine/src/pass.rs"));
    assert!(shutdown::is_foreign(
        "/root/.cargo/registry/src/index.crates.io-0/tokio-1.0.0/src/lib.rs"
    ));
    assert!(!shutdown::is_foreign("tests/common/operator.rs"));
    assert!(!shutdown::is_foreign("tests/e2e_pod.rs"));
}

#[test]
fn passes_are_summed_over_results_for_one_kind() {
    let text = "# TYPE gpucloud_reconciles_total counter\n\
        gpucloud_reconciles_total{kind=\"Pod\",result=\"ok\"} 7\n\
        gpucloud_reconciles_total{kind=\"Pod\",result=\"error\"} 2\n\
        gpucloud_reconciles_total{kind=\"Cluster\",result=\"ok\"} 5\n";
    assert_eq!(reconcile_passes(text, "Pod"), 9);
    assert_eq!(reconcile_passes(text, "Cluster"), 5);
    assert_eq!(reconcile_passes(text, "Endpoint"), 0);
}

#[test]
fn a_recorded_object_is_in_the_state_it_says_it_is_in() {
    use common::recording::state_of;
    use serde_json::json;
    let with = |generation: i64, observed: i64, conditions: serde_json::Value| {
        json!({"metadata": {"generation": generation},
               "status": {"observedGeneration": observed, "conditions": conditions}})
    };
    let c = |t: &str, s: &str| json!({"type": t, "status": s});
    assert_eq!(state_of(&with(1, 0, json!([]))), "progressing");
    assert_eq!(
        state_of(&with(2, 1, json!([c("Ready", "True")]))),
        "progressing"
    );
    assert_eq!(state_of(&with(1, 1, json!([c("Ready", "True")]))), "ready");
    assert_eq!(
        state_of(&with(
            1,
            1,
            json!([c("Ready", "False"), c("Stalled", "True")])
        )),
        "stalled"
    );
    assert_eq!(
        state_of(&with(
            1,
            1,
            json!([c("Stalled", "True"), c("Reconciling", "True")])
        )),
        "stalled-retrying"
    );
    let mut paused = with(1, 1, json!([c("Ready", "True")]));
    paused["metadata"]["annotations"] = json!({"gpucloud.io/paused": "true"});
    assert_eq!(state_of(&paused), "paused");
    paused["metadata"]["generation"] = json!(2);
    assert_eq!(state_of(&paused), "paused-not-ready");
    paused["metadata"]["deletionTimestamp"] = json!("2026-11-28T00:00:00Z");
    assert_eq!(state_of(&paused), "deleting");
}
