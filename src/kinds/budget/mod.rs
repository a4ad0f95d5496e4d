//! The Budget kind. A Budget is not a platform object: its controller ([`controller`])
//! runs on the engine's runtime with no engine pass. The watches of Budgets and of their
//! members feed the shared [`BudgetLedger`] (every Budget, gpucloud Pod, Endpoint and
//! Cluster of the watched namespaces), and each pass computes the Budget's status from the
//! ledger ([`status_of`], pure), writes it only when it changed, and with `StopNewest`
//! marks the Pods to stop. No platform call is made here but the billing's reads
//! ([`spend`]).
//!
//! [`BudgetLedger`]: gpucloud_policy::budget::BudgetLedger

mod controller;
mod members;
pub mod spend;
pub mod summary;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use gpucloud_crd::condition::Condition;
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use kube::core::Selector;

use gpucloud_crd::budget::{BUDGET_EXCEEDED, Budget, BudgetStatus};
use gpucloud_policy::budget::ledger::{BudgetRule, Figures};

pub use controller::{BudgetController, BudgetReconciler};
use spend::Billing;

use crate::kinds::shared::registration::{Census, Controllers, RegisteredKind};
use crate::kinds::summary::rows_of;
use kube::CustomResourceExt;
use tokio::task::JoinHandle;

/// How many held Pods, Endpoints and Clusters a Budget's status lists.
const HELD_NAMES: usize = 50;

#[derive(Debug, thiserror::Error)]
pub enum BudgetError {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

/// Pure: the ledger's rule for `budget`, or why its selector cannot be used.
pub fn rule_of(budget: &Budget) -> Result<BudgetRule, String> {
    let selector = match &budget.spec.selector {
        Some(s) => Some(
            Selector::try_from(s.clone()).map_err(|e| format!("spec.selector is invalid: {e}"))?,
        ),
        None => None,
    };
    Ok(BudgetRule {
        max_cost_per_hour: budget.spec.max_cost_per_hour,
        max_spend_per_month: budget.spec.max_spend_per_month,
        selector,
        action: budget.spec.action,
    })
}

/// Pure: the status of `budget` given its figures (`Err`: its rule is unusable). The
/// condition keeps its transition time while its status does not change, so an unchanged
/// situation gives an equal status and no write.
pub fn status_of(
    budget: &Budget,
    figures: Result<&Figures, &str>,
    billing: &Billing,
    now: Timestamp,
) -> BudgetStatus {
    let previous = budget.status.clone().unwrap_or_default();
    let round = |v: f64| (v * 1e6).round() / 1e6;
    let (status, reason, message, mut out) = match figures {
        Ok(f) => {
            let month_reached = f.month_cap_reached;
            let exceeded = !f.held.is_empty()
                || !f.stopping.is_empty()
                || !f.kept.is_empty()
                || month_reached.is_some();
            let (reason, message) = if let (Some((spent, max)), true) =
                (month_reached, f.stopping.is_empty())
            {
                (
                    "MonthlySpendReached",
                    format!(
                        "{spent:.4} billed this month has reached maxSpendPerMonth {max:.4}: no new cost until next month{}",
                        if f.held.is_empty() {
                            String::new()
                        } else {
                            format!("; {} held ({})", f.held.len(), held_summary(&f.held))
                        }
                    ),
                )
            } else if !f.stopping.is_empty() {
                (
                    "StoppingNewest",
                    format!(
                        "running {:.4}/h is over maxCostPerHour {:.4}: stopping {}",
                        f.cost_per_hour,
                        budget.spec.max_cost_per_hour,
                        f.stopping.join(", ")
                    ),
                )
            } else if !f.kept.is_empty() {
                (
                    "OverKept",
                    format!(
                        "running {:.4}/h is over maxCostPerHour {:.4}, and nothing it may stop is left: {} keep running (budgetStopPolicy Keep)",
                        f.cost_per_hour,
                        budget.spec.max_cost_per_hour,
                        f.kept.join(", ")
                    ),
                )
            } else if exceeded {
                (
                    "Held",
                    format!(
                        "{} held ({}): running {:.4}/h + reserved {:.4}/h of maxCostPerHour {:.4}",
                        f.held.len(),
                        held_summary(&f.held),
                        f.cost_per_hour,
                        f.reserved_per_hour,
                        budget.spec.max_cost_per_hour
                    ),
                )
            } else {
                (
                    "WithinBudget",
                    format!(
                        "running {:.4}/h + reserved {:.4}/h of maxCostPerHour {:.4}",
                        f.cost_per_hour, f.reserved_per_hour, budget.spec.max_cost_per_hour
                    ),
                )
            };
            let out = BudgetStatus {
                cost_per_hour: round(f.cost_per_hour),
                reserved_per_hour: round(f.reserved_per_hour),
                headroom_per_hour: round(f.headroom_per_hour),
                running_count: i32::try_from(f.running_count).unwrap_or(i32::MAX),
                held_count: i32::try_from(f.held.len()).unwrap_or(i32::MAX),
                held: f.held.iter().take(HELD_NAMES).cloned().collect(),
                stopping: f.stopping.clone(),
                spent_this_month: f.spent_this_month.map(round),
                ..BudgetStatus::default()
            };
            (exceeded, reason, message, out)
        }
        Err(why) => (
            false,
            "InvalidSelector",
            why.to_string(),
            BudgetStatus::default(),
        ),
    };
    out.observed_generation = budget.meta().generation;
    let generation = budget.meta().generation;
    // A condition keeps its transition time while its status stays.
    let condition = |type_: &str, status: bool, reason: &str, message: String| {
        let word = if status { "True" } else { "False" };
        let transition = previous
            .conditions
            .iter()
            .find(|c| c.type_ == type_ && c.status == word)
            .map(|c| c.last_transition_time.clone())
            .unwrap_or(Time(now));
        Condition {
            type_: type_.into(),
            status: word.into(),
            reason: reason.into(),
            message: message.into(),
            observed_generation: generation,
            last_transition_time: transition,
        }
    };
    let valid = figures.is_ok();
    out.conditions = vec![
        condition(
            "Ready",
            valid,
            if valid { "Enforced" } else { reason },
            message.clone(),
        ),
        condition(
            "Stalled",
            !valid,
            if valid { "Enforced" } else { reason },
            message.clone(),
        ),
        condition(BUDGET_EXCEEDED, status, reason, message),
    ];
    if let Some(max) = budget.spec.max_spend_per_month {
        let (tracked, reason, message) = spend_tracked(billing, out.spent_this_month, max);
        out.conditions
            .push(condition(SPEND_TRACKED, tracked, reason, message));
    }
    out
}

/// The condition of a Budget with `maxSpendPerMonth`: whether its spend is known, so that
/// a cap that cannot be enforced says so.
pub const SPEND_TRACKED: &str = "SpendTracked";

fn spend_tracked(billing: &Billing, spent: Option<f64>, max: f64) -> (bool, &'static str, String) {
    match (billing, spent) {
        (Billing::Read(_), Some(spent)) => (
            true,
            "Read",
            format!("billed {spent:.4} this month of maxSpendPerMonth {max:.4}"),
        ),
        (Billing::Unsupported, _) => (
            false,
            "UnsupportedByBackend",
            "the seed API has no billing: maxSpendPerMonth is not enforced (REST v2 has it)".into(),
        ),
        (Billing::Failed(why), _) => (
            false,
            "BillingUnavailable",
            format!("could not read this month's billing: {why}"),
        ),
        _ => (
            false,
            "NotReadYet",
            "this month's billing has not been read yet".into(),
        ),
    }
}

/// The first few held members, for a condition's message.
fn held_summary(held: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = held
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if held.len() > SHOWN {
        text.push_str(&format!(", and {} more", held.len() - SHOWN));
    }
    text
}

/// The Budget kind's registration (see `crate::kinds`).
pub const REGISTERED: RegisteredKind = RegisteredKind {
    crd: Budget::crd,
    controller: Some(start),
    rows: rows_of::<Budget>,
    sweep: None,
};

/// The Budget kind has no engine (it is no platform object): its reconciler runs on the
/// same runtime and feeds the ledger the Pod, Endpoint and Cluster adapters admit against.
fn start(controllers: &Controllers, _census: Census) -> JoinHandle<()> {
    let budgets = BudgetController::new(
        controllers.shared.clone(),
        controllers.budgets.clone(),
        controllers.watched.clone(),
        controllers.billing_interval,
    );
    controllers.spawn_reconciler(budgets.reconciler, budgets.wakes, Some(budgets.companion))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_crd::budget::{BudgetAction, BudgetSpec};
    use serde_json::json;

    fn budget(selector: Option<serde_json::Value>) -> Budget {
        let mut spec = json!({"maxCostPerHour": 1.0});
        if let Some(s) = selector {
            spec["selector"] = s;
        }
        let spec: BudgetSpec = serde_json::from_value(spec).unwrap();
        let mut b = Budget::new("team", spec);
        b.metadata.namespace = Some("ns".into());
        b.metadata.generation = Some(3);
        b
    }

    #[test]
    fn the_rule_follows_the_spec_and_refuses_a_bad_selector() {
        let rule = rule_of(&budget(Some(json!({"matchLabels": {"team": "ml"}})))).unwrap();
        assert_eq!(rule.action, BudgetAction::Deny);
        assert!(rule.matches(&[("team".to_string(), "ml".to_string())].into()));
        assert!(!rule.matches(&Default::default()));
        let bad = budget(Some(
            json!({"matchExpressions": [{"key": "a", "operator": "Near", "values": ["b"]}]}),
        ));
        assert!(rule_of(&bad).unwrap_err().contains("spec.selector"));
    }

    #[test]
    fn status_reports_the_figures_and_keeps_its_transition_time() {
        let b = budget(None);
        let f = Figures {
            cost_per_hour: 0.6,
            reserved_per_hour: 0.4,
            headroom_per_hour: 0.0,
            running_count: 5,
            held: vec!["Pod/p7".into(), "Endpoint/e8".into()],
            stopping: vec![],
            kept: vec![],
            spent_this_month: None,
            month_cap_reached: None,
        };
        let t0 = Timestamp::from_second(100).unwrap();
        let s = status_of(&b, Ok(&f), &Billing::Unread, t0);
        assert_eq!(s.observed_generation, Some(3));
        assert_eq!(s.held_count, 2);
        assert_eq!(
            s.held,
            vec!["Pod/p7".to_string(), "Endpoint/e8".to_string()]
        );
        assert_eq!(s.running_count, 5);
        let c = &s.conditions[2];
        assert_eq!(c.type_, BUDGET_EXCEEDED);
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", "Held"));
        assert_eq!(s.conditions[0].type_, "Ready");
        assert_eq!(s.conditions[0].status, "True");
        assert!(
            c.message.contains("2 held (Pod/p7, Endpoint/e8)"),
            "{}",
            c.message
        );
        // The same figures later: an equal status, so no write.
        let mut written = b.clone();
        written.status = Some(s.clone());
        assert_eq!(
            status_of(
                &written,
                Ok(&f),
                &Billing::Unread,
                Timestamp::from_second(500).unwrap()
            ),
            s
        );
        // Room again: False, with a new transition time.
        let ok = Figures { held: vec![], ..f };
        let s2 = status_of(
            &written,
            Ok(&ok),
            &Billing::Unread,
            Timestamp::from_second(500).unwrap(),
        );
        assert_eq!(s2.conditions[2].status, "False");
        assert_eq!(s2.conditions[2].last_transition_time.0.as_second(), 500);
        assert_eq!(s2.conditions[0].last_transition_time.0.as_second(), 100);
        let bad = status_of(&b, Err("spec.selector is invalid"), &Billing::Unread, t0);
        assert_eq!(bad.conditions[0].reason, "InvalidSelector");
        assert_eq!(bad.conditions[0].status, "False");
        assert_eq!(
            bad.conditions[1].status, "True",
            "Stalled: only a spec change helps"
        );
    }

    #[test]
    fn a_monthly_cap_reached_is_exceeded_and_an_untracked_one_says_why() {
        let mut b = budget(None);
        b.spec.max_spend_per_month = Some(10.0);
        let f = Figures {
            cost_per_hour: 0.5,
            running_count: 1,
            spent_this_month: Some(10.25),
            month_cap_reached: Some((10.25, 10.0)),
            ..Figures::default()
        };
        let t0 = Timestamp::from_second(100).unwrap();
        let read = Billing::Read(t0);
        let s = status_of(&b, Ok(&f), &read, t0);
        assert_eq!(s.spent_this_month, Some(10.25));
        let exceeded = &s.conditions[2];
        assert_eq!(
            (exceeded.status.as_str(), exceeded.reason.as_str()),
            ("True", "MonthlySpendReached")
        );
        assert!(
            exceeded.message.contains("maxSpendPerMonth 10.0000"),
            "{}",
            exceeded.message
        );
        let tracked = &s.conditions[3];
        assert_eq!(
            (tracked.type_.as_str(), tracked.status.as_str()),
            (SPEND_TRACKED, "True")
        );
        let under = Figures {
            spent_this_month: Some(3.0),
            month_cap_reached: None,
            ..f.clone()
        };
        assert_eq!(
            status_of(&b, Ok(&under), &read, t0).conditions[2].status,
            "False"
        );
        let seed = status_of(&b, Ok(&Figures::default()), &Billing::Unsupported, t0);
        assert_eq!(
            (
                seed.conditions[3].status.as_str(),
                seed.conditions[3].reason.as_str()
            ),
            ("False", "UnsupportedByBackend")
        );
        let without = status_of(&budget(None), Ok(&f), &Billing::Unsupported, t0);
        assert_eq!(without.conditions.len(), 3, "no cap, no condition about it");
    }
}
