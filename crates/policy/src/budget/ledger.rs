//! The ledger of one namespace: its Budgets, what its members (Pods, Endpoints and
//! Clusters) cost,
//! the reservations of the deploys, resumes and endpoint changes admitted and not yet seen
//! in status, and the members held for want of room. Pure: no I/O, no clock (callers pass
//! `now`), so every decision is unit tested.
//!
//! What a member costs (its charge):
//! - a Pod seen running (its status says it runs, with a price): that price, and any
//!   reservation it held is dropped, the platform's figure replaces the estimate;
//! - an Endpoint seen on the platform: the cost of the workers it runs (at least its
//!   minimum workers) at the catalog's price (its status says it), or its reservation while that is higher (a raise admitted
//!   and not yet in status must not be under-counted); the reservation goes once status
//!   reaches it;
//! - a Cluster the operator made: what its nodes cost (its status says it), or its
//!   reservation while that is higher (nodes come up one by one);
//! - otherwise its reservation, while it is younger than the reservation lifetime (a
//!   create that never reported back must not hold room for ever);
//! - otherwise nothing.
//!
//! A reservation is taken, all Budgets that match the member checked and the charge
//! recorded under one lock, so members admitted at the same time cannot together
//! overshoot. `StopNewest` stops Pods and deletes Clusters whose `budgetStopPolicy` is
//! `Delete` (see [`Facts::stoppable`]), newest first, until the total fits: the operator
//! cannot stop an endpoint's minimum workers without changing its spec, and a cluster
//! cannot be stopped, only deleted, so those count toward the total and are never chosen.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::core::{Selector, SelectorExt};
use tokio::time::Instant;

use gpucloud_crd::budget::BudgetAction;

/// Rounding slack on sums of prices: a total equal to the cap fits.
const EPSILON: f64 = 1e-9;

/// The kinds a Budget counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MemberKind {
    Pod,
    Endpoint,
    Cluster,
}

/// One object a Budget counts: a Pod and an Endpoint may share a name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Member {
    pub kind: MemberKind,
    pub name: String,
}

impl MemberKind {
    pub const ALL: [MemberKind; 3] = [MemberKind::Pod, MemberKind::Endpoint, MemberKind::Cluster];

    /// The kind's place in [`MemberKind::ALL`], for tables of one entry per kind.
    pub fn index(self) -> usize {
        self as usize
    }
}

impl Member {
    pub fn new(kind: MemberKind, name: impl Into<String>) -> Self {
        Self {
            kind,
            name: name.into(),
        }
    }

    pub fn pod(name: impl Into<String>) -> Self {
        Self::new(MemberKind::Pod, name)
    }

    pub fn endpoint(name: impl Into<String>) -> Self {
        Self::new(MemberKind::Endpoint, name)
    }

    pub fn cluster(name: impl Into<String>) -> Self {
        Self::new(MemberKind::Cluster, name)
    }
}

/// `Pod/name`, `Endpoint/name` or `Cluster/name`, as a Budget's status lists them.
impl fmt::Display for Member {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            MemberKind::Pod => "Pod",
            MemberKind::Endpoint => "Endpoint",
            MemberKind::Cluster => "Cluster",
        };
        write!(f, "{kind}/{}", self.name)
    }
}

/// A Budget as the ledger needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct BudgetRule {
    pub max_cost_per_hour: f64,
    /// `maxSpendPerMonth`: once the matched members' billed spend this month reaches it,
    /// no hourly room is left.
    pub max_spend_per_month: Option<f64>,
    /// `None`: every Pod of the namespace.
    pub selector: Option<Selector>,
    pub action: BudgetAction,
}

impl BudgetRule {
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.selector.as_ref().is_none_or(|s| s.matches(labels))
    }
}

/// What the cluster says of a member (its labels and status).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Facts {
    pub labels: BTreeMap<String, String>,
    /// A Pod deploying, starting, running or stopping; an Endpoint that exists on the
    /// platform: billed.
    pub running: bool,
    /// A Pod: the price the platform reports (or the placement's, right after the deploy).
    /// An Endpoint: its minimum workers at the catalog's price.
    pub cost_per_hour: Option<f64>,
    /// When the pod last started, to find the newest.
    pub started: Option<Timestamp>,
    /// The platform's id (status `id`), which billing records name.
    pub platform_id: Option<String>,
    /// `StopNewest` may stop it: a Pod (stopped), a Cluster whose `budgetStopPolicy` is
    /// `Delete` (deleted); never an Endpoint.
    pub stoppable: bool,
}

/// What the platform billed this month, by the platform id of what it billed.
pub type MonthSpend = std::collections::HashMap<String, f64>;

#[derive(Clone, Debug, PartialEq)]
struct Reservation {
    cost: f64,
    at: Instant,
    /// The Pod's labels when it asked: it may not have been seen yet.
    labels: BTreeMap<String, String>,
}

/// Why a member cannot have its reservation: the first Budget it would overshoot, and the
/// figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Exceeded {
    pub budget: String,
    pub max_cost_per_hour: f64,
    /// Matched members seen running.
    pub running_per_hour: f64,
    /// Matched reservations of other members.
    pub reserved_per_hour: f64,
    /// What this member asked for.
    pub asked_per_hour: f64,
    /// The kind asking, for the message.
    pub kind: MemberKind,
    /// `(spent, maxSpendPerMonth)` when the month's spend is what leaves no room.
    pub month: Option<(f64, f64)>,
}

impl Exceeded {
    /// The message of the held member's condition.
    pub fn message(&self) -> String {
        if let Some((spent, max)) = self.month {
            return format!(
                "Budget {}: {spent:.4} billed this month has reached maxSpendPerMonth {max:.4}; held until next month or a higher cap",
                self.budget
            );
        }
        let this = match self.kind {
            MemberKind::Pod => "this pod",
            MemberKind::Endpoint => "this endpoint's minimum workers",
            MemberKind::Cluster => "this cluster",
        };
        format!(
            "Budget {}: running {:.4}/h + reserved {:.4}/h + {this} {:.4}/h would exceed maxCostPerHour {:.4}; held until there is room",
            self.budget,
            self.running_per_hour,
            self.reserved_per_hour,
            self.asked_per_hour,
            self.max_cost_per_hour
        )
    }
}

/// What a Budget's status reports.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    pub cost_per_hour: f64,
    pub reserved_per_hour: f64,
    pub headroom_per_hour: f64,
    pub running_count: usize,
    /// Held members matched by the Budget, sorted (`Pod/name`, `Endpoint/name`).
    pub held: Vec<String>,
    /// Pods being stopped (and Clusters being deleted) for the Budget, sorted.
    pub stopping: Vec<String>,
    /// Over the cap with nothing left it may stop: the running members it may not stop
    /// (Clusters whose `budgetStopPolicy` is `Keep`), sorted.
    pub kept: Vec<String>,
    /// What the platform billed this month for the matched members (`None` until read).
    pub spent_this_month: Option<f64>,
    /// `(spent, maxSpendPerMonth)` once the month's spend has reached the cap: what
    /// leaves no hourly room.
    pub month_cap_reached: Option<(f64, f64)>,
}

/// The ledger of one namespace.
#[derive(Clone, Debug, Default)]
pub struct NamespaceLedger {
    budgets: BTreeMap<String, BudgetRule>,
    pods: BTreeMap<Member, Facts>,
    reservations: BTreeMap<Member, Reservation>,
    /// Held members, with the labels and price they asked with (a held member may not be
    /// in `pods` yet).
    held: BTreeMap<Member, (BTreeMap<String, String>, f64)>,
    /// Pods to stop (`StopNewest`) until they are seen stopped.
    stopping: BTreeSet<Member>,
    /// The last price each Pod was seen running at: a stopped pod's listing says 0, and
    /// its resume needs the price it will cost again.
    last_prices: BTreeMap<Member, f64>,
    /// This month's billing, shared by every namespace (`None` until read).
    spend: Option<Arc<MonthSpend>>,
}

impl NamespaceLedger {
    pub fn is_empty(&self) -> bool {
        self.budgets.is_empty()
            && self.pods.is_empty()
            && self.reservations.is_empty()
            && self.held.is_empty()
    }

    pub fn has_budgets(&self) -> bool {
        !self.budgets.is_empty()
    }

    pub fn set_budget(&mut self, name: &str, rule: BudgetRule) {
        self.budgets.insert(name.to_string(), rule);
    }

    pub fn remove_budget(&mut self, name: &str) {
        self.budgets.remove(name);
        if self.budgets.is_empty() {
            self.stopping.clear();
        }
    }

    pub fn budget(&self, name: &str) -> Option<&BudgetRule> {
        self.budgets.get(name)
    }

    /// An empty ledger that knows this month's billing as last read.
    pub fn with_spend(spend: Option<Arc<MonthSpend>>) -> Self {
        Self {
            spend,
            ..Self::default()
        }
    }

    /// This month's billing, as last read.
    pub fn set_spend(&mut self, spend: Option<Arc<MonthSpend>>) {
        self.spend = spend;
    }

    /// What the platform billed this month for the members `rule` matches (those it can
    /// name: seen, with a platform id); `None` until billing was read.
    fn spent(&self, rule: &BudgetRule) -> Option<f64> {
        let spend = self.spend.as_ref()?;
        Some(
            self.pods
                .values()
                .filter(|f| rule.matches(&f.labels))
                .filter_map(|f| spend.get(f.platform_id.as_deref()?))
                .fold(0.0, |sum, amount| sum + amount),
        )
    }

    /// The hourly cap in force: none once the month's spend has reached
    /// `maxSpendPerMonth`; with it, `(spent, max)`.
    fn cap(&self, rule: &BudgetRule) -> (f64, Option<(f64, f64)>) {
        match (rule.max_spend_per_month, self.spent(rule)) {
            (Some(max), Some(spent)) if spent + EPSILON >= max => (0.0, Some((spent, max))),
            _ => (rule.max_cost_per_hour, None),
        }
    }

    /// Records what the cluster says of `pod`. A Pod seen running with a price: its
    /// reservation has done its job; seen not running, it is no longer to be stopped. An
    /// Endpoint: its reservation goes once its status counts at least as much (a raise
    /// whose status is not written yet keeps it).
    pub fn observe(&mut self, pod: &Member, facts: Facts) {
        let settled = match (pod.kind, facts.cost_per_hour) {
            (_, None) => false,
            (MemberKind::Pod, Some(_)) => true,
            // A cluster's nodes come up one by one: its figure counts once it reaches
            // what was admitted (or the reservation expires).
            (MemberKind::Endpoint | MemberKind::Cluster, Some(cost)) => self
                .reservations
                .get(pod)
                .is_none_or(|r| cost + EPSILON >= r.cost),
        };
        if facts.running && settled {
            self.reservations.remove(pod);
        }
        if !facts.running {
            self.stopping.remove(pod);
        }
        if let Some(cost) = facts.cost_per_hour.filter(|c| *c > 0.0) {
            self.last_prices.insert(pod.clone(), cost);
        }
        self.pods.insert(pod.clone(), facts);
    }

    /// The member is gone from the cluster.
    pub fn forget(&mut self, pod: &Member) {
        self.pods.remove(pod);
        self.last_prices.remove(pod);
        self.reservations.remove(pod);
        self.held.remove(pod);
        self.stopping.remove(pod);
    }

    /// Drops reservations older than `lifetime`.
    pub fn expire(&mut self, now: Instant, lifetime: Duration) {
        self.reservations
            .retain(|_, r| now.saturating_duration_since(r.at) < lifetime);
    }

    /// What `pod` costs now, and whether that is a reservation. Seen running with a
    /// price, that price; a reservation still standing beside it (an Endpoint's raise not
    /// yet in status) counts when higher.
    fn charge(&self, pod: &Member) -> (f64, bool) {
        let reserved = self.reservations.get(pod).map(|r| r.cost);
        if let Some(f) = self.pods.get(pod)
            && f.running
            && let Some(cost) = f.cost_per_hour
        {
            return match reserved {
                Some(r) if r > cost => (r, true),
                _ => (cost, false),
            };
        }
        match reserved {
            Some(r) => (r, true),
            None => (0.0, false),
        }
    }

    fn labels_of<'a>(&'a self, pod: &Member) -> Option<&'a BTreeMap<String, String>> {
        self.pods
            .get(pod)
            .map(|f| &f.labels)
            .or_else(|| self.reservations.get(pod).map(|r| &r.labels))
            .or_else(|| self.held.get(pod).map(|(l, _)| l))
    }

    /// Every member with a charge: seen or reserved.
    fn charged_pods(&self) -> BTreeSet<&Member> {
        self.pods.keys().chain(self.reservations.keys()).collect()
    }

    /// (running, reserved, running count) of the members `rule` matches, without `except`.
    fn totals(&self, rule: &BudgetRule, except: Option<&Member>) -> (f64, f64, usize) {
        let (mut running, mut reserved, mut count) = (0.0, 0.0, 0);
        for pod in self.charged_pods() {
            if Some(pod) == except {
                continue;
            }
            if !self.labels_of(pod).is_some_and(|l| rule.matches(l)) {
                continue;
            }
            let (cost, is_reservation) = self.charge(pod);
            if is_reservation {
                reserved += cost;
            } else {
                running += cost;
            }
            if cost > 0.0 || self.pods.get(pod).is_some_and(|f| f.running) {
                count += 1;
            }
        }
        (running, reserved, count)
    }

    /// The first Budget that `cost` more for `pod` (with `labels`) would overshoot.
    pub fn check(
        &self,
        pod: &Member,
        labels: &BTreeMap<String, String>,
        cost: f64,
    ) -> Result<(), Exceeded> {
        for (name, rule) in &self.budgets {
            if !rule.matches(labels) {
                continue;
            }
            let (running, reserved, _) = self.totals(rule, Some(pod));
            let (cap, month) = self.cap(rule);
            let over_month = month.is_some() && cost > 0.0;
            if over_month || running + reserved + cost > cap + EPSILON {
                return Err(Exceeded {
                    budget: name.clone(),
                    max_cost_per_hour: rule.max_cost_per_hour,
                    running_per_hour: running,
                    reserved_per_hour: reserved,
                    asked_per_hour: cost,
                    kind: pod.kind,
                    month,
                });
            }
        }
        Ok(())
    }

    /// Admits `pod` at `cost` per hour, or holds it. Admitted, the Pod's charge is at
    /// least `cost` until it is seen running (its reservation); held, it is remembered
    /// so that room appearing wakes it. A Pod already running is charged its own price
    /// once, not twice: the check leaves it out of the totals.
    pub fn reserve(
        &mut self,
        pod: &Member,
        labels: &BTreeMap<String, String>,
        cost: f64,
        now: Instant,
    ) -> Result<(), Exceeded> {
        match self.check(pod, labels, cost) {
            Ok(()) => {
                self.held.remove(pod);
                let reservation = Reservation {
                    cost,
                    at: now,
                    labels: labels.clone(),
                };
                self.reservations.insert(pod.clone(), reservation);
                Ok(())
            }
            Err(e) => {
                self.held.insert(pod.clone(), (labels.clone(), cost));
                Err(e)
            }
        }
    }

    /// A deploy, resume or endpoint change that did not happen: its reservation goes.
    pub fn release(&mut self, pod: &Member) {
        self.reservations.remove(pod);
    }

    /// `pod` no longer asks for room (its spec now costs nothing more): not held.
    pub fn unhold(&mut self, pod: &Member) {
        self.held.remove(pod);
    }

    /// Held members that would fit now, each on its own (several may not fit together;
    /// the ones that do not are held again when they ask).
    pub fn fitting_held(&self) -> Vec<Member> {
        self.held
            .iter()
            .filter(|(pod, (labels, cost))| self.check(pod, labels, *cost).is_ok())
            .map(|(pod, _)| pod.clone())
            .collect()
    }

    /// The last price `pod` was seen running at.
    pub fn last_price(&self, pod: &Member) -> Option<f64> {
        self.last_prices.get(pod).copied()
    }

    pub fn is_held(&self, pod: &Member) -> bool {
        self.held.contains_key(pod)
    }

    pub fn held_count(&self) -> usize {
        self.held.len()
    }

    /// How many members of `kind` are held.
    pub fn held_count_of(&self, kind: MemberKind) -> usize {
        self.held.keys().filter(|m| m.kind == kind).count()
    }

    pub fn must_stop(&self, pod: &Member) -> bool {
        self.stopping.contains(pod)
    }

    /// `StopNewest`: the members to stop so that `budget`'s running total fits, newest
    /// first (by when they started; one with no start time yet counts as the newest).
    /// Members already being stopped count as stopped. Only stoppable members are chosen
    /// (see [`Facts::stoppable`]): Endpoints, and Clusters their policy keeps, count in the
    /// total but are never chosen. Marks them, and returns the ones newly marked.
    pub fn mark_stops(&mut self, budget: &str) -> Vec<Member> {
        let Some(rule) = self.budgets.get(budget) else {
            return Vec::new();
        };
        if rule.action != BudgetAction::StopNewest {
            return Vec::new();
        }
        let mut running: Vec<(&Member, f64, Option<Timestamp>)> = self
            .pods
            .iter()
            .filter(|(pod, f)| {
                f.stoppable && f.running && rule.matches(&f.labels) && !self.stopping.contains(*pod)
            })
            .map(|(pod, f)| (pod, self.charge(pod).0, f.started))
            .collect();
        let (cost, reserved, _) = self.totals(rule, None);
        let already: f64 = self.stopping.iter().map(|p| self.charge(p).0).sum();
        let mut total = cost + reserved - already;
        // Newest first: no start time (just deployed) before any start time.
        running.sort_by(|a, b| match (a.2, b.2) {
            (None, None) => a.0.cmp(b.0),
            (None, Some(_)) => std::cmp::Ordering::Less,
            (Some(_), None) => std::cmp::Ordering::Greater,
            (Some(x), Some(y)) => y.cmp(&x).then(a.0.cmp(b.0)),
        });
        let (max, _) = self.cap(rule);
        let mut chosen = Vec::new();
        for (pod, cost, _) in running {
            if total <= max + EPSILON {
                break;
            }
            if cost <= 0.0 {
                continue;
            }
            total -= cost;
            chosen.push(pod.clone());
        }
        self.stopping.extend(chosen.iter().cloned());
        chosen
    }

    /// The figures of `budget`'s status.
    pub fn figures(&self, budget: &str) -> Option<Figures> {
        let rule = self.budgets.get(budget)?;
        let (cost, reserved, running_count) = self.totals(rule, None);
        let (cap, month_cap_reached) = self.cap(rule);
        let held = self
            .held
            .iter()
            .filter(|(_, (labels, _))| rule.matches(labels))
            .map(|(pod, _)| pod.to_string())
            .collect();
        let stopping = self
            .stopping
            .iter()
            .filter(|p| self.labels_of(p).is_some_and(|l| rule.matches(l)))
            .map(Member::to_string)
            .collect();
        let over = rule.action == BudgetAction::StopNewest && cost > cap + EPSILON;
        let kept = match over {
            true => self
                .pods
                .iter()
                .filter(|(m, f)| {
                    m.kind == MemberKind::Cluster
                        && f.running
                        && !f.stoppable
                        && rule.matches(&f.labels)
                })
                .map(|(m, _)| m.to_string())
                .collect(),
            false => Vec::new(),
        };
        Some(Figures {
            cost_per_hour: cost,
            reserved_per_hour: reserved,
            headroom_per_hour: cap - cost - reserved,
            running_count,
            held,
            stopping,
            kept,
            spent_this_month: self.spent(rule),
            month_cap_reached,
        })
    }

    /// What every Pod and Endpoint of the namespace costs per hour (Budgets or not),
    /// reservations left out: the figure of the cost metric.
    pub fn running_cost(&self) -> f64 {
        self.pods
            .values()
            .filter(|f| f.running)
            .filter_map(|f| f.cost_per_hour)
            .sum()
    }
}

#[cfg(test)]
mod tests;
