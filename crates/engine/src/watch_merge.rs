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
//! - **A namespace watched from later on** (`--namespace-selector`: it came to match) is
//!   told as such a relisting: its objects come as `Apply`, and the store keeps every other
//!   namespace's. A whole new `Init` would make the store swap in that namespace alone.
//! - **A namespace no longer watched** leaves as a `Delete` of each of its objects the
//!   store holds ([`NamespaceMerge::remove`]).
//!
//! Pure: the streams that run one watch per namespace and feed it are in
//! [`crate::namespace_streams`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kube::Resource;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher::Event;

/// Where one namespace's watch is.
enum Listing<K: Resource<DynamicType = ()>> {
    /// In the first listing, which every namespace watched at start makes together.
    First,
    /// Listed; its changes pass through.
    Live,
    /// Listing again, or for the first time after the start: what it has listed so far.
    Again(HashSet<ObjectRef<K>>),
}

/// The merge of the watches of several namespaces, one watch per namespace.
pub struct NamespaceMerge<K: Resource<DynamicType = ()>> {
    watches: HashMap<String, Listing<K>>,
    /// Whether the combined `Init` has been told.
    started: bool,
    /// Whether the combined `InitDone` has been told.
    synced: bool,
    /// Until every watch has listed: the objects deleted meanwhile, told after `InitDone`.
    deleted_while_listing: HashMap<ObjectRef<K>, K>,
}

impl<K: Resource<DynamicType = ()> + Clone> NamespaceMerge<K> {
    /// The merge of the watches of `namespaces`, which make the first listing together.
    pub fn new(namespaces: impl IntoIterator<Item = String>) -> Self {
        Self {
            watches: namespaces
                .into_iter()
                .map(|ns| (ns, Listing::First))
                .collect(),
            started: false,
            synced: false,
            deleted_while_listing: HashMap::new(),
        }
    }

    fn all_listed(&self) -> bool {
        !self.watches.values().any(|l| matches!(l, Listing::First))
    }

    /// Whether the combined first listing has been told (`InitDone`).
    pub fn synced(&self) -> bool {
        self.synced
    }

    /// The events that open the combined listing: its `Init`, and at once its `InitDone`
    /// when no namespace is watched (nothing to wait for). Told by [`Self::on`] otherwise.
    pub fn start(&mut self) -> Vec<Event<K>> {
        let mut out = Vec::new();
        if !self.started {
            self.started = true;
            out.push(Event::Init);
        }
        if !self.synced && self.all_listed() {
            out.extend(self.finish_first_listing());
        }
        out
    }

    fn finish_first_listing(&mut self) -> Vec<Event<K>> {
        self.synced = true;
        std::iter::once(Event::InitDone)
            .chain(
                self.deleted_while_listing
                    .drain()
                    .map(|(_, o)| Event::Delete(o)),
            )
            .collect()
    }

    /// Watches `namespace` too, from now on. Once the first listing is told, its listing
    /// comes as changes (`Apply`); before, it joins the first listing.
    pub fn add(&mut self, namespace: &str) {
        let listing = if self.synced {
            Listing::Again(HashSet::new())
        } else {
            Listing::First
        };
        self.watches.entry(namespace.to_string()).or_insert(listing);
    }

    /// Stops merging `namespace`'s watch, and tells its objects as deleted: `held` gives
    /// the objects the store holds in a namespace. Later events of its watch are dropped.
    /// Called once every event told so far is in the store, so that `held` is complete.
    /// Before the first listing is told, this may end it (`InitDone`).
    pub fn remove(&mut self, namespace: &str, held: impl Fn(&str) -> Vec<Arc<K>>) -> Vec<Event<K>> {
        if self.watches.remove(namespace).is_none() {
            return Vec::new();
        }
        let mut out: Vec<Event<K>> = held(namespace)
            .into_iter()
            .map(|o| Event::Delete(o.as_ref().clone()))
            .collect();
        if self.started && !self.synced && self.all_listed() {
            out.extend(self.finish_first_listing());
        }
        out
    }

    /// The events for the store, given `event` from the watch of `namespace`. `held` gives
    /// the objects the store holds in a namespace (read only when a listing after the
    /// first one ends).
    pub fn on(
        &mut self,
        namespace: &str,
        event: Event<K>,
        held: impl Fn(&str) -> Vec<Arc<K>>,
    ) -> Vec<Event<K>> {
        if !self.watches.contains_key(namespace) {
            // A namespace no longer watched: its watch's last events come too late.
            return Vec::new();
        }
        let mut out = self.start();
        if !self.synced {
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
                    self.watches.insert(namespace.to_string(), Listing::Live);
                    if self.all_listed() {
                        out.extend(self.finish_first_listing());
                    }
                }
            }
            return out;
        }
        let Some(listing) = self.watches.get_mut(namespace) else {
            return out;
        };
        match event {
            Event::Init => *listing = Listing::Again(HashSet::new()),
            Event::InitApply(obj) => {
                if let Listing::Again(seen) = listing {
                    seen.insert(ObjectRef::from_obj(&obj));
                }
                out.push(Event::Apply(obj));
            }
            Event::InitDone => {
                if let Listing::Again(seen) = std::mem::replace(listing, Listing::Live) {
                    out.extend(
                        held(namespace)
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
        all.extend(m.on("a", Event::Init, nothing_held));
        all.extend(m.on("a", Event::InitApply(nv("a", "x", 1)), nothing_held));
        all.extend(m.on("b", Event::Init, nothing_held));
        all.extend(m.on("a", Event::InitDone, nothing_held));
        // Namespace a has listed; its changes join the listing while b lists.
        all.extend(m.on("a", Event::Apply(nv("a", "x", 2)), nothing_held));
        all.extend(m.on("a", Event::Apply(nv("a", "gone", 1)), nothing_held));
        all.extend(m.on("a", Event::Delete(nv("a", "gone", 1)), nothing_held));
        all.extend(m.on("b", Event::InitApply(nv("b", "y", 1)), nothing_held));
        all.extend(m.on("b", Event::InitDone, nothing_held));
        all.extend(m.on("b", Event::Apply(nv("b", "y", 3)), nothing_held));
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
        for ns in ["a", "b"] {
            m.on(ns, Event::Init, nothing_held);
            m.on(ns, Event::InitApply(nv(ns, "x", 1)), nothing_held);
            m.on(ns, Event::InitDone, nothing_held);
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
        all.extend(m.on("a", Event::Init, held));
        all.extend(m.on("a", Event::InitApply(nv("a", "x", 2)), held));
        all.extend(m.on("b", Event::Apply(nv("b", "x", 5)), held));
        all.extend(m.on("a", Event::InitDone, held));
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
        m.on("a", Event::Init, nothing_held);
        m.on("a", Event::InitDone, nothing_held);
        m.on("a", Event::Delete(nv("a", "x", 1)), nothing_held);
        let again = m.on("a", Event::Apply(nv("a", "x", 2)), nothing_held);
        let done = m.on("b", Event::InitDone, nothing_held);
        assert_eq!(told(&again), vec!["InitApply(a/x/2)"]);
        assert_eq!(told(&done), vec!["InitDone"]);
    }

    /// The merge of `a` and `b` once both have listed `x`.
    fn listed_a_and_b() -> NamespaceMerge<NetworkVolume> {
        let mut m = NamespaceMerge::new(vec!["a".into(), "b".into()]);
        for ns in ["a", "b"] {
            m.on(ns, Event::Init, nothing_held);
            m.on(ns, Event::InitApply(nv(ns, "x", 1)), nothing_held);
            m.on(ns, Event::InitDone, nothing_held);
        }
        assert!(m.synced());
        m
    }

    #[test]
    fn a_namespace_watched_later_is_told_as_changes_and_the_others_stay() {
        let mut m = listed_a_and_b();
        m.add("c");
        let held = |ns: &str| -> Vec<Arc<NetworkVolume>> {
            match ns {
                "a" | "b" => vec![Arc::new(nv(ns, "x", 1))],
                _ => Vec::new(),
            }
        };
        let mut all = Vec::new();
        all.extend(m.on("c", Event::Init, held));
        all.extend(m.on("c", Event::InitApply(nv("c", "y", 1)), held));
        all.extend(m.on("a", Event::Apply(nv("a", "x", 2)), held));
        all.extend(m.on("c", Event::InitApply(nv("c", "z", 1)), held));
        all.extend(m.on("c", Event::InitDone, held));
        all.extend(m.on("c", Event::Apply(nv("c", "z", 4)), held));
        assert_eq!(
            told(&all),
            vec![
                "Apply(c/y/1)",
                "Apply(a/x/2)",
                "Apply(c/z/1)",
                "Apply(c/z/4)"
            ],
            "no Init, no InitDone: the store keeps a's and b's objects"
        );
    }

    #[test]
    fn a_namespace_watched_later_forgets_what_the_store_held_of_it_and_it_did_not_list() {
        let mut m = listed_a_and_b();
        m.add("c");
        // Left from an earlier time c was watched, deleted while it was not.
        let held = |ns: &str| -> Vec<Arc<NetworkVolume>> {
            match ns {
                "c" => vec![Arc::new(nv("c", "y", 1)), Arc::new(nv("c", "stale", 1))],
                _ => vec![Arc::new(nv(ns, "x", 1))],
            }
        };
        let mut all = Vec::new();
        all.extend(m.on("c", Event::Init, held));
        all.extend(m.on("c", Event::InitApply(nv("c", "y", 1)), held));
        all.extend(m.on("c", Event::InitDone, held));
        assert_eq!(told(&all), vec!["Apply(c/y/1)", "Delete(c/stale/1)"]);
    }

    #[test]
    fn a_namespace_no_longer_watched_leaves_as_deletes_of_exactly_its_objects() {
        let mut m = listed_a_and_b();
        let held = |ns: &str| -> Vec<Arc<NetworkVolume>> {
            match ns {
                "b" => vec![Arc::new(nv("b", "x", 1)), Arc::new(nv("b", "y", 2))],
                _ => vec![Arc::new(nv(ns, "x", 1))],
            }
        };
        let gone = m.remove("b", held);
        assert_eq!(told(&gone), vec!["Delete(b/x/1)", "Delete(b/y/2)"]);
        // Its watch's last events come too late; a's still pass.
        assert!(m.on("b", Event::Apply(nv("b", "x", 9)), held).is_empty());
        assert_eq!(
            told(&m.on("a", Event::Apply(nv("a", "x", 3)), held)),
            vec!["Apply(a/x/3)"]
        );
        assert!(m.remove("b", held).is_empty(), "removed once");
    }

    #[test]
    fn no_namespace_at_start_is_an_empty_listing_at_once() {
        let mut m = NamespaceMerge::<NetworkVolume>::new(Vec::new());
        assert_eq!(told(&m.start()), vec!["Init", "InitDone"]);
        assert!(m.start().is_empty());
        m.add("a");
        assert_eq!(
            told(&m.on("a", Event::Init, nothing_held)),
            Vec::<String>::new()
        );
        assert_eq!(
            told(&m.on("a", Event::InitApply(nv("a", "x", 1)), nothing_held)),
            vec!["Apply(a/x/1)"]
        );
    }

    #[test]
    fn a_namespace_removed_during_the_first_listing_no_longer_holds_it_up() {
        let mut m = NamespaceMerge::new(vec!["a".into(), "b".into()]);
        m.on("a", Event::Init, nothing_held);
        m.on("a", Event::InitDone, nothing_held);
        assert_eq!(told(&m.remove("b", nothing_held)), vec!["InitDone"]);
        assert!(m.synced());
    }
}
