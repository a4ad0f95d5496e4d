//! Budgets: the ledger every namespace's Pods, Endpoints and Clusters are admitted
//! against, shared by the Pod adapter (which reserves before each deploy and resume), the
//! Endpoint adapter (which reserves the cost of the minimum workers before a create or a
//! change that raises it), the Cluster adapter (which reserves before a create) and the
//! Budget controller (which feeds it what the cluster says and reports
//! it in each Budget's status).
//!
//! - [`ledger`]: the pure decisions (admit or hold, what a member costs, which Pods to
//!   stop).
//! - [`BudgetLedger`]: the ledgers of every namespace behind one lock, the metrics, and
//!   the wake-up channels: a held Pod or Endpoint is reconciled again when room appears (a
//!   release, a Pod stopping or going, a Budget raised), not on a timer.
//! - [`wakes`]: those channels, read by one controller of a kind at a time.
//!
//! The Budget kind's controller is not here: it is a kind (`src/kinds/budget`), and this
//! crate knows no kind.

pub mod ledger;
pub mod members;
pub mod wakes;

#[cfg(test)]
mod fixtures;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kube::ResourceExt;
use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::watch;
use tokio::time::Instant;

use gpucloud_engine::metrics::Metrics;
use gpucloud_platform::metrics::Described;

use self::members::BudgetMember;
use self::wakes::{WakeSlot, Wakes, Woken};

use self::ledger::{
    BudgetRule, Exceeded, Figures, Member, MemberKind, MonthSpend, NamespaceLedger,
};

/// How long a reservation stands without its Pod being seen running: longer than a
/// deploy takes to be answered and its status written, short enough that a create that
/// never reported back does not hold room for long.
pub const RESERVATION_LIFETIME: Duration = Duration::from_secs(120);

/// How long an admission waits for the Budget controller's first listing (at start).
pub const LISTING_WAIT: Duration = Duration::from_secs(30);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NamespaceLabels {
    namespace: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BudgetLabels {
    namespace: String,
    budget: String,
}

type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// The ledgers of every watched namespace.
pub struct BudgetLedger {
    namespaces: Mutex<HashMap<String, NamespaceLedger>>,
    /// The wake-ups of each member kind (see [`MemberKind::index`]).
    wakes: [WakeSlot<Woken>; MemberKind::ALL.len()],
    /// Turns true once the Budget controller has listed every Budget, Pod and Endpoint:
    /// before that, an admission could miss a Budget.
    synced: watch::Sender<bool>,
    held_pods: Family<NamespaceLabels, Gauge>,
    held_endpoints: Family<NamespaceLabels, Gauge>,
    cost_per_hour: Family<NamespaceLabels, FloatGauge>,
    /// What each Budget's members cost per hour (its status's `costPerHour`).
    budget_cost: Family<BudgetLabels, FloatGauge>,
    /// Each Budget's `spec.maxCostPerHour`.
    budget_max: Family<BudgetLabels, FloatGauge>,
    /// This month's billing by platform id, as last read (every namespace shares it).
    spend: Mutex<Option<Arc<MonthSpend>>>,
}

impl BudgetLedger {
    /// A ledger whose metrics are registered in `metrics`.
    pub fn new(metrics: &Metrics) -> Self {
        let ledger = Self::unregistered();
        let mut registry = metrics.registry.lock();
        registry.register(
            "budget_held_pods",
            "Pods whose deploy or resume is held by a Budget, by namespace",
            Described(ledger.held_pods.clone()),
        );
        registry.register(
            "budget_held_endpoints",
            "Endpoints whose create or raise of minimum workers is held by a Budget, by namespace",
            Described(ledger.held_endpoints.clone()),
        );
        registry.register(
            "namespace_cost_per_hour",
            "What the running gpucloud Pods (as the platform reports it) and the minimum workers of the Endpoints (at the catalog's price) of a namespace cost per hour",
            Described(ledger.cost_per_hour.clone()),
        );
        registry.register(
            "budget_cost_per_hour",
            "What the running Pods and Endpoints a Budget selects cost per hour (its status's costPerHour), by namespace and Budget",
            Described(ledger.budget_cost.clone()),
        );
        registry.register(
            "budget_max_cost_per_hour",
            "A Budget's spec.maxCostPerHour, by namespace and Budget",
            Described(ledger.budget_max.clone()),
        );
        ledger
    }

    fn unregistered() -> Self {
        Self {
            namespaces: Mutex::new(HashMap::new()),
            wakes: std::array::from_fn(|_| WakeSlot::new()),
            synced: watch::Sender::new(false),
            held_pods: Family::default(),
            held_endpoints: Family::default(),
            cost_per_hour: Family::default(),
            budget_cost: Family::default(),
            budget_max: Family::default(),
            spend: Mutex::new(None),
        }
    }

    /// The objects of `kind` to reconcile again, for that kind's controller; `None` while
    /// another holds them (they come back when it drops them).
    pub fn take_wakes(&self, kind: MemberKind) -> Option<Wakes<Woken>> {
        self.wakes[kind.index()].take()
    }

    pub fn mark_synced(&self) {
        self.synced.send_replace(true);
    }

    /// Waits until the Budgets, Pods and Endpoints have been listed once, at most `limit`.
    pub async fn wait_synced(&self, limit: Duration) -> bool {
        let mut rx = self.synced.subscribe();
        tokio::time::timeout(limit, rx.wait_for(|s| *s))
            .await
            .is_ok_and(|r| r.is_ok())
    }

    fn with<T>(&self, namespace: &str, f: impl FnOnce(&mut NamespaceLedger) -> T) -> T {
        let mut all = self.namespaces.lock();
        // A namespace's ledger starts with the month's billing as last read; a new read
        // reaches the existing ones through `set_spend`.
        let ledger = all
            .entry(namespace.to_string())
            .or_insert_with(|| NamespaceLedger::with_spend(self.spend.lock().clone()));
        ledger.expire(Instant::now(), RESERVATION_LIFETIME);
        let out = f(ledger);
        let (held_pods, held_endpoints, cost) = (
            ledger.held_count_of(MemberKind::Pod),
            ledger.held_count_of(MemberKind::Endpoint),
            ledger.running_cost(),
        );
        let fitting = ledger.fitting_held();
        if ledger.is_empty() {
            all.remove(namespace);
        }
        drop(all);
        let labels = NamespaceLabels {
            namespace: namespace.to_string(),
        };
        let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.held_pods.get_or_create(&labels).set(count(held_pods));
        self.held_endpoints
            .get_or_create(&labels)
            .set(count(held_endpoints));
        self.cost_per_hour.get_or_create(&labels).set(cost);
        for member in fitting {
            self.wake(namespace, &member);
        }
        out
    }

    /// Reconciles `member` again, now or, while the kind's controller is stopped, when
    /// it starts again.
    fn wake(&self, namespace: &str, member: &Member) {
        self.wakes[member.kind.index()].send(Woken {
            namespace: namespace.to_string(),
            name: member.name.clone(),
        });
    }

    /// Admits `member` at `cost` per hour, or holds it (see [`NamespaceLedger::reserve`]).
    pub fn reserve(
        &self,
        namespace: &str,
        member: &Member,
        labels: &BTreeMap<String, String>,
        cost: f64,
    ) -> Result<(), Exceeded> {
        self.with(namespace, |l| {
            l.reserve(member, labels, cost, Instant::now())
        })
    }

    /// Lets go of what `member` reserved: its create was refused.
    pub fn release(&self, namespace: &str, member: &Member) {
        self.with(namespace, |l| l.release(member));
    }

    /// `StopNewest` chose `member`: it is to be stopped (a Pod) or deleted (a Cluster).
    pub fn must_stop(&self, namespace: &str, member: &Member) -> bool {
        self.namespaces
            .lock()
            .get(namespace)
            .is_some_and(|l| l.must_stop(member))
    }

    /// The price `member` was last admitted at.
    pub fn last_price(&self, namespace: &str, member: &Member) -> Option<f64> {
        self.namespaces
            .lock()
            .get(namespace)
            .and_then(|l| l.last_price(member))
    }

    /// Records what the cluster says of `obj`. One that asks for no room is not held any
    /// more (see [`BudgetMember::asks_no_room`]).
    pub fn observe<M: BudgetMember>(&self, obj: &M) {
        let namespace = obj.namespace().unwrap_or_default();
        let (member, facts, called_off) = (obj.member(), obj.facts(), obj.asks_no_room());
        self.with(&namespace, |l| {
            l.observe(&member, facts);
            if called_off {
                l.unhold(&member);
            }
        });
    }

    /// `member` is gone from the cluster.
    pub fn forget(&self, namespace: &str, member: &Member) {
        self.with(namespace, |l| l.forget(member));
    }

    /// `member` asks for no room (it runs as admitted, or costs nothing more): not held
    /// any more. Cheap when it was not held, as for nearly every pass.
    pub fn unhold(&self, namespace: &str, member: &Member) {
        let held = self
            .namespaces
            .lock()
            .get(namespace)
            .is_some_and(|l| l.is_held(member));
        if held {
            self.with(namespace, |l| l.unhold(member));
        }
    }

    pub fn set_budget(&self, namespace: &str, name: &str, rule: BudgetRule) {
        self.with(namespace, |l| l.set_budget(name, rule));
    }

    /// Forgets Budget `name` of `namespace`, and drops its series (under the ledger's
    /// lock, as [`BudgetLedger::figures`] sets them: a pass racing the delete cannot
    /// bring them back).
    /// This month's billing, read from the platform: every Budget with `maxSpendPerMonth`
    /// is checked against it from now on, and what it holds may be let go (a new month).
    pub fn set_spend(&self, spend: MonthSpend) {
        let spend = Arc::new(spend);
        *self.spend.lock() = Some(spend.clone());
        let namespaces: Vec<String> = self.namespaces.lock().keys().cloned().collect();
        for namespace in namespaces {
            self.with(&namespace, |l| l.set_spend(Some(spend.clone())));
        }
    }

    pub fn remove_budget(&self, namespace: &str, name: &str) {
        let labels = budget_labels(namespace, name);
        self.with(namespace, |l| {
            l.remove_budget(name);
            self.budget_cost.remove(&labels);
            self.budget_max.remove(&labels);
        });
    }

    /// `StopNewest`: marks the members to stop for `budget` and wakes them.
    pub fn enforce(&self, namespace: &str, budget: &str) -> Vec<String> {
        let chosen = self.with(namespace, |l| l.mark_stops(budget));
        for member in &chosen {
            self.wake(namespace, member);
        }
        chosen.iter().map(Member::to_string).collect()
    }

    /// The figures of Budget `budget` (`None`: no such Budget), also set as its series.
    pub fn figures(&self, namespace: &str, budget: &str) -> Option<Figures> {
        self.with(namespace, |l| {
            let figures = l.figures(budget);
            if let (Some(f), Some(rule)) = (&figures, l.budget(budget)) {
                let labels = budget_labels(namespace, budget);
                self.budget_cost.get_or_create(&labels).set(f.cost_per_hour);
                self.budget_max
                    .get_or_create(&labels)
                    .set(rule.max_cost_per_hour);
            }
            figures
        })
    }

    /// Whether any watched namespace has a Budget.
    pub fn any_budget(&self) -> bool {
        self.namespaces
            .lock()
            .values()
            .any(NamespaceLedger::has_budgets)
    }

    /// Whether `namespace` has a Budget.
    pub fn has_budgets(&self, namespace: &str) -> bool {
        self.namespaces
            .lock()
            .get(namespace)
            .is_some_and(NamespaceLedger::has_budgets)
    }
}

fn budget_labels(namespace: &str, budget: &str) -> BudgetLabels {
    BudgetLabels {
        namespace: namespace.to_string(),
        budget: budget.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::pod;
    use super::*;
    use gpucloud_crd::pod::{DesiredState, PodPhase};

    fn woken(namespace: &str, name: &str) -> Woken {
        Woken {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// A Deny Budget of `max` per hour over every member.
    fn deny(max: f64) -> BudgetRule {
        BudgetRule {
            max_cost_per_hour: max,
            max_spend_per_month: None,
            selector: None,
            action: gpucloud_crd::budget::BudgetAction::Deny,
        }
    }

    #[tokio::test]
    async fn room_appearing_wakes_the_held_endpoints_that_fit() {
        let ledger = BudgetLedger::unregistered();
        let mut pod_wakes = ledger.take_wakes(MemberKind::Pod).unwrap();
        let mut wakes = ledger.take_wakes(MemberKind::Endpoint).unwrap();
        assert!(ledger.take_wakes(MemberKind::Endpoint).is_none());
        ledger.set_budget("team", "b", deny(1.0));
        let none = BTreeMap::new();
        ledger
            .reserve("team", &Member::pod("api"), &none, 0.6)
            .unwrap();
        // An Endpoint of the same name as the Pod is another member.
        let endpoint = Member::endpoint("api");
        assert!(ledger.reserve("team", &endpoint, &none, 0.6).is_err());
        assert!(wakes.try_recv().is_err());
        ledger.release("team", &Member::pod("api"));
        assert_eq!(wakes.try_recv().unwrap(), woken("team", "api"));
        assert!(pod_wakes.try_recv().is_err(), "no pod is held");
        let metrics = Metrics::new();
        let registered = BudgetLedger::new(&metrics);
        registered.set_budget("ns", "b", deny(0.0));
        let _ = registered.reserve("ns", &Member::endpoint("e"), &none, 0.1);
        let text = metrics.encode();
        assert!(
            text.contains("gpucloud_budget_held_endpoints{namespace=\"ns\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("gpucloud_budget_held_pods{namespace=\"ns\"} 0"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn each_budgets_cost_and_maximum_are_series_until_it_is_deleted() {
        let metrics = Metrics::new();
        let ledger = BudgetLedger::new(&metrics);
        let none = BTreeMap::new();
        ledger.set_budget("team", "gpus", deny(2.0));
        ledger.set_budget("team", "other", deny(4.0));
        ledger
            .reserve("team", &Member::pod("p"), &none, 0.5)
            .unwrap();
        let mut running = pod(Some(PodPhase::Running), Some(1.5));
        running.metadata.name = Some("p".into());
        ledger.observe(&running);
        assert_eq!(ledger.figures("team", "gpus").unwrap().cost_per_hour, 1.5);
        ledger.figures("team", "other").unwrap();
        let text = metrics.encode();
        for line in [
            r#"gpucloud_budget_cost_per_hour{namespace="team",budget="gpus"} 1.5"#,
            r#"gpucloud_budget_max_cost_per_hour{namespace="team",budget="gpus"} 2.0"#,
            r#"gpucloud_budget_max_cost_per_hour{namespace="team",budget="other"} 4.0"#,
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        ledger.remove_budget("team", "gpus");
        assert!(ledger.figures("team", "gpus").is_none());
        let text = metrics.encode();
        assert!(!text.contains(r#"budget="gpus""#), "{text}");
        assert!(text.contains(r#"budget="other""#), "{text}");
    }

    #[tokio::test]
    async fn a_held_pod_set_to_stopped_is_held_no_more() {
        let ledger = BudgetLedger::unregistered();
        ledger.set_budget("team", "b", deny(0.5));
        let none = BTreeMap::new();
        assert!(
            ledger
                .reserve("team", &Member::pod("p"), &none, 0.6)
                .is_err(),
            "held"
        );
        let held = |l: &BudgetLedger| l.figures("team", "b").unwrap().held.len();
        assert_eq!(held(&ledger), 1);
        let mut asking = pod(Some(PodPhase::Stopped), None);
        ledger.observe(&asking);
        assert_eq!(held(&ledger), 1, "still asks to run");
        asking.spec.desired_state = DesiredState::Stopped;
        ledger.observe(&asking);
        assert_eq!(held(&ledger), 0, "called off");
    }

    #[tokio::test]
    async fn room_appearing_wakes_the_held_pods_that_fit() {
        let ledger = BudgetLedger::unregistered();
        let mut wakes = ledger.take_wakes(MemberKind::Pod).unwrap();
        assert!(ledger.take_wakes(MemberKind::Pod).is_none());
        ledger.set_budget("team", "b", deny(0.5));
        let none = BTreeMap::new();
        ledger
            .reserve("team", &Member::pod("a"), &none, 0.5)
            .unwrap();
        assert!(
            ledger
                .reserve("team", &Member::pod("b"), &none, 0.5)
                .is_err()
        );
        assert!(wakes.try_recv().is_err(), "no room yet: nobody is woken");
        ledger.release("team", &Member::pod("a"));
        assert_eq!(wakes.try_recv().unwrap(), woken("team", "b"));
        let text = {
            let metrics = Metrics::new();
            let registered = BudgetLedger::new(&metrics);
            registered.set_budget("ns", "b", deny(0.0));
            let _ = registered.reserve("ns", &Member::pod("p"), &none, 0.1);
            metrics.encode()
        };
        assert!(
            text.contains("gpucloud_budget_held_pods{namespace=\"ns\"} 1"),
            "{text}"
        );
    }
}
