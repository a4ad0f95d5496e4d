//! The watches of a controller when it watches several namespaces: one watch per
//! namespace, started and stopped as the set of watched namespaces changes
//! (`--namespace-selector`, see [`crate::namespace_watch`]), or a fixed list.
//!
//! - [`watch_namespaces`] (through [`merged_watches`]) feeds one store from them (the
//!   runtime's cache of a kind), through
//!   [`NamespaceMerge`]: a namespace that comes is listed alone and told as changes; one
//!   that goes leaves the store as deletions, once every event told before is in the store.
//!   The watches of the other namespaces are not touched: no relisting.
//! - [`watch_each_namespace`] gives one stream per namespace to a caller that keeps no
//!   store (the Secrets' changes, the Budgets' ledger), for it to turn into what it needs.
//!
//! Every watch is a [`watch_loop`] reported to a [`WatchReport`], which counts its listings
//! (so that it shows that a namespace coming or going made no other namespace list again)
//! and whether it is connected.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use futures::stream::{self, AbortHandle, BoxStream, SelectAll};
use futures::{Stream, StreamExt};
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource};
use tokio::sync::watch as channel;
use tracing::debug;

use super::metrics::Metrics;
use super::namespace_watch::{NamespaceNames, SelectedNamespaces};
use super::watch_health::WatchHealth;
use super::watch_loop::{Listed, watch_loop};
use super::watch_merge::NamespaceMerge;
use super::watched::Namespaces;

/// The events of one watch.
pub type Events<K> = BoxStream<'static, Result<Event<K>, watcher::Error>>;

/// What the watches of one controller (`kind`) report to: each listing, counted per
/// resource and namespace in `gpucloud_watch_listings_total`, and each watch's connection
/// ([`WatchHealth`]: `gpucloud_watches_disconnected` and the log).
#[derive(Clone)]
pub struct WatchReport {
    metrics: Arc<Metrics>,
    kind: &'static str,
}

impl WatchReport {
    pub fn new(metrics: Arc<Metrics>, kind: &'static str) -> Self {
        Self { metrics, kind }
    }

    /// The watch of `api` (in `namespace`; empty: every namespace) with `config`: a
    /// [`watch_loop`], reported here.
    pub fn watch<K>(&self, api: Api<K>, namespace: &str, config: watcher::Config) -> Events<K>
    where
        K: Listed + Resource<DynamicType = ()>,
    {
        let health = WatchHealth::new(self.metrics.clone(), self.kind, &K::kind(&()), namespace);
        self.counted(namespace, watch_loop(api, config, health))
            .boxed()
    }

    /// `events` of the watch in `namespace` (empty: every namespace), each listing counted.
    fn counted<K: Resource<DynamicType = ()>>(
        &self,
        namespace: &str,
        events: impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static,
    ) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send + 'static {
        let (metrics, kind) = (self.metrics.clone(), self.kind);
        let (resource, namespace) = (K::kind(&()).to_string(), namespace.to_string());
        events.inspect(move |event| {
            if let Ok(Event::Init) = event {
                metrics.watch_listed(kind, &resource, &namespace);
            }
        })
    }
}

/// What a namespaced watch of this module can carry: a namespaced kind, read from JSON (a
/// kind of the operator, or any namespaced Kubernetes type).
pub use gpucloud_crd::NamespacedKind as Watchable;

/// The watch events of kind `K` in `namespaces`, for the store the caller fills from this
/// stream, whose objects in a namespace `held` gives: one watch when it covers them (every
/// namespace, or one fixed namespace), else one per namespace merged by
/// [`NamespaceMerge`]. Each watch reports to `report`.
pub fn watch_namespaces<K>(
    client: &Client,
    namespaces: &Namespaces,
    config: watcher::Config,
    held: impl Fn(&str) -> Vec<Arc<K>> + Send + Sync + 'static,
    report: WatchReport,
) -> BoxStream<'static, Result<Event<K>, watcher::Error>>
where
    K: Watchable,
{
    match namespaces {
        Namespaces::All => report.watch(Api::all(client.clone()), "", config),
        Namespaces::Only(list) if list.len() == 1 => {
            report.watch(Api::namespaced(client.clone(), &list[0]), &list[0], config)
        }
        _ => merged_watches(client, namespaces, config, held, report),
    }
}

/// The namespaces to watch one by one; `None`: every namespace, with one watch.
fn selection(namespaces: &Namespaces) -> Option<SelectedNamespaces> {
    match namespaces {
        Namespaces::All => None,
        Namespaces::Only(list) => Some(SelectedNamespaces::fixed(list.iter().cloned())),
        Namespaces::Selected(selected) => Some(selected.clone()),
    }
}

/// The watch of kind `K` in one namespace, reported to `report`.
fn namespace_watch<K>(
    client: &Client,
    namespace: &str,
    config: &watcher::Config,
    report: &WatchReport,
) -> Events<K>
where
    K: Watchable,
{
    report.watch(
        Api::<K>::namespaced(client.clone(), namespace),
        namespace,
        config.clone(),
    )
}

/// The streams running, one per namespace, each ended at once when its namespace goes.
struct Running<T> {
    streams: SelectAll<BoxStream<'static, (String, T)>>,
    stops: HashMap<String, AbortHandle>,
}

impl<T: Send + 'static> Running<T> {
    fn new() -> Self {
        Self {
            streams: SelectAll::new(),
            stops: HashMap::new(),
        }
    }

    fn start(&mut self, namespace: &str, items: BoxStream<'static, T>) {
        let (items, stop) = stream::abortable(items);
        let tag = namespace.to_string();
        self.streams
            .push(items.map(move |item| (tag.clone(), item)).boxed());
        if let Some(earlier) = self.stops.insert(namespace.to_string(), stop) {
            earlier.abort();
        }
    }

    fn stop(&mut self, namespace: &str) {
        if let Some(stop) = self.stops.remove(namespace) {
            stop.abort();
        }
    }

    /// The namespaces to start and to stop so that the running ones are `wanted`.
    fn compare(&self, wanted: &BTreeSet<String>) -> (Vec<String>, Vec<String>) {
        let start = wanted
            .iter()
            .filter(|ns| !self.stops.contains_key(*ns))
            .cloned()
            .collect();
        let mut stop: Vec<String> = self
            .stops
            .keys()
            .filter(|ns| !wanted.contains(*ns))
            .cloned()
            .collect();
        stop.sort();
        (start, stop)
    }
}

/// What a stream of namespaced watches follows: the set, and whether it may still change.
struct Following {
    selected: SelectedNamespaces,
    changes: channel::Receiver<Option<NamespaceNames>>,
    open: bool,
}

impl Following {
    fn new(selected: SelectedNamespaces) -> Self {
        let changes = selected.follower();
        Self {
            selected,
            changes,
            open: true,
        }
    }

    /// The set to start from: the first listing's (none if it never came).
    async fn first(&mut self) -> NamespaceNames {
        match self.selected.first().await {
            Some(first) => first,
            None => {
                self.open = false;
                NamespaceNames::default()
            }
        }
    }
}

/// The merged watches of kind `K` in the namespaces `namespaces` names one by one, for the
/// store whose objects in a namespace `held` gives (see the module's documentation).
pub fn merged_watches<K>(
    client: &Client,
    namespaces: &Namespaces,
    config: watcher::Config,
    held: impl Fn(&str) -> Vec<Arc<K>> + Send + Sync + 'static,
    report: WatchReport,
) -> Events<K>
where
    K: Watchable,
{
    let Some(selected) = selection(namespaces) else {
        return report.watch(Api::all(client.clone()), "", config);
    };
    let client = client.clone();
    let merged = Merged {
        following: Following::new(selected),
        running: Running::new(),
        open: Box::new(move |ns: &str| namespace_watch(&client, ns, &config, &report)),
        merge: None,
        queue: VecDeque::new(),
        leaving: Vec::new(),
        held: Arc::new(held),
    };
    stream::unfold(merged, |mut merged| async move {
        let event = merged.next().await;
        Some((event, merged))
    })
    .boxed()
}

/// What happened next: the set changed (`None`: it never will again), or a namespace's
/// stream gave an item.
enum Step<T> {
    Set(Option<NamespaceNames>),
    Item(String, T),
}

/// Waits for the next change of the set (when `follow`) or item of a running stream;
/// forever when there can be neither.
async fn next_step<T: Send + 'static>(
    following: &mut Following,
    running: &mut Running<T>,
    follow: bool,
) -> Step<T> {
    tokio::select! {
        set = SelectedNamespaces::changed(&mut following.changes), if follow => Step::Set(set),
        Some((ns, item)) = running.streams.next() => Step::Item(ns, item),
        else => std::future::pending().await,
    }
}

type Open<T> = Box<dyn Fn(&str) -> BoxStream<'static, T> + Send>;

struct Merged<K: Resource<DynamicType = ()> + 'static> {
    following: Following,
    running: Running<Result<Event<K>, watcher::Error>>,
    open: Open<Result<Event<K>, watcher::Error>>,
    /// `None` until the set to start from is known.
    merge: Option<NamespaceMerge<K>>,
    /// Events to tell, in order.
    queue: VecDeque<Result<Event<K>, watcher::Error>>,
    /// Namespaces no longer watched whose objects are still to leave the store.
    leaving: Vec<String>,
    /// The objects the store holds in a namespace.
    held: Held<K>,
}

type Held<K> = Arc<dyn Fn(&str) -> Vec<Arc<K>> + Send + Sync>;

impl<K> Merged<K>
where
    K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static,
{
    async fn next(&mut self) -> Result<Event<K>, watcher::Error> {
        let held = self.held.clone();
        let held = move |ns: &str| held(ns);
        loop {
            if self.merge.is_none() {
                let first = self.following.first().await;
                for ns in first.iter() {
                    self.running.start(ns, (self.open)(ns));
                }
                let mut merge = NamespaceMerge::new(first.iter().cloned());
                self.queue.extend(merge.start().into_iter().map(Ok));
                self.merge = Some(merge);
            }
            let Some(merge) = self.merge.as_mut() else {
                continue;
            };
            if let Some(event) = self.queue.pop_front() {
                return event;
            }
            // The queue is empty: every event told so far has passed the reflector (the
            // stream is polled again only then), so the store holds all of the namespace.
            if let Some(ns) = self.leaving.pop() {
                let gone = merge.remove(&ns, &held);
                debug!(kind = %K::kind(&()), namespace = %ns, objects = gone.len(), "the namespace's objects leave the store");
                self.queue.extend(gone.into_iter().map(Ok));
                continue;
            }
            // Changes of the set wait for the end of the first listing, which the
            // namespaces watched at start make together.
            let follow = self.following.open && merge.synced();
            match next_step(&mut self.following, &mut self.running, follow).await {
                Step::Set(Some(set)) => self.follow(&set),
                Step::Set(None) => self.following.open = false,
                Step::Item(ns, Ok(event)) => {
                    if let Some(merge) = self.merge.as_mut() {
                        self.queue
                            .extend(merge.on(&ns, event, &held).into_iter().map(Ok));
                    }
                }
                Step::Item(_, Err(err)) => self.queue.push_back(Err(err)),
            }
        }
    }

    fn follow(&mut self, set: &BTreeSet<String>) {
        let (start, stop) = self.running.compare(set);
        let Some(merge) = self.merge.as_mut() else {
            return;
        };
        for ns in start {
            debug!(kind = %K::kind(&()), namespace = %ns, "watch of the namespace started");
            self.running.start(&ns, (self.open)(&ns));
            merge.add(&ns);
        }
        for ns in stop {
            debug!(kind = %K::kind(&()), namespace = %ns, "watch of the namespace stopped");
            self.running.stop(&ns);
            self.leaving.push(ns);
        }
    }
}

/// One watch of kind `K` per namespace of `namespaces` (one for all when it is every
/// namespace), each turned by `then` (given the namespace, empty for every namespace) into
/// what the caller needs, and the results merged. A namespace that comes gets its own
/// watch, which lists it; one that goes has its stream dropped, with whatever `then` built
/// into it (a caller that must forget what it held does so when its stream is dropped).
pub fn watch_each_namespace<K, T>(
    client: &Client,
    namespaces: &Namespaces,
    config: watcher::Config,
    report: WatchReport,
    then: impl Fn(&str, Events<K>) -> BoxStream<'static, T> + Send + 'static,
) -> BoxStream<'static, T>
where
    K: Watchable,
    T: Send + 'static,
{
    let Some(selected) = selection(namespaces) else {
        return then("", report.watch(Api::all(client.clone()), "", config));
    };
    let client = client.clone();
    let open: Open<T> =
        Box::new(move |ns: &str| then(ns, namespace_watch(&client, ns, &config, &report)));
    let each = Each {
        following: Following::new(selected),
        running: Running::new(),
        open,
        started: false,
    };
    stream::unfold(each, |mut each| async move {
        let item = each.next().await;
        Some((item, each))
    })
    .boxed()
}

struct Each<T> {
    following: Following,
    running: Running<T>,
    open: Open<T>,
    started: bool,
}

impl<T: Send + 'static> Each<T> {
    async fn next(&mut self) -> T {
        if !self.started {
            self.started = true;
            let first = self.following.first().await;
            self.follow(&first);
        }
        loop {
            let follow = self.following.open;
            match next_step(&mut self.following, &mut self.running, follow).await {
                Step::Set(Some(set)) => self.follow(&set),
                Step::Set(None) => self.following.open = false,
                Step::Item(_, item) => return item,
            }
        }
    }

    fn follow(&mut self, set: &BTreeSet<String>) {
        let (start, stop) = self.running.compare(set);
        for ns in start {
            self.running.start(&ns, (self.open)(&ns));
        }
        for ns in stop {
            self.running.stop(&ns);
        }
    }
}
