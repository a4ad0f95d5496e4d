use super::*;
use crate::app::election::record::TIMING;

const ME: &str = "replica-a";

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn wall() -> Timestamp {
    Timestamp::from_second(1_800_000_000).unwrap()
}

fn lease(holder: Option<&str>, renewed: i64, version: &str) -> Record {
    Record {
        spec: LeaseSpec {
            holder_identity: holder.map(str::to_string),
            renew_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
                Timestamp::from_second(1_800_000_000 + renewed).unwrap(),
            )),
            lease_duration_seconds: Some(15),
            lease_transitions: Some(1),
            ..LeaseSpec::default()
        },
        resource_version: Some(version.into()),
        uid: None,
    }
}

/// The record this process writes on `step`, as the apiserver would answer it.
fn written(step: &Step, version: &str) -> Record {
    let spec = match step {
        Step::Create(spec) | Step::Write { spec, .. } => spec.clone(),
        other => panic!("not a write: {other:?}"),
    };
    Record {
        spec,
        resource_version: Some(version.into()),
        uid: None,
    }
}

/// An election that has just taken a free Lease at `t0`.
fn leading(t0: Instant) -> Election {
    let mut e = Election::new(ME, TIMING, t0);
    assert_eq!(e.read(Some(lease(None, 0, "1")), t0), None);
    let step = e.step(t0, wall());
    assert_eq!(e.wrote(written(&step, "2"), t0), Some(Change::Leading));
    e
}

#[test]
fn a_follower_reads_first_then_takes_a_free_lease_at_once() {
    let t0 = Instant::now();
    let mut e = Election::new(ME, TIMING, t0);
    assert_eq!(e.step(t0, wall()), Step::Read);
    assert_eq!(e.read(Some(lease(Some(""), 0, "5")), t0), None);
    let Step::Write {
        spec,
        resource_version,
    } = e.step(t0, wall())
    else {
        panic!("a write");
    };
    assert_eq!(spec.holder_identity.as_deref(), Some(ME));
    assert_eq!(
        resource_version.as_deref(),
        Some("5"),
        "over the version read"
    );
    assert_eq!(spec.lease_transitions, Some(2), "the holder changed");
}

#[test]
fn no_lease_is_created() {
    let t0 = Instant::now();
    let mut e = Election::new(ME, TIMING, t0);
    e.read(None, t0);
    let Step::Create(spec) = e.step(t0, wall()) else {
        panic!("a create");
    };
    assert_eq!(spec.holder_identity.as_deref(), Some(ME));
    assert!(e.wrote(written(&Step::Create(spec), "1"), t0).is_some());
    assert!(e.is_leading());
}

#[test]
fn a_held_lease_is_read_every_retry_interval_and_taken_only_once_its_observed_term_ends() {
    let t0 = Instant::now();
    let mut e = Election::new(ME, TIMING, t0);
    // The holder's renewTime says nothing to this process: only what it saw, and when.
    assert_eq!(e.read(Some(lease(Some("other"), -3600, "1")), t0), None);
    assert_eq!(e.step(t0, wall()), Step::Wait(t0 + TIMING.retry_every));
    for s in 1..15 {
        let now = t0 + secs(s);
        assert_eq!(e.step(now, wall()), Step::Read, "at {s}s");
        e.read(Some(lease(Some("other"), -3600, "1")), now);
        assert_eq!(
            e.step(now, wall()),
            Step::Wait(now + secs(1)),
            "held at {s}s"
        );
    }
    let expired = t0 + secs(15);
    e.read(Some(lease(Some("other"), -3600, "1")), expired);
    let step = e.step(expired, wall());
    assert!(matches!(step, Step::Write { .. }), "{step:?}");
}

#[test]
fn a_renewing_holder_is_never_taken_over() {
    let t0 = Instant::now();
    let mut e = Election::new(ME, TIMING, t0);
    for s in 0..40 {
        let now = t0 + secs(s);
        // Renewed every 2 s: a new record, and a new term from each sight.
        let version = (s / 2).to_string();
        e.read(
            Some(lease(
                Some("other"),
                i64::try_from(s / 2).unwrap(),
                &version,
            )),
            now,
        );
        assert!(matches!(e.step(now, wall()), Step::Wait(_)), "at {s}s");
    }
}

#[test]
fn this_processs_own_lease_is_taken_back_at_once() {
    let t0 = Instant::now();
    let mut e = Election::new(ME, TIMING, t0);
    e.read(Some(lease(Some(ME), 0, "9")), t0);
    let step = e.step(t0, wall());
    let Step::Write { spec, .. } = &step else {
        panic!("a write: {step:?}");
    };
    assert_eq!(spec.lease_transitions, Some(1), "no change of holder");
    assert_eq!(e.wrote(written(&step, "10"), t0), Some(Change::Leading));
}

#[test]
fn a_leader_renews_every_2s_without_reading() {
    let t0 = Instant::now();
    let mut e = leading(t0);
    assert_eq!(e.step(t0 + secs(1), wall()), Step::Wait(t0 + secs(2)));
    let step = e.step(t0 + secs(2), wall());
    let Step::Write {
        resource_version, ..
    } = &step
    else {
        panic!("a renew: {step:?}");
    };
    assert_eq!(
        resource_version.as_deref(),
        Some("2"),
        "the version it wrote"
    );
    assert_eq!(
        e.wrote(written(&step, "3"), t0 + secs(2)),
        None,
        "still leading"
    );
    assert_eq!(e.step(t0 + secs(3), wall()), Step::Wait(t0 + secs(4)));
}

#[test]
fn a_leader_that_cannot_renew_retries_and_steps_down_at_the_deadline_since_the_renew_sent() {
    let t0 = Instant::now();
    let mut e = leading(t0);
    for s in 2..10 {
        let now = t0 + secs(s);
        assert_eq!(e.tick(now), None, "within the deadline at {s}s");
        assert!(matches!(e.step(now, wall()), Step::Write { .. }), "at {s}s");
        e.failed(now);
        assert!(
            e.request_budget(now) <= secs(10 - s),
            "ends by the deadline"
        );
    }
    // A wait never runs past the deadline.
    assert_eq!(
        e.step(t0 + secs(9) + Duration::from_millis(500), wall()),
        Step::Wait(t0 + secs(10))
    );
    assert_eq!(
        e.tick(t0 + secs(10)),
        Some(Change::SteppedDown {
            unrenewed_for: secs(10)
        })
    );
    assert!(!e.is_leading());
    assert_eq!(e.tick(t0 + secs(11)), None, "said once");
    // It reads, and takes its own Lease back when the apiserver answers.
    assert_eq!(e.step(t0 + secs(10), wall()), Step::Read);
    e.read(Some(lease(Some(ME), 0, "2")), t0 + secs(12));
    let step = e.step(t0 + secs(12), wall());
    assert_eq!(
        e.wrote(written(&step, "3"), t0 + secs(12)),
        Some(Change::Leading)
    );
}

#[test]
fn a_renew_that_succeeds_late_counts_from_when_it_was_sent() {
    let t0 = Instant::now();
    let mut e = leading(t0);
    let sent = t0 + secs(2);
    let step = e.step(sent, wall());
    // The answer came 7 s after it was sent: the deadline runs from the send.
    e.wrote(written(&step, "3"), sent);
    assert_eq!(e.tick(sent + secs(9)), None);
    assert!(e.tick(sent + secs(10)).is_some());
}

#[test]
fn a_conflict_means_someone_else_wrote_and_the_lease_is_read_again_at_once() {
    let t0 = Instant::now();
    let mut e = leading(t0);
    let renew = t0 + secs(2);
    assert!(matches!(e.step(renew, wall()), Step::Write { .. }));
    e.refused(renew);
    assert_eq!(e.step(renew, wall()), Step::Read);
    assert!(e.is_leading(), "not lost before the read says so");
    // Another process holds it now: lost, and this one waits.
    assert_eq!(
        e.read(Some(lease(Some("other"), 2, "7")), renew),
        Some(Change::Lost {
            holder: "other".into()
        })
    );
    assert!(!e.is_leading());
    assert!(matches!(e.step(renew, wall()), Step::Wait(_)));

    // Two followers race for a released Lease: the loser reads again and follows.
    let mut f = Election::new(ME, TIMING, t0);
    f.read(Some(lease(None, 0, "1")), t0);
    assert!(matches!(f.step(t0, wall()), Step::Write { .. }));
    f.refused(t0);
    assert_eq!(f.step(t0, wall()), Step::Read);
    assert_eq!(f.read(Some(lease(Some("other"), 0, "2")), t0), None);
    assert!(matches!(f.step(t0, wall()), Step::Wait(_)));
}

#[test]
fn a_lease_deleted_under_a_leader_is_made_again() {
    let t0 = Instant::now();
    let mut e = leading(t0);
    e.refused(t0 + secs(2));
    assert_eq!(e.read(None, t0 + secs(2)), None);
    let step = e.step(t0 + secs(2), wall());
    assert!(matches!(step, Step::Create(_)), "{step:?}");
    assert_eq!(
        e.wrote(written(&step, "1"), t0 + secs(2)),
        None,
        "still leading"
    );
}

#[test]
fn transitions_count_each_change_of_holder() {
    let t0 = Instant::now();
    let mut e = Election::new(ME, TIMING, t0);
    e.read(Some(lease(Some("other"), 0, "1")), t0);
    let expired = t0 + TIMING.lease_duration;
    e.read(Some(lease(Some("other"), 0, "1")), expired);
    let take = e.step(expired, wall());
    let Step::Write { spec, .. } = &take else {
        panic!("{take:?}");
    };
    assert_eq!(spec.lease_transitions, Some(2), "other → me");
    e.wrote(written(&take, "2"), expired);
    let renew = e.step(expired + TIMING.renew_every, wall());
    let Step::Write { spec, .. } = &renew else {
        panic!("{renew:?}");
    };
    assert_eq!(spec.lease_transitions, Some(2), "renewing is no transition");
}
