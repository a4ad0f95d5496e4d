//! Budget end to end: a real kube-apiserver, the emulator over real HTTP, the operator
//! in-process. Run through `scripts/test.sh`.

mod common;

use std::time::Duration;

use gpucloud_crd::budget::Budget;
use gpucloud_crd::pod::PodPhase;
use gpucloud_crd::{BudgetSpec, Endpoint, EndpointSpec, Pod};
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;

use common::backend::{is_v2, routes};
use common::operator::{Env, condition, ready_now};
use common::pods::{RTX4090, config, deploy, patch_spec, pod, remote_pods};

const TIMEOUT: Duration = Duration::from_secs(90);
/// The emulator's secure-cloud price of one RTX 4090 per hour.
const PRICE: f64 = 0.69;

fn budget(name: &str, max: f64) -> Budget {
    let spec: BudgetSpec = serde_json::from_value(json!({"maxCostPerHour": max})).unwrap();
    Budget::new(name, spec)
}

/// A Pod that can only go on a secure-cloud RTX 4090, so that every pod costs [`PRICE`].
fn priced_pod(name: &str) -> Pod {
    pod(
        name,
        json!({"gpu": {"typeIds": [RTX4090], "count": 1}, "cloudType": "SECURE"}),
    )
}

fn ready_reason(p: &Pod) -> Option<String> {
    let s = p.status.as_ref()?;
    condition(&s.common.conditions, "Ready").map(|c| format!("{}/{}", c.status, c.reason))
}

/// (running, held) among the namespace's Pods.
async fn tally(api: &Api<Pod>) -> (usize, usize) {
    let pods = api.list(&ListParams::default()).await.unwrap().items;
    let running = pods
        .iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase) == Some(PodPhase::Running))
        .count();
    let held = pods
        .iter()
        .filter(|p| ready_reason(p).as_deref() == Some("False/BudgetExceeded"))
        .count();
    (running, held)
}

async fn wait_tally(api: &Api<Pod>, want: (usize, usize)) {
    let reached = common::wait_until(TIMEOUT, || async { tally(api).await == want }).await;
    let last = tally(api).await;
    assert!(
        reached,
        "wanted (running, held) = {want:?}, last seen {last:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn fifty_pods_under_a_budget_for_ten_then_more_when_raised() {
    let env = Env::start_with("budget-burst", config()).await;
    let op = env.operator(&[]);
    let budgets: Api<Budget> = env.api();
    // Room for 10 pods at 0.69 (6.90), not for 11 (7.59).
    budgets
        .create(&PostParams::default(), &budget("team", 7.0))
        .await
        .unwrap();
    env.wait_budget("team", TIMEOUT, "Budget status", |_| true)
        .await;

    let pods: Api<Pod> = env.api();
    let creates = (0..50).map(|i| {
        let pods = pods.clone();
        async move {
            pods.create(&PostParams::default(), &priced_pod(&format!("p{i:02}")))
                .await
                .unwrap()
        }
    });
    futures::future::join_all(creates).await;

    wait_tally(&pods, (10, 40)).await;
    // The held ones stay held: no deploy beyond the ten, on the platform or in the calls,
    // once the operator has passed over the 50 Pods twice more (each is polled, or
    // rechecked while held, every 2 s).
    op.wait_more_passes("Pod", 2 * 50).await;
    assert_eq!(tally(&pods).await, (10, 40));
    assert_eq!(remote_pods(&env).await.len(), 10);
    assert_eq!(env.calls().await.get(deploy()).copied(), Some(10));
    let held = pods.get("p00").await.unwrap();
    let b = env
        .wait_budget("team", TIMEOUT, "Budget status", |b| {
            b.status.as_ref().is_some_and(|s| s.held_count == 40)
        })
        .await;
    let s = b.status.unwrap();
    assert!((s.cost_per_hour - 10.0 * PRICE).abs() < 1e-6, "{s:?}");
    assert_eq!(s.running_count, 10);
    assert!(
        (s.headroom_per_hour - (7.0 - 10.0 * PRICE)).abs() < 1e-6,
        "{s:?}"
    );
    let exceeded = condition(&s.conditions, "BudgetExceeded").unwrap();
    assert_eq!(exceeded.status, "True");
    // A held Pod says why, with the figures.
    let any_held = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|p| ready_reason(p).as_deref() == Some("False/BudgetExceeded"))
        .unwrap_or(held);
    let message = condition(&any_held.status.unwrap().common.conditions, "Ready")
        .unwrap()
        .message
        .clone();
    assert!(
        message.contains("Budget team") && message.contains("maxCostPerHour 7.0000"),
        "{message}"
    );

    // Room for 15 (10.35 of 10.5): five more run, by themselves.
    patch_spec(&budgets, "team", json!({"maxCostPerHour": 10.5})).await;
    wait_tally(&pods, (15, 35)).await;
    op.wait_more_passes("Pod", 2 * 50).await;
    assert_eq!(remote_pods(&env).await.len(), 15);
    env.wait_budget("team", TIMEOUT, "Budget status", |b| {
        b.status
            .as_ref()
            .is_some_and(|s| s.held_count == 35 && s.running_count == 15)
    })
    .await;

    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn stop_newest_stops_the_latest_pod_when_the_budget_shrinks() {
    let env = Env::start_with("budget-stop", config()).await;
    let op = env.operator(&[]);
    let budgets: Api<Budget> = env.api();
    let mut b = budget("team", 3.0);
    b.spec.action = gpucloud_crd::budget::BudgetAction::StopNewest;
    budgets.create(&PostParams::default(), &b).await.unwrap();
    env.wait_budget("team", TIMEOUT, "Budget status", |_| true)
        .await;
    let pods: Api<Pod> = env.api();
    for name in ["first", "second", "third"] {
        pods.create(&PostParams::default(), &priced_pod(name))
            .await
            .unwrap();
        env.wait_for(name, TIMEOUT, "Running", |p: &Pod| {
            p.status.as_ref().and_then(|s| s.phase) == Some(PodPhase::Running)
        })
        .await;
        // Distinct start times.
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    // Room for two: the newest is stopped, the two older ones run on.
    patch_spec(&budgets, "team", json!({"maxCostPerHour": 1.5})).await;
    env.wait_for("third", TIMEOUT, "stopped by the budget", |p: &Pod| {
        p.status.as_ref().and_then(|s| s.phase) == Some(PodPhase::Stopped)
            || ready_reason(p).as_deref() == Some("False/BudgetExceeded")
    })
    .await;
    // The older two run on once the Budget has counted the newest stopped (its status is
    // written by a pass after that) and every Pod has been passed over twice more (each
    // is polled every 2 s): where the Budget would stop another, it would have by then.
    env.wait_budget("team", TIMEOUT, "two running", |b| {
        b.status.as_ref().is_some_and(|s| s.running_count == 2)
    })
    .await;
    op.wait_more_passes("Pod", 2 * 3).await;
    for name in ["first", "second"] {
        let p = pods.get(name).await.unwrap();
        assert_eq!(
            p.status.as_ref().and_then(|s| s.phase),
            Some(PodPhase::Running),
            "{name}"
        );
    }
    let third = pods.get("third").await.unwrap();
    assert_ne!(
        third.status.as_ref().and_then(|s| s.phase),
        Some(PodPhase::Running)
    );
    let running_remote = remote_pods(&env)
        .await
        .into_iter()
        .filter(|p| p.desired_status == "RUNNING")
        .count();
    assert_eq!(running_remote, 2);
    // Raised again: the stopped pod resumes by itself.
    patch_spec(&budgets, "team", json!({"maxCostPerHour": 3.0})).await;
    env.wait_for("third", TIMEOUT, "Running again", |p: &Pod| {
        p.status.as_ref().and_then(|s| s.phase) == Some(PodPhase::Running)
    })
    .await;
    env.finish(op).await;
}

/// The catalog's price per GPU per hour a Budget counts an endpoint's workers at: REST
/// v2's serverless price; the seed API has none, so its secure-cloud price.
fn per_gpu(gpu: &str) -> f64 {
    match (gpu, is_v2()) {
        ("NVIDIA A40", true) => 0.48,
        ("NVIDIA A40", false) => 0.40,
        ("NVIDIA L40S", true) => 0.95,
        ("NVIDIA L40S", false) => 0.86,
        _ => unreachable!("{gpu}"),
    }
}

fn endpoint(name: &str, gpus: &[&str], workers_min: i32) -> Endpoint {
    let spec: EndpointSpec = serde_json::from_value(json!({
        "templateId": "tmpl-worker-base",
        "gpu": {"typeIds": gpus},
        "workersMin": workers_min,
        "workersMax": 4,
    }))
    .unwrap();
    Endpoint::new(name, spec)
}

fn endpoint_reason(e: &Endpoint) -> Option<String> {
    let s = e.status.as_ref()?;
    condition(&s.common.conditions, "Ready").map(|c| format!("{}/{}", c.status, c.reason))
}

async fn remote_endpoint_names(env: &Env) -> Vec<String> {
    let mut names: Vec<String> = env
        .platform
        .endpoints()
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort();
    names
}

fn calls_to(calls: &std::collections::BTreeMap<String, u64>, route: &str) -> u64 {
    calls.get(route).copied().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn endpoints_count_their_minimum_workers_and_are_held_until_there_is_room() {
    let env = Env::start("budget-ep").await;
    let op = env.operator(&[]);
    let budgets: Api<Budget> = env.api();
    budgets
        .create(&PostParams::default(), &budget("team", 1.0))
        .await
        .unwrap();
    env.wait_budget("team", TIMEOUT, "Budget status", |_| true)
        .await;
    let endpoints: Api<Endpoint> = env.api();
    // The emulator's own endpoints (a public demo one).
    let before = remote_endpoint_names(&env).await.len();

    // One minimum worker of one A40: it fits, and the Budget counts it.
    let a40 = per_gpu("NVIDIA A40");
    endpoints
        .create(
            &PostParams::default(),
            &endpoint("steady", &["NVIDIA A40"], 1),
        )
        .await
        .unwrap();
    let steady = env
        .wait_for("steady", TIMEOUT, "Ready", ready_now::<Endpoint>)
        .await;
    let cost = steady.status.as_ref().unwrap().min_workers_cost_per_hour;
    assert!(cost.is_some_and(|c| (c - a40).abs() < 1e-6), "{cost:?}");
    let b = env
        .wait_budget("team", TIMEOUT, "Budget status", |b| {
            b.status
                .as_ref()
                .is_some_and(|s| (s.cost_per_hour - a40).abs() < 1e-6)
        })
        .await;
    assert_eq!(b.status.unwrap().running_count, 1);

    // A worker that may land on an A40 or an L40S counts at the dearer L40S: with the
    // first, over the Budget. Held before any call: no endpoint on the platform.
    let l40s = per_gpu("NVIDIA L40S");
    assert!(a40 + l40s > 1.0);
    endpoints
        .create(
            &PostParams::default(),
            &endpoint("burst", &["NVIDIA A40", "NVIDIA L40S"], 1),
        )
        .await
        .unwrap();
    let held = env
        .wait_for("burst", TIMEOUT, "held by the Budget", |e: &Endpoint| {
            endpoint_reason(e).as_deref() == Some("False/BudgetExceeded")
        })
        .await;
    let message = condition(&held.status.as_ref().unwrap().common.conditions, "Ready")
        .unwrap()
        .message
        .clone();
    assert!(
        message.contains("Budget team")
            && message.contains(&format!("running {a40:.4}/h"))
            && message.contains(&format!("this endpoint's minimum workers {l40s:.4}/h"))
            && message.contains("maxCostPerHour 1.0000"),
        "{message}"
    );
    assert!(held.status.as_ref().unwrap().common.id.is_none());
    let b = env
        .wait_budget("team", TIMEOUT, "Budget status", |b| {
            b.status.as_ref().is_some_and(|s| s.held_count == 1)
        })
        .await;
    let s = b.status.unwrap();
    assert_eq!(s.held, vec!["Endpoint/burst".to_string()]);
    assert_eq!(
        condition(&s.conditions, "BudgetExceeded").unwrap().status,
        "True"
    );
    // It stays held, with no loop: one create on the platform, the steady one's, once both
    // Endpoints have been passed over twice more (a held one is rechecked every 2 s).
    op.wait_more_passes("Endpoint", 2 * 2).await;
    let names = remote_endpoint_names(&env).await;
    assert_eq!(names.len(), before + 1, "{names:?}");
    assert!(!names.iter().any(|n| n.contains("burst")), "{names:?}");
    let calls = env.calls().await;
    assert_eq!(calls_to(&calls, routes().create_endpoint), 1, "{calls:?}");
    assert_eq!(
        endpoint_reason(&endpoints.get("burst").await.unwrap()).as_deref(),
        Some("False/BudgetExceeded")
    );

    // Raised: the held endpoint is made by itself, and both count.
    patch_spec(&budgets, "team", json!({"maxCostPerHour": 2.0})).await;
    env.wait_for("burst", TIMEOUT, "Ready", ready_now::<Endpoint>)
        .await;
    let b = env
        .wait_budget("team", TIMEOUT, "Budget status", |b| {
            b.status
                .as_ref()
                .is_some_and(|s| s.held_count == 0 && (s.cost_per_hour - (a40 + l40s)).abs() < 1e-6)
        })
        .await;
    assert_eq!(b.status.unwrap().running_count, 2);
    assert_eq!(remote_endpoint_names(&env).await.len(), before + 2);

    // A raise of the minimum workers past the Budget is held too, with no update call;
    // a change that lowers them goes through.
    let updates = calls_to(&env.calls().await, routes().update_endpoint);
    patch_spec(&endpoints, "steady", json!({"workersMin": 3})).await;
    env.wait_for("steady", TIMEOUT, "raise held", |e: &Endpoint| {
        endpoint_reason(e).as_deref() == Some("False/BudgetExceeded")
    })
    .await;
    op.wait_more_passes("Endpoint", 2 * 2).await;
    assert_eq!(
        calls_to(&env.calls().await, routes().update_endpoint),
        updates
    );
    env.wait_budget("team", TIMEOUT, "Budget status", |b| {
        b.status
            .as_ref()
            .is_some_and(|s| s.held == ["Endpoint/steady".to_string()])
    })
    .await;
    // Taken back: nothing to change, nothing held.
    patch_spec(&endpoints, "steady", json!({"workersMin": 1})).await;
    env.wait_for("steady", TIMEOUT, "Ready again", ready_now::<Endpoint>)
        .await;
    env.wait_budget("team", TIMEOUT, "Budget status", |b| {
        b.status
            .as_ref()
            .is_some_and(|s| s.held_count == 0 && (s.cost_per_hour - (a40 + l40s)).abs() < 1e-6)
    })
    .await;
    assert_eq!(
        calls_to(&env.calls().await, routes().update_endpoint),
        updates
    );
    patch_spec(&endpoints, "steady", json!({"workersMin": 0})).await;
    env.wait_for("steady", TIMEOUT, "lowered", |e: &Endpoint| {
        ready_now(e) && e.status.as_ref().unwrap().workers_min == Some(0)
    })
    .await;
    env.wait_budget("team", TIMEOUT, "Budget status", |b| {
        b.status
            .as_ref()
            .is_some_and(|s| s.held_count == 0 && (s.cost_per_hour - l40s).abs() < 1e-6)
    })
    .await;
    env.finish(op).await;
}

/// `maxSpendPerMonth`: the Budget reads what the platform billed this month (REST v2), and
/// once its Pods' spend reaches the cap a new Pod is held, whatever the hourly room. The
/// figure is the emulator's billing of the Pod: its price times the hours it ran. On the
/// seed API, which has no billing, the Budget says the cap is not enforced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_monthly_spend_cap_holds_new_pods_once_the_billing_reaches_it() {
    const HOUR_MS: u64 = 3_600_000;
    let env = Env::start_with("budget-month", config()).await;
    let op = env.operator(&["--billing-interval=1s"]);
    let spec: BudgetSpec =
        serde_json::from_value(json!({"maxCostPerHour": 100.0, "maxSpendPerMonth": 1.0})).unwrap();
    env.create(&Budget::new("month", spec)).await;
    env.create(&priced_pod("first")).await;
    env.wait_for::<Pod, _>("first", TIMEOUT, "Ready", ready_now)
        .await;
    if !is_v2() {
        let b = env
            .wait_budget("month", TIMEOUT, "Budget status", |b| {
                let s = b.status.as_ref().unwrap();
                condition(&s.conditions, "SpendTracked")
                    .is_some_and(|c| c.status == "False" && c.reason == "UnsupportedByBackend")
            })
            .await;
        assert_eq!(b.status.unwrap().spent_this_month, None);
        env.finish(op).await;
        return;
    }
    // Two hours of the platform's clock: 2 x 0.69 billed, over the cap of 1.00.
    env.emulator
        .admin()
        .advance_clock(2 * HOUR_MS)
        .await
        .unwrap();
    let b = env
        .wait_budget("month", TIMEOUT, "Budget status", |b| {
            let s = b.status.as_ref().unwrap();
            condition(&s.conditions, "BudgetExceeded")
                .is_some_and(|c| c.status == "True" && c.reason == "MonthlySpendReached")
        })
        .await;
    let spent = b.status.as_ref().unwrap().spent_this_month.unwrap();
    assert!(
        (spent - 2.0 * PRICE).abs() < 0.05,
        "the billing of two hours at {PRICE}/h, not {spent}"
    );
    let tracked = condition(&b.status.as_ref().unwrap().conditions, "SpendTracked").unwrap();
    assert_eq!(tracked.status, "True", "{}", tracked.message);
    // Hourly room for a hundred pods, but the month is spent: the next one is held.
    env.create(&priced_pod("second")).await;
    let held: Pod = env
        .wait_for("second", TIMEOUT, "held", |p: &Pod| {
            ready_reason(p).as_deref() == Some("False/BudgetExceeded")
        })
        .await;
    let message = condition(&held.status.unwrap().common.conditions, "Ready")
        .unwrap()
        .message
        .to_string();
    assert!(message.contains("maxSpendPerMonth"), "{message}");
    assert_eq!(
        remote_pods(&env).await.len(),
        1,
        "the held pod was not deployed"
    );
    env.finish(op).await;
}
