//! One watch stream from the watches of several namespaces, that one reflector store can
//! take.
//!
//! kube's store keeps a listing aside from its `Init` to its `InitDone`, then swaps it in
//! whole. With one watch per namespace merged as they come, each namespace's listing would
//! swap in alone and drop every other namespace's objects from the store: after a start, or
//! any relisting, the objects of all namespaces but one would be out of the store, and no
//! reconcile could find them until they changed. [`NamespaceMerge`] turns the events of
//! several watches into the events of one:
//! - **The first listings are one listing**: one `Init`, every namespace's objects, and one
//!   `InitDone` once every namespace has listed. A change seen meanwhile from a namespace
//!   that has listed joins that listing; a deletion is passed on after it.
//! - **A later relisting of one namespace** (after its watch fell behind) is told as changes:
//!   what it lists as `Apply`, and at its end a `Delete` for each object of that namespace
//!   the store holds and the relisting did not show.

use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::sync::Arc;

use futures::stream::BoxStream;
use futures::{StreamExt, stream};
use kube::core::NamespaceResourceScope;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::watched::Namespaces;

/// The watch events of kind `K` in `namespaces`, for the store the caller fills from this
/// stream, whose objects in a namespace `held` gives: one watch when it covers them (every
/// namespace, or one), else one per namespace merged by [`NamespaceMerge`].
pub fn watch_namespaces<K>(
    client: &Client,
    namespaces: &Namespaces,
    config: watcher::Config,
    held: impl Fn(&str) -> Vec<Arc<K>> + Send + 'static,
) -> BoxStream<'static, Result<Event<K>, watcher::Error>>
where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let list = match namespaces {
        Namespaces::All => {
            return watch(Api::all(client.clone()), config)
                .default_backoff()
                .boxed();
        }
        Namespaces::Only(list) if list.len() == 1 => {
            return watch(Api::namespaced(client.clone(), &list[0]), config)
                .default_backoff()
                .boxed();
        }
        Namespaces::Only(list) => list.clone(),
    };
    let watches = list.iter().enumerate().map(|(i, ns)| {
        watch(Api::<K>::namespaced(client.clone(), ns), config.clone())
            .default_backoff()
            .map(move |event| (i, event))
            .boxed()
    });
    stream::select_all(watches)
        .scan(NamespaceMerge::new(list), move |merge, (from, event)| {
            let out: Vec<Result<Event<K>, watcher::Error>> = match event {
                Ok(event) => merge.on(from, event, &held).into_iter().map(Ok).collect(),
                Err(err) => vec![Err(err)],
            };
            futures::future::ready(Some(stream::iter(out)))
        })
        .flatten()
        .boxed()
}

/// What a store of whole objects holds in a namespace, for [`watch_namespaces`].
pub fn held_in<K: Resource<DynamicType = ()> + Clone + Send + Sync + 'static>(
    store: Store<K>,
) -> impl Fn(&str) -> Vec<Arc<K>> + Send + 'static {
    move |ns| {
        store
            .state()
            .into_iter()
            .filter(|o| o.namespace().as_deref() == Some(ns))
            .collect()
    }
}

/// The merge of `namespaces.len()` watches, one per namespace, in that order.
pub struct NamespaceMerge<K: Resource<DynamicType = ()>> {
    namespaces: Vec<String>,
    /// Whether the combined `Init` has been told.
    started: bool,
    /// Per watch: whether its first listing is done.
    listed: Vec<bool>,
    /// Until every watch has listed: the objects deleted meanwhile, told after `InitDone`.
    deleted_while_listing: HashMap<ObjectRef<K>, K>,
    /// Per watch, during a later relisting: the objects it has listed so far.
    relisting: Vec<Option<HashSet<ObjectRef<K>>>>,
}

impl<K: Resource<DynamicType = ()> + Clone> NamespaceMerge<K> {
    pub fn new(namespaces: Vec<String>) -> Self {
        let n = namespaces.len();
        Self {
            namespaces,
            started: false,
            listed: vec![false; n],
            deleted_while_listing: HashMap::new(),
            relisting: vec![None; n],
        }
    }

    fn all_listed(&self) -> bool {
        self.listed.iter().all(|l| *l)
    }

    /// The events for the store, given `event` from watch `from`. `held` gives the objects
    /// the store holds in a namespace (read only when a relisting ends).
    pub fn on(
        &mut self,
        from: usize,
        event: Event<K>,
        held: impl Fn(&str) -> Vec<Arc<K>>,
    ) -> Vec<Event<K>> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            out.push(Event::Init);
        }
        if !self.all_listed() {
            match event {
                // A watch that restarts during the first listing lists again into it.
                Event::Init => {}
                Event::InitApply(obj) | Event::Apply(obj) => {
                    self.deleted_while_listing
                        .remove(&ObjectRef::from_obj(&obj));
                    out.push(Event::InitApply(obj));
                }
                Event::Delete(obj) => {
                    self.deleted_while_listing
                        .insert(ObjectRef::from_obj(&obj), obj);
                }
                Event::InitDone => {
                    self.listed[from] = true;
                    if self.all_listed() {
                        out.push(Event::InitDone);
                        out.extend(
                            self.deleted_while_listing
                                .drain()
                                .map(|(_, o)| Event::Delete(o)),
                        );
                    }
                }
            }
            return out;
        }
        match event {
            Event::Init => self.relisting[from] = Some(HashSet::new()),
            Event::InitApply(obj) => {
                if let Some(seen) = self.relisting[from].as_mut() {
                    seen.insert(ObjectRef::from_obj(&obj));
                }
                out.push(Event::Apply(obj));
            }
            Event::InitDone => {
                if let Some(seen) = self.relisting[from].take() {
                    out.extend(
                        held(&self.namespaces[from])
                            .into_iter()
                            .filter(|o| !seen.contains(&ObjectRef::from_obj(o.as_ref())))
                            .map(|o| Event::Delete(o.as_ref().clone())),
                    );
                }
            }
            live @ (Event::Apply(_) | Event::Delete(_)) => out.push(live),
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_crd::{NetworkVolume, NetworkVolumeSpec};

    fn nv(ns: &str, name: &str, size: i64) -> NetworkVolume {
        let spec: NetworkVolumeSpec =
            serde_json::from_value(serde_json::json!({"sizeGb": size, "dataCenterId": "EU-RO-1"}))
                .unwrap();
        let mut obj = NetworkVolume::new(name, spec);
        obj.metadata.namespace = Some(ns.into());
        obj
    }

    /// Names of the events, as `Kind(ns/name/size)`.
    fn told(events: &[Event<NetworkVolume>]) -> Vec<String> {
        let name = |o: &NetworkVolume| {
            format!(
                "{}/{}/{}",
                o.metadata.namespace.as_deref().unwrap_or(""),
                o.metadata.name.as_deref().unwrap_or(""),
                o.spec.size_gb
            )
        };
        events
            .iter()
            .map(|e| match e {
                Event::Init => "Init".to_string(),
                Event::InitApply(o) => format!("InitApply({})", name(o)),
                Event::InitDone => "InitDone".to_string(),
                Event::Apply(o) => format!("Apply({})", name(o)),
                Event::Delete(o) => format!("Delete({})", name(o)),
            })
            .collect()
    }

    fn nothing_held(_: &str) -> Vec<Arc<NetworkVolume>> {
        Vec::new()
    }

    #[test]
    fn the_first_listings_of_every_namespace_are_one_listing() {
        let mut m = NamespaceMerge::new(vec!["a".into(), "b".into()]);
        let mut all = Vec::new();
        all.extend(m.on(0, Event::Init, nothing_held));
        all.extend(m.on(0, Event::InitApply(nv("a", "x", 1)), nothing_held));
        all.extend(m.on(1, Event::Init, nothing_held));
        all.extend(m.on(0, Event::InitDone, nothing_held));
        // Namespace a has listed; its changes join the listing while b lists.
        all.extend(m.on(0, Event::Apply(nv("a", "x", 2)), nothing_held));
        all.extend(m.on(0, Event::Apply(nv("a", "gone", 1)), nothing_held));
        all.extend(m.on(0, Event::Delete(nv("a", "gone", 1)), nothing_held));
        all.extend(m.on(1, Event::InitApply(nv("b", "y", 1)), nothing_held));
        all.extend(m.on(1, Event::InitDone, nothing_held));
        all.extend(m.on(1, Event::Apply(nv("b", "y", 3)), nothing_held));
        assert_eq!(
            told(&all),
            vec![
                "Init",
                "InitApply(a/x/1)",
                "InitApply(a/x/2)",
                "InitApply(a/gone/1)",
                "InitApply(b/y/1)",
                "InitDone",
                "Delete(a/gone/1)",
                "Apply(b/y/3)",
            ]
        );
    }

    #[test]
    fn a_later_relisting_of_one_namespace_is_told_as_changes() {
        let mut m = NamespaceMerge::new(vec!["a".into(), "b".into()]);
        for (from, ns) in [(0, "a"), (1, "b")] {
            m.on(from, Event::Init, nothing_held);
            m.on(from, Event::InitApply(nv(ns, "x", 1)), nothing_held);
            m.on(from, Event::InitDone, nothing_held);
        }
        // The store holds a/x, a/deleted-meanwhile, b/x.
        let held = |ns: &str| -> Vec<Arc<NetworkVolume>> {
            match ns {
                "a" => vec![
                    Arc::new(nv("a", "x", 1)),
                    Arc::new(nv("a", "deleted-meanwhile", 1)),
                ],
                _ => vec![Arc::new(nv("b", "x", 1))],
            }
        };
        let mut all = Vec::new();
        all.extend(m.on(0, Event::Init, held));
        all.extend(m.on(0, Event::InitApply(nv("a", "x", 2)), held));
        all.extend(m.on(1, Event::Apply(nv("b", "x", 5)), held));
        all.extend(m.on(0, Event::InitDone, held));
        assert_eq!(
            told(&all),
            vec![
                "Apply(a/x/2)",
                "Apply(b/x/5)",
                "Delete(a/deleted-meanwhile/1)"
            ],
            "b's objects stay; only what a's relisting lacks goes"
        );
    }

    #[test]
    fn an_object_deleted_and_made_again_while_listing_stays() {
        let mut m = NamespaceMerge::new(vec!["a".into(), "b".into()]);
        m.on(0, Event::Init, nothing_held);
        m.on(0, Event::InitDone, nothing_held);
        m.on(0, Event::Delete(nv("a", "x", 1)), nothing_held);
        let again = m.on(0, Event::Apply(nv("a", "x", 2)), nothing_held);
        let done = m.on(1, Event::InitDone, nothing_held);
        assert_eq!(told(&again), vec!["InitApply(a/x/2)"]);
        assert_eq!(told(&done), vec!["InitDone"]);
    }
}
