//! The namespaces `--namespace-selector` chooses, which come and go while the operator runs.
//!
//! One metadata-only watch of Namespaces, with the label selector on the watch, for the
//! whole process: every kind's watches follow the set it publishes
//! ([`crate::namespace_streams`]), so a namespace that comes to match is listed once per
//! watch that needs it, and the other namespaces' watches go on untouched.
//!
//! A namespace stops being watched when it stops matching (its label removed: a watch with
//! a label selector tells that as a deletion) or when it is deleted. A namespace being
//! deleted still matches until it is gone: its objects must still pass through the
//! operator's finalizer, and the namespace is only removed once they have.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, OnceLock};

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::ListParams;
use kube::core::PartialObjectMeta;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, ResourceExt};
use tokio::sync::watch;
use tracing::{debug, info};

use super::engine::EngineError;
use super::metrics::Metrics;
use super::watch_health::WatchHealth;
use super::watch_loop::{watch_config, watch_loop};

/// The names of the namespaces watched, as one set.
pub type NamespaceNames = Arc<BTreeSet<String>>;

/// What changed in the set: namespaces that started or stopped matching.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Change {
    pub started: Vec<String>,
    pub stopped: Vec<String>,
}

impl Change {
    fn between(before: &BTreeSet<String>, after: &BTreeSet<String>) -> Self {
        Self {
            started: after.difference(before).cloned().collect(),
            stopped: before.difference(after).cloned().collect(),
        }
    }

    fn is_empty(&self) -> bool {
        self.started.is_empty() && self.stopped.is_empty()
    }
}

/// Pure: the matching namespaces, from the events of the Namespace watch.
#[derive(Debug, Default)]
pub struct NamespaceSet {
    names: BTreeSet<String>,
    /// During a listing: what it has shown so far.
    listing: Option<BTreeSet<String>>,
    listed: bool,
}

impl NamespaceSet {
    /// Takes one event; what changed, once the first listing is done and when anything did.
    /// The first listing's end reports every namespace as started (an empty change too:
    /// the set is known from then on).
    pub fn on(&mut self, event: Event<PartialObjectMeta<Namespace>>) -> Option<Change> {
        let after = match event {
            Event::Init => {
                self.listing = Some(BTreeSet::new());
                return None;
            }
            Event::InitApply(ns) => {
                if let Some(listing) = self.listing.as_mut() {
                    listing.insert(ns.name_any());
                }
                return None;
            }
            // A relisting ends: whatever it did not show has stopped matching meanwhile.
            Event::InitDone => self.listing.take().unwrap_or_default(),
            Event::Apply(ns) => {
                let mut after = self.names.clone();
                after.insert(ns.name_any());
                after
            }
            Event::Delete(ns) => {
                let mut after = self.names.clone();
                after.remove(&ns.name_any());
                after
            }
        };
        let first = !self.listed;
        self.listed = self.listed || self.listing.is_none();
        let change = Change::between(&self.names, &after);
        self.names = after;
        (self.listed && (first || !change.is_empty())).then_some(change)
    }

    pub fn names(&self) -> NamespaceNames {
        Arc::new(self.names.clone())
    }
}

/// The namespaces the selector chooses, as the one Namespace watch of the process last
/// saw them. Cloned into every kind's watches; the watch stops when the last clone goes.
#[derive(Clone)]
pub struct SelectedNamespaces {
    selector: Arc<str>,
    /// `None` until the Namespace watch's first listing is done.
    names: watch::Receiver<Option<NamespaceNames>>,
    /// The set as the first listing found it: every kind starts from the same set, so
    /// that the watches started at once all make one first listing.
    first: Arc<OnceLock<NamespaceNames>>,
}

impl fmt::Debug for SelectedNamespaces {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SelectedNamespaces")
            .field("selector", &self.selector)
            .field("names", &*self.names.borrow())
            .finish()
    }
}

impl SelectedNamespaces {
    /// Starts watching the Namespaces that `selector` matches. One list call first, so that
    /// a selector the apiserver refuses, or a missing right to list namespaces, stops the
    /// start-up with an error naming the flag instead of a watch retrying forever.
    pub async fn start(
        client: Client,
        selector: &str,
        metrics: Arc<Metrics>,
        watch_timeout: std::time::Duration,
    ) -> Result<Self, EngineError> {
        let api: Api<Namespace> = Api::all(client);
        let refused = |reason: String| EngineError::NamespaceSelector {
            selector: selector.to_string(),
            reason,
        };
        match api
            .list_metadata(&ListParams::default().labels(selector).limit(1))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 403 => {
                return Err(refused(
                    "the operator may not list namespaces: it needs list and watch on \
                     namespaces (cluster-wide) to follow a namespace selector"
                        .into(),
                ));
            }
            Err(kube::Error::Api(e)) if e.code == 400 => {
                return Err(refused(format!("not a label selector: {}", e.message)));
            }
            Err(e) => return Err(EngineError::Kube(e)),
        }
        let (tx, names) = watch::channel(None);
        let first = Arc::new(OnceLock::new());
        let selected = Self {
            selector: selector.into(),
            names,
            first: first.clone(),
        };
        let config = watch_config(Some(selector), watch_timeout);
        // An Api of PartialObjectMeta makes metadata-only requests.
        let meta: Api<PartialObjectMeta<Namespace>> = Api::all(api.into_client());
        // Its connection counts as the Namespace kind's in `gpucloud_watches_disconnected`.
        let health = WatchHealth::new(metrics.clone(), "Namespace", "Namespace", "");
        let events = watch_loop(meta, config, health).boxed();
        tokio::spawn(follow(events, tx, first, selector.to_string(), metrics));
        Ok(selected)
    }

    /// A selection that never changes: `names`, known at once (tests, fixed lists).
    pub fn fixed(names: impl IntoIterator<Item = String>) -> Self {
        let names: NamespaceNames = Arc::new(names.into_iter().collect());
        let first = Arc::new(OnceLock::new());
        let _ = first.set(names.clone());
        // The sender goes at once: nothing will change, and a reader knows it.
        let (_, rx) = watch::channel(Some(names));
        Self {
            selector: "".into(),
            names: rx,
            first,
        }
    }

    pub fn selector(&self) -> &str {
        &self.selector
    }

    /// The namespaces watched now (none before the first listing of Namespaces is done).
    pub fn now(&self) -> NamespaceNames {
        self.names.borrow().clone().unwrap_or_default()
    }

    /// The set as the first listing of Namespaces found it, once it is done; `None` if the
    /// watch stopped before.
    pub async fn first(&self) -> Option<NamespaceNames> {
        let mut names = self.names.clone();
        names.wait_for(|n| n.is_some()).await.ok()?;
        self.first.get().cloned()
    }

    /// Waits for the set to change; the set then, or `None` once it never will change.
    pub(crate) async fn changed(
        names: &mut watch::Receiver<Option<NamespaceNames>>,
    ) -> Option<NamespaceNames> {
        loop {
            names.changed().await.ok()?;
            if let Some(set) = names.borrow_and_update().clone() {
                return Some(set);
            }
        }
    }

    /// A receiver of the set for one consumer that starts from [`Self::first`]: its first
    /// change is due at once, and the consumer compares what it watches with the set.
    pub(crate) fn follower(&self) -> watch::Receiver<Option<NamespaceNames>> {
        let mut names = self.names.clone();
        names.mark_changed();
        names
    }
}

/// The Namespace watch: publishes the set and says when a namespace starts or stops being
/// watched, until every [`SelectedNamespaces`] is gone.
async fn follow(
    mut events: BoxStream<'static, Result<Event<PartialObjectMeta<Namespace>>, watcher::Error>>,
    tx: watch::Sender<Option<NamespaceNames>>,
    first: Arc<OnceLock<NamespaceNames>>,
    selector: String,
    metrics: Arc<Metrics>,
) {
    let mut set = NamespaceSet::default();
    loop {
        let event = tokio::select! {
            _ = tx.closed() => return,
            event = events.next() => event,
        };
        let event = match event {
            Some(Ok(event)) => event,
            // The watch tries again on its own; its health said what matters.
            Some(Err(error)) => {
                debug!(%selector, %error, "namespace watch");
                continue;
            }
            None => return,
        };
        if matches!(event, Event::Init) {
            metrics.watch_listed("", "Namespace", "");
        }
        let Some(change) = set.on(event) else {
            continue;
        };
        for namespace in &change.started {
            info!(%namespace, %selector, "namespace watched: it matches the namespace selector");
        }
        for namespace in &change.stopped {
            info!(%namespace, %selector, "namespace no longer watched: it no longer matches the namespace selector, or is gone");
        }
        let names = set.names();
        metrics.set_watched_namespaces(names.len());
        let _ = first.set(names.clone());
        tx.send_replace(Some(names));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ns(name: &str) -> PartialObjectMeta<Namespace> {
        let mut meta = PartialObjectMeta::<Namespace>::default();
        meta.metadata.name = Some(name.into());
        meta
    }

    fn change(started: &[&str], stopped: &[&str]) -> Option<Change> {
        let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        Some(Change {
            started: owned(started),
            stopped: owned(stopped),
        })
    }

    #[test]
    fn the_first_listing_starts_every_matching_namespace_at_once() {
        let mut set = NamespaceSet::default();
        assert_eq!(set.on(Event::Init), None);
        assert_eq!(set.on(Event::InitApply(ns("a"))), None);
        assert_eq!(set.on(Event::InitApply(ns("b"))), None);
        assert_eq!(set.on(Event::InitDone), change(&["a", "b"], &[]));
        assert_eq!(set.names().iter().collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn no_match_at_start_is_still_a_known_set() {
        let mut set = NamespaceSet::default();
        set.on(Event::Init);
        assert_eq!(set.on(Event::InitDone), change(&[], &[]));
    }

    #[test]
    fn namespaces_come_and_go_one_by_one() {
        let mut set = NamespaceSet::default();
        set.on(Event::Init);
        set.on(Event::InitApply(ns("a")));
        set.on(Event::InitDone);
        assert_eq!(set.on(Event::Apply(ns("b"))), change(&["b"], &[]));
        assert_eq!(
            set.on(Event::Apply(ns("b"))),
            None,
            "b changed, still matches"
        );
        assert_eq!(set.on(Event::Delete(ns("a"))), change(&[], &["a"]));
        assert_eq!(set.on(Event::Delete(ns("a"))), None);
    }

    #[test]
    fn a_relisting_tells_what_changed_while_the_watch_was_away() {
        let mut set = NamespaceSet::default();
        set.on(Event::Init);
        set.on(Event::InitApply(ns("a")));
        set.on(Event::InitApply(ns("b")));
        set.on(Event::InitDone);
        assert_eq!(set.on(Event::Init), None);
        assert_eq!(set.on(Event::InitApply(ns("b"))), None);
        assert_eq!(set.on(Event::InitApply(ns("c"))), None);
        assert_eq!(set.on(Event::InitDone), change(&["c"], &["a"]));
        assert_eq!(set.on(Event::Init), None);
        set.on(Event::InitApply(ns("b")));
        set.on(Event::InitApply(ns("c")));
        assert_eq!(set.on(Event::InitDone), None, "nothing changed");
    }

    #[tokio::test]
    async fn a_fixed_selection_is_known_at_once_and_never_changes() {
        let fixed = SelectedNamespaces::fixed(["a".to_string(), "b".to_string()]);
        let first = fixed.first().await.expect("known");
        assert_eq!(first.iter().collect::<Vec<_>>(), ["a", "b"]);
        let mut follower = fixed.follower();
        assert_eq!(
            SelectedNamespaces::changed(&mut follower).await,
            Some(first)
        );
        assert_eq!(SelectedNamespaces::changed(&mut follower).await, None);
    }
}
