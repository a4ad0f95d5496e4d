//! Pod end to end under capacity failures and a crash: a real kube-apiserver, the emulator
//! over real HTTP, and the operator in-process or as a child process of the built binary
//! (where it must really be killed). Run through `scripts/test.sh`.

mod common;

use std::time::{Duration, Instant};

use gpucloud_crd::Pod;
use gpucloud_crd::pod::PodPhase;
use gpucloud_platform::{self as platform, DeployPodInput, LowestPriceInput};
use kube::{Api, ResourceExt};
use serde_json::json;

use common::operator::{Env, OperatorProcess, condition};
use common::pods::{
    A40, RTX4090, config, deploy, id_of, is_ready, patch_spec, pod, pod_events, remote_pods,
};

const TIMEOUT: Duration = Duration::from_secs(40);
fn resume() -> &'static str {
    common::backend::routes().resume_pod
}
const PENDING: &str = "gpucloud.io/external-create-pending";
const EXTERNAL_ID: &str = "gpucloud.io/external-id";
/// The platform time limit the crash test gives the operator: how long it waits before it
/// concludes that a deploy a killed process may have sent made nothing.
const PLATFORM_TIMEOUT: &str = "--platform-timeout=5s";
const NO_INSTANCES: &str = "no longer any instances available";
const HOST_FULL: &str = "not enough free GPUs on the host machine";

/// (status, reason) of condition `type_`, for the object's current generation only.
fn cond(p: &Pod, type_: &str) -> Option<(String, String)> {
    let s = p.status.as_ref()?;
    if s.common.observed_generation != p.metadata.generation {
        return None;
    }
    condition(&s.common.conditions, type_).map(|c| (c.status.to_string(), c.reason.to_string()))
}

fn is_running(p: &Pod) -> bool {
    is_ready(p) && p.status.as_ref().and_then(|s| s.phase) == Some(PodPhase::Running)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn capacity_error_mid_deploy_falls_back_to_the_next_type() {
    let env = Env::start_with("pod-capfall", config()).await;
    let admin = env.emulator.admin();
    // The stock listing keeps showing the 4090s that the machines no longer have.
    admin.freeze_stock_view().await.unwrap();
    admin.set_stock(RTX4090, None, 0).await.unwrap();
    let catalog = env
        .platform
        .graphql()
        .gpu_types(
            None,
            &LowestPriceInput {
                gpu_count: Some(1),
                secure_cloud: None,
            },
        )
        .await
        .unwrap();
    let shown = catalog
        .iter()
        .find(|g| g.id == RTX4090)
        .and_then(|g| g.lowest_price.as_ref())
        .and_then(|p| p.stock_status.clone());
    assert!(
        shown.as_deref().is_some_and(|s| s != "None"),
        "the listing must still show 4090 stock: {shown:?}"
    );
    // Where the listing says a 4090 can go: one place per type on the seed API; one per
    // data center and cloud on REST v2, whose placements the operator tries in turn.
    let shown_4090_places = if common::backend::is_v2() {
        let mut places = 0;
        for cloud in [platform::v2::Cloud::Secure, platform::v2::Cloud::Community] {
            let query = platform::v2::GpuQuery {
                availability: true,
                products: vec![platform::v2::Product::Pod],
                count: Some(1),
                cloud: Some(cloud),
                ..Default::default()
            };
            let gpus = env.platform.v2().list_gpu_types(&query).await.unwrap();
            places += gpus
                .iter()
                .filter(|g| g.id == RTX4090)
                .flat_map(|g| g.data_centers.iter().flatten())
                .filter(|d| d.availability != platform::v2::AvailabilityLevel::None)
                .count() as u64;
        }
        places
    } else {
        1
    };
    assert!(shown_4090_places >= 1);
    admin.clear_calls().await.unwrap();

    // A long resync keeps the cool-down of the refused type longer than this test.
    let op = env.operator(&["--poll-interval=60s"]);
    env.create(&pod("fallback", json!({}))).await;
    let ready = env
        .wait_for("fallback", TIMEOUT, "Running", is_running)
        .await;
    let status = ready.status.clone().unwrap();
    assert_eq!(status.gpu_type_id.as_deref(), Some(A40));
    let pods = remote_pods(&env).await;
    assert_eq!(pods.len(), 1, "{pods:#?}");
    assert_eq!(pods[0].id, id_of(&ready));
    assert_eq!(
        pods[0].machine.as_ref().unwrap().gpu_type_id.as_deref(),
        Some(A40)
    );
    // One pass: every 4090 placement refused, then the A40.
    assert_eq!(
        admin.call_count(deploy()).await.unwrap(),
        shown_4090_places + 1
    );
    let seen = pod_events(&env, "fallback").await;
    assert!(
        seen.iter()
            .any(|(reason, note)| reason == "GpuTypeNoCapacity"
                && note.contains(RTX4090)
                && note.contains(NO_INSTANCES)
                && note.contains(A40)),
        "no Event about the 4090's capacity error: {seen:#?}"
    );
    assert!(
        seen.iter().any(|(reason, _)| reason == "Created"),
        "{seen:#?}"
    );

    // During the cool-down the refused type is not asked again: the next pod goes
    // straight to the A40 with one deploy.
    env.create(&pod("second", json!({}))).await;
    let second = env.wait_for("second", TIMEOUT, "Running", is_running).await;
    assert_eq!(second.status.unwrap().gpu_type_id.as_deref(), Some(A40));
    assert_eq!(
        admin.call_count(deploy()).await.unwrap(),
        shown_4090_places + 2
    );
    assert_eq!(remote_pods(&env).await.len(), 2);
    env.finish(op).await;
}

/// Where the emulator holds the deploy while the operator is killed.
#[derive(Clone, Copy, Debug)]
enum Hold {
    /// Before serving it: whether it runs after the caller is gone is up to the server.
    BeforeServing,
    /// After serving it, before answering: the pod exists, the caller never hears of it.
    Answer,
}

/// What a second operator made of a deploy its predecessor was killed in the middle of.
struct AfterKill {
    env: Env,
    second: OperatorProcess,
    pod_id: String,
    adopted: bool,
    deploys: u64,
}

/// Kills the operator process with a deploy held by the emulator for 3 s at `hold`,
/// starts another, and checks the end state every interleaving must reach: Ready on the
/// one remote pod that exists, the pending marker gone.
async fn kill_with_the_deploy_in_flight(prefix: &str, hold: Hold) -> AfterKill {
    let env = Env::start_with(prefix, config()).await;
    let admin = env.emulator.admin();
    match hold {
        Hold::BeforeServing => admin.add_latency(deploy(), 3_000).await.unwrap(),
        Hold::Answer => admin.delay_answers(deploy(), 3_000).await.unwrap(),
    }
    let first = env.operator_process(&[PLATFORM_TIMEOUT]);
    let api: Api<Pod> = env.api();
    env.create(&pod("inflight", json!({}))).await;
    env.wait_for::<Pod, _>("inflight", TIMEOUT, "the pending marker", |p| {
        p.annotations().contains_key(PENDING)
    })
    .await;
    let sent = common::wait_until(TIMEOUT, || async {
        admin.call_count(deploy()).await.unwrap() >= 1
    })
    .await;
    assert!(sent, "the deploy never reached the platform");
    if let Hold::Answer = hold {
        let landed =
            common::wait_until(TIMEOUT, || async { !remote_pods(&env).await.is_empty() }).await;
        assert!(landed, "the held deploy never took effect");
    }
    // SIGKILL with the deploy in flight: no answer read, the marker left behind.
    first.kill();
    admin.clear_faults().await.unwrap();
    let left = api.get("inflight").await.unwrap();
    assert!(left.annotations().contains_key(PENDING));
    assert!(
        left.status
            .as_ref()
            .and_then(|s| s.common.id.as_ref())
            .is_none()
    );

    // The second process waits out the platform time limit (5 s from its start) before it
    // concludes that nothing was deployed, and a deploy still held by the emulator is
    // served within 3 s of the kill: by Ready, every deploy that will ever land has landed.
    let second = env.operator_process(&[PLATFORM_TIMEOUT]);
    let ready = env
        .wait_for("inflight", Duration::from_secs(60), "Running", is_running)
        .await;
    let pod_id = id_of(&ready);
    let pods = remote_pods(&env).await;
    assert_eq!(pods.len(), 1, "duplicate or leaked pods: {pods:#?}");
    assert_eq!(pods[0].id, pod_id);
    // The id is in status; the marker stays as the way back to the pod if status is lost.
    assert!(!ready.annotations().contains_key(EXTERNAL_ID));
    assert!(ready.annotations().contains_key(PENDING));
    let adopted = pod_events(&env, "inflight")
        .await
        .iter()
        .any(|(reason, _)| reason == "AdoptedAfterInterruptedCreate");
    let deploys = admin.call_count(deploy()).await.unwrap();
    println!(
        "killed with the deploy held {hold:?}: pod {pod_id}, {} by the second operator, {deploys} deploy calls in all",
        if adopted {
            "adopted (the first operator's deploy landed)"
        } else {
            "deployed (the first operator's deploy never ran)"
        }
    );
    AfterKill {
        env,
        second,
        pod_id,
        adopted,
        deploys,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn killed_with_the_deploy_in_flight_leaves_exactly_one_pod() {
    let after = kill_with_the_deploy_in_flight("pod-kill-deploy", Hold::BeforeServing).await;
    assert_eq!(
        after.deploys,
        if after.adopted { 1 } else { 2 },
        "a deploy that was adopted must not be repeated"
    );
    after.env.finish_process(after.second).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn killed_before_the_deploy_answer_adopts_the_deployed_pod() {
    let after = kill_with_the_deploy_in_flight("pod-kill-answer", Hold::Answer).await;
    assert!(
        after.adopted,
        "the landed pod {} was not adopted",
        after.pod_id
    );
    assert_eq!(after.deploys, 1, "the landed deploy was repeated");
    after.env.finish_process(after.second).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn resume_on_a_full_host_backs_off_then_resumes_the_same_pod() {
    let env = Env::start_with("pod-hostfull", config()).await;
    let admin = env.emulator.admin();
    // One 4090 in all: a machine with a single GPU on the secure cloud.
    admin.set_stock(RTX4090, None, 0).await.unwrap();
    admin.set_stock(RTX4090, Some(true), 1).await.unwrap();
    let op = env.operator(&[]);
    let api: Api<Pod> = env.api();
    env.create(&pod(
        "resumer",
        json!({"gpu": {"typeIds": [RTX4090], "count": 1}}),
    ))
    .await;
    let running = env
        .wait_for("resumer", TIMEOUT, "Running", is_running)
        .await;
    let id = id_of(&running);
    // The host, as the platform's seed view shows it (REST v2 does not say).
    let machine = remote_pods(&env)
        .await
        .into_iter()
        .find(|p| p.id == id)
        .map(|p| p.machine_id)
        .unwrap();

    patch_spec(&api, "resumer", json!({"desiredState": "Stopped"})).await;
    env.wait_for::<Pod, _>("resumer", TIMEOUT, "Stopped", |p| {
        is_ready(p) && p.status.as_ref().and_then(|s| s.phase) == Some(PodPhase::Stopped)
    })
    .await;

    // Someone else takes the stopped pod's GPU on its host.
    let squatter = env
        .platform
        .graphql()
        .deploy_pod(&DeployPodInput {
            name: Some("squatter".into()),
            image_name: Some("ghcr.io/acme/other:1".into()),
            gpu_type_id: Some(RTX4090.into()),
            gpu_count: Some(1),
            ..DeployPodInput::default()
        })
        .await
        .unwrap();
    assert_eq!(
        squatter.machine_id, machine,
        "the squatter must share the host"
    );
    admin.clear_calls().await.unwrap();

    patch_spec(&api, "resumer", json!({"desiredState": "Running"})).await;
    let refused = env
        .wait_for::<Pod, _>("resumer", TIMEOUT, "Ready=False/HostHasNoFreeGpu", |p| {
            cond(p, "Ready").is_some_and(|(s, r)| s == "False" && r == "HostHasNoFreeGpu")
        })
        .await;
    assert_eq!(
        cond(&refused, "Stalled").map(|(s, _)| s).as_deref(),
        Some("False")
    );
    assert_eq!(
        cond(&refused, "Synced"),
        Some(("False".into(), "HostHasNoFreeGpu".into()))
    );
    let message = condition(&refused.status.as_ref().unwrap().common.conditions, "Ready")
        .unwrap()
        .message
        .clone();
    assert!(message.contains(HOST_FULL), "{message}");
    let seen = pod_events(&env, "resumer").await;
    assert!(
        seen.iter()
            .any(|(reason, note)| reason == "HostHasNoFreeGpu" && note.contains(HOST_FULL)),
        "no Event for the refused resume: {seen:#?}"
    );

    // Retries back off (about 1, 2, 4, 8 s apart): within 20 s of the first refusal a
    // handful of resumes, where a retry at every progress (1 s) or resync (2 s) interval
    // would make 10 to 20.
    let first_refusal = Instant::now();
    let window = Duration::from_secs(20);
    tokio::time::sleep(window).await;
    let resumes = admin.call_count(resume()).await.unwrap();
    println!(
        "resume on a full host: {resumes} resume calls in the {:.1?} after the first refusal",
        first_refusal.elapsed()
    );
    assert!(
        (2..=7).contains(&resumes),
        "{resumes} resume calls in {window:?}: {:?}",
        env.calls().await
    );
    let pods = remote_pods(&env).await;
    assert_eq!(
        pods.iter()
            .find(|p| p.id == id)
            .map(|p| p.desired_status.as_str()),
        Some("EXITED")
    );

    // The host frees up: the same pod resumes.
    env.platform
        .graphql()
        .terminate_pod(&squatter.id)
        .await
        .unwrap();
    let resumed = env
        .wait_for(
            "resumer",
            Duration::from_secs(60),
            "Running again",
            is_running,
        )
        .await;
    assert_eq!(id_of(&resumed), id);
    let pods = remote_pods(&env).await;
    assert_eq!(
        pods.first().map(|p| p.machine_id.as_str()),
        Some(machine.as_str())
    );
    assert_eq!(pods.len(), 1, "{pods:#?}");
    assert_eq!(pods[0].id, id);
    assert_eq!(pods[0].desired_status, "RUNNING");
    env.finish(op).await;
}
