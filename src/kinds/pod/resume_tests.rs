//! Unit tests of the resume decision, without a network.

use super::*;
use serde_json::json;

fn pod(id: &str, status: &str) -> RemotePod {
    serde_json::from_value(json!({"id": id, "name": "n", "imageName": "img", "env": [],
        "machineId": "m", "desiredStatus": status}))
    .unwrap()
}

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).unwrap()
}

const TEN_MINUTES: Duration = Duration::from_secs(600);

/// [`assess`] of `remote` with a ten-minute timeout and no replacement made by this pass.
fn assess_of(
    policy: ResumePolicy,
    previous: Option<&ResumeStatus>,
    remote: &RemotePod,
    wants_running: bool,
    remembered: Option<Timestamp>,
    now: Timestamp,
) -> ResumeAssessment {
    assess(
        policy,
        TEN_MINUTES,
        previous,
        Some(remote),
        wants_running,
        remembered,
        None,
        now,
    )
}

#[test]
fn without_a_refusal_nothing_is_reported_or_relocated() {
    let p = pod("p-1", "EXITED");
    let a = assess_of(ResumePolicy::Recreate, None, &p, true, None, at(0));
    assert_eq!(a, ResumeAssessment::default());
}

#[test]
fn refusals_are_timed_from_the_first_and_relocate_only_under_recreate() {
    let p = pod("p-1", "EXITED");
    let a = assess_of(ResumePolicy::Recreate, None, &p, true, Some(at(0)), at(60));
    assert!(!a.relocate);
    assert_eq!(a.due_in, Some(Duration::from_secs(540)));
    let status = a.status.unwrap();
    assert_eq!(status.refused_since.as_ref().unwrap().0, at(0));
    // After a restart the memory is empty: status keeps the start of the wait.
    let b = assess_of(
        ResumePolicy::Recreate,
        Some(&status),
        &p,
        true,
        None,
        at(600),
    );
    assert!(b.relocate);
    let wait = assess_of(ResumePolicy::Wait, Some(&status), &p, true, None, at(6000));
    assert!(!wait.relocate && wait.due_in.is_none());
    assert!(wait.status.unwrap().refused_since.is_some());
}

#[test]
fn a_pod_meant_to_stay_stopped_or_running_again_is_not_relocated() {
    let p = pod("p-1", "EXITED");
    let a = assess_of(
        ResumePolicy::Recreate,
        None,
        &p,
        false,
        Some(at(0)),
        at(6000),
    );
    assert!(!a.relocate && a.status.is_none());
    let running = pod("p-1", "RUNNING");
    let b = assess_of(
        ResumePolicy::Recreate,
        None,
        &running,
        true,
        Some(at(0)),
        at(6000),
    );
    assert!(!b.relocate && b.status.is_none());
}

#[test]
fn a_refusal_of_another_pod_is_not_this_pods_and_the_replacement_is_kept() {
    let old = ResumeStatus {
        pod_id: Some("p-0".into()),
        refused_since: Some(Time(at(0))),
        replaced: Some(PodReplacement {
            from: "p-0".into(),
            to: "p-1".into(),
            at: Time(at(700)),
        }),
    };
    let p = pod("p-1", "RUNNING");
    let a = assess_of(ResumePolicy::Recreate, Some(&old), &p, true, None, at(800));
    assert!(!a.relocate);
    let status = a.status.unwrap();
    assert_eq!(status.pod_id, None);
    assert_eq!(status.replaced.unwrap().to, "p-1");
}

#[test]
fn the_wait_message_says_why_and_what_to_do() {
    let err = PlatformError::Capacity {
        operation: "POST /v2/pods/{id}/action",
        detail: "There are not enough free GPUs on the host machine to start this pod".into(),
    };
    let f = host_full_failure("p-1", &err);
    assert_eq!(f.reason, HOST_HAS_NO_FREE_GPU);
    for words in [
        "cannot resume pod p-1",
        "resumePolicy Recreate",
        "delete the Pod",
    ] {
        assert!(f.message.contains(words), "{}", f.message);
    }
}

#[test]
fn the_first_refusal_of_a_pod_counts_until_it_runs_and_a_replacement_until_status_has_it() {
    let mut state = PodState::default();
    state.refused("p1");
    let since = state.refused_since("p1").expect("remembered");
    state.refused("p1");
    assert_eq!(
        state.refused_since("p1"),
        Some(since),
        "the first refusal counts"
    );
    assert_eq!(
        state.refused_since("p2"),
        None,
        "another pod's refusal is not this one's"
    );
    state.settle(false, None);
    assert_eq!(state.refused_since("p1"), Some(since), "still stopped");
    state.settle(true, None);
    assert!(state.is_empty(), "running: the refusals are over");

    let replaced = PodReplacement {
        from: "p1".into(),
        to: "p2".into(),
        at: Time(Timestamp::from_second(100).unwrap()),
    };
    state.replaced = Some(replaced.clone());
    state.settle(true, None);
    assert_eq!(
        state.replaced(),
        Some(replaced.clone()),
        "status has not got it yet"
    );
    let written = ResumeStatus {
        replaced: Some(replaced),
        ..ResumeStatus::default()
    };
    state.settle(true, Some(&written));
    assert!(state.is_empty());
}
