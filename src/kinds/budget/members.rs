//! The Budgets' members (gpucloud Pods, Endpoints and Clusters) as the ledger sees them:
//! one watch per watched namespace, each feeding the ledger, and each letting go of what it
//! told the ledger when it stops (its namespace no longer matches `--namespace-selector`),
//! so that a member deleted while its namespace was not watched does not count on.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use parking_lot::Mutex;

use gpucloud_engine::namespace_streams::{WatchReport, Watchable, watch_each_namespace};
use gpucloud_engine::runner::Namespaces;
use gpucloud_engine::vanished::Vanished;
use gpucloud_policy::budget::BudgetLedger;
use gpucloud_policy::budget::ledger::{Member, MemberKind};
use gpucloud_policy::budget::members::BudgetMember;

/// The namespaces whose watches make the first listing (`""`: one watch of every
/// namespace): the set known at start.
pub(super) async fn first_watches(namespaces: &Namespaces) -> BTreeSet<String> {
    match namespaces {
        Namespaces::All => [String::new()].into(),
        Namespaces::Only(list) => list.iter().cloned().collect(),
        Namespaces::Selected(selected) => selected
            .first()
            .await
            .map(|names| names.iter().cloned().collect())
            .unwrap_or_default(),
    }
}

/// How many watches have still to finish their first listing. Every relist ends with
/// another "listed", so the count stops at zero instead of wrapping, and says it reached
/// zero once.
pub(super) struct FirstListings(AtomicUsize);

impl FirstListings {
    pub(super) fn new(watches: usize) -> Self {
        Self(AtomicUsize::new(watches))
    }

    /// One listing finished; true for the one that finished the last first listing.
    pub(super) fn one_done(&self) -> bool {
        self.0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok_and(|before| before == 1)
    }
}

/// What one namespace's member watch has told the ledger. Dropped with the watch's stream:
/// then its members are forgotten, and a first listing it never finished no longer holds
/// the ledger's sync up.
struct MemberWatch<L: Fn()> {
    namespace: String,
    ledger: Arc<BudgetLedger>,
    held: Vanished,
    /// The kind of the members it watches.
    kind: MemberKind,
    /// The namespaces whose first listing is still awaited; `listed` is called as each ends.
    awaited: Arc<Mutex<BTreeSet<String>>>,
    listed: L,
}

impl<L: Fn()> MemberWatch<L> {
    fn first_listing_done(&self) {
        if self.awaited.lock().remove(&self.namespace) {
            (self.listed)();
        }
    }
}

impl<L: Fn()> Drop for MemberWatch<L> {
    fn drop(&mut self) {
        for (ns, name) in self.held.take_all() {
            self.ledger.forget(&ns, &Member::new(self.kind, name));
        }
        self.first_listing_done();
    }
}

/// The watches that feed the ledger its members, one per namespace, the same for every
/// kind. `awaited` holds the namespaces of the first listing (see [`first_watches`]);
/// `listed` is called once for each of them and each kind, when its first listing ends.
pub(super) struct LedgerWatches<'a, L> {
    pub(super) client: &'a Client,
    pub(super) namespaces: &'a Namespaces,
    pub(super) config: &'a watcher::Config,
    pub(super) report: &'a WatchReport,
    pub(super) ledger: &'a Arc<BudgetLedger>,
    pub(super) awaited: &'a BTreeSet<String>,
    pub(super) listed: &'a L,
}

impl<L: Fn() + Clone + Send + Sync + 'static> LedgerWatches<'_, L> {
    /// The members of kind `K` fed into the ledger (observed, and forgotten when gone), as
    /// the objects they touch.
    pub(super) fn of<K: Watchable + BudgetMember>(
        &self,
    ) -> BoxStream<'static, Result<K, watcher::Error>> {
        let (ledger, listed) = (self.ledger.clone(), self.listed.clone());
        let awaited = Arc::new(Mutex::new(self.awaited.clone()));
        watch_each_namespace(
            self.client,
            self.namespaces,
            self.config.clone(),
            self.report.clone(),
            move |namespace, events| {
                let mut watch = MemberWatch {
                    namespace: namespace.to_string(),
                    ledger: ledger.clone(),
                    held: Vanished::default(),
                    kind: K::KIND,
                    awaited: awaited.clone(),
                    listed: listed.clone(),
                };
                events
                    .inspect_ok(move |event: &watcher::Event<K>| {
                        for (ns, name) in watch.held.on(event) {
                            watch.ledger.forget(&ns, &Member::new(K::KIND, name));
                        }
                        match event {
                            watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                                watch.ledger.observe(o)
                            }
                            watcher::Event::Delete(o) => watch
                                .ledger
                                .forget(&o.namespace().unwrap_or_default(), &o.member()),
                            watcher::Event::InitDone => watch.first_listing_done(),
                            watcher::Event::Init => {}
                        }
                    })
                    .touched_objects()
                    .boxed()
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_listings_are_counted_once_and_relists_do_not_wrap() {
        let listings = FirstListings::new(3);
        assert!(!listings.one_done());
        assert!(!listings.one_done());
        assert!(listings.one_done(), "the last first listing");
        // Relists after that: no wrap to usize::MAX, no second "synced".
        for _ in 0..5 {
            assert!(!listings.one_done());
        }
        assert_eq!(listings.0.load(Ordering::SeqCst), 0);
    }
}
