//! Endpoints beyond the queue on GPU types, end to end: a load balancer Ready from its
//! workers with its URLs in the connection ConfigMap, GPUs by pool, CPU workers (REST v2);
//! on the seed API each of them stalls with `UnsupportedByBackend`, naming the field, and
//! nothing is created. And on both, a Budget counts every worker an endpoint runs.
//! Run through `scripts/test.sh`.

mod common;

use std::time::Duration;

use gpucloud_crd::{Endpoint, EndpointType};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use common::backend::{is_v2, routes};
use common::calls::calls_since;
use common::endpoints::{endpoint, run_minute_jobs};
use common::operator::{Env, ready_now, stalled_now};

const TIMEOUT: Duration = Duration::from_secs(30);

const WORKERS: &str = "GET /v2/serverless/{id}/workers";

fn load_balancer(name: &str) -> Endpoint {
    endpoint(
        name,
        json!({"type": "LoadBalancer", "gpu": {"typeIds": ["NVIDIA A40"]}, "workersMin": 1,
            "loadBalancer": {"port": 8000, "healthCheck": {"port": 8001, "path": "/healthz"}},
            "writeConnectionTo": format!("{name}-conn")}),
    )
}

/// The GPUs of endpoint `id` on the platform, as REST v2 answers them.
async fn remote_gpu(env: &Env, id: &str) -> gpucloud_platform::v2::EndpointGpuConfig {
    let remote = env.platform.v2().get_endpoint(id).await.unwrap();
    remote.gpu.expect("a GPU endpoint")
}

/// On the seed API: `name` stalls with `UnsupportedByBackend` naming `field`, and no
/// endpoint is created; deleting it holds on nothing.
async fn unsupported_on_seed(env: &Env, obj: &Endpoint, field: &str) {
    let name = obj.name_any();
    env.create(obj).await;
    let stalled = env
        .wait_for::<Endpoint, _>(&name, TIMEOUT, "UnsupportedByBackend", |ep| {
            stalled_now(ep, "UnsupportedByBackend").is_some()
        })
        .await;
    let message = stalled_now(&stalled, "UnsupportedByBackend").unwrap();
    assert!(message.contains(field), "{field} must be named: {message}");
    assert!(stalled.status.unwrap().common.id.is_none());
    assert_eq!(
        env.emulator
            .admin()
            .call_count(routes().create_endpoint)
            .await
            .unwrap(),
        0,
        "nothing is created"
    );
    let api: Api<Endpoint> = env.api();
    api.delete(&name, &DeleteParams::default()).await.unwrap();
    assert!(common::wait_gone(&api, &name, TIMEOUT).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_load_balancer_is_ready_from_its_workers_with_its_urls_in_the_config_map() {
    let env = Env::start("ep-lb").await;
    let op = env.operator(&[]);
    if !is_v2() {
        unsupported_on_seed(&env, &load_balancer("lb"), "spec.type").await;
        env.finish(op).await;
        return;
    }
    env.create(&load_balancer("lb")).await;
    let ready = env
        .wait_for::<Endpoint, _>("lb", TIMEOUT, "Ready", ready_now)
        .await;
    let status = ready.status.clone().unwrap();
    let id = status.common.id.clone().expect("status.id");
    let base = format!("{}/lb/{id}", env.emulator.base_url());
    assert_eq!(status.endpoint_type, Some(EndpointType::LoadBalancer));
    assert_eq!(status.url.as_deref(), Some(base.as_str()));
    let health_url = format!("{base}/healthz");
    assert_eq!(status.health_url.as_deref(), Some(health_url.as_str()));
    let states = status.worker_states.expect("status.workerStates");
    assert!(states.running + states.idle >= 1, "{states:?}");
    assert!(status.health.is_none(), "a load balancer has no queue");

    // The platform got the type, request-count scaling and the ports as its env.
    let remote = env.platform.v2().get_endpoint(&id).await.unwrap();
    assert_eq!(
        remote.endpoint_type,
        Some(gpucloud_platform::v2::EndpointType::LoadBalancer)
    );
    assert!(
        matches!(
            remote.scaling,
            Some(gpucloud_platform::v2::EndpointScaling::RequestCount { request_count: 4 })
        ),
        "{:?}",
        remote.scaling
    );
    let env_of = |e: &gpucloud_platform::v2::Endpoint, k: &str| e.container.env.get(k).cloned();
    assert_eq!(env_of(&remote, "PORT").as_deref(), Some("8000"));
    assert_eq!(env_of(&remote, "PORT_HEALTH").as_deref(), Some("8001"));
    assert_eq!(
        env_of(&remote, "HEALTH_CHECK_PATH").as_deref(),
        Some("/healthz")
    );

    // The connection ConfigMap: the URL, the health URL and the type.
    let cm = env
        .wait_for::<ConfigMap, _>("lb-conn", TIMEOUT, "written", |_| true)
        .await;
    let data = cm.data.unwrap();
    assert_eq!(data["id"], id);
    assert_eq!(data["type"], "LoadBalancer");
    assert_eq!(data["url"], base);
    assert_eq!(data["healthUrl"], health_url);

    // Steady: the shared list of endpoints, and one read of this one's workers per pass
    // (it is polled every 2 s), as a queue endpoint reads its health; never the health.
    // Counted over three passes rather than a span of time; a pass under way when the
    // count begins or ends may fall on either side of it.
    let before = env.calls().await;
    let since = op.passes("Endpoint").await;
    op.wait_passes("Endpoint", since, 3).await;
    let passes = op.passes("Endpoint").await - since;
    let calls = calls_since(&before, &env.calls().await);
    let lists = calls.get(routes().list_endpoints).copied().unwrap_or(0);
    let workers = calls.get(WORKERS).copied().unwrap_or(0);
    println!("steady over {passes} passes: {lists} lists, {workers} workers reads: {calls:?}");
    assert!(lists >= 1, "{calls:?}");
    assert!(
        (1..=passes + 1).contains(&workers),
        "one workers read per pass ({passes} passes): {calls:?}"
    );
    assert!(
        calls
            .keys()
            .all(|r| !r.contains("health") && !r.contains("POST") && !r.contains("PATCH")),
        "{calls:?}"
    );

    // A new health path goes to the platform with the template, whose env stays.
    let api: Api<Endpoint> = env.api();
    api.patch(
        "lb",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"loadBalancer": {"healthCheck": {"path": "/ready"}}}})),
    )
    .await
    .unwrap();
    let moved = env
        .wait_for::<Endpoint, _>("lb", TIMEOUT, "the new health URL", |ep| {
            ep.status
                .as_ref()
                .and_then(|s| s.health_url.as_deref())
                .is_some_and(|u| u.ends_with("/ready"))
        })
        .await;
    assert!(
        moved
            .status
            .unwrap()
            .health_url
            .unwrap()
            .ends_with(&format!("/lb/{id}/ready"))
    );
    let remote = env.platform.v2().get_endpoint(&id).await.unwrap();
    assert_eq!(
        env_of(&remote, "HEALTH_CHECK_PATH").as_deref(),
        Some("/ready")
    );
    assert_eq!(env_of(&remote, "PORT_HEALTH").as_deref(), Some("8001"));
    assert_eq!(
        env_of(&remote, "LOG_LEVEL").as_deref(),
        Some("info"),
        "the template's env stays"
    );
    // A new env is a new release: Ready again once the worker is replaced (the emulator
    // replaces one stale worker every 30 emulated seconds).
    env.emulator.admin().advance_clock(61_000).await.unwrap();
    env.wait_for::<Endpoint, _>("lb", TIMEOUT, "Ready after the rollout", ready_now)
        .await;
    env.wait_for::<ConfigMap, _>("lb-conn", TIMEOUT, "the new health URL", |cm| {
        cm.data
            .as_ref()
            .is_some_and(|d| d.get("healthUrl").is_some_and(|u| u.ends_with("/ready")))
    })
    .await;

    api.delete("lb", &DeleteParams::default()).await.unwrap();
    assert!(common::wait_gone(&api, "lb", TIMEOUT).await);
    assert!(env.platform.v2().get_endpoint(&id).await.is_err());
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn gpu_pools_go_to_the_platform_and_status_shows_their_types() {
    let env = Env::start("ep-pools").await;
    let op = env.operator(&[]);
    let pooled = endpoint(
        "pooled",
        json!({"gpu": {"pools": ["AMPERE_48"], "excludedTypes": ["NVIDIA RTX A6000"], "count": 2}}),
    );
    if !is_v2() {
        unsupported_on_seed(&env, &pooled, "spec.gpu.pools").await;
        env.finish(op).await;
        return;
    }
    env.create(&pooled).await;
    let ready = env
        .wait_for::<Endpoint, _>("pooled", TIMEOUT, "Ready", ready_now)
        .await;
    let status = ready.status.unwrap();
    assert_eq!(status.pools, vec!["AMPERE_48"]);
    assert_eq!(status.gpu_type_ids, vec!["NVIDIA A40"]);
    let id = status.common.id.unwrap();
    let gpu = remote_gpu(&env, &id).await;
    assert_eq!(
        (gpu.pools, gpu.excluded_types, gpu.count),
        (
            vec!["AMPERE_48".to_string()],
            vec!["NVIDIA RTX A6000".to_string()],
            Some(2)
        )
    );

    // Widening to the whole pool sends the pools without the exclusion.
    let api: Api<Endpoint> = env.api();
    api.patch(
        "pooled",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"gpu": {"excludedTypes": null}}})),
    )
    .await
    .unwrap();
    env.wait_for::<Endpoint, _>("pooled", TIMEOUT, "both types of the pool", |ep| {
        ep.status
            .as_ref()
            .is_some_and(|s| s.gpu_type_ids == ["NVIDIA A40", "NVIDIA RTX A6000"])
    })
    .await;
    let gpu = remote_gpu(&env, &id).await;
    assert!(gpu.excluded_types.is_empty(), "{gpu:?}");
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_cpu_endpoint_is_ready_on_its_flavours() {
    let env = Env::start("ep-cpu").await;
    let op = env.operator(&[]);
    let cpu = endpoint(
        "cpu",
        json!({"cpu": {"flavors": ["cpu3c", "cpu5c"], "vcpuCount": 4}, "workersMin": 1,
            "writeConnectionTo": "cpu-conn"}),
    );
    if !is_v2() {
        unsupported_on_seed(&env, &cpu, "spec.cpu").await;
        env.finish(op).await;
        return;
    }
    env.create(&cpu).await;
    let ready = env
        .wait_for::<Endpoint, _>("cpu", TIMEOUT, "Ready", ready_now)
        .await;
    let status = ready.status.unwrap();
    assert_eq!(status.cpu_flavors, vec!["cpu3c", "cpu5c"]);
    // One worker of 4 vCPUs at the dearer flavour's serverless price (cpu5c, 0.05 a vCPU).
    assert_eq!(status.min_workers_cost_per_hour, Some(0.2));
    assert_eq!(status.endpoint_type, Some(EndpointType::Queue));
    assert!(status.gpu_type_ids.is_empty());
    let id = status.common.id.unwrap();
    let remote = env.platform.v2().get_endpoint(&id).await.unwrap();
    assert!(remote.gpu.is_none(), "{:?}", remote.gpu);
    let cpus = remote.cpu.unwrap();
    assert_eq!(
        cpus.iter()
            .map(|c| (c.id.as_str(), c.vcpu_count))
            .collect::<Vec<_>>(),
        vec![("cpu3c", 4), ("cpu5c", 4)]
    );
    // A queue endpoint on CPU: its job API URL in the ConfigMap.
    let cm = env
        .wait_for::<ConfigMap, _>("cpu-conn", TIMEOUT, "written", |_| true)
        .await;
    let data = cm.data.unwrap();
    assert_eq!(data["type"], "Queue");
    assert_eq!(data["url"], format!("{}/v2/{id}/", env.emulator.base_url()));
    env.finish(op).await;
}

/// A Budget counts every worker an endpoint runs, not only its minimum: with no minimum
/// worker and jobs waiting, the workers that take them are what the Budget sees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_budget_counts_the_running_workers_not_only_the_minimum() {
    use gpucloud_crd::{Budget, BudgetSpec};
    let env = Env::start("ep-budget-workers").await;
    let op = env.operator(&[]);
    let spec: BudgetSpec = serde_json::from_value(json!({"maxCostPerHour": 10.0})).unwrap();
    env.create(&Budget::new("team", spec)).await;
    env.create(&endpoint(
        "busy",
        json!({"gpu": {"typeIds": ["NVIDIA A40"]}}),
    ))
    .await;
    let ready = env
        .wait_for::<Endpoint, _>("busy", TIMEOUT, "Ready", ready_now)
        .await;
    let id = ready.status.unwrap().common.id.unwrap();
    run_minute_jobs(&env, &id, 3).await;
    // Workers start for the jobs, up to workersMax (2): each costs one A40 at the
    // catalog's price (REST v2: the serverless one; the seed API: the secure-cloud one).
    let a40 = if is_v2() { 0.48 } else { 0.40 };
    let two_workers = 2.0 * a40;
    let busy = env
        .wait_for::<Endpoint, _>("busy", TIMEOUT, "two workers cost", |ep| {
            ep.status
                .as_ref()
                .and_then(|s| s.workers_cost_per_hour)
                .is_some_and(|c| (c - two_workers).abs() < 1e-6)
        })
        .await;
    let s = busy.status.unwrap();
    let up = s.health.map(|h| h.workers.running + h.workers.idle);
    assert_eq!(up, Some(2));
    assert_eq!(s.min_workers_cost_per_hour, Some(0.0), "no minimum worker");
    let b = env
        .wait_budget("team", TIMEOUT, "the Budget counts them", |b| {
            b.status
                .as_ref()
                .is_some_and(|s| (s.cost_per_hour - two_workers).abs() < 1e-6)
        })
        .await;
    assert_eq!(b.status.unwrap().running_count, 1);
    env.finish(op).await;
}

/// A load balancer's readiness comes from its workers: with its image missing, its one
/// minimum worker stays INITIALIZING, so it is not Ready and says so; with no minimum it
/// is Ready (the platform starts workers when requests come).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn v2_only_a_load_balancer_whose_workers_do_not_start_is_not_ready() {
    common::backend::require("v2");
    let env = Env::start("ep-lb-start").await;
    env.emulator
        .admin()
        .fail_image(
            "runpod/worker-basic:1.0.0",
            gpucloud_emulator::StartFailure::ImageNotFound,
        )
        .await
        .unwrap();
    let op = env.operator(&[]);
    env.create(&load_balancer("stuck")).await;
    let stuck = env
        .wait_for::<Endpoint, _>("stuck", TIMEOUT, "WorkersStarting", |ep| {
            ep.status.as_ref().is_some_and(|s| {
                common::operator::condition(&s.common.conditions, "Ready")
                    .is_some_and(|c| c.status == "False" && c.reason == "WorkersStarting")
            })
        })
        .await;
    let status = stuck.status.unwrap();
    let ready = common::operator::condition(&status.common.conditions, "Ready").unwrap();
    assert!(
        ready.message.contains("0 of the 1 minimum workers")
            && ready.message.contains("1 initializing"),
        "{}",
        ready.message
    );
    let states = status.worker_states.unwrap();
    assert_eq!((states.initializing, states.running + states.idle), (1, 0));
    // The URL is known already, and the ConfigMap holds it for clients to wait on.
    let url = status.url.unwrap();
    assert!(url.contains("/lb/"), "{url}");
    let cm = env
        .wait_for::<ConfigMap, _>("stuck-conn", TIMEOUT, "written", |_| true)
        .await;
    assert_eq!(cm.data.unwrap()["url"], url);

    let api: Api<Endpoint> = env.api();
    api.patch(
        "stuck",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"workersMin": 0}})),
    )
    .await
    .unwrap();
    env.wait_for::<Endpoint, _>("stuck", TIMEOUT, "Ready with no minimum", ready_now)
        .await;
    env.finish(op).await;
}
