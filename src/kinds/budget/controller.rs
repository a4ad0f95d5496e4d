//! The Budget kind on the engine's runtime: a [`Reconciler`] with its own cache, and what
//! runs beside it. A Budget is no platform object, so a pass makes no platform call: it
//! computes the Budget's status from the ledger, writes it only when it changed, and with
//! `StopNewest` marks the Pods to stop.
//!
//! The ledger learns each Budget's rule as the Budgets' watch brings it
//! ([`Reconciler::seen`]) and lets go of it when the Budget goes ([`Reconciler::forget`]).
//! Beside the controller (its companion) run the members' watches, which feed the ledger
//! and wake every Budget of a member's namespace, and the reads of the month's billing,
//! which wake every Budget. The ledger is synced once every first listing is in it: the
//! Budgets', and each namespace's Pods', Endpoints' and Clusters'.

use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use futures::{StreamExt, stream};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Resource, ResourceExt};
use serde_json::json;
use tokio::sync::mpsc;
use tracing::{debug, info, warn};

use gpucloud_crd::budget::Budget;
use gpucloud_crd::{Cluster, Endpoint, Pod};
use gpucloud_engine::action::Action;
use gpucloud_engine::cache::{Cache, in_namespace};
use gpucloud_engine::context::{FIELD_MANAGER, Shared};
use gpucloud_engine::namespace_streams::WatchReport;
use gpucloud_engine::packed::Shape;
use gpucloud_engine::reconciler::Reconciler;
use gpucloud_engine::resync::Resync;
use gpucloud_engine::runner::{Companion, Watched};
use gpucloud_engine::watch_loop::watch_config;
use gpucloud_policy::budget::ledger::Figures;
use gpucloud_policy::budget::{BudgetLedger, RESERVATION_LIFETIME};

use super::members::{self, FirstListings, LedgerWatches};
use super::spend::{self, Billing, BillingState};
use super::{BudgetError, rule_of, status_of};

/// How long a Budget whose status could not be written waits for its next pass.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// The namespaces of the members that changed, on their way from the members' watches
/// (beside the controller) to the controller's wakes: enough that a burst of member events
/// waits little, few enough to hold the watches back while the controller is behind.
const MEMBER_WAKES_QUEUED: usize = 256;

/// The Budgets' reconciler: what a pass reads (the ledger, the billing's state) and the
/// runtime's tables of the kind.
pub struct BudgetReconciler {
    shared: Arc<Shared>,
    ledger: Arc<BudgetLedger>,
    billing: BillingState,
    cache: Cache<Budget>,
    resync: Resync,
}

impl BudgetReconciler {
    /// One pass: the Budget's status from the ledger, written when it changed.
    async fn pass(&self, budget: &Budget) -> Result<Action, BudgetError> {
        let ns = budget.namespace().unwrap_or_default();
        let name = budget.name_any();
        let rule = rule_of(budget);
        let stopped = match &rule {
            Ok(_) => self.ledger.enforce(&ns, &name),
            Err(_) => Vec::new(),
        };
        if !stopped.is_empty() {
            info!(budget = %format!("{ns}/{name}"), members = ?stopped, "over budget: stopping the newest members");
        }
        let figures = self.ledger.figures(&ns, &name);
        let billing = self.billing.read().clone();
        let now = Timestamp::now();
        let status = match (&rule, &figures) {
            (Ok(_), Some(f)) => status_of(budget, Ok(f), &billing, now),
            (Ok(_), None) => status_of(budget, Ok(&Figures::default()), &billing, now),
            (Err(why), _) => status_of(budget, Err(why), &billing, now),
        };
        if budget.status.as_ref() != Some(&status) {
            let api: Api<Budget> = Api::namespaced(self.shared.kube.clone(), &ns);
            let patch = json!({
                "apiVersion": gpucloud_crd::api_version(),
                "kind": "Budget",
                "status": status,
            });
            api.patch_status(
                &name,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&patch),
            )
            .await?;
            debug!(budget = %format!("{ns}/{name}"), "status written");
        }
        // Reservations expire without an event of their own: look again once they have.
        Ok(match figures {
            Some(f) if f.reserved_per_hour > 0.0 => {
                Action::requeue(RESERVATION_LIFETIME + Duration::from_secs(1))
            }
            _ => Action::await_change(),
        })
    }
}

impl Reconciler for BudgetReconciler {
    type Kind = Budget;
    type Error = BudgetError;
    const KIND: &'static str = "Budget";

    fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    fn cache(&self) -> &Cache<Budget> {
        &self.cache
    }

    fn resync(&self) -> &Resync {
        &self.resync
    }

    async fn reconcile(self: Arc<Self>, budget: Arc<Budget>) -> Result<Action, BudgetError> {
        self.pass(&budget).await
    }

    fn error_policy(&self, key: &str, error: &BudgetError) -> Action {
        warn!(budget = %key, %error, retry_in = ?RETRY_AFTER, "reconcile failed");
        Action::requeue(RETRY_AFTER)
    }

    /// The ledger learns the Budget's rule as the watch brings it, a listing's Budgets too,
    /// before the listing's end says the Budgets are in the ledger.
    fn seen(&self, budget: &Budget) {
        learn(&self.ledger, budget);
    }

    /// Deleted, no longer in a relisting, or its namespace no longer watched: gone from
    /// the ledger.
    fn forget(&self, key: &str) {
        unlearn(&self.ledger, key);
    }
}

/// `ledger` learns `budget`'s rule; a Budget whose rule is unusable holds nothing.
fn learn(ledger: &BudgetLedger, budget: &Budget) {
    let (ns, name) = (budget.namespace().unwrap_or_default(), budget.name_any());
    match rule_of(budget) {
        Ok(rule) => ledger.set_budget(&ns, &name, rule),
        Err(_) => ledger.remove_budget(&ns, &name),
    }
}

/// `ledger` lets go of the rule of Budget `key` (`namespace/name`).
fn unlearn(ledger: &BudgetLedger, key: &str) {
    if let Some((ns, name)) = key.split_once('/') {
        ledger.remove_budget(ns, name);
    }
}

/// What the Budgets' status offers the dictionaries their cache packs them against.
fn shape(budget: &Budget) -> Shape {
    Shape::of_status(budget.status.as_ref().map(|s| s.conditions.as_slice()))
}

/// The Budget kind's controller, ready for the runtime: its reconciler, what wakes its
/// Budgets (a member's change, a read of the billing), and its companion (the members'
/// watches, the billing's reads, the count of the first listings).
pub struct BudgetController {
    pub reconciler: Arc<BudgetReconciler>,
    pub wakes: BoxStream<'static, ObjectRef<Budget>>,
    pub companion: Companion<Budget>,
}

impl BudgetController {
    pub fn new(
        shared: Arc<Shared>,
        ledger: Arc<BudgetLedger>,
        watched: Watched,
        billing_interval: Duration,
    ) -> Self {
        let billing: BillingState = Arc::new(parking_lot::RwLock::new(Billing::Unread));
        let reconciler = Arc::new(BudgetReconciler {
            shared: shared.clone(),
            ledger: ledger.clone(),
            billing: billing.clone(),
            cache: Cache::with_shape(shape),
            resync: Resync::default(),
        });
        let (member_wakes, member_namespaces) = mpsc::channel(MEMBER_WAKES_QUEUED);
        let (reconcile_all, billing_read) = futures::channel::mpsc::unbounded();
        let wakes = {
            let (members_cache, billing_cache) =
                (reconciler.cache.clone(), reconciler.cache.clone());
            let mut member_namespaces = member_namespaces;
            let of_members = stream::poll_fn(move |cx| member_namespaces.poll_recv(cx))
                .flat_map(move |ns: String| budgets(&members_cache, |key| in_namespace(key, &ns)));
            let of_billing = billing_read.flat_map(move |()| budgets(&billing_cache, |_| true));
            stream::select(of_members, of_billing).boxed()
        };
        let beside = Beside {
            shared,
            ledger,
            watched,
            billing,
            billing_interval,
            member_wakes,
            reconcile_all,
        };
        let companion: Companion<Budget> =
            Box::new(move |_, synced| tokio::spawn(beside.run(synced)));
        Self {
            reconciler,
            wakes,
            companion,
        }
    }
}

/// The Budgets in `cache` whose keys `wanted` chooses, as a stream of wakes.
fn budgets(
    cache: &Cache<Budget>,
    wanted: impl Fn(&str) -> bool,
) -> stream::Iter<std::vec::IntoIter<ObjectRef<Budget>>> {
    let refs: Vec<ObjectRef<Budget>> = cache
        .keys(wanted)
        .iter()
        .filter_map(|key| key.split_once('/'))
        .map(|(ns, name)| ObjectRef::new(name).within(ns))
        .collect();
    stream::iter(refs)
}

/// What runs beside the Budgets' controller, for as long as it runs.
struct Beside {
    shared: Arc<Shared>,
    ledger: Arc<BudgetLedger>,
    watched: Watched,
    billing: BillingState,
    billing_interval: Duration,
    /// Where the namespace of each member that changed goes, for its Budgets' wakes.
    member_wakes: mpsc::Sender<String>,
    /// Where each read of the billing asks for every Budget's pass.
    reconcile_all: futures::channel::mpsc::UnboundedSender<()>,
}

impl Beside {
    /// The members' watches, the count of the first listings and the billing's reads,
    /// until the controller stops (and aborts this task). `synced` turns true once the
    /// Budgets' first listing is in the cache, and so in the ledger (see
    /// [`Reconciler::seen`]).
    async fn run(self, mut synced: tokio::sync::watch::Receiver<bool>) {
        let (shared, ledger, watched) = (self.shared, self.ledger, self.watched);
        let member_wakes = self.member_wakes;
        // Every watch's first listing must be in the ledger before a Pod, Endpoint or
        // Cluster is admitted: the Budgets' (one, merged across namespaces) and each
        // namespace's Pods', Endpoints' and Clusters'.
        let first = members::first_watches(&watched.namespaces).await;
        let listings = Arc::new(FirstListings::new(1 + 3 * first.len()));
        let listed = {
            let ledger = ledger.clone();
            move || {
                if listings.one_done() {
                    ledger.mark_synced();
                }
            }
        };
        let config = watch_config(watched.selector.as_deref(), shared.config.watch_timeout);
        let report = WatchReport::new(shared.metrics.clone(), BudgetReconciler::KIND);
        let watches = LedgerWatches {
            client: &shared.kube,
            namespaces: &watched.namespaces,
            config: &config,
            report: &report,
            ledger: &ledger,
            awaited: &first,
            listed: &listed,
        };
        let changed = stream::select_all([
            watches.of::<Pod>().filter_map(namespace_of).boxed(),
            watches.of::<Endpoint>().filter_map(namespace_of).boxed(),
            watches.of::<Cluster>().filter_map(namespace_of).boxed(),
        ]);
        // Every Budget of a member's namespace: its figures may have moved.
        let wake_members = changed.for_each(|ns| {
            let member_wakes = member_wakes.clone();
            async move {
                // Closed only once the controller has stopped, which aborts this task.
                let _ = member_wakes.send(ns).await;
            }
        });
        let budgets_listed = async {
            if synced.wait_for(|listed| *listed).await.is_ok() {
                listed();
            }
        };
        let refresher = spend::refresh(
            shared.clone(),
            ledger.clone(),
            self.billing,
            self.billing_interval,
            self.reconcile_all,
        );
        tokio::join!(wake_members, budgets_listed, refresher);
    }
}

/// The namespace of a member the watch brings; `None` for an error of the watch, which
/// tries again on its own (its health said what matters).
async fn namespace_of<K: Resource<DynamicType = ()>>(
    member: Result<K, watcher::Error>,
) -> Option<String> {
    match member {
        Ok(member) => Some(member.namespace().unwrap_or_default()),
        Err(error) => {
            debug!(kind = BudgetReconciler::KIND, resource = %K::kind(&()), %error, "watch");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_crd::budget::BudgetSpec;
    use gpucloud_engine::feed::Feed;
    use gpucloud_engine::metrics::Metrics;
    use kube::runtime::watcher::Event;

    /// Budget `namespace/name` at `generation`, capped at `max` an hour.
    fn budget(namespace: &str, name: &str, generation: i64, max: f64) -> Budget {
        let spec: BudgetSpec = serde_json::from_value(json!({"maxCostPerHour": max})).unwrap();
        let mut b = Budget::new(name, spec);
        b.metadata.namespace = Some(namespace.into());
        b.metadata.uid = Some(format!("uid-{name}"));
        b.metadata.generation = Some(generation);
        b
    }

    /// `b` with the status a pass writes while it is enforced, at resourceVersion `version`.
    fn enforced(mut b: Budget, version: &str) -> Budget {
        let at = Timestamp::from_second(100).unwrap();
        b.status = Some(status_of(&b, Ok(&Figures::default()), &Billing::Unread, at));
        b.metadata.resource_version = Some(version.into());
        b
    }

    fn sorted(mut keys: Vec<String>) -> Vec<String> {
        keys.sort();
        keys
    }

    #[test]
    fn a_budgets_own_status_write_triggers_no_pass_and_a_spec_change_does() {
        let cache = Cache::with_shape(shape);
        let mut feed = Feed::new(cache.clone());
        let mut on = |event: Event<Budget>| feed.on(&event, |_| false, |_| {}, |_| {});
        on(Event::Init);
        on(Event::InitApply(budget("ns", "team", 1, 1.0)));
        assert_eq!(on(Event::InitDone), ["ns/team"], "the first listing");
        assert!(
            on(Event::Apply(enforced(budget("ns", "team", 1, 1.0), "2"))).is_empty(),
            "its status written"
        );
        assert!(
            on(Event::Apply(enforced(budget("ns", "team", 1, 1.0), "3"))).is_empty(),
            "written again"
        );
        assert_eq!(
            on(Event::Apply(enforced(budget("ns", "team", 2, 2.0), "4"))),
            ["ns/team"],
            "its spec changed"
        );
        let cached = cache.get("ns/team").unwrap().unwrap();
        assert_eq!(cached.spec.max_cost_per_hour, 2.0);
        let written = enforced(budget("ns", "team", 2, 2.0), "4");
        assert_eq!(
            serde_json::to_value(&cached).unwrap(),
            serde_json::to_value(&written).unwrap(),
            "whole"
        );
    }

    #[test]
    fn an_enforced_budget_gives_its_cache_the_ready_dictionary() {
        let plain = budget("ns", "team", 1, 1.0);
        assert_eq!(shape(&plain), Shape::NoStatus);
        assert_eq!(shape(&enforced(plain.clone(), "2")), Shape::Ready);
        let mut invalid = plain.clone();
        invalid.status = Some(status_of(
            &plain,
            Err("spec.selector is invalid"),
            &Billing::Unread,
            Timestamp::from_second(100).unwrap(),
        ));
        assert_eq!(shape(&invalid), Shape::WithStatus);
    }

    #[test]
    fn the_ledger_learns_a_rule_as_it_is_seen_and_lets_it_go_when_it_is_gone() {
        let ledger = BudgetLedger::new(&Metrics::new());
        learn(&ledger, &budget("ns", "team", 1, 1.0));
        assert!(ledger.has_budgets("ns"));
        assert!(ledger.figures("ns", "team").is_some());
        // A selector that cannot be used: no rule, so nothing is held for it.
        let mut bad = budget("ns", "team", 2, 1.0);
        bad.spec.selector = serde_json::from_value(
            json!({"matchExpressions": [{"key": "a", "operator": "Near", "values": ["b"]}]}),
        )
        .unwrap();
        learn(&ledger, &bad);
        assert!(ledger.figures("ns", "team").is_none());
        learn(&ledger, &budget("ns", "team", 3, 1.0));
        unlearn(&ledger, "ns/team");
        assert!(!ledger.any_budget());
    }

    #[test]
    fn a_member_wakes_the_budgets_of_its_namespace_and_the_billing_every_budget() {
        let cache = Cache::with_shape(shape);
        for (ns, name) in [("a", "one"), ("a", "two"), ("ab", "three")] {
            cache.apply(&Event::Apply(budget(ns, name, 1, 1.0)));
        }
        let keys = |wanted: &dyn Fn(&str) -> bool| {
            let refs: Vec<String> = futures::executor::block_on_stream(budgets(&cache, wanted))
                .map(|r| format!("{}/{}", r.namespace.unwrap_or_default(), r.name))
                .collect();
            sorted(refs)
        };
        assert_eq!(keys(&|key| in_namespace(key, "a")), ["a/one", "a/two"]);
        assert_eq!(keys(&|_| true), ["a/one", "a/two", "ab/three"]);
    }
}
