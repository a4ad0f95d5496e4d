//! CPU pods, global networking and the price as billed, end to end: a real kube-apiserver,
//! the emulator over real HTTP, the operator in-process. On the seed backend, which has
//! neither CPU pods nor global networking, each Pod is Stalled `UnsupportedByBackend`
//! naming the field and nothing is deployed. Run through `scripts/test.sh`.

mod common;

use std::time::Duration;

use gpucloud_crd::pod::PodPhase;
use gpucloud_crd::{Pod, PodSpec};
use gpucloud_platform::v2;
use serde_json::json;

use common::merged;
use common::operator::{Env, condition};
use common::pods::{A40, RTX4090, config, deploy, is_ready, pod};

const TIMEOUT: Duration = Duration::from_secs(40);

/// A CPU Pod of 4 vCPUs on `flavors`, in priority order, with `extra` merged into its spec.
fn cpu_pod(name: &str, flavors: &[&str], extra: serde_json::Value) -> Pod {
    let spec = merged(
        json!({
            "image": "ubuntu:24.04",
            "cpu": {"flavors": flavors, "vcpuCount": 4},
        }),
        extra,
    );
    let spec: PodSpec = serde_json::from_value(spec).unwrap();
    Pod::new(name, spec)
}

/// The platform's pods that are not terminated, as REST v2 lists them.
async fn live_pods(env: &Env) -> Vec<v2::Pod> {
    let mut pods = env
        .platform
        .v2()
        .list_pods(&Default::default())
        .await
        .unwrap();
    pods.retain(|p| p.status != v2::PodStatus::Terminated);
    pods
}

fn reason_of(p: &Pod, type_: &str) -> Option<(String, String, String)> {
    let s = p.status.as_ref()?;
    let c = condition(&s.common.conditions, type_)?;
    Some((
        c.status.to_string(),
        c.reason.to_string(),
        c.message.to_string(),
    ))
}

/// Seed lane: the Pod is Stalled `UnsupportedByBackend` naming `field`, and no deploy is
/// ever sent.
async fn assert_unsupported_on_seed(env: &Env, name: &str, field: &str) {
    let stalled = env
        .wait_for::<Pod, _>(name, TIMEOUT, "Stalled UnsupportedByBackend", |p| {
            reason_of(p, "Stalled")
                .is_some_and(|(s, r, _)| s == "True" && r == "UnsupportedByBackend")
        })
        .await;
    let (_, _, message) = reason_of(&stalled, "Stalled").unwrap();
    assert!(message.contains(field), "{message}");
    assert_eq!(
        env.calls().await.get(deploy()),
        None,
        "no deploy on the seed API"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_cpu_pod_falls_back_to_the_second_flavor_when_the_first_has_no_stock() {
    let env = Env::start_with("pod-cpu-fallback", config()).await;
    if common::backend::is_v2() {
        // cpu3c, the first choice, has no room anywhere; cpu5c has room in US-GA-1.
        let admin = env.emulator.admin();
        for dc in ["EU-RO-1", "US-TX-3"] {
            admin.set_cpu_stock("cpu3c", dc, 0).await.unwrap();
        }
    }
    let op = env.operator(&[]);
    env.create(&cpu_pod("batch", &["cpu3c", "cpu5c"], json!({})))
        .await;
    if !common::backend::is_v2() {
        assert_unsupported_on_seed(&env, "batch", "spec.cpu").await;
        env.finish(op).await;
        return;
    }

    let ready = env.wait_for("batch", TIMEOUT, "Ready", is_ready).await;
    let status = ready.status.clone().unwrap();
    assert_eq!(status.phase, Some(PodPhase::Running));
    assert_eq!(status.cpu_flavor_id.as_deref(), Some("cpu5c"));
    assert_eq!(status.vcpu_count, Some(4));
    assert_eq!(status.gpu_type_id, None);
    // cpu5c quotes $0.04 per vCPU: the pod costs 4 of them.
    assert!(
        (status.cost_per_hour.unwrap() - 0.16).abs() < 1e-6,
        "{status:?}"
    );

    // One pod on the platform, a CPU pod; the flavor out of stock took no call.
    let pods = live_pods(&env).await;
    assert_eq!(pods.len(), 1, "{pods:?}");
    let cpu = pods[0].cpu.as_ref().expect("a CPU pod");
    assert_eq!((cpu.id.as_str(), cpu.vcpu_count), ("cpu5c", 4));
    assert!(pods[0].gpu.is_none());
    assert_eq!(pods[0].data_center_id.as_deref(), Some("US-GA-1"));
    let calls = env.calls().await;
    println!("platform calls for one CPU pod: {calls:?}");
    assert_eq!(calls.get(deploy()), Some(&1));
    // The create's answer carries the billed price: no read of the pod to check it.
    assert_eq!(calls.get("GET /v2/pods/{id}"), None, "{calls:?}");

    // Deleted with the object.
    let api: kube::Api<Pod> = env.api();
    api.delete("batch", &Default::default()).await.unwrap();
    assert!(common::wait_gone(&api, "batch", TIMEOUT).await);
    assert!(live_pods(&env).await.is_empty());
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_pod_billed_above_its_cap_is_terminated_and_the_next_candidate_runs() {
    let env = Env::start_with("pod-cpu-billed", config()).await;
    if common::backend::is_v2() {
        let admin = env.emulator.admin();
        // cpu3c is quoted $0.12/h for 4 vCPUs, within the $0.20 cap, but billed twice
        // that; it has room in EU-RO-1 only, so one pod is made there and must go.
        admin.set_price_markup("cpu3c", 2.0).await.unwrap();
        admin.set_cpu_stock("cpu3c", "US-TX-3", 0).await.unwrap();
    }
    let op = env.operator(&[]);
    env.create(&cpu_pod(
        "capped",
        &["cpu3c", "cpu5c"],
        json!({"cpu": {"flavors": ["cpu3c", "cpu5c"], "vcpuCount": 4, "maxPricePerHour": 0.2}}),
    ))
    .await;
    if !common::backend::is_v2() {
        assert_unsupported_on_seed(&env, "capped", "spec.cpu").await;
        env.finish(op).await;
        return;
    }

    let ready = env.wait_for("capped", TIMEOUT, "Ready", is_ready).await;
    let status = ready.status.clone().unwrap();
    assert_eq!(status.cpu_flavor_id.as_deref(), Some("cpu5c"));
    assert!(status.cost_per_hour.unwrap() <= 0.2, "{status:?}");

    // Two creates, one pod left: the overbilled one is gone, not leaked.
    assert_eq!(env.calls().await.get(deploy()), Some(&2));
    let pods = live_pods(&env).await;
    assert_eq!(pods.len(), 1, "{pods:?}");
    assert_eq!(pods[0].cpu.as_ref().map(|c| c.id.as_str()), Some("cpu5c"));
    assert_eq!(
        Some(pods[0].id.as_str()),
        status.common.id.as_deref(),
        "the pod status names is the one left"
    );

    // A Warning that says why, with both figures.
    let events = env.events_about("Pod", "capped").await;
    let billed: Vec<_> = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some("PriceAboveCap"))
        .collect();
    assert_eq!(billed.len(), 1, "{events:?}");
    assert_eq!(billed[0].type_.as_deref(), Some("Warning"));
    let note = billed[0].note.clone().unwrap_or_default();
    assert!(
        note.contains("quoted $0.120/h") && note.contains("billed $0.240/h"),
        "{note}"
    );
    assert!(note.contains("cap of $0.200/h"), "{note}");
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn v2_only_a_gpu_pod_billed_above_its_cap_falls_through_to_the_next_gpu_type() {
    common::backend::require("v2");
    let env = Env::start_with("pod-gpu-billed", config()).await;
    // The RTX 4090 is quoted $0.69 per GPU in the secure cloud, within the $0.70 cap, and
    // billed three times that in both its secure data centers; the A40 ($0.40) is not.
    env.emulator
        .admin()
        .set_price_markup(RTX4090, 3.0)
        .await
        .unwrap();
    let op = env.operator(&[]);
    env.create(&pod(
        "gpus",
        json!({"cloudType": "SECURE",
            "gpu": {"typeIds": [RTX4090, A40], "count": 1, "maxPricePerHour": 0.7}}),
    ))
    .await;
    let ready = env.wait_for("gpus", TIMEOUT, "Ready", is_ready).await;
    let status = ready.status.unwrap();
    assert_eq!(status.gpu_type_id.as_deref(), Some(A40));
    assert!(
        status.cost_per_hour.unwrap() <= 0.7,
        "{:?}",
        status.cost_per_hour
    );
    let pods = live_pods(&env).await;
    assert_eq!(pods.len(), 1, "{pods:?}");
    let events = env.events_about("Pod", "gpus").await;
    // One per RTX 4090 data center tried, each pod terminated (the apiserver's Event
    // series counts the repeats of one reason).
    let billed: i32 = events
        .iter()
        .filter(|e| e.reason.as_deref() == Some("PriceAboveCap"))
        .map(|e| e.series.as_ref().map_or(1, |s| s.count))
        .sum();
    assert_eq!(billed, 2, "{events:?}");
    assert_eq!(env.calls().await.get(deploy()), Some(&3));
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn v2_only_with_every_candidate_billed_above_the_cap_the_pod_is_stalled_and_nothing_is_left()
{
    common::backend::require("v2");
    let env = Env::start_with("pod-cpu-overbilled", config()).await;
    let admin = env.emulator.admin();
    admin.set_price_markup(RTX4090, 3.0).await.unwrap();
    let op = env.operator(&[]);
    // One GPU type, with a cap its quote meets and its bill does not.
    let capped = pod(
        "gpu",
        json!({"gpu": {"typeIds": [RTX4090], "count": 1, "maxPricePerHour": 1.0}}),
    );
    env.create(&capped).await;
    let stalled = env
        .wait_for::<Pod, _>("gpu", TIMEOUT, "Stalled PriceAboveCap", |p| {
            reason_of(p, "Stalled").is_some_and(|(s, r, _)| s == "True" && r == "PriceAboveCap")
        })
        .await;
    let (_, _, message) = reason_of(&stalled, "Stalled").unwrap();
    assert!(message.contains("above the cap of $1.000/h"), "{message}");
    // Every overbilled pod is terminated (a retry may have one in flight for a moment).
    let none_left =
        common::wait_until(TIMEOUT, || async { live_pods(&env).await.is_empty() }).await;
    assert!(none_left, "{:?}", live_pods(&env).await);
    let events = env.events_about("Pod", "gpu").await;
    assert!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("PriceAboveCap")),
        "{events:?}"
    );
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_pod_on_the_global_network_shows_its_internal_host_name() {
    let env = Env::start_with("pod-global", config()).await;
    let op = env.operator(&[]);
    env.create(&pod("net", json!({"globalNetworking": true})))
        .await;
    if !common::backend::is_v2() {
        assert_unsupported_on_seed(&env, "net", "spec.globalNetworking").await;
        env.finish(op).await;
        return;
    }
    let ready = env.wait_for("net", TIMEOUT, "Ready", is_ready).await;
    let status = ready.status.clone().unwrap();
    let id = status.common.id.clone().unwrap();
    let global = status.global_networking.expect("a global address");
    assert_eq!(
        global.internal_dns.as_deref(),
        Some(format!("{id}.runpod.internal").as_str())
    );
    assert!(global.ip.is_some(), "{global:?}");
    // Placed in a data center on the global network.
    let pods = live_pods(&env).await;
    assert_eq!(pods.len(), 1, "{pods:?}");
    let dc = pods[0].data_center_id.clone().unwrap();
    assert!(["EU-RO-1", "US-TX-3"].contains(&dc.as_str()), "{dc}");
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn v2_only_an_overbilled_pod_whose_create_answer_was_lost_is_found_and_replaced() {
    common::backend::require("v2");
    let env = Env::start_with("pod-cpu-lost", config()).await;
    let admin = env.emulator.admin();
    admin.set_price_markup("cpu3c", 2.0).await.unwrap();
    admin.set_cpu_stock("cpu3c", "US-TX-3", 0).await.unwrap();
    // The first create lands but its answer is a 500: the operator never sees the billed
    // price, as if it had died before checking it.
    admin.fail_next_creates(1).await.unwrap();
    let op = env.operator(&[]);
    env.create(&cpu_pod(
        "lost",
        &["cpu3c", "cpu5c"],
        json!({"cpu": {"flavors": ["cpu3c", "cpu5c"], "vcpuCount": 4, "maxPricePerHour": 0.2}}),
    ))
    .await;
    let ready = env
        .wait_for("lost", TIMEOUT, "Ready on cpu5c", |p: &Pod| {
            is_ready(p)
                && p.status.as_ref().and_then(|s| s.cpu_flavor_id.as_deref()) == Some("cpu5c")
        })
        .await;
    // The pod found again by its tag was replaced for its price; one pod is left.
    let pods = live_pods(&env).await;
    assert_eq!(pods.len(), 1, "{pods:?}");
    assert_eq!(
        Some(pods[0].id.as_str()),
        ready.status.unwrap().common.id.as_deref()
    );
    let events = env.events_about("Pod", "lost").await;
    assert!(
        events
            .iter()
            .any(|e| e.reason.as_deref() == Some("Replacing")
                && e.note
                    .as_deref()
                    .is_some_and(|n| n.contains("PriceAboveCap"))),
        "{events:?}"
    );
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn v2_only_a_budget_counts_a_cpu_pod_at_its_cost_and_holds_the_next() {
    use gpucloud_crd::{Budget, BudgetSpec};
    common::backend::require("v2");
    let env = Env::start_with("pod-cpu-budget", config()).await;
    let op = env.operator(&[]);
    let spec: BudgetSpec = serde_json::from_value(json!({"maxCostPerHour": 0.2})).unwrap();
    env.create(&Budget::new("team", spec)).await;
    env.wait_budget("team", TIMEOUT, "Budget status", |_| true)
        .await;
    // cpu3c × 4 vCPUs costs 0.12 per hour: one fits 0.20, two do not.
    env.create(&cpu_pod("first", &["cpu3c"], json!({}))).await;
    env.wait_for("first", TIMEOUT, "Ready", is_ready).await;
    env.create(&cpu_pod("second", &["cpu3c"], json!({}))).await;
    let held = env
        .wait_for::<Pod, _>("second", TIMEOUT, "held by the Budget", |p| {
            reason_of(p, "Ready").is_some_and(|(_, r, _)| r == "BudgetExceeded")
        })
        .await;
    let (_, _, message) = reason_of(&held, "Ready").unwrap();
    assert!(message.contains("Budget team"), "{message}");
    let budget = env
        .wait_budget("team", TIMEOUT, "one pod counted", |b| {
            b.status.as_ref().is_some_and(|s| s.running_count == 1)
        })
        .await;
    let cost = budget.status.unwrap().cost_per_hour;
    assert!((cost - 0.12).abs() < 1e-6, "{cost}");
    assert_eq!(live_pods(&env).await.len(), 1);
    env.finish(op).await;
}
