//! Unit tests of the pass's decision.

use super::*;

#[derive(Clone, Debug, PartialEq)]
struct Remote(&'static str);

const NOUN: &str = "volume";

fn at(now: Instant, secs: i64) -> Instant {
    if secs >= 0 {
        now + Duration::from_secs(secs as u64)
    } else {
        now - Duration::from_secs((-secs) as u64)
    }
}

/// A pass at `now` with a listing started a second ago, nothing known, nothing claimed.
fn facts<'a>(now: Instant) -> Facts<'a, Remote> {
    Facts {
        now,
        observe_only: false,
        id: None,
        marker: None,
        listing_started: at(now, -1),
        by_id: None,
        claimed: &[],
        second_look: false,
        refused_before: None,
        when_gone: WhenGone::Recreate,
    }
}

fn now() -> Instant {
    Instant::now() + Duration::from_secs(3600)
}

fn marker(now: Instant, started: i64, settles: i64) -> Option<Marker> {
    Some(Marker {
        at: at(now, started),
        settles_at: at(now, settles),
    })
}

/// The step `look` takes; a test that expects one fails on a relist.
fn take<S>(look: Look<S>) -> S {
    match look {
        Look::Take(step) => step,
        Look::Relist(need) => panic!("wanted a step, got a relist for {need:?}"),
    }
}

fn fails_with(step: Step<Remote>, reason: &str) {
    match step {
        Step::Fail(f) => assert_eq!(f.reason, reason, "{f:?}"),
        other => panic!("want a failure {reason}, got {other:?}"),
    }
}

#[test]
fn an_object_with_nothing_known_and_nothing_claimed_is_created() {
    let n = now();
    assert_eq!(take(decide(&facts(n), NOUN)), Step::Create);
}

#[test]
fn a_remote_object_carrying_the_objects_name_is_adopted_not_created_again() {
    let n = now();
    let found = Remote("vol-1");
    let claimed = [&found];
    let f = Facts {
        claimed: &claimed,
        ..facts(n)
    };
    assert_eq!(
        take(decide(&f, NOUN)),
        Step::Adopt(found.clone(), Adoption::Existing)
    );
}

#[test]
fn two_remote_objects_carrying_the_name_stall_instead_of_guessing() {
    let n = now();
    let (a, b) = (Remote("a"), Remote("b"));
    let claimed = [&a, &b];
    let f = Facts {
        claimed: &claimed,
        ..facts(n)
    };
    fails_with(take(decide(&f, NOUN)), "AmbiguousExternalObject");
}

#[test]
fn a_create_refused_for_good_is_not_sent_again_for_the_same_generation_and_key() {
    let n = now();
    let refused = Failure::permanent("InvalidSpec", "unknown data center");
    let f = Facts {
        refused_before: Some(&refused),
        ..facts(n)
    };
    assert_eq!(take(decide(&f, NOUN)), Step::Fail(refused.clone()));
}

#[test]
fn a_known_id_in_the_listing_is_managed() {
    let n = now();
    let found = Remote("vol-1");
    let f = Facts {
        id: Some(("vol-1", IdChosenBy::Operator)),
        by_id: Some(&found),
        ..facts(n)
    };
    assert_eq!(take(decide(&f, NOUN)), Step::Manage(found.clone()));
}

#[test]
fn observe_only_reports_the_remote_object_and_changes_nothing() {
    let n = now();
    let found = Remote("vol-1");
    let f = Facts {
        observe_only: true,
        id: Some(("vol-1", IdChosenBy::Person)),
        by_id: Some(&found),
        ..facts(n)
    };
    assert_eq!(take(decide(&f, NOUN)), Step::Observe(found.clone()));
}

#[test]
fn observe_only_without_an_id_or_a_namesake_asks_for_the_id_and_creates_nothing() {
    let n = now();
    let f = Facts {
        observe_only: true,
        ..facts(n)
    };
    fails_with(take(decide(&f, NOUN)), "ExternalNotFound");
}

#[test]
fn a_known_id_missing_from_one_listing_is_looked_for_in_a_newer_one() {
    let n = now();
    let f = Facts {
        id: Some(("vol-1", IdChosenBy::Operator)),
        ..facts(n)
    };
    assert!(matches!(
        decide(&f, NOUN),
        Look::Relist(Freshness::StartedAfter(t)) if t == f.listing_started
    ));
}

#[test]
fn an_id_of_the_operator_missing_twice_is_recreated() {
    let n = now();
    let f = Facts {
        id: Some(("vol-1", IdChosenBy::Operator)),
        second_look: true,
        ..facts(n)
    };
    assert_eq!(take(decide(&f, NOUN)), Step::Recreate);
}

#[test]
fn a_missing_id_with_one_other_object_carrying_the_tag_adopts_that_one() {
    let n = now();
    let successor = Remote("vol-2");
    let claimed = [&successor];
    let f = Facts {
        id: Some(("vol-1", IdChosenBy::Operator)),
        second_look: true,
        claimed: &claimed,
        ..facts(n)
    };
    assert_eq!(
        take(decide(&f, NOUN)),
        Step::Adopt(successor.clone(), Adoption::Successor)
    );
    let other = Remote("vol-3");
    let two = [&successor, &other];
    let f = Facts { claimed: &two, ..f };
    fails_with(take(decide(&f, NOUN)), "AmbiguousExternalObject");
}

#[test]
fn an_id_a_person_chose_that_is_missing_is_reported_not_recreated() {
    let n = now();
    let f = Facts {
        id: Some(("vol-1", IdChosenBy::Person)),
        second_look: true,
        ..facts(n)
    };
    fails_with(take(decide(&f, NOUN)), "ExternalNotFound");
}

#[test]
fn a_missing_remote_object_is_reported_when_the_kind_says_so() {
    let n = now();
    let f = Facts {
        id: Some(("pod-1", IdChosenBy::Operator)),
        second_look: true,
        when_gone: WhenGone::Report,
        ..facts(n)
    };
    fails_with(take(decide(&f, NOUN)), "ExternalNotFound");
}

#[test]
fn a_missing_remote_object_is_reported_under_observe_only() {
    let n = now();
    let f = Facts {
        observe_only: true,
        id: Some(("vol-1", IdChosenBy::Operator)),
        second_look: true,
        ..facts(n)
    };
    fails_with(take(decide(&f, NOUN)), "ExternalNotFound");
}

#[test]
fn a_marker_beside_a_known_id_is_history_and_the_id_wins() {
    let n = now();
    let found = Remote("vol-1");
    let f = Facts {
        id: Some(("vol-1", IdChosenBy::Operator)),
        marker: marker(n, -5, 25),
        by_id: Some(&found),
        ..facts(n)
    };
    assert_eq!(take(decide(&f, NOUN)), Step::Manage(found.clone()));
}

#[test]
fn after_an_interrupted_create_a_listing_older_than_the_marker_proves_nothing() {
    let n = now();
    let f = Facts {
        marker: marker(n, -5, 25),
        listing_started: at(n, -10),
        ..facts(n)
    };
    assert_eq!(
        decide(&f, NOUN),
        Look::Relist(Freshness::StartedAfter(at(n, -5)))
    );
}

#[test]
fn after_an_interrupted_create_what_it_made_is_adopted_as_soon_as_a_listing_shows_it() {
    let n = now();
    let found = Remote("vol-1");
    let claimed = [&found];
    let f = Facts {
        marker: marker(n, -5, 25),
        listing_started: at(n, -1),
        claimed: &claimed,
        ..facts(n)
    };
    assert_eq!(
        take(decide(&f, NOUN)),
        Step::Adopt(found.clone(), Adoption::AfterInterruptedCreate)
    );
}

#[test]
fn after_an_interrupted_create_finding_nothing_waits_while_the_create_may_still_land() {
    let n = now();
    let f = Facts {
        marker: marker(n, -5, 25),
        ..facts(n)
    };
    assert_eq!(
        take(decide(&f, NOUN)),
        Step::WaitForPendingCreate(Duration::from_secs(25))
    );
}

#[test]
fn once_the_create_can_no_longer_land_a_listing_from_before_that_proves_nothing() {
    let n = now();
    let f = Facts {
        marker: marker(n, -60, -30),
        listing_started: at(n, -40),
        ..facts(n)
    };
    assert_eq!(
        decide(&f, NOUN),
        Look::Relist(Freshness::StartedAfter(at(n, -30)))
    );
}

#[test]
fn once_the_create_can_no_longer_land_finding_nothing_means_create() {
    let n = now();
    let f = Facts {
        marker: marker(n, -60, -30),
        listing_started: at(n, -1),
        ..facts(n)
    };
    assert_eq!(take(decide(&f, NOUN)), Step::Create);
}

#[test]
fn after_an_interrupted_create_two_namesakes_stall() {
    let n = now();
    let (a, b) = (Remote("a"), Remote("b"));
    let claimed = [&a, &b];
    let f = Facts {
        marker: marker(n, -60, -30),
        claimed: &claimed,
        ..facts(n)
    };
    fails_with(take(decide(&f, NOUN)), "AmbiguousExternalObject");
}

#[test]
fn a_marker_restored_from_a_backup_without_status_finds_its_object_by_name() {
    // Days old: long settled; the object's status (and so its id) was not restored.
    let n = now();
    let found = Remote("vol-1");
    let claimed = [&found];
    let f = Facts {
        marker: marker(n, -3 * 86_400, -3 * 86_400 + 30),
        claimed: &claimed,
        ..facts(n)
    };
    assert_eq!(
        take(decide(&f, NOUN)),
        Step::Adopt(found.clone(), Adoption::AfterInterruptedCreate)
    );
}

const TIMEOUT: Duration = Duration::from_secs(30);

#[test]
fn an_answered_create_of_this_process_settles_when_it_was_answered() {
    let started = Instant::now();
    let marker = Timestamp::now();
    let answered = started + Duration::from_secs(5);
    let own = UnsureCreate {
        marker,
        settled_at: answered,
    };
    assert_eq!(
        pending_settles_at(marker, Some(own), started, TIMEOUT),
        answered
    );
}

#[test]
fn a_marker_left_by_an_earlier_process_waits_for_its_create_to_be_over() {
    let started = Instant::now();
    let marker = Timestamp::now();
    assert_eq!(
        pending_settles_at(marker, None, started, TIMEOUT),
        started + TIMEOUT
    );
    // A record of another create (an older marker) says nothing of this one.
    let older = UnsureCreate {
        marker: marker - k8s_openapi::jiff::SignedDuration::from_secs(60),
        settled_at: started,
    };
    assert_eq!(
        pending_settles_at(marker, Some(older), started, TIMEOUT),
        started + TIMEOUT
    );
}

#[test]
fn a_create_that_may_have_happened_keeps_its_marker_until_it_settles() {
    let answered = Failure {
        applied: Applied::MaybeAnswered,
        ..Failure::retryable("PlatformUnavailable", "502")
    };
    assert_eq!(
        after_failed_create(&answered, TIMEOUT),
        FailedCreate::MaybeMade {
            settles_in: Duration::ZERO
        }
    );
    let unanswered = Failure {
        applied: Applied::MaybeUnanswered,
        ..answered
    };
    assert_eq!(
        after_failed_create(&unanswered, TIMEOUT),
        FailedCreate::MaybeMade {
            settles_in: TIMEOUT
        }
    );
}

#[test]
fn a_create_that_made_nothing_drops_its_marker_and_remembers_a_refusal() {
    let refused = Failure::permanent("InvalidSpec", "unknown data center");
    assert_eq!(
        after_failed_create(&refused, TIMEOUT),
        FailedCreate::NotMade {
            refused_for_good: true
        }
    );
    let busy = Failure::retryable("RateLimited", "429");
    assert_eq!(
        after_failed_create(&busy, TIMEOUT),
        FailedCreate::NotMade {
            refused_for_good: false
        }
    );
}

#[test]
fn a_remote_object_is_kept_when_orphaned_observed_or_paused() {
    use DeletionPolicy::{Delete, Orphan};
    use ManagementPolicy::{Manage, ObserveOnly};
    assert!(!keeps_remote(Delete, Manage, false));
    assert!(keeps_remote(Orphan, Manage, false));
    assert!(keeps_remote(Delete, ObserveOnly, false));
    assert!(keeps_remote(Delete, Manage, true));
}

fn cleanup<'a>(now: Instant) -> CleanupFacts<'a> {
    CleanupFacts {
        now,
        keeps_remote: false,
        id: None,
        marker: None,
        listing: None,
    }
}

#[test]
fn deleting_with_orphan_observe_only_or_paused_releases_the_remote_object() {
    let n = now();
    let f = CleanupFacts {
        keeps_remote: true,
        id: Some("vol-1"),
        ..cleanup(n)
    };
    assert_eq!(take(decide_cleanup(&f)), Cleanup::Release);
}

#[test]
fn deleting_deletes_the_known_remote_object() {
    let n = now();
    let f = CleanupFacts {
        id: Some("vol-1"),
        marker: marker(n, -60, -30),
        ..cleanup(n)
    };
    assert_eq!(
        take(decide_cleanup(&f)),
        Cleanup::Delete(vec!["vol-1".into()])
    );
}

#[test]
fn deleting_an_object_never_created_deletes_nothing() {
    assert_eq!(
        take(decide_cleanup(&cleanup(now()))),
        Cleanup::Delete(vec![])
    );
}

#[test]
fn deleting_while_a_create_may_still_land_waits_for_it() {
    let n = now();
    let f = CleanupFacts {
        marker: marker(n, -5, 25),
        ..cleanup(n)
    };
    assert_eq!(
        take(decide_cleanup(&f)),
        Cleanup::WaitForPendingCreate(Duration::from_secs(25))
    );
}

#[test]
fn deleting_after_an_interrupted_create_deletes_what_a_newer_listing_shows() {
    let n = now();
    let stale = CleanupFacts {
        marker: marker(n, -60, -30),
        listing: Some((at(n, -40), vec!["vol-old"])),
        ..cleanup(n)
    };
    assert_eq!(
        decide_cleanup(&stale),
        Look::Relist(Freshness::StartedAfter(at(n, -30)))
    );
    let fresh = CleanupFacts {
        listing: Some((at(n, -1), vec!["vol-2", "vol-1"])),
        ..stale
    };
    assert_eq!(
        take(decide_cleanup(&fresh)),
        Cleanup::Delete(vec!["vol-1".into(), "vol-2".into()])
    );
}

const CRD: &str = "networkvolumes.gpucloud.io";

#[test]
fn a_delete_goes_ahead_while_the_kinds_crd_is_installed() {
    assert_eq!(guard_delete(CRD, &CrdState::Installed), DeleteGuard::Delete);
}

#[test]
fn a_delete_while_the_kinds_crd_is_being_deleted_releases_instead() {
    let DeleteGuard::Release { why } = guard_delete(CRD, &CrdState::Deleting) else {
        panic!("a CRD being deleted must not let a delete through");
    };
    assert_eq!(
        kept_for_crd(&why, NOUN, "vol-1"),
        "the CustomResourceDefinition networkvolumes.gpucloud.io is being deleted: the remote \
         volume vol-1 is kept and recorded as released, not deleted"
    );
}

#[test]
fn a_delete_after_the_kinds_crd_is_gone_releases_instead() {
    // Its objects are still being removed when the CRD can no longer be read by name.
    let DeleteGuard::Release { why } = guard_delete(CRD, &CrdState::Gone) else {
        panic!("a CRD that is gone must not let a delete through");
    };
    assert!(why.contains(CRD), "{why}");
}

#[test]
fn a_delete_whose_crd_cannot_be_read_waits_and_says_why() {
    let unreadable = CrdState::Unreadable("403 forbidden".into());
    let DeleteGuard::Hold(failure) = guard_delete(CRD, &unreadable) else {
        panic!("an unknown CRD must not let a delete through");
    };
    assert_eq!(failure.reason, "CrdUnreadable");
    assert!(!failure.is_permanent(), "retried: {failure:?}");
    assert!(
        failure.message.contains(CRD) && failure.message.contains("403 forbidden"),
        "{}",
        failure.message
    );
}
