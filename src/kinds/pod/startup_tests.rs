//! Unit tests of reading start failures and of the startup decision, without a network.

use super::*;
use serde_json::json;

fn pod(id: &str, status: &str, running: bool, tagged: bool) -> RemotePod {
    let env: Vec<String> = if tagged {
        vec![format!("{TAG_ENV}=uid-1")]
    } else {
        Vec::new()
    };
    let mut v = json!({"id": id, "name": "n", "imageName": "img", "env": env, "machineId": "m",
        "desiredStatus": status});
    if running {
        v["runtime"] = json!({"uptimeInSeconds": 3, "ports": [], "gpus": []});
    }
    serde_json::from_value(v).unwrap()
}

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).unwrap()
}

fn facts<'a>(
    remote: Option<&'a RemotePod>,
    previous: Option<&'a StartupStatus>,
    detected: Option<&'a Detected>,
    now: Timestamp,
) -> StartupFacts<'a> {
    StartupFacts {
        timeout: Some(Duration::from_secs(600)),
        action: OnStartupFailure::Stop,
        generation: Some(3),
        previous,
        remote,
        wants_running: true,
        detected,
        now,
    }
}

#[test]
fn the_runtimes_failure_lines_are_told_apart_and_ordinary_lines_are_not_failures() {
    assert_eq!(
        classify(
            r#"failed to pull image "ghcr.io/me/x:1": manifest unknown: manifest for ghcr.io/me/x:1 not found"#
        ),
        Some(IMAGE_PULL_FAILED)
    );
    assert_eq!(
        classify(
            r#"failed to pull image "reg.example/x:1": unauthorized: authentication required"#
        ),
        Some(REGISTRY_AUTH_FAILED)
    );
    assert_eq!(
        classify(
            "Error response from daemon: pull access denied for me/x, repository does not exist"
        ),
        Some(REGISTRY_AUTH_FAILED)
    );
    assert_eq!(
        classify(
            "failed to start container: nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8, please update your driver to a newer version"
        ),
        Some(CUDA_TOO_OLD)
    );
    for fine in [
        "pulling image img:1",
        "image img:1 pulled",
        "container started",
        "model not found in cache, downloading",
    ] {
        assert_eq!(classify(fine), None, "{fine}");
    }
}

#[test]
fn only_the_operators_pods_that_are_on_their_way_up_are_starting() {
    assert!(is_starting(&pod("p", "RUNNING", false, true)));
    assert!(!is_starting(&pod("p", "RUNNING", true, true)));
    assert!(!is_starting(&pod("p", "EXITED", false, true)));
    assert!(!is_starting(&pod("p", "RUNNING", false, false)));
}

#[test]
fn a_starting_pod_is_timed_from_when_it_was_first_seen_and_due_at_the_timeout() {
    let p = pod("p-1", "RUNNING", false, true);
    let first = assess(&facts(Some(&p), None, None, at(0)));
    let status = first.status.clone().unwrap();
    assert_eq!((status.pod_id.as_str(), status.since.0), ("p-1", at(0)));
    assert_eq!(first.due_in, Some(Duration::from_secs(600)));
    assert!(first.stalled.is_none() && first.give_up.is_none());
    let later = assess(&facts(Some(&p), Some(&status), None, at(100)));
    assert_eq!(later.status.unwrap().since.0, at(0));
    assert_eq!(later.due_in, Some(Duration::from_secs(500)));
}

#[test]
fn a_failure_line_stalls_the_pod_with_the_line_and_keeps_it_across_restarts() {
    let p = pod("p-1", "RUNNING", false, true);
    let d = Detected {
        reason: IMAGE_PULL_FAILED,
        line: "failed to pull image \"x\": manifest unknown".into(),
        at: at(5),
    };
    let a = assess(&facts(Some(&p), None, Some(&d), at(10)));
    let (reason, message) = a.stalled.clone().unwrap();
    assert_eq!(reason, IMAGE_PULL_FAILED);
    assert!(message.contains("manifest unknown"), "{message}");
    assert!(message.contains("stopped at startupTimeout"), "{message}");
    assert!(a.give_up.is_none());
    // A restarted operator has no memory of the line: status has it.
    let status = a.status.unwrap();
    let again = assess(&facts(Some(&p), Some(&status), None, at(20)));
    assert_eq!(again.stalled.unwrap().0, IMAGE_PULL_FAILED);
}

#[test]
fn at_the_timeout_the_pod_is_given_up_on_and_held_until_the_spec_changes() {
    let p = pod("p-1", "RUNNING", false, true);
    let first = assess(&facts(Some(&p), None, None, at(0))).status.unwrap();
    let late = assess(&facts(Some(&p), Some(&first), None, at(600)));
    let (action, why) = late.give_up.clone().unwrap();
    assert_eq!(action, OnStartupFailure::Stop);
    assert!(why.contains("startupTimeout 600s"), "{why}");
    assert_eq!(late.stalled.clone().unwrap().0, STARTUP_TIMEOUT);
    let held = late.status.unwrap();
    assert_eq!(held.hold.as_ref().unwrap().generation, Some(3));
    // Stopped now: no second stop, still stalled, and no resume (the plan is Blocked).
    let stopped = pod("p-1", "EXITED", false, true);
    let after = assess(&facts(Some(&stopped), Some(&held), None, at(700)));
    assert!(after.give_up.is_none());
    assert!(after.stalled.is_some());
    // A stop that did not go through is made again.
    let still = assess(&facts(Some(&p), Some(&held), None, at(700)));
    assert!(still.give_up.is_some());
    // An edited spec drops the hold.
    let mut edited = facts(Some(&stopped), Some(&held), None, at(800));
    edited.generation = Some(4);
    assert_eq!(assess(&edited), StartupAssessment::default());
}

#[test]
fn a_terminated_pod_stays_held_without_a_pod_and_a_running_pod_clears_the_block() {
    let p = pod("p-1", "RUNNING", false, true);
    let first = assess(&facts(Some(&p), None, None, at(0))).status.unwrap();
    let mut f = facts(Some(&p), Some(&first), None, at(900));
    f.action = OnStartupFailure::Terminate;
    let late = assess(&f);
    assert_eq!(
        late.give_up.as_ref().unwrap().0,
        OnStartupFailure::Terminate
    );
    let held = late.status.unwrap();
    let gone = assess(&facts(None, Some(&held), None, at(950)));
    assert!(gone.give_up.is_none() && gone.stalled.is_some());
    let running = pod("p-1", "RUNNING", true, true);
    assert_eq!(
        assess(&facts(Some(&running), Some(&first), None, at(30))),
        StartupAssessment::default()
    );
}

#[test]
fn no_timeout_means_no_give_up_and_the_message_says_it_bills() {
    let p = pod("p-1", "RUNNING", false, true);
    let d = Detected {
        reason: CUDA_TOO_OLD,
        line: "unsatisfied condition: cuda>=12.8".into(),
        at: at(1),
    };
    let mut f = facts(Some(&p), None, Some(&d), at(100_000));
    f.timeout = None;
    let a = assess(&f);
    assert!(a.give_up.is_none() && a.due_in.is_none());
    assert!(a.stalled.unwrap().1.contains("set startupTimeout"));
}
