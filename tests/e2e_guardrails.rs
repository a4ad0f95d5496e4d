//! Pod cost guardrails end to end (issue #16): `spec.schedule`, `spec.maxRuntime` and
//! `spec.idleStop` against a real kube-apiserver and the emulator over real HTTP, with
//! the operator in-process on the emulator's clock. Run through `scripts/test.sh`, once
//! per backend.

mod common;

use std::time::Duration;

use gpucloud_crd::Pod;
use gpucloud_crd::guardrails::{Guardrail, WindowPhase};
use gpucloud_crd::pod::PodPhase;
use gpucloud_emulator::EmulatorConfig;
use k8s_openapi::jiff::{SignedDuration, Timestamp, ToSpan, Unit};
use kube::Api;
use serde_json::json;

use common::operator::{Env, Operator, condition};
use common::passes::wait_pass_on_a_new_listing;
use common::pods::{id_of, patch_spec, pod, remote_pods, remote_status};

const TIMEOUT: Duration = Duration::from_secs(40);
const HOUR_MS: u64 = 3_600_000;

fn phase(p: &Pod) -> Option<PodPhase> {
    p.status.as_ref().and_then(|s| s.phase)
}

/// `(status, reason)` of the `GuardrailStopped` condition.
fn guardrail_condition(p: &Pod) -> Option<(String, String)> {
    p.status
        .as_ref()
        .and_then(|s| condition(&s.common.conditions, "GuardrailStopped"))
        .map(|c| (c.status.to_string(), c.reason.to_string()))
}

fn stopped_by(p: &Pod, reason: &str) -> bool {
    guardrail_condition(p) == Some(("True".into(), reason.into()))
}

fn window(p: &Pod) -> Option<(WindowPhase, Option<Timestamp>)> {
    let s = p.status.as_ref()?.guardrails.as_ref()?.schedule.as_ref()?;
    Some((s.window, s.next_transition.as_ref().map(|t| t.0)))
}

fn held_by(p: &Pod) -> Option<Guardrail> {
    p.status
        .as_ref()?
        .guardrails
        .as_ref()?
        .hold
        .as_ref()
        .map(|h| h.guardrail)
}

fn hhmm(t: Timestamp) -> String {
    t.strftime("%H:%M").to_string()
}

/// The operator's count of pods stopped by `guardrail`, from its `/metrics`.
async fn guardrail_stops(metrics_port: u16, guardrail: &str) -> u64 {
    let text = reqwest::get(format!("http://127.0.0.1:{metrics_port}/metrics"))
        .await
        .expect("/metrics answers")
        .text()
        .await
        .unwrap();
    let series = format!("gpucloud_pod_guardrail_stops_total{{guardrail=\"{guardrail}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .map_or(0, |n| n.trim().parse().expect("a count"))
}

/// An operator on the emulator's clock that serves `/metrics` on a free port, and that port.
fn operator_with_metrics(env: &Env, extra: &[&str]) -> (Operator, u16) {
    let port = common::operator::free_port();
    let metrics = format!("--metrics-addr=127.0.0.1:{port}");
    let flags: Vec<&str> = extra.iter().copied().chain([metrics.as_str()]).collect();
    (env.operator_on_emulator_clock(&flags), port)
}

async fn wait_running(env: &Env, name: &str) -> Pod {
    env.wait_for::<Pod, _>(name, TIMEOUT, "Running", |p| {
        phase(p) == Some(PodPhase::Running)
    })
    .await
}

async fn has_event(env: &Env, name: &str, reason: &str) -> bool {
    env.events_about("Pod", name)
        .await
        .iter()
        .any(|e| e.reason.as_deref() == Some(reason))
}

/// A schedule of two short windows on a clock 30 times faster than real time: the pod is
/// not deployed before the first window, runs in it, stops after it, and resumes in the
/// second. The operator's poll interval is ten minutes, so each transition seen before the
/// next boundary (seconds later) shows the pass was requeued for its boundary, not for a
/// resync. The windows are 12 real seconds and the gap 8: a pass slowed by a loaded
/// machine still lands in the window it is for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_schedule_stops_and_resumes_the_pod_at_its_window_boundaries() {
    const SCALE: f64 = 30.0;
    let env = Env::start_with(
        "pod-schedule",
        EmulatorConfig {
            pod_boot_ms: 300,
            time_scale: SCALE,
            ..EmulatorConfig::default()
        },
    )
    .await;
    let (op, metrics_port) = operator_with_metrics(&env, &["--poll-interval=10m"]);
    // Windows on whole minutes, in UTC, every day: six minutes each, four minutes apart,
    // the first opening three to four emulated minutes from now (six to eight real seconds).
    let minute = env
        .emulated_now()
        .round(Unit::Minute)
        .unwrap()
        .checked_add(1.minute())
        .unwrap();
    let at = |m: i64| minute.checked_add((m * 60).seconds()).unwrap();
    let (open1, close1, open2, close2) = (at(3), at(9), at(13), at(19));
    let api: Api<Pod> = env.api();
    env.create(&pod(
        "office",
        json!({"schedule": {"timeZone": "UTC", "windows": [
            {"from": hhmm(open1), "to": hhmm(close1)},
            {"from": hhmm(open2), "to": hhmm(close2)},
        ]}}),
    ))
    .await;

    // Before the first window: not deployed, and status says when it opens.
    let held = env
        .wait_for::<Pod, _>("office", TIMEOUT, "held outside its window", |p| {
            window(p).is_some() && stopped_by(p, "StoppedBySchedule")
        })
        .await;
    assert_eq!(window(&held), Some((WindowPhase::Closed, Some(open1))));
    assert_eq!(phase(&held), Some(PodPhase::Pending));
    assert!(
        env.emulated_now() < open1,
        "the test was too slow to see the pod before its window"
    );
    assert!(
        remote_pods(&env).await.is_empty(),
        "nothing deployed outside the window"
    );

    // Each boundary is followed before the next one: the lag is printed, in emulated
    // time (30 times real time).
    let check_lag = |what: &str, boundary: Timestamp, next: Timestamp| {
        let now = env.emulated_now();
        let lag = now.duration_since(boundary);
        eprintln!("{what}: seen {lag:#} (emulated) after the boundary");
        assert!(
            lag >= SignedDuration::ZERO && now < next,
            "{what}: seen {lag:?} after the boundary {boundary}, want before the next one, {next}"
        );
    };

    let running = env
        .wait_for::<Pod, _>("office", TIMEOUT, "running in the first window", |p| {
            phase(p) == Some(PodPhase::Running)
        })
        .await;
    check_lag("deployed at the first opening", open1, close1);
    assert_eq!(window(&running), Some((WindowPhase::Open, Some(close1))));
    assert_eq!(
        guardrail_condition(&running),
        Some(("False".into(), "NotStopped".into()))
    );
    let id = id_of(&running);

    let stopped = env
        .wait_for::<Pod, _>("office", TIMEOUT, "stopped after the first window", |p| {
            phase(p) == Some(PodPhase::Stopped)
        })
        .await;
    check_lag("stopped at the first close", close1, open2);
    assert!(stopped_by(&stopped, "StoppedBySchedule"), "{stopped:?}");
    assert_eq!(window(&stopped), Some((WindowPhase::Closed, Some(open2))));
    assert_eq!(remote_status(&env, &id).await.as_deref(), Some("EXITED"));
    assert!(has_event(&env, "office", "StoppedBySchedule").await);

    env.wait_for::<Pod, _>("office", TIMEOUT, "resumed in the second window", |p| {
        phase(p) == Some(PodPhase::Running)
    })
    .await;
    check_lag("resumed at the second opening", open2, close2);
    assert_eq!(
        id_of(&api.get("office").await.unwrap()),
        id,
        "resumed, not deployed anew"
    );
    env.wait_for::<Pod, _>("office", TIMEOUT, "stopped after the second window", |p| {
        phase(p) == Some(PodPhase::Stopped)
    })
    .await;
    check_lag("stopped at the second close", close2, at(24 * 60 + 3));
    assert_eq!(guardrail_stops(metrics_port, "schedule").await, 2);
    env.finish(op).await;
}

/// `maxRuntime: 1h`: an hour of uptime on the platform's clock later, the pod is stopped
/// and stays stopped although its spec says Running, until the user toggles
/// `desiredState`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn max_runtime_stops_the_pod_until_the_user_resumes_it() {
    let env = Env::start_with("pod-maxrun", common::pods::config()).await;
    let (op, metrics_port) = operator_with_metrics(&env, &[]);
    let admin = env.emulator.admin();
    let api: Api<Pod> = env.api();
    env.create(&pod("train", json!({"maxRuntime": "1h"}))).await;
    let running = wait_running(&env, "train").await;
    let id = id_of(&running);
    // Three passes (it is polled every 2 s) with 59 minutes to go: still running.
    op.wait_more_passes("Pod", 3).await;
    assert_eq!(remote_status(&env, &id).await.as_deref(), Some("RUNNING"));

    admin.advance_clock(HOUR_MS).await.unwrap();
    let stopped = env
        .wait_for::<Pod, _>("train", TIMEOUT, "stopped by maxRuntime", |p| {
            phase(p) == Some(PodPhase::Stopped) && stopped_by(p, "StoppedByMaxRuntime")
        })
        .await;
    assert_eq!(held_by(&stopped), Some(Guardrail::MaxRuntime));
    assert_eq!(remote_status(&env, &id).await.as_deref(), Some("EXITED"));
    assert!(has_event(&env, "train", "StoppedByMaxRuntime").await);
    assert_eq!(guardrail_stops(metrics_port, "maxRuntime").await, 1);

    // Held: after a later pass, still stopped although the spec says Running. A held pod
    // is passed over again when it changes: the touch is what brings that pass.
    op.pass_over(&api, "train").await;
    assert_eq!(remote_status(&env, &id).await.as_deref(), Some("EXITED"));
    let still = api.get("train").await.unwrap();
    assert_eq!(phase(&still), Some(PodPhase::Stopped));

    // The user's move: Stopped, then Running.
    patch_spec(&api, "train", json!({"desiredState": "Stopped"})).await;
    patch_spec(&api, "train", json!({"desiredState": "Running"})).await;
    let resumed = env
        .wait_for::<Pod, _>("train", TIMEOUT, "resumed by the user", |p| {
            phase(p) == Some(PodPhase::Running)
        })
        .await;
    assert_eq!(held_by(&resumed), None);
    assert_eq!(id_of(&resumed), id);
    env.finish(op).await;
}

/// `idleStop`: a busy pod keeps running past the duration; once every GPU reports less
/// than the threshold for the duration (the emulator's utilisation knob, read from the
/// listing the operator makes anyway), it is stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn idle_stop_stops_a_pod_whose_gpus_stay_idle() {
    let env = Env::start_with("pod-idle", common::pods::config()).await;
    let (op, metrics_port) = operator_with_metrics(&env, &[]);
    let admin = env.emulator.admin();
    let api: Api<Pod> = env.api();
    env.create(&pod(
        "notebook",
        json!({"idleStop": {"thresholdPercent": 10, "duration": "30m"}}),
    ))
    .await;
    let running = wait_running(&env, "notebook").await;
    let id = id_of(&running);
    let calls_before = env.calls().await;

    // Busy: past the duration, still running. Each change on the platform is seen by a
    // pass that read a pod listing made after it.
    let list_pods = common::backend::routes().list_pods;
    admin.set_gpu_utilisation(&id, Some(80.0)).await.unwrap();
    wait_pass_on_a_new_listing(&env, &op, list_pods, "Pod").await;
    admin.advance_clock(HOUR_MS).await.unwrap();
    wait_pass_on_a_new_listing(&env, &op, list_pods, "Pod").await;
    assert_eq!(remote_status(&env, &id).await.as_deref(), Some("RUNNING"));
    assert_eq!(held_by(&api.get("notebook").await.unwrap()), None);

    // Idle: the start of idleness is recorded, then the duration passes.
    admin.set_gpu_utilisation(&id, Some(3.0)).await.unwrap();
    env.wait_for::<Pod, _>("notebook", TIMEOUT, "idleness recorded", |p| {
        p.status
            .as_ref()
            .and_then(|s| s.guardrails.as_ref())
            .is_some_and(|g| g.idle_since_uptime_seconds.is_some())
    })
    .await;
    admin.advance_clock(HOUR_MS / 2).await.unwrap();
    let stopped = env
        .wait_for::<Pod, _>("notebook", TIMEOUT, "stopped by idleStop", |p| {
            phase(p) == Some(PodPhase::Stopped) && stopped_by(p, "StoppedByIdleStop")
        })
        .await;
    assert_eq!(held_by(&stopped), Some(Guardrail::IdleStop));
    assert_eq!(remote_status(&env, &id).await.as_deref(), Some("EXITED"));
    assert!(has_event(&env, "notebook", "StoppedByIdleStop").await);
    assert_eq!(guardrail_stops(metrics_port, "idleStop").await, 1);
    // Utilisation came with the pod listing: no call of another kind was made for it
    // (`graphql:myself` over `POST /graphql` is also this test's own look at the platform).
    let calls = common::calls::calls_since(&calls_before, &env.calls().await);
    let routes = common::backend::routes();
    let expected = [
        routes.list_pods,
        routes.stop_pod,
        "graphql:myself",
        "POST /graphql",
    ];
    let other: Vec<&String> = calls
        .keys()
        .filter(|r| !expected.contains(&r.as_str()))
        .collect();
    assert!(
        other.is_empty(),
        "calls besides the listing and the stop: {calls:?}"
    );
    env.finish(op).await;
}

/// A time zone the schema lets through (its shape is right) but the tz database does not
/// know: Stalled, with the field and the rule in the condition and an Event, nothing
/// deployed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn an_unknown_time_zone_is_reported_naming_the_field() {
    let env = Env::start_with("pod-badzone", common::pods::config()).await;
    let op = env.operator_on_emulator_clock(&[]);
    env.create(&pod(
        "mars",
        json!({"schedule": {"timeZone": "Mars/Olympus_Mons",
                "windows": [{"from": "08:00", "to": "18:00"}]}}),
    ))
    .await;
    let stalled = env
        .wait_for::<Pod, _>("mars", TIMEOUT, "Stalled", |p| {
            p.status
                .as_ref()
                .and_then(|s| condition(&s.common.conditions, "Stalled"))
                .is_some_and(|c| c.status == "True")
        })
        .await;
    let c = condition(
        &stalled.status.as_ref().unwrap().common.conditions,
        "Stalled",
    )
    .unwrap()
    .clone();
    assert_eq!(c.reason, "InvalidGuardrail");
    assert!(
        c.message.contains("spec.schedule.timeZone") && c.message.contains("Mars/Olympus_Mons"),
        "{}",
        c.message
    );
    assert!(has_event(&env, "mars", "InvalidGuardrail").await);
    assert!(remote_pods(&env).await.is_empty(), "nothing deployed");
    env.finish(op).await;
}
