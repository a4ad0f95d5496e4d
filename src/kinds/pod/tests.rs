//! Unit tests of the Pod adapter: desired state, placement, plans, readiness, status and guardrails, without a network.

use super::*;
use gpucloud_crd::PodSpec;
use gpucloud_crd::guardrails::Guardrail;
use gpucloud_platform::PlatformError;
use kube::api::ObjectMeta;
use serde_json::json;

#[test]
fn fallback_note_names_both_types_and_the_platform_answer() {
    let err = PlatformError::Capacity {
        operation: "podFindAndDeployOnDemand",
        detail: "There are no longer any instances available".into(),
    };
    let note = fallback_note(&["B".into()], &err, "C", Duration::from_secs(60));
    assert!(note.contains("no capacity for B"), "{note}");
    assert!(note.contains("no longer any instances"), "{note}");
    assert!(
        note.contains("skipping B for 60s and deploying on C"),
        "{note}"
    );
}

fn obj(spec: serde_json::Value) -> Pod {
    let mut base = json!({"image": "img:1", "gpu": {"typeIds": ["A", "B"]}, "ports": ["8888/http", "22/tcp"],
        "env": [{"name": "PLAIN", "value": "x"}]});
    base.as_object_mut()
        .unwrap()
        .extend(spec.as_object().unwrap().clone());
    let spec: PodSpec = serde_json::from_value(base).unwrap();
    let mut p = Pod::new("web", spec);
    p.metadata = ObjectMeta {
        name: Some("web".into()),
        namespace: Some("team".into()),
        uid: Some("1234abcd-0000-0000-0000-000000000000".into()),
        ..Default::default()
    };
    p
}

fn desired(spec: serde_json::Value) -> DesiredPod {
    desired_of(
        &obj(spec),
        vec![
            ("PLAIN".into(), "x".into()),
            ("TOKEN".into(), "s3cret".into()),
        ],
        None,
    )
}

fn remote(extra: serde_json::Value) -> RemotePod {
    let mut v = json!({
        "id": "pod-1", "name": "team-web-1234abcd", "imageName": "img:1",
        "env": ["PLAIN=x", "TOKEN=s3cret", format!("{TAG_ENV}=1234abcd-0000-0000-0000-000000000000")],
        "machineId": "m-1", "machine": {"podHostId": "pod-1-m1", "gpuTypeId": "B", "secureCloud": true},
        "desiredStatus": "RUNNING", "gpuCount": 1, "containerDiskInGb": 20, "volumeInGb": 0,
        "dockerArgs": "", "ports": "22/tcp,8888/http", "costPerHr": 0.4,
        "runtime": {"uptimeInSeconds": 12, "ports": [
            {"ip": "1.2.3.4", "isIpPublic": true, "privatePort": 8888, "publicPort": 40001, "type": "http"},
            {"ip": "1.2.3.4", "isIpPublic": true, "privatePort": 22, "publicPort": 40002, "type": "tcp"}],
          "gpus": [{"id": "g0", "gpuUtilPercent": 50.0, "memoryUtilPercent": 10.0}]}
    });
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::from_value(v).unwrap()
}

#[test]
fn remote_name_and_tag() {
    let o = obj(json!({}));
    assert_eq!(remote_name(&o), "team-web-1234abcd");
    let d = desired(json!({}));
    assert!(
        d.request
            .env
            .iter()
            .any(|(k, v)| k == TAG_ENV && v == "1234abcd-0000-0000-0000-000000000000")
    );
    let a = PodAdapter::new(Duration::from_secs(1));
    assert!(a.claims(&o, &remote(json!({}))));
    // The tag decides over the name: another object's pod of the same name is not ours.
    let other = remote(json!({"env": [format!("{TAG_ENV}=ffff")]}));
    assert!(!a.claims(&o, &other));
    // A pod without a tag is recognised by its name.
    assert!(a.claims(&o, &remote(json!({"env": []}))));
    assert!(!a.claims(&o, &remote(json!({"env": [], "name": "x"}))));
}

#[test]
fn debug_of_desired_hides_env_values() {
    let d = desired(json!({}));
    let shown = format!("{d:?}");
    assert!(
        shown.contains("TOKEN") && !shown.contains("s3cret"),
        "{shown}"
    );
}

#[test]
fn matching_pod_is_up_to_date() {
    assert_eq!(
        plan_pod(&desired(json!({})), &remote(json!({}))),
        Plan::UpToDate
    );
}

#[test]
fn desired_state_drives_stop_and_resume() {
    let stopped = remote(json!({"desiredStatus": "EXITED", "runtime": null}));
    assert_eq!(
        plan_pod(&desired(json!({})), &stopped),
        Plan::Update(vec![PodChange::Resume])
    );
    let d = desired(json!({"desiredState": "Stopped"}));
    assert_eq!(
        plan_pod(&d, &remote(json!({}))),
        Plan::Update(vec![PodChange::Stop])
    );
    assert_eq!(plan_pod(&d, &stopped), Plan::UpToDate);
}

#[test]
fn an_adopted_pod_without_the_tag_has_no_env_change() {
    let d = desired(json!({}));
    assert!(d.request.env.iter().any(|(k, _)| k == TAG_ENV));
    let untagged = remote(json!({"env": ["TOKEN=s3cret", "PLAIN=x"]}));
    assert!(!immutable_changes(&d, &untagged).contains(&"env"));
    let other = remote(json!({"env": ["TOKEN=s3cret", "PLAIN=x", "EXTRA=1"]}));
    assert!(immutable_changes(&d, &other).contains(&"env"));
}

#[test]
fn immutable_changes_replace_or_block() {
    let d = desired(json!({"image": "img:2"}));
    match plan_pod(&d, &remote(json!({}))) {
        Plan::Replace { reason } => assert!(reason.contains("image"), "{reason}"),
        other => panic!("{other:?}"),
    }
    let d = desired(json!({"image": "img:2", "updateStrategy": "Never"}));
    match plan_pod(&d, &remote(json!({}))) {
        Plan::Blocked(f) => {
            assert_eq!(f.reason, "ImmutableFieldChanged");
            assert!(f.is_permanent());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn each_immutable_field_is_noticed() {
    let base = remote(json!({}));
    let cases = [
        (json!({"ports": ["8888/http"]}), "ports"),
        (json!({"containerDiskGb": 50}), "containerDiskGb"),
        (json!({"volumeGb": 10}), "volumeGb"),
        (
            json!({"gpu": {"typeIds": ["A", "B"], "count": 2}}),
            "gpu.count",
        ),
        (json!({"gpu": {"typeIds": ["A"]}}), "gpu.types"),
        (json!({"args": "sleep 1"}), "args"),
        (json!({"cloudType": "COMMUNITY"}), "cloudType"),
    ];
    for (spec, field) in cases {
        let got = immutable_changes(&desired(spec.clone()), &base);
        assert_eq!(got, vec![field], "{spec}");
    }
    // A changed Secret value is an env change, named without the value.
    let changed = desired_of(
        &obj(json!({})),
        vec![("PLAIN".into(), "x".into()), ("TOKEN".into(), "n3w".into())],
        None,
    );
    match plan_pod(&changed, &base) {
        Plan::Replace { reason } => {
            assert!(
                reason.contains("env") && !reason.contains("n3w"),
                "{reason}"
            )
        }
        other => panic!("{other:?}"),
    }
    // Port order and a type in the fallback list other than the first are no change.
    let reordered = remote(json!({"ports": "8888/http, 22/tcp"}));
    assert_eq!(plan_pod(&desired(json!({})), &reordered), Plan::UpToDate);
}

#[test]
fn readiness_and_phase() {
    let run = DesiredState::Running;
    let stop = DesiredState::Stopped;
    let booted = remote(json!({}));
    let booting = remote(json!({"runtime": null}));
    let exited = remote(json!({"desiredStatus": "EXITED", "runtime": null}));
    assert!(matches!(
        readiness_of(run, &booted),
        Readiness::Ready { .. }
    ));
    assert!(
        matches!(readiness_of(run, &booting), Readiness::Progressing { reason, .. } if reason == "Starting")
    );
    assert!(matches!(
        readiness_of(stop, &exited),
        Readiness::Ready { .. }
    ));
    assert!(
        matches!(readiness_of(stop, &booted), Readiness::Progressing { reason, .. } if reason == "Stopping")
    );
    assert_eq!(phase_of(run, &booted), PodPhase::Running);
    assert_eq!(phase_of(run, &booting), PodPhase::Starting);
    assert_eq!(phase_of(run, &exited), PodPhase::Starting);
    assert_eq!(phase_of(stop, &exited), PodPhase::Stopped);
    assert_eq!(phase_of(stop, &booted), PodPhase::Stopping);
}

#[test]
fn status_maps_the_platform_pod_without_env() {
    let s = status_of(
        PodStatus::default(),
        DesiredState::Running,
        &remote(json!({})),
    );
    assert_eq!(s.phase, Some(PodPhase::Running));
    assert_eq!(s.desired_status.as_deref(), Some("RUNNING"));
    assert_eq!(s.gpu_type_id.as_deref(), Some("B"));
    assert_eq!(s.gpu_count, Some(1));
    assert_eq!(s.cost_per_hour, Some(0.4));
    assert_eq!(s.machine_id.as_deref(), Some("m-1"));
    assert_eq!(s.pod_host_id.as_deref(), Some("pod-1-m1"));
    assert_eq!(s.uptime_seconds, Some(12));
    assert_eq!(s.remote_name.as_deref(), Some("team-web-1234abcd"));
    assert_eq!(s.ports.len(), 2);
    assert_eq!(s.ports[0].url.as_deref(), Some("http://1.2.3.4:40001"));
    assert_eq!(s.ports[0].public_ip.as_deref(), Some("1.2.3.4"));
    assert_eq!(s.ports[1].url, None);
    assert_eq!(s.gpus.len(), 1);
    let text = serde_json::to_string(&s).unwrap();
    assert!(!text.contains("s3cret"), "{text}");
}

#[test]
fn live_figures_alone_do_not_rewrite_status() {
    let run = DesiredState::Running;
    let at = |uptime: i64| {
        remote(json!({"runtime": {"uptimeInSeconds": uptime, "ports": [],
        "gpus": [{"id": "g0", "gpuUtilPercent": uptime as f64, "memoryUtilPercent": 1.0}]}}))
    };
    let written = status_of(PodStatus::default(), run, &at(12));
    let minute = Some(Duration::from_secs(60));
    // A later listing: only the live figures moved, and they were written a minute ago.
    let next = status_of(written.clone(), run, &at(72));
    let settled = settle_live_figures(&written, next.clone(), minute, LIVE_FIGURES_REFRESH);
    assert_eq!(settled, written);
    // Written long ago: refreshed.
    let stale = Some(LIVE_FIGURES_REFRESH + Duration::from_secs(1));
    let settled = settle_live_figures(&written, next, stale, LIVE_FIGURES_REFRESH);
    assert_eq!(settled.uptime_seconds, Some(72));
    assert_eq!(settled.gpus[0].gpu_util_percent, 72.0);
    // A restart (uptime went down) and any other change carry the new figures.
    let restarted = status_of(written.clone(), run, &at(3));
    let settled = settle_live_figures(&written, restarted, minute, LIVE_FIGURES_REFRESH);
    assert_eq!(settled.uptime_seconds, Some(3));
    let mut moved = status_of(written.clone(), run, &at(72));
    moved.cost_per_hour = Some(0.5);
    let settled = settle_live_figures(&written, moved, minute, LIVE_FIGURES_REFRESH);
    assert_eq!(settled.uptime_seconds, Some(72));
    // Stopped: no runtime, nothing kept.
    let exited = remote(json!({"desiredStatus": "EXITED", "runtime": null}));
    let stopped = status_of(written.clone(), DesiredState::Stopped, &exited);
    let settled = settle_live_figures(&written, stopped, minute, LIVE_FIGURES_REFRESH);
    assert_eq!(settled.uptime_seconds, None);
    assert!(settled.gpus.is_empty());
}

/// A clock stopped at one instant: the guardrails read no machine clock in tests.
struct Fixed(Timestamp);

impl guardrails::clock::WallClock for Fixed {
    fn now(&self) -> Timestamp {
        self.0
    }
}

fn adapter_at(now: &str) -> PodAdapter {
    PodAdapter::new(Duration::from_secs(1)).with_guardrails(
        Clock::new(Fixed(now.parse().unwrap())),
        Arc::new(Metrics::new()),
    )
}

#[test]
fn a_stop_in_desired_is_kept_whatever_the_guardrails_say() {
    // A Budget (StopNewest) stops a pod whose spec says Running: `desired` says
    // Stopped, the guardrails (none here) say the spec's Running.
    let a = adapter_at("2026-01-14T20:00:00Z");
    let resolved = ResolvedPod {
        account: AccountId::any(),
        pod: desired(json!({"desiredState": "Stopped"})),
    };
    assert_eq!(
        a.plan(
            &obj(json!({})),
            &resolved,
            &remote(json!({})),
            &PodState::default()
        ),
        Plan::Update(vec![PodChange::Stop])
    );
}

#[test]
fn a_closed_schedule_window_stops_a_running_spec_and_says_why() {
    let o = obj(json!({"schedule": {"timeZone": "UTC",
        "windows": [{"days": ["Mon", "Tue", "Wed", "Thu", "Fri"], "from": "08:00", "to": "18:00"}]}}));
    // Wednesday 2026-01-14, 20:00 UTC: closed until Thursday 08:00.
    let a = adapter_at("2026-01-14T20:00:00Z");
    let resolved = ResolvedPod {
        account: AccountId::any(),
        pod: desired(json!({})),
    };
    let stop = match a.plan(&o, &resolved, &remote(json!({})), &PodState::default()) {
        Plan::Update(changes) => match changes.as_slice() {
            [c @ PodChange::StopBy(Guardrail::Schedule, why)] => {
                assert!(why.contains("2026-01-15T08:00:00Z"), "{why}");
                c.clone()
            }
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    assert_eq!(a.change_reason_of(&stop), "StoppedBySchedule");
    assert!(
        a.describe_change(&stop)
            .starts_with("stopped the pod: outside its schedule")
    );
    // Stopped where the schedule wants it: Ready, phase Stopped, the window in status.
    let exited = remote(json!({"desiredStatus": "EXITED", "runtime": null}));
    assert_eq!(
        a.plan(&o, &resolved, &exited, &PodState::default()),
        Plan::UpToDate,
        "no resume outside the window"
    );
    assert!(
        matches!(a.report(&o, Some(&exited), Seen::default(), &PodState::default()).readiness.unwrap(), Readiness::Ready { message } if message.contains("outside its schedule"))
    );
    let status = a
        .report(&o, Some(&exited), Seen::default(), &PodState::default())
        .status;
    assert_eq!(status.phase, Some(PodPhase::Stopped));
    let window = status.guardrails.unwrap().schedule.unwrap();
    assert_eq!(window.window, gpucloud_crd::guardrails::WindowPhase::Closed);
    let conditions = a
        .report(&o, Some(&exited), Seen::default(), &PodState::default())
        .conditions;
    assert_eq!(conditions.len(), 1);
    assert_eq!(conditions[0].0, GUARDRAIL_CONDITION);
    assert_eq!(conditions[0].1.reason, "StoppedBySchedule");
    // Not deployed before the window, and looked at again when it opens.
    assert!(
        a.policy(&o, None, &PodState::default())
            .hold_create
            .is_some()
    );
    assert_eq!(
        a.policy(&o, Some(&exited), &PodState::default())
            .look_again_in,
        Some(Duration::from_secs(12 * 3600) + Duration::from_millis(250))
    );
    // Inside the window the same spec runs, and a pod without guardrails is untouched.
    let open = adapter_at("2026-01-14T10:00:00Z");
    assert_eq!(
        open.plan(&o, &resolved, &exited, &PodState::default()),
        Plan::Update(vec![PodChange::Resume])
    );
    assert!(
        open.policy(&o, None, &PodState::default())
            .hold_create
            .is_none()
    );
    let plain = obj(json!({}));
    assert!(
        a.report(&plain, Some(&exited), Seen::default(), &PodState::default())
            .conditions
            .is_empty()
    );
    assert_eq!(
        a.policy(&plain, Some(&exited), &PodState::default())
            .look_again_in,
        None
    );
}

#[test]
fn secrets_lists_env_references() {
    let o = obj(json!({"env": [
        {"name": "A", "valueFrom": {"secretKeyRef": {"name": "s1", "key": "k"}}},
        {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s1", "key": "j"}}},
        {"name": "C", "value": "v"}],
        "credentialsSecretRef": {"name": "creds"}}));
    let a = PodAdapter::new(Duration::from_secs(1));
    assert_eq!(a.secrets(&o), vec!["creds".to_string(), "s1".to_string()]);
}
