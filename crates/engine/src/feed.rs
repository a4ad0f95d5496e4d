//! One kind's watch events into its store and its triggers: the part of the runner that
//! does no I/O, so that what a relisting does to the store is tested without a cluster.

use std::collections::HashSet;

use kube::Resource;
use kube::runtime::reflector::{ObjectRef, Store, store::Writer};
use kube::runtime::watcher::Event;

use super::packed::{self, Packed};
use super::resync::meta_hash;
use super::triggers::Triggers;
use gpucloud_crd::ManagedKind;

/// The store a kind's controller reads (objects packed) and the filter of what triggers a
/// pass.
pub struct Feed<K: ManagedKind> {
    triggers: Triggers<K>,
    writer: Writer<Packed<K>>,
    store: Store<Packed<K>>,
}

impl<K: ManagedKind> Feed<K> {
    pub fn new(writer: Writer<Packed<K>>) -> Self {
        Self {
            triggers: Triggers::default(),
            store: writer.as_reader(),
            writer,
        }
    }

    /// Applies `event` to the store and returns the objects to reconcile, each in the store.
    /// `echo` tells the operator's own writes coming back; `gone` hears (by
    /// `namespace/name`) of the objects a relisting no longer shows.
    pub fn on(
        &mut self,
        event: &Event<K>,
        echo: impl Fn(&K) -> bool,
        gone: impl Fn(&str),
    ) -> Vec<ObjectRef<Packed<K>>> {
        let due = self.triggers.on(event, echo);
        // Named from the store, which holds them until the listing's end is applied to it.
        let vanished: HashSet<u64> = self.triggers.take_vanished().into_iter().collect();
        if !vanished.is_empty() {
            for obj in self.store.state() {
                if vanished.contains(&meta_hash(obj.meta())) {
                    gone(&obj.key());
                }
            }
        }
        self.writer.apply_watcher_event(&pack(event));
        due.into_iter()
            .map(|r| packed::named(r.namespace.as_deref(), Some(&r.name)))
            .filter(|key| self.store.get(key).is_some())
            .collect()
    }
}

/// The event for the store of packed objects.
fn pack<K: ManagedKind>(event: &Event<K>) -> Event<Packed<K>> {
    match event {
        Event::Apply(obj) => Event::Apply(Packed::pack(obj)),
        Event::Delete(obj) => Event::Delete(Packed::pack(obj)),
        Event::Init => Event::Init,
        Event::InitApply(obj) => Event::InitApply(Packed::pack(obj)),
        Event::InitDone => Event::InitDone,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_crd::{NetworkVolume, NetworkVolumeSpec};
    use kube::runtime::reflector;
    use parking_lot::Mutex;

    fn volume(name: &str, generation: i64) -> NetworkVolume {
        let spec: NetworkVolumeSpec =
            serde_json::from_value(serde_json::json!({"sizeGb": 10, "dataCenterId": "EU-RO-1"}))
                .unwrap();
        let mut nv = NetworkVolume::new(name, spec);
        nv.metadata.namespace = Some("ns".into());
        nv.metadata.uid = Some(format!("uid-{name}"));
        nv.metadata.generation = Some(generation);
        nv
    }

    fn names(refs: Vec<ObjectRef<Packed<NetworkVolume>>>) -> Vec<String> {
        let mut names: Vec<String> = refs.into_iter().map(|r| r.name).collect();
        names.sort();
        names
    }

    #[test]
    fn a_relisting_names_what_it_no_longer_shows_and_the_store_lets_it_go() {
        let (store, writer) = reflector::store::<Packed<NetworkVolume>>();
        let mut feed = Feed::new(writer);
        let gone = Mutex::new(Vec::new());
        let mut on = |event: Event<NetworkVolume>| {
            names(feed.on(&event, |_| false, |key| gone.lock().push(key.to_string())))
        };
        assert!(on(Event::Init).is_empty());
        assert!(
            on(Event::InitApply(volume("a", 1))).is_empty(),
            "held to the end"
        );
        assert!(on(Event::InitApply(volume("b", 1))).is_empty());
        assert_eq!(
            on(Event::InitDone),
            ["a", "b"],
            "the first listing, from the store"
        );
        assert_eq!(store.state().len(), 2);

        // The watch fell behind; b was deleted meanwhile, a changed.
        assert!(on(Event::Init).is_empty());
        assert!(on(Event::InitApply(volume("a", 2))).is_empty());
        assert_eq!(on(Event::InitDone), ["a"]);
        assert_eq!(*gone.lock(), ["ns/b"]);
        let kept: Vec<String> = store.state().iter().map(|p| p.key()).collect();
        assert_eq!(kept, ["ns/a"]);
        let a = store.state()[0].unpack().unwrap();
        assert_eq!(
            a.metadata.generation,
            Some(2),
            "the store has the new a, whole"
        );
    }

    #[test]
    fn a_live_change_reaches_the_store_and_an_echo_triggers_nothing() {
        let (store, writer) = reflector::store::<Packed<NetworkVolume>>();
        let mut feed = Feed::new(writer);
        for event in [
            Event::Init,
            Event::InitApply(volume("a", 1)),
            Event::InitDone,
        ] {
            feed.on(&event, |_| false, |_| {});
        }
        let echo = |obj: &NetworkVolume| obj.metadata.generation == Some(2);
        assert!(names(feed.on(&Event::Apply(volume("a", 2)), echo, |_| {})).is_empty());
        assert_eq!(
            store.state()[0].unpack().unwrap().metadata.generation,
            Some(2)
        );
        assert_eq!(
            names(feed.on(&Event::Apply(volume("a", 3)), echo, |_| {})),
            ["a"]
        );
        feed.on(&Event::Delete(volume("a", 3)), |_| false, |_| {});
        assert!(store.state().is_empty());
    }
}
