//! Pods that get stuck while they bill (issue #24), end to end: a real kube-apiserver, the
//! emulator over real HTTP with a start failure or a full host switched on, the operator
//! in-process. A pod that cannot pull its image is `Stalled` with the log line and stopped
//! (or terminated) at `startupTimeout`; a pod whose host has no GPU to resume it waits and
//! says why (`resumePolicy: Wait`) or moves to a new pod on the same volume, make before
//! break (`Recreate`), also when the operator is killed in the middle. Run through
//! `scripts/test.sh`.

mod common;

use std::time::{Duration, Instant};

use gpucloud_crd::Pod;
use gpucloud_crd::pod::PodPhase;
use gpucloud_emulator::StartFailure;
use gpucloud_engine::marker::TAG_ENV;
use gpucloud_platform as platform;
use kube::{Api, ResourceExt};
use serde_json::json;

use common::merged;
use common::operator::{Env, Operator, condition, volume};
use common::pods::{config, id_of, is_ready, patch_spec, pod, pod_events, remote_pods};
use common::volumes::volume_id;

const TIMEOUT: Duration = Duration::from_secs(60);

fn cond(p: &Pod, type_: &str) -> Option<(String, String, String)> {
    p.status
        .as_ref()
        .and_then(|s| condition(&s.common.conditions, type_))
        .map(|c| {
            (
                c.status.to_string(),
                c.reason.to_string(),
                c.message.to_string(),
            )
        })
}

fn stalled_with(p: &Pod, reason: &str) -> bool {
    cond(p, "Stalled").is_some_and(|(s, r, _)| s == "True" && r == reason)
}

/// The object's pods on the platform that are not terminated, by its tag.
async fn tagged_pods(env: &Env, obj: &Pod) -> Vec<platform::Pod> {
    let uid = obj.uid().unwrap();
    remote_pods(env)
        .await
        .into_iter()
        .filter(|p| p.env_value(TAG_ENV) == Some(uid.as_str()) && p.desired_status != "TERMINATED")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn an_image_that_cannot_be_pulled_stalls_the_pod_and_startup_timeout_stops_it() {
    let env = Env::start_with("pod-pullfail", config()).await;
    let image = "ghcr.io/acme/does-not-exist:1";
    env.emulator
        .admin()
        .fail_image(image, StartFailure::ImageNotFound)
        .await
        .unwrap();
    let op = env.operator(&[]);
    let created = Instant::now();
    env.create(&pod(
        "nopull",
        json!({"image": image, "startupTimeout": "45s"}),
    ))
    .await;

    let v2 = common::backend::is_v2();
    if v2 {
        // The system log is read while the pod starts: the reason is in the condition,
        // with the line, well within a minute.
        let stalled = env
            .wait_for("nopull", TIMEOUT, "Stalled ImagePullFailed", |p: &Pod| {
                stalled_with(p, "ImagePullFailed")
            })
            .await;
        let took = created.elapsed();
        println!(
            "image-pull failure reported Stalled after {:.1}s",
            took.as_secs_f64()
        );
        assert!(took < Duration::from_secs(60), "took {took:?}");
        let (_, _, message) = cond(&stalled, "Stalled").unwrap();
        assert!(message.contains("manifest unknown"), "{message}");
        assert!(message.contains(image), "{message}");
        let startup = stalled.status.as_ref().unwrap().startup.clone().unwrap();
        assert_eq!(startup.failure.unwrap().reason, "ImagePullFailed");
        assert_eq!(
            stalled.status.as_ref().unwrap().phase,
            Some(PodPhase::Failed)
        );
        // Still billing until startupTimeout: nothing was stopped yet.
        assert_eq!(
            tagged_pods(&env, &stalled).await[0].desired_status,
            "RUNNING"
        );
    }

    // At startupTimeout the pod is stopped, and stays stopped.
    let held = env
        .wait_for(
            "nopull",
            Duration::from_secs(110),
            "stopped at startupTimeout",
            |p: &Pod| {
                p.status
                    .as_ref()
                    .and_then(|s| s.startup.as_ref())
                    .is_some_and(|s| s.hold.is_some())
            },
        )
        .await;
    let startup = held.status.as_ref().unwrap().startup.clone().unwrap();
    // Status keeps times to the second: the start may read up to a second early.
    assert!(
        created.elapsed() >= Duration::from_secs(44),
        "held after {:?}: {startup:#?}",
        created.elapsed()
    );
    let on_platform = common::wait_until(TIMEOUT, || async {
        tagged_pods(&env, &held)
            .await
            .iter()
            .all(|p| p.desired_status == "EXITED")
    })
    .await;
    assert!(on_platform, "{:#?}", tagged_pods(&env, &held).await);
    let reason = if v2 {
        "ImagePullFailed"
    } else {
        "StartupTimeout"
    };
    let stalled = env
        .wait_for("nopull", TIMEOUT, "Stalled after the stop", |p: &Pod| {
            stalled_with(p, reason)
        })
        .await;
    let (_, _, message) = cond(&stalled, "Stalled").unwrap();
    assert!(message.contains("startupTimeout 45s"), "{message}");
    assert!(message.contains("until the spec is edited"), "{message}");
    let events = pod_events(&env, "nopull").await;
    assert!(
        events.iter().any(|(r, _)| r == "StartupFailedStopped"),
        "{events:?}"
    );
    // Held: a later pass does not resume it.
    op.pass_over(&env.api::<Pod>(), "nopull").await;
    let pods = tagged_pods(&env, &held).await;
    assert_eq!(pods.len(), 1);
    assert_eq!(pods[0].desired_status, "EXITED");
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_refused_registry_login_is_told_and_terminate_leaves_nothing_billing() {
    let env = Env::start_with("pod-authfail", config()).await;
    let image = "registry.acme.example/private/train:2";
    env.emulator
        .admin()
        .fail_image(image, StartFailure::RegistryAuthRefused)
        .await
        .unwrap();
    let op = env.operator(&[]);
    let obj = env
        .create(&pod(
            "noauth",
            json!({"image": image, "startupTimeout": "20s", "onStartupFailure": "Terminate"}),
        ))
        .await;
    if common::backend::is_v2() {
        env.wait_for(
            "noauth",
            TIMEOUT,
            "Stalled RegistryAuthFailed",
            |p: &Pod| stalled_with(p, "RegistryAuthFailed"),
        )
        .await;
    }
    let held = env
        .wait_for(
            "noauth",
            Duration::from_secs(90),
            "terminated and held",
            |p: &Pod| {
                p.status.as_ref().is_some_and(|s| {
                    s.common.id.is_none()
                        && s.startup.as_ref().is_some_and(|x| x.hold.is_some())
                        && s.phase == Some(PodPhase::Failed)
                }) && cond(p, "Stalled").is_some_and(|(s, _, _)| s == "True")
            },
        )
        .await;
    let (_, _, message) = cond(&held, "Stalled").unwrap();
    assert!(
        message.contains("terminated (onStartupFailure Terminate)"),
        "{message}"
    );
    // Nothing is deployed again while the spec stays as it is.
    op.pass_over(&env.api::<Pod>(), "noauth").await;
    assert!(tagged_pods(&env, &obj).await.is_empty());
    let events = pod_events(&env, "noauth").await;
    assert!(
        events.iter().any(|(r, _)| r == "StartupFailedTerminated"),
        "{events:?}"
    );
    assert!(
        !events.iter().any(|(r, _)| r == "ExternalDeleted"),
        "{events:?}"
    );
    // An edited spec (a working image) is deployed.
    let api: Api<Pod> = env.api();
    patch_spec(&api, "noauth", json!({"image": "ghcr.io/acme/train:1"})).await;
    env.wait_for("noauth", TIMEOUT, "Ready after the fix", is_ready)
        .await;
    env.finish(op).await;
}

/// A Running pod on a network volume, stopped, its host filled, and asked to run again:
/// returns the stopped pod's id.
async fn stop_and_fill_the_host(env: &Env, name: &str, extra: serde_json::Value) -> String {
    let api: Api<Pod> = env.api();
    env.create(&volume("ckpt", 10, json!({}))).await;
    let spec = merged(
        json!({"networkVolumeRef": {"name": "ckpt"}, "volumeMountPath": "/workspace"}),
        extra,
    );
    env.create(&pod(name, spec)).await;
    let ready = env.wait_for(name, TIMEOUT, "Ready", is_ready).await;
    let old = id_of(&ready);
    patch_spec(&api, name, json!({"desiredState": "Stopped"})).await;
    env.wait_for(name, TIMEOUT, "Stopped", |p: &Pod| {
        p.status.as_ref().and_then(|s| s.phase) == Some(PodPhase::Stopped) && is_ready(p)
    })
    .await;
    env.emulator.admin().fill_host(&old).await.unwrap();
    patch_spec(&api, name, json!({"desiredState": "Running"})).await;
    old
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_resume_refused_waits_and_says_why_until_the_host_has_room() {
    let env = Env::start_with("pod-resumewait", config()).await;
    let op = env.operator(&[]);
    let old = stop_and_fill_the_host(&env, "waiter", json!({})).await;
    let waiting = env
        .wait_for("waiter", TIMEOUT, "HostHasNoFreeGpu", |p: &Pod| {
            cond(p, "Ready").is_some_and(|(s, r, _)| s == "False" && r == "HostHasNoFreeGpu")
        })
        .await;
    let (_, _, message) = cond(&waiting, "Ready").unwrap();
    for words in [
        "cannot resume pod",
        "resumePolicy Recreate",
        "delete the Pod",
    ] {
        assert!(message.contains(words), "{message}");
    }
    op.pass_over(&env.api::<Pod>(), "waiter").await;
    let pods = tagged_pods(&env, &waiting).await;
    assert_eq!(pods.len(), 1, "Wait makes no new pod: {pods:#?}");
    assert_eq!(pods[0].id, old);
    // Room again: the same pod resumes.
    env.emulator.admin().free_host(&old).await.unwrap();
    let ready = env
        .wait_for(
            "waiter",
            Duration::from_secs(120),
            "Ready again",
            |p: &Pod| {
                is_ready(p) && p.status.as_ref().and_then(|s| s.phase) == Some(PodPhase::Running)
            },
        )
        .await;
    assert_eq!(id_of(&ready), old);
    env.finish(op).await;
}

/// Waits until the pod runs as a new pod that replaced `old`, and checks what must hold:
/// one pod, on the same volume, both ids in status, and the Events.
async fn relocated(env: &Env, name: &str, old: &str) {
    let ready = env
        .wait_for(
            name,
            Duration::from_secs(120),
            "Ready on a new pod",
            |p: &Pod| {
                is_ready(p)
                    && p.status.as_ref().and_then(|s| s.common.id.as_deref()) != Some(old)
                    && p.status.as_ref().and_then(|s| s.phase) == Some(PodPhase::Running)
            },
        )
        .await;
    let new = id_of(&ready);
    let pods = tagged_pods(env, &ready).await;
    assert_eq!(pods.len(), 1, "exactly one pod runs: {pods:#?}");
    assert_eq!(pods[0].id, new);
    assert_eq!(pods[0].desired_status, "RUNNING");
    assert_eq!(
        pods[0].network_volume_id.as_deref(),
        Some(volume_id(env, "ckpt").await.as_str()),
        "the replacement mounts the same network volume"
    );
    let replaced = ready
        .status
        .as_ref()
        .and_then(|s| s.resume.as_ref())
        .and_then(|r| r.replaced.clone())
        .expect("status.resume.replaced");
    assert_eq!(
        (replaced.from.as_str(), replaced.to.as_str()),
        (old, new.as_str())
    );
    let events = pod_events(env, name).await;
    assert!(
        events
            .iter()
            .any(|(r, note)| r == "Relocated" && note.contains(old)),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|(r, note)| r == "AdoptedSuccessor" && note.contains(&new)),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_resume_refused_past_resume_timeout_moves_to_a_new_pod_on_the_same_volume() {
    let env = Env::start_with("pod-relocate", config()).await;
    let op = env.operator(&[]);
    let old = stop_and_fill_the_host(
        &env,
        "mover",
        json!({"resumePolicy": "Recreate", "resumeTimeout": "5s"}),
    )
    .await;
    relocated(&env, "mover", &old).await;
    env.finish(op).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn killed_in_the_middle_of_a_relocation_leaves_exactly_one_pod() {
    let env = Env::start_with("pod-relocate-kill", config()).await;
    let op: Operator = env.operator(&[]);
    let old = stop_and_fill_the_host(
        &env,
        "mover",
        json!({"resumePolicy": "Recreate", "resumeTimeout": "5s"}),
    )
    .await;
    let api: Api<Pod> = env.api();
    let obj = api.get("mover").await.unwrap();
    // Killed once the replacement exists and the old pod does too.
    let both = common::wait_until(Duration::from_secs(90), || async {
        tagged_pods(&env, &obj).await.len() >= 2
    })
    .await;
    assert!(both, "no replacement was deployed");
    op.kill();
    let second = env.operator(&[]);
    relocated(&env, "mover", &old).await;
    env.finish(second).await;
}
