//! Unit tests of the Budgets' ledger: admission, holds, reservations and figures.

use super::*;

fn p(name: impl Into<String>) -> Member {
    Member::pod(name)
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn rule(max: f64, action: BudgetAction) -> BudgetRule {
    BudgetRule {
        max_cost_per_hour: max,
        max_spend_per_month: None,
        selector: None,
        action,
    }
}

fn running(cost: f64, started_secs: i64) -> Facts {
    Facts {
        labels: BTreeMap::new(),
        running: true,
        cost_per_hour: Some(cost),
        started: Some(Timestamp::from_second(started_secs).unwrap()),
        platform_id: None,
        stoppable: true,
    }
}

#[test]
fn reservations_stop_a_burst_at_the_cap() {
    let mut l = NamespaceLedger::default();
    l.set_budget("team", rule(1.0, BudgetAction::Deny));
    let now = Instant::now();
    let none = BTreeMap::new();
    let admitted: Vec<usize> = (0..50)
        .filter(|i| l.reserve(&p(format!("p{i}")), &none, 0.1, now).is_ok())
        .collect();
    assert_eq!(admitted.len(), 10, "a budget of 1.0 fits ten pods at 0.1");
    assert_eq!(l.held_count(), 40);
    let err = l.reserve(&p("p49"), &none, 0.1, now).unwrap_err();
    assert_eq!(err.budget, "team");
    assert!((err.reserved_per_hour - 1.0).abs() < 1e-9, "{err:?}");
    assert!(
        err.message().contains("maxCostPerHour 1.0000"),
        "{}",
        err.message()
    );
    // Asking again for an admitted pod charges it once, not twice.
    assert!(l.reserve(&p("p0"), &none, 0.1, now).is_ok());
}

#[test]
fn a_pod_seen_running_replaces_its_reservation_with_the_platform_price() {
    let mut l = NamespaceLedger::default();
    l.set_budget("team", rule(1.0, BudgetAction::Deny));
    let now = Instant::now();
    l.reserve(&p("a"), &BTreeMap::new(), 0.5, now).unwrap();
    l.observe(&p("a"), running(0.3, 10));
    let f = l.figures("team").unwrap();
    assert_eq!(f.reserved_per_hour, 0.0);
    assert!((f.cost_per_hour - 0.3).abs() < 1e-9);
    assert!((f.headroom_per_hour - 0.7).abs() < 1e-9);
    assert_eq!(f.running_count, 1);
    // Seen starting without a price yet: the reservation still stands.
    l.reserve(&p("b"), &BTreeMap::new(), 0.2, now).unwrap();
    l.observe(
        &p("b"),
        Facts {
            running: true,
            ..Default::default()
        },
    );
    assert!((l.figures("team").unwrap().reserved_per_hour - 0.2).abs() < 1e-9);
}

#[test]
fn release_and_stop_make_room_for_held_pods() {
    let mut l = NamespaceLedger::default();
    l.set_budget("team", rule(0.5, BudgetAction::Deny));
    let now = Instant::now();
    let none = BTreeMap::new();
    l.reserve(&p("a"), &none, 0.4, now).unwrap();
    assert!(l.reserve(&p("b"), &none, 0.3, now).is_err());
    assert!(l.is_held(&p("b")));
    assert!(l.fitting_held().is_empty());
    // The create of a did not happen.
    l.release(&p("a"));
    assert_eq!(l.fitting_held(), vec![p("b")]);
    l.reserve(&p("b"), &none, 0.3, now).unwrap();
    assert!(!l.is_held(&p("b")));
    // b runs, then stops: its charge goes.
    l.observe(&p("b"), running(0.3, 1));
    assert!(l.reserve(&p("c"), &none, 0.3, now).is_err());
    l.observe(
        &p("b"),
        Facts {
            running: false,
            cost_per_hour: Some(0.3),
            ..Default::default()
        },
    );
    assert_eq!(l.fitting_held(), vec![p("c")]);
    // A deleted pod takes its charge and its hold with it.
    l.forget(&p("c"));
    assert_eq!(l.held_count(), 0);
}

#[test]
fn old_reservations_expire() {
    let mut l = NamespaceLedger::default();
    l.set_budget("team", rule(0.5, BudgetAction::Deny));
    let then = Instant::now();
    l.reserve(&p("a"), &BTreeMap::new(), 0.5, then).unwrap();
    l.expire(then + Duration::from_secs(30), Duration::from_secs(60));
    assert!(l.check(&p("b"), &BTreeMap::new(), 0.1).is_err());
    l.expire(then + Duration::from_secs(61), Duration::from_secs(60));
    assert!(l.check(&p("b"), &BTreeMap::new(), 0.1).is_ok());
}

#[test]
fn a_selector_narrows_the_budget_and_every_matching_budget_must_fit() {
    let mut l = NamespaceLedger::default();
    let gpu: Selector = Selector::from_iter([("team", "ml")]);
    l.set_budget(
        "ml",
        BudgetRule {
            max_cost_per_hour: 0.5,
            max_spend_per_month: None,
            selector: Some(gpu),
            action: BudgetAction::Deny,
        },
    );
    l.set_budget("all", rule(1.0, BudgetAction::Deny));
    let now = Instant::now();
    let ml = labels(&[("team", "ml")]);
    let web = labels(&[("team", "web")]);
    l.reserve(&p("m1"), &ml, 0.5, now).unwrap();
    // ml is full; web only answers to the namespace-wide budget.
    assert_eq!(l.reserve(&p("m2"), &ml, 0.1, now).unwrap_err().budget, "ml");
    l.reserve(&p("w1"), &web, 0.5, now).unwrap();
    assert_eq!(
        l.reserve(&p("w2"), &web, 0.1, now).unwrap_err().budget,
        "all"
    );
    let f = l.figures("ml").unwrap();
    assert!((f.reserved_per_hour - 0.5).abs() < 1e-9);
    assert_eq!(f.held, vec!["Pod/m2".to_string()]);
    assert_eq!(l.figures("all").unwrap().held.len(), 2);
}

#[test]
fn no_budget_admits_everything() {
    let mut l = NamespaceLedger::default();
    assert!(
        l.reserve(&p("a"), &BTreeMap::new(), 100.0, Instant::now())
            .is_ok()
    );
}

#[test]
fn stop_newest_stops_the_most_recently_started_until_it_fits() {
    let mut l = NamespaceLedger::default();
    l.set_budget("team", rule(1.0, BudgetAction::StopNewest));
    l.observe(&p("old"), running(0.4, 100));
    l.observe(&p("mid"), running(0.4, 200));
    l.observe(&p("new"), running(0.4, 300));
    l.observe(
        &p("idle"),
        Facts {
            running: false,
            cost_per_hour: Some(0.4),
            ..Default::default()
        },
    );
    // 1.2 over 1.0: stopping the newest (0.4) is enough.
    assert_eq!(l.mark_stops("team"), vec![p("new")]);
    assert!(l.must_stop(&p("new")));
    // Asked again while it stops: nothing more.
    assert!(l.mark_stops("team").is_empty());
    // A price rise: the next newest goes too.
    l.observe(&p("mid"), running(0.9, 200));
    assert_eq!(l.mark_stops("team"), vec![p("mid")]);
    assert_eq!(
        l.figures("team").unwrap().stopping,
        vec!["Pod/mid".to_string(), "Pod/new".to_string()]
    );
    // Seen stopped: no longer to stop (a resume then asks for room like any other,
    // at the price it ran at: a stopped pod's listing says 0).
    l.observe(
        &p("new"),
        Facts {
            running: false,
            cost_per_hour: Some(0.0),
            ..Default::default()
        },
    );
    assert!(!l.must_stop(&p("new")));
    assert_eq!(l.last_price(&p("new")), Some(0.4));
}

#[test]
fn stop_newest_takes_a_pod_without_start_time_first_and_deny_stops_nothing() {
    let mut l = NamespaceLedger::default();
    l.set_budget("team", rule(0.5, BudgetAction::StopNewest));
    l.observe(&p("old"), running(0.4, 100));
    l.observe(
        &p("fresh"),
        Facts {
            running: true,
            cost_per_hour: Some(0.2),
            stoppable: true,
            ..Default::default()
        },
    );
    assert_eq!(l.mark_stops("team"), vec![p("fresh")]);
    let mut deny = NamespaceLedger::default();
    deny.set_budget("team", rule(0.1, BudgetAction::Deny));
    deny.observe(&p("old"), running(0.4, 100));
    assert!(deny.mark_stops("team").is_empty());
}

fn endpoint(cost: f64) -> Facts {
    Facts {
        running: true,
        cost_per_hour: Some(cost),
        ..Default::default()
    }
}

#[test]
fn endpoints_and_pods_share_the_budget_and_may_share_a_name() {
    let mut l = NamespaceLedger::default();
    l.set_budget("team", rule(2.0, BudgetAction::Deny));
    let now = Instant::now();
    let none = BTreeMap::new();
    l.observe(&p("web"), running(0.5, 10));
    l.observe(&Member::endpoint("web"), endpoint(0.96));
    let f = l.figures("team").unwrap();
    assert!((f.cost_per_hour - 1.46).abs() < 1e-9, "{f:?}");
    assert_eq!(f.running_count, 2);
    assert!((l.running_cost() - 1.46).abs() < 1e-9);
    // An endpoint whose minimum workers would go over is held, with its own words.
    let err = l
        .reserve(&Member::endpoint("api"), &none, 0.96, now)
        .unwrap_err();
    assert!(
        err.message()
            .contains("this endpoint's minimum workers 0.9600/h"),
        "{}",
        err.message()
    );
    assert!(l.is_held(&Member::endpoint("api")));
    assert!(!l.is_held(&p("api")));
    assert_eq!(
        l.figures("team").unwrap().held,
        vec!["Endpoint/api".to_string()]
    );
    // A pod that fits is admitted beside it.
    l.reserve(&p("small"), &none, 0.5, now).unwrap();
    // The pod going makes room: the endpoint is the one to wake.
    l.forget(&p("web"));
    l.release(&p("small"));
    assert_eq!(l.fitting_held(), vec![Member::endpoint("api")]);
    // A held endpoint whose spec no longer asks for room is not held any more.
    l.unhold(&Member::endpoint("api"));
    assert_eq!(l.held_count(), 0);
}

#[test]
fn an_endpoint_raise_is_counted_until_its_status_catches_up() {
    let mut l = NamespaceLedger::default();
    l.set_budget("team", rule(3.0, BudgetAction::Deny));
    let now = Instant::now();
    let none = BTreeMap::new();
    let ep = Member::endpoint("api");
    l.observe(&ep, endpoint(0.96));
    // workersMin 2 -> 4: the reservation stands for the new cost, the old one is not
    // counted beside it.
    l.reserve(&ep, &none, 1.92, now).unwrap();
    let f = l.figures("team").unwrap();
    assert!((f.reserved_per_hour - 1.92).abs() < 1e-9, "{f:?}");
    assert_eq!(f.cost_per_hour, 0.0);
    // Another raise elsewhere must not fit in the room the first one took.
    assert!(l.check(&Member::endpoint("b"), &none, 1.2).is_err());
    // An event with the old status (the spec edit itself) keeps the reservation.
    l.observe(&ep, endpoint(0.96));
    assert!((l.figures("team").unwrap().reserved_per_hour - 1.92).abs() < 1e-9);
    // Status reaches the new cost: the reservation has done its job.
    l.observe(&ep, endpoint(1.92));
    let f = l.figures("team").unwrap();
    assert_eq!(f.reserved_per_hour, 0.0);
    assert!((f.cost_per_hour - 1.92).abs() < 1e-9);
    // A pod's reservation goes on its first price, even a lower one.
    l.reserve(&p("pod"), &none, 0.5, now).unwrap();
    l.observe(&p("pod"), running(0.3, 5));
    assert_eq!(l.figures("team").unwrap().reserved_per_hour, 0.0);
}

#[test]
fn stop_newest_counts_endpoints_but_stops_only_pods() {
    let mut l = NamespaceLedger::default();
    l.set_budget("team", rule(1.0, BudgetAction::StopNewest));
    l.observe(&p("old"), running(0.4, 100));
    l.observe(&p("new"), running(0.4, 200));
    // The newest member of all, and the dearest: an endpoint, never chosen.
    let mut ep = endpoint(0.9);
    ep.started = Some(Timestamp::from_second(300).unwrap());
    l.observe(&Member::endpoint("api"), ep);
    // 1.7 over 1.0: both pods go (0.9 still over, but no pod is left to stop).
    assert_eq!(l.mark_stops("team"), vec![p("new"), p("old")]);
    assert!(!l.must_stop(&Member::endpoint("api")));
    assert_eq!(
        l.figures("team").unwrap().stopping,
        vec!["Pod/new".to_string(), "Pod/old".to_string()]
    );
}

#[test]
fn running_cost_counts_every_pod_seen_running() {
    let mut l = NamespaceLedger::default();
    l.observe(&p("a"), running(0.25, 1));
    l.observe(&p("b"), running(0.5, 2));
    l.reserve(&p("c"), &BTreeMap::new(), 9.0, Instant::now())
        .unwrap();
    assert!((l.running_cost() - 0.75).abs() < 1e-9);
}

/// A member billed `amount` this month.
fn billed(cost: f64, started_secs: i64, id: &str) -> Facts {
    Facts {
        platform_id: Some(id.into()),
        ..running(cost, started_secs)
    }
}

#[test]
fn a_month_spent_leaves_no_room_and_stop_newest_stops_every_pod() {
    let mut l = NamespaceLedger::default();
    let mut rule = rule(10.0, BudgetAction::StopNewest);
    rule.max_spend_per_month = Some(5.0);
    l.set_budget("b", rule);
    l.observe(&p("old"), billed(0.5, 100, "id-old"));
    l.observe(&p("new"), billed(0.5, 200, "id-new"));
    let now = Instant::now();
    // Before billing is read, the hourly cap is what counts.
    assert!(l.check(&p("third"), &BTreeMap::new(), 0.5).is_ok());
    assert_eq!(l.figures("b").unwrap().spent_this_month, None);
    let spend = |old: f64, new: f64| {
        Some(Arc::new(MonthSpend::from([
            ("id-old".to_string(), old),
            ("id-new".to_string(), new),
            ("id-elsewhere".to_string(), 100.0),
        ])))
    };
    l.set_spend(spend(2.0, 1.0));
    assert_eq!(
        l.figures("b").unwrap().spent_this_month,
        Some(3.0),
        "only its members"
    );
    assert!(l.check(&p("third"), &BTreeMap::new(), 0.5).is_ok());
    l.set_spend(spend(3.0, 2.0));
    let refused = l
        .reserve(&p("third"), &BTreeMap::new(), 0.5, now)
        .unwrap_err();
    assert_eq!(refused.month, Some((5.0, 5.0)));
    assert_eq!(l.figures("b").unwrap().month_cap_reached, Some((5.0, 5.0)));
    assert!(
        refused.message().contains("maxSpendPerMonth"),
        "{}",
        refused.message()
    );
    assert_eq!(l.figures("b").unwrap().headroom_per_hour, -1.0);
    let stopped = l.mark_stops("b");
    assert_eq!(
        stopped,
        vec![p("new"), p("old")],
        "newest first, until nothing runs"
    );
    // A new month: the spend is small again, and the held pod fits.
    l.set_spend(spend(0.0, 0.0));
    assert_eq!(l.fitting_held(), vec![p("third")]);
}

fn cl(name: &str) -> Member {
    Member::cluster(name)
}

#[test]
fn stop_newest_deletes_a_cluster_only_when_its_policy_lets_it_and_reports_the_rest() {
    let mut l = NamespaceLedger::default();
    l.set_budget("team", rule(50.0, BudgetAction::StopNewest));
    l.observe(&p("old"), running(10.0, 100));
    let kept = Facts {
        stoppable: false,
        ..running(40.0, 300)
    };
    l.observe(&cl("kept"), kept);
    // 50 is the cap: nothing to do.
    assert!(l.mark_stops("team").is_empty());
    // A deletable cluster started later pushes it over: it is the newest, and it goes.
    l.observe(&cl("scratch"), running(30.0, 400));
    assert_eq!(l.mark_stops("team"), vec![cl("scratch")]);
    assert!(l.must_stop(&cl("scratch")));
    assert_eq!(l.figures("team").unwrap().stopping, vec!["Cluster/scratch"]);
    // Seen deleted: the newest stoppable left is the old pod; the kept cluster is
    // never chosen, and a Budget still over says which members its policy keeps.
    l.observe(
        &cl("scratch"),
        Facts {
            running: false,
            ..Default::default()
        },
    );
    l.observe(
        &cl("kept"),
        Facts {
            stoppable: false,
            ..running(60.0, 300)
        },
    );
    assert_eq!(l.mark_stops("team"), vec![p("old")]);
    l.observe(
        &p("old"),
        Facts {
            running: false,
            ..Default::default()
        },
    );
    assert!(l.mark_stops("team").is_empty());
    let f = l.figures("team").unwrap();
    assert_eq!(f.kept, vec!["Cluster/kept"]);
    assert!(f.stopping.is_empty());
}

#[test]
fn a_cluster_is_held_by_deny_with_its_own_words() {
    let mut l = NamespaceLedger::default();
    l.set_budget("team", rule(50.0, BudgetAction::Deny));
    let err = l
        .reserve(&cl("big"), &BTreeMap::new(), 80.0, Instant::now())
        .unwrap_err();
    assert!(
        err.message().contains("this cluster 80.0000/h"),
        "{}",
        err.message()
    );
    assert_eq!(l.figures("team").unwrap().held, vec!["Cluster/big"]);
}
