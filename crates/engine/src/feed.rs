//! One kind's watch events into its cache and its triggers: the part of the runner that
//! does no I/O, so that what a relisting does to the cache is tested without a cluster.

use kube::runtime::watcher::Event;

use super::cache::{Cache, CachedKind, key_of_object};
use super::triggers::Triggers;

/// The cache a kind's controller reads (objects packed) and the filter of what triggers a
/// pass.
pub struct Feed<K: CachedKind> {
    triggers: Triggers<K>,
    cache: Cache<K>,
}

impl<K: CachedKind> Feed<K> {
    pub fn new(cache: Cache<K>) -> Self {
        Self {
            triggers: Triggers::default(),
            cache,
        }
    }

    /// Applies `event` to the cache and returns the keys (`namespace/name`) of the objects
    /// to reconcile, each in the cache. `echo` tells the operator's own writes coming back;
    /// `gone` hears (by key) of the objects deleted or that a relisting no longer shows;
    /// `delivered` hears of each object a live change brings.
    ///
    /// `gone` and `delivered` hear only once the cache has the event. They drop what the
    /// engine remembers of its own writes (its last status until the watch brings it back),
    /// and a pass reads the cache in a task of its own: told before the cache had a
    /// status write of the engine's, the engine let go of that status while the cache still
    /// held the object without it. A pass in between read a created object with its create
    /// marker and no id, took the create for an interrupted one, and adopted what it had
    /// just made (its placement notes lost). Objects a listing brings are not `delivered`:
    /// they reach the cache only at the listing's end, and the engine lets go of a status
    /// the cache has caught up with at the object's next pass anyway.
    pub fn on(
        &mut self,
        event: &Event<K>,
        echo: impl Fn(&K) -> bool,
        gone: impl Fn(&str),
        delivered: impl Fn(&K),
    ) -> Vec<String> {
        let due = self.triggers.on(event, echo);
        // Named from the cache, which holds them until the listing's end is applied to it.
        for hash in self.triggers.take_vanished() {
            for key in self.cache.keys_of_hash(hash) {
                gone(&key);
            }
        }
        self.cache.apply(event);
        match event {
            Event::Delete(obj) => gone(&key_of_object(obj)),
            Event::Apply(obj) => delivered(obj),
            _ => {}
        }
        due.into_iter()
            .filter(|key| self.cache.contains(key))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_crd::ManagedKind;
    use gpucloud_crd::{NetworkVolume, NetworkVolumeSpec};
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

    fn names(keys: Vec<String>) -> Vec<String> {
        let mut names: Vec<String> = keys
            .into_iter()
            .map(|k| k.split_once('/').unwrap().1.to_string())
            .collect();
        names.sort();
        names
    }

    /// A feed whose cache holds volume `a` (generation 1) from its first listing.
    fn with_a_listed() -> (Cache<NetworkVolume>, Feed<NetworkVolume>) {
        let cache = Cache::<NetworkVolume>::new();
        let mut feed = Feed::new(cache.clone());
        for event in [
            Event::Init,
            Event::InitApply(volume("a", 1)),
            Event::InitDone,
        ] {
            feed.on(&event, |_| false, |_| {}, |_| {});
        }
        (cache, feed)
    }

    #[test]
    fn a_relisting_names_what_it_no_longer_shows_and_the_store_lets_it_go() {
        let cache = Cache::<NetworkVolume>::new();
        let mut feed = Feed::new(cache.clone());
        let gone = Mutex::new(Vec::new());
        let mut on = |event: Event<NetworkVolume>| {
            names(feed.on(
                &event,
                |_| false,
                |key| gone.lock().push(key.to_string()),
                |_| {},
            ))
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
            "the first listing, from the cache"
        );
        assert_eq!(cache.len(), 2);

        // The watch fell behind; b was deleted meanwhile, a changed.
        assert!(on(Event::Init).is_empty());
        assert!(on(Event::InitApply(volume("a", 2))).is_empty());
        assert_eq!(on(Event::InitDone), ["a"]);
        assert_eq!(*gone.lock(), ["ns/b"]);
        assert_eq!(cache.keys(|_| true), ["ns/a"]);
        let a = cache.get("ns/a").unwrap().unwrap();
        assert_eq!(
            a.metadata.generation,
            Some(2),
            "the cache has the new a, whole"
        );
    }

    #[test]
    fn the_engine_hears_of_a_change_or_a_delete_once_the_cache_has_it() {
        let (cache, mut feed) = with_a_listed();
        let heard = Mutex::new(Vec::new());
        // What the cache holds when the engine hears of the object.
        let cached = |key: &str| {
            cache
                .get(key)
                .map(|obj| obj.unwrap().metadata.generation.unwrap())
        };
        feed.on(
            &Event::Apply(volume("a", 2)),
            |_| false,
            |_| {},
            |obj| heard.lock().push(("delivered", cached(&obj.key()))),
        );
        feed.on(
            &Event::Delete(volume("a", 2)),
            |_| false,
            |key| heard.lock().push(("gone", cached(key))),
            |_| {},
        );
        assert_eq!(*heard.lock(), [("delivered", Some(2)), ("gone", None)]);
    }

    #[test]
    fn a_live_change_reaches_the_store_and_an_echo_triggers_nothing() {
        let (cache, mut feed) = with_a_listed();
        let echo = |obj: &NetworkVolume| obj.metadata.generation == Some(2);
        assert!(names(feed.on(&Event::Apply(volume("a", 2)), echo, |_| {}, |_| {})).is_empty());
        assert_eq!(
            cache.get("ns/a").unwrap().unwrap().metadata.generation,
            Some(2)
        );
        assert_eq!(
            names(feed.on(&Event::Apply(volume("a", 3)), echo, |_| {}, |_| {})),
            ["a"]
        );
        feed.on(&Event::Delete(volume("a", 3)), |_| false, |_| {}, |_| {});
        assert!(cache.is_empty());
    }
}
