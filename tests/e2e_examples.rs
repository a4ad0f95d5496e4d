//! Every file of `examples/`, applied the way a user applies it (server-side, into a
//! namespace) to a real kube-apiserver, with the operator in-process and the emulator
//! holding what the examples expect (the demo's fixtures). Each test then does what the
//! example's comments promise. Run through `scripts/test.sh`.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use gpucloud_crd::guardrails::WindowPhase;
use gpucloud_crd::pod::PodPhase;
use gpucloud_crd::{Endpoint, NetworkVolume, Pod};
use gpucloud_emulator::EmulatorConfig;
use gpucloud_operator::demo::apply::{apply_objects, parse_documents};
use gpucloud_operator::demo::examples::{ADOPTED_POD_ID, EXAMPLES, fixtures};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::jiff::Timestamp;
use k8s_openapi::jiff::civil::{Date, Weekday};
use k8s_openapi::jiff::tz::TimeZone;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;

use common::calls::calls_since;
use common::operator::{Env, condition, ready_now};

const TIMEOUT: Duration = Duration::from_secs(60);

async fn start(prefix: &str) -> Env {
    Env::start_with(
        prefix,
        EmulatorConfig {
            fixtures: Some(fixtures()),
            pod_boot_ms: 500,
            ..EmulatorConfig::default()
        },
    )
    .await
}

/// Applies `examples/FILE` into the test's namespace, as `kubectl apply -n NS -f` would.
async fn apply_example(env: &Env, file: &str) {
    let (_, text) = EXAMPLES
        .iter()
        .find(|(name, _)| *name == file)
        .unwrap_or_else(|| panic!("no example {file}"));
    let objects = parse_documents(text, file).expect("the example parses");
    apply_objects(&env.client, env.ns.name(), &objects, "e2e-examples")
        .await
        .expect("the example applies");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn gpu_pod_fallback_skips_the_type_over_the_cap() {
    let env = start("ex-fallback").await;
    let operator = env.operator(&[]);
    apply_example(&env, "gpu-pod-fallback.yaml").await;

    let pod: Pod = env
        .wait_for("trainer", TIMEOUT, "Ready and Running", |p: &Pod| {
            ready_now(p) && p.status.as_ref().and_then(|s| s.phase) == Some(PodPhase::Running)
        })
        .await;
    let status = pod.status.clone().unwrap();
    // The H100 is first in the list but above the cap, so the A100 is taken.
    assert_eq!(status.gpu_type_id.as_deref(), Some("NVIDIA A100 80GB PCIe"));
    let cost = status.cost_per_hour.expect("a cost");
    assert!(cost <= 2.00, "cost {cost} is over the cap");
    let id = status.common.id.clone().unwrap();
    let remote = env.platform.graphql().my_pods().await.unwrap();
    let ours: Vec<_> = remote.iter().filter(|p| p.id == id).collect();
    assert_eq!(ours.len(), 1);
    assert_eq!(
        ours[0]
            .machine
            .as_ref()
            .and_then(|m| m.gpu_type_id.as_deref()),
        Some("NVIDIA A100 80GB PCIe")
    );
    for port in &status.ports {
        // An http port gets a URL to open; a tcp port does not.
        assert_eq!(port.url.is_some(), port.type_ == "http", "{port:?}");
    }
    assert_eq!(status.ports.len(), 2, "{:?}", status.ports);
    env.finish(operator).await;
}

async fn phases(env: &Env) -> BTreeMap<String, (Option<PodPhase>, bool, Option<String>)> {
    let pods: Api<Pod> = env.api();
    pods.list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|p| {
            let name = p.metadata.name.clone().unwrap();
            let s = p.status.clone().unwrap_or_default();
            (name, (s.phase, ready_now(&p), s.common.id))
        })
        .collect()
}

async fn wait_phases(env: &Env, want: PodPhase) -> BTreeMap<String, String> {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        let now = phases(env).await;
        if now.len() == 2 && now.values().all(|(p, r, _)| *p == Some(want) && *r) {
            return now
                .into_iter()
                .map(|(n, (_, _, id))| (n, id.unwrap()))
                .collect();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "pods not all {want:?} and Ready: {now:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Advances the emulator's clock (the operator's, in this test) to `target`.
async fn advance_to(env: &Env, target: Timestamp) {
    let ms = target.duration_since(env.emulated_now()).as_millis();
    let ms = u64::try_from(ms).expect("the target is ahead of the emulated clock");
    env.emulator.admin().advance_clock(ms).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn office_hours_pods_run_in_their_schedule_window_only() {
    let env = start("ex-office").await;
    let operator = env.operator_on_emulator_clock(&[]);
    // Next Monday, 10:00 in Berlin, on the emulator's clock (which the operator reads).
    let berlin = TimeZone::get("Europe/Berlin").unwrap();
    let mut day = env
        .emulated_now()
        .to_zoned(berlin.clone())
        .date()
        .tomorrow()
        .unwrap();
    while day.weekday() != Weekday::Monday {
        day = day.tomorrow().unwrap();
    }
    let at = |date: Date, h: i8, m: i8| {
        date.at(h, m, 0, 0)
            .to_zoned(berlin.clone())
            .unwrap()
            .timestamp()
    };
    advance_to(&env, at(day, 10, 0)).await;
    apply_example(&env, "office-hours.yaml").await;
    let running = wait_phases(&env, PodPhase::Running).await;
    let pods: Api<Pod> = env.api();
    let closes = at(day, 19, 0);
    for name in running.keys() {
        let p = pods.get(name).await.unwrap();
        let schedule = p.status.unwrap().guardrails.unwrap().schedule.unwrap();
        assert_eq!(schedule.window, WindowPhase::Open, "{name}");
        assert_eq!(
            schedule.next_transition.map(|t| t.0),
            Some(closes),
            "{name}"
        );
    }

    // Evening: both stop on the platform (EXITED), keeping their ids.
    advance_to(&env, at(day, 19, 1)).await;
    let stopped = wait_phases(&env, PodPhase::Stopped).await;
    assert_eq!(stopped, running);
    let tuesday = day.tomorrow().unwrap();
    for (name, id) in &stopped {
        let remote = env.platform.graphql().my_pods().await.unwrap();
        let pod = remote.iter().find(|p| &p.id == id).expect("still there");
        assert_eq!(pod.desired_status, "EXITED");
        let p = pods.get(name).await.unwrap();
        let status = p.status.clone().unwrap();
        let stopped_by = condition(&status.common.conditions, "GuardrailStopped").unwrap();
        assert_eq!(stopped_by.reason, "StoppedBySchedule", "{name}");
        let schedule = status.guardrails.unwrap().schedule.unwrap();
        assert_eq!(schedule.window, WindowPhase::Closed, "{name}");
        assert_eq!(
            schedule.next_transition.map(|t| t.0),
            Some(at(tuesday, 7, 0)),
            "{name}"
        );
    }
    // Morning: both resume, on the same pods.
    advance_to(&env, at(tuesday, 7, 1)).await;
    let resumed = wait_phases(&env, PodPhase::Running).await;
    assert_eq!(resumed, running);
    env.finish(operator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn endpoint_on_volume_writes_the_config_map_its_deployment_reads() {
    let env = start("ex-endpoint").await;
    let operator = env.operator(&[]);
    apply_example(&env, "endpoint-on-volume.yaml").await;

    let volume: NetworkVolume = env
        .wait_for("models", TIMEOUT, "Ready", ready_now::<NetworkVolume>)
        .await;
    let endpoint: Endpoint = env
        .wait_for("infer", TIMEOUT, "Ready", ready_now::<Endpoint>)
        .await;
    let volume_id = volume.status.unwrap().common.id.unwrap();
    let status = endpoint.status.clone().unwrap();
    let endpoint_id = status.common.id.clone().unwrap();
    let remote = env
        .platform
        .rest()
        .get_endpoint(&endpoint_id)
        .await
        .expect("the endpoint exists");
    assert_eq!(
        remote.network_volume_id.as_deref(),
        Some(volume_id.as_str())
    );

    // The ConfigMap holds what the Endpoint's status says.
    let config_maps: Api<ConfigMap> = env.api();
    let cm = config_maps.get("infer-connection").await.unwrap();
    let data = cm.data.clone().unwrap_or_default();
    assert_eq!(data.get("id"), Some(&endpoint_id));
    assert_eq!(data.get("url"), status.url.as_ref());
    assert!(
        data["url"].ends_with(&format!("/v2/{endpoint_id}/")),
        "{data:?}"
    );

    // Every key the Deployment reads exists where it reads it from.
    let deployments: Api<Deployment> = env.api();
    let deployment = deployments.get("infer-client").await.unwrap();
    let env_vars = deployment.spec.unwrap().template.spec.unwrap().containers[0]
        .env
        .clone()
        .unwrap();
    let secrets: Api<Secret> = env.api();
    let mut read = 0;
    for var in env_vars {
        let source = var.value_from.expect("from a ConfigMap or a Secret");
        if let Some(r) = source.config_map_key_ref {
            let cm = config_maps.get(&r.name).await.unwrap();
            assert!(
                cm.data.unwrap().contains_key(&r.key),
                "{} lacks {}",
                r.name,
                r.key
            );
            read += 1;
        }
        if let Some(r) = source.secret_key_ref {
            let s = secrets.get(&r.name).await.unwrap();
            assert!(
                s.data.unwrap().contains_key(&r.key),
                "{} lacks {}",
                r.name,
                r.key
            );
            read += 1;
        }
    }
    assert_eq!(read, 2);
    env.finish(operator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn grow_volume_grows_and_a_shrink_is_refused() {
    let env = start("ex-grow").await;
    let operator = env.operator(&[]);
    apply_example(&env, "grow-volume.yaml").await;
    let volume: NetworkVolume = env
        .wait_for("scratch", TIMEOUT, "Ready", ready_now::<NetworkVolume>)
        .await;
    let id = volume.status.unwrap().common.id.unwrap();

    // The patches of the example's comments.
    let api: Api<NetworkVolume> = env.api();
    api.patch(
        "scratch",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"sizeGb": 40}})),
    )
    .await
    .unwrap();
    env.wait_for("scratch", TIMEOUT, "40 GB", |v: &NetworkVolume| {
        ready_now(v) && v.status.as_ref().and_then(|s| s.size_gb) == Some(40)
    })
    .await;
    let remote = env.remote_volume(&id).await.unwrap();
    assert_eq!(remote.size, 40);

    let refused = api
        .patch(
            "scratch",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"sizeGb": 10}})),
        )
        .await
        .expect_err("a shrink is refused");
    let message = refused.to_string();
    assert!(message.contains("sizeGb"), "{message}");

    // deletionPolicy Delete: the volume goes with the object.
    api.delete("scratch", &DeleteParams::default())
        .await
        .unwrap();
    let gone =
        common::wait_until(TIMEOUT, || async { env.remote_volume(&id).await.is_err() }).await;
    assert!(gone, "the remote volume was not deleted");
    env.finish(operator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn adopt_pod_takes_over_the_running_pod_and_orphans_it_on_delete() {
    let env = start("ex-adopt").await;
    let before = env.calls().await;
    let operator = env.operator(&[]);
    apply_example(&env, "adopt-pod.yaml").await;
    let pod: Pod = env
        .wait_for("legacy-notebook", TIMEOUT, "Ready", |p: &Pod| {
            ready_now(p) && p.status.as_ref().and_then(|s| s.phase) == Some(PodPhase::Running)
        })
        .await;
    let status = pod.status.unwrap();
    assert_eq!(status.common.id.as_deref(), Some(ADOPTED_POD_ID));
    let synced = condition(&status.common.conditions, "Synced").unwrap();
    assert_eq!(synced.status, "True", "{synced:?}");
    let calls = calls_since(&before, &env.calls().await);
    assert_eq!(
        calls.get(common::backend::routes().deploy_pod),
        None,
        "nothing deployed: {calls:?}"
    );
    assert_eq!(env.platform.graphql().my_pods().await.unwrap().len(), 1);

    // deletionPolicy Orphan: the pod stays on the platform, running.
    let api: Api<Pod> = env.api();
    api.delete("legacy-notebook", &DeleteParams::default())
        .await
        .unwrap();
    let gone = common::wait_gone(&api, "legacy-notebook", TIMEOUT).await;
    assert!(gone, "the Pod object was not released");
    let remote = env.platform.graphql().my_pods().await.unwrap();
    assert_eq!(remote.len(), 1);
    assert_eq!(remote[0].id, ADOPTED_POD_ID);
    assert_eq!(remote[0].desired_status, "RUNNING");
    env.finish(operator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn team_budget_runs_what_fits_and_holds_a_third_pod_until_room_appears() {
    use gpucloud_crd::budget::Budget;
    let env = start("ex-budget").await;
    let operator = env.operator(&[]);
    apply_example(&env, "team-budget.yaml").await;
    let running = |p: &Pod| {
        ready_now(p) && p.status.as_ref().and_then(|s| s.phase) == Some(PodPhase::Running)
    };
    for name in ["notebook-1", "notebook-2"] {
        env.wait_for(name, TIMEOUT, "Running", running).await;
    }
    let budget: Budget = env
        .wait_for("team-a", TIMEOUT, "both pods counted", |b: &Budget| {
            b.status.as_ref().is_some_and(|s| s.running_count == 2)
        })
        .await;
    let status = budget.status.unwrap();
    assert!((status.cost_per_hour - 1.38).abs() < 1e-6, "{status:?}");
    assert_eq!(status.held_count, 0);

    // A third notebook with the label does not fit: held, with no deploy.
    let api: Api<Pod> = env.api();
    let mut third = api.get("notebook-2").await.unwrap();
    third.metadata = kube::api::ObjectMeta {
        name: Some("notebook-3".into()),
        labels: third.metadata.labels.clone(),
        ..Default::default()
    };
    third.status = None;
    api.create(&kube::api::PostParams::default(), &third)
        .await
        .unwrap();
    env.wait_for("notebook-3", TIMEOUT, "held by the budget", |p: &Pod| {
        p.status
            .as_ref()
            .and_then(|s| condition(&s.common.conditions, "Ready"))
            .is_some_and(|c| c.reason == "BudgetExceeded")
    })
    .await;
    env.wait_for("team-a", TIMEOUT, "one held", |b: &Budget| {
        b.status
            .as_ref()
            .is_some_and(|s| s.held == vec!["Pod/notebook-3".to_string()])
    })
    .await;
    let third_prefix = format!("{}-notebook-3-", env.ns.name());
    let deployed = env.platform.graphql().my_pods().await.unwrap();
    assert!(
        !deployed.iter().any(|p| p.name.starts_with(&third_prefix)),
        "the held notebook was deployed"
    );

    // Room appears (a notebook goes): the held one deploys by itself.
    api.delete("notebook-1", &DeleteParams::default())
        .await
        .unwrap();
    env.wait_for("notebook-3", TIMEOUT, "Running", running)
        .await;
    env.finish(operator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn training_cluster_mounts_the_checkpoints_on_every_node_and_writes_the_hostfile() {
    use gpucloud_crd::Cluster;
    let env = start("ex-cluster").await;
    let operator = env.operator(&[]);
    apply_example(&env, "training-cluster.yaml").await;
    let volume: NetworkVolume = env
        .wait_for("checkpoints", TIMEOUT, "Ready", ready_now::<NetworkVolume>)
        .await;
    if !common::backend::is_v2() {
        // The seed API has no Instant Clusters: the Cluster says so, the volume is unaffected.
        env.wait_for("trainer", TIMEOUT, "UnsupportedByBackend", |c: &Cluster| {
            common::clusters::is_stalled_with(c, "UnsupportedByBackend")
        })
        .await;
        env.finish(operator).await;
        return;
    }
    let trainer: Cluster = env
        .wait_for("trainer", TIMEOUT, "Running", common::clusters::is_running)
        .await;
    let status = trainer.status.clone().unwrap();
    // The H100s are over the cap for the whole cluster; the 4090s are taken, in the
    // volume's data center.
    assert_eq!(
        status.gpu_type_id.as_deref(),
        Some("NVIDIA GeForce RTX 4090")
    );
    assert_eq!(status.data_center_id.as_deref(), Some("EU-RO-1"));
    assert!(
        status
            .refusals
            .iter()
            .any(|r| r.candidate.starts_with("NVIDIA H100 80GB HBM3")),
        "{:?}",
        status.refusals
    );
    let cost = status.cost_per_hour.expect("a cost");
    assert!(cost <= 12.0, "cost {cost} is over the cap");
    let volume_id = volume.status.unwrap().common.id.unwrap();
    let nodes = common::clusters::members(&env, &status.common.id.clone().unwrap()).await;
    assert_eq!(nodes.len(), 2);
    for p in &nodes {
        let mounts: Vec<(String, String)> = p
            .mounts
            .network
            .iter()
            .flatten()
            .map(|m| (m.volume_id.clone(), m.path.clone()))
            .collect();
        assert_eq!(
            mounts,
            [(volume_id.clone(), "/checkpoints".to_string())],
            "{}",
            p.id
        );
        assert_eq!(
            p.container.env.get("CHECKPOINT_DIR").map(String::as_str),
            Some("/checkpoints")
        );
        assert_eq!(p.container.disk, Some(50));
    }
    let data = common::clusters::assert_config_map_follows(&env, &trainer).await;
    assert_eq!(
        (data["NNODES"].as_str(), data["NPROC_PER_NODE"].as_str()),
        ("2", "4")
    );
    env.finish(operator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn cpu_pod_runs_on_the_second_flavor_within_the_cap() {
    let env = start("ex-cpu").await;
    let operator = env.operator(&[]);
    apply_example(&env, "cpu-pod.yaml").await;
    if !common::backend::is_v2() {
        // The seed API has no CPU pods: the Pod says so and nothing is deployed.
        let pod: Pod = env
            .wait_for("preprocess", TIMEOUT, "UnsupportedByBackend", |p: &Pod| {
                p.status
                    .as_ref()
                    .and_then(|s| condition(&s.common.conditions, "Stalled"))
                    .is_some_and(|c| c.reason == "UnsupportedByBackend")
            })
            .await;
        let stalled = condition(&pod.status.unwrap().common.conditions, "Stalled")
            .unwrap()
            .message
            .to_string();
        assert!(stalled.contains("spec.cpu"), "{stalled}");
        env.finish(operator).await;
        return;
    }
    let pod: Pod = env
        .wait_for("preprocess", TIMEOUT, "Ready and Running", |p: &Pod| {
            ready_now(p) && p.status.as_ref().and_then(|s| s.phase) == Some(PodPhase::Running)
        })
        .await;
    let status = pod.status.clone().unwrap();
    // cpu5g, first in the list, has no stock: cpu3c is taken.
    assert_eq!(status.cpu_flavor_id.as_deref(), Some("cpu3c"));
    assert_eq!(status.vcpu_count, Some(4));
    let cost = status.cost_per_hour.expect("a cost");
    assert!(cost > 0.0 && cost <= 0.20, "cost {cost} is over the cap");
    // maxRuntime watches the CPU pod as it would a GPU pod.
    assert!(status.guardrails.is_some(), "{status:?}");
    env.finish(operator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn lb_endpoint_is_ready_with_its_urls_in_the_config_map() {
    let env = start("ex-lb").await;
    let operator = env.operator(&[]);
    apply_example(&env, "lb-endpoint.yaml").await;
    if !common::backend::is_v2() {
        // The seed API has no load balancers: the Endpoint says so, nothing is created.
        let stalled: Endpoint = env
            .wait_for("chat", TIMEOUT, "UnsupportedByBackend", |e: &Endpoint| {
                common::operator::stalled_now(e, "UnsupportedByBackend").is_some()
            })
            .await;
        assert!(stalled.status.unwrap().common.id.is_none());
        env.finish(operator).await;
        return;
    }
    let chat: Endpoint = env
        .wait_for("chat", TIMEOUT, "Ready", ready_now::<Endpoint>)
        .await;
    let status = chat.status.unwrap();
    let id = status.common.id.clone().unwrap();
    let base = format!("{}/lb/{id}", env.emulator.base_url());
    assert_eq!(status.url.as_deref(), Some(base.as_str()));
    // The pools minus the excluded type: the 4090 (ADA_24) and the A40 (AMPERE_48).
    assert_eq!(status.pools, vec!["ADA_24", "AMPERE_48"]);
    assert_eq!(
        status.gpu_type_ids,
        vec!["NVIDIA A40", "NVIDIA GeForce RTX 4090"]
    );
    let cm: ConfigMap = env
        .wait_for("chat-connection", TIMEOUT, "written", |_: &ConfigMap| true)
        .await;
    let data = cm.data.unwrap();
    assert_eq!(data["url"], base);
    assert_eq!(data["healthUrl"], format!("{base}/health"));
    assert_eq!(data["type"], "LoadBalancer");
    env.finish(operator).await;
}
