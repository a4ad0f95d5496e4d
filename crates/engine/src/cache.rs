//! The watch cache of one kind: every watched object, packed (see [`crate::packed`]), by
//! its `namespace/name`. The operator's own rather than kube's reflector store.
//!
//! Why: the cache holds every object for as long as it exists, so what one entry costs is
//! the operator's memory slope. kube's store keys an object by an `ObjectRef` (four
//! strings) and keeps it in an `Arc` beside a whole `ObjectMeta`, even when only the name
//! and namespace are set. Here an entry is the key as one string and the packed body.
//!
//! It follows the watch as kube's store does: a listing is gathered apart and replaces the
//! objects when it ends, so that until then every reader sees the previous listing whole.
//! Readers get objects unpacked one at a time, outside the lock.
//!
//! What it holds is any [`CachedKind`]: the kinds that mirror a platform object
//! ([`ManagedKind`]), and those the runtime runs passes of without one.

use std::sync::Arc;

use hashbrown::HashTable;
use kube::runtime::watcher::Event;
use kube::{Resource, ResourceExt};
use parking_lot::RwLock;

use super::packed::{Codec, PackError, Packed, Shape};
use super::resync::hash_of_key;
use gpucloud_crd::ManagedKind;

/// What the runtime (the watch, this cache, the triggers, the controller loop) needs of a
/// kind, and nothing more.
pub use gpucloud_crd::NamespacedKind as CachedKind;

/// One cached object: its `namespace/name` and its packed body.
struct Entry<K> {
    key: Box<str>,
    packed: Packed<K>,
}

/// The objects of one listing, or of the cache, placed by [`hash_of_key`] of their key, so
/// that an object can be found by that hash alone: the resync table knows objects by it
/// (see [`Cache::keys_of_hash`]).
struct Objects<K>(HashTable<Entry<K>>);

impl<K> Objects<K> {
    fn new() -> Self {
        Self(HashTable::new())
    }

    fn find(&self, key: &str) -> Option<&Entry<K>> {
        self.0.find(hash_of_key(key), |e| &*e.key == key)
    }

    fn insert(&mut self, key: Box<str>, packed: Packed<K>) {
        let entry = self
            .0
            .entry(hash_of_key(&key), |e| e.key == key, |e| hash_of_key(&e.key));
        match entry {
            hashbrown::hash_table::Entry::Occupied(mut held) => held.get_mut().packed = packed,
            hashbrown::hash_table::Entry::Vacant(room) => {
                room.insert(Entry { key, packed });
            }
        }
    }

    fn remove(&mut self, key: &str) {
        if let Ok(held) = self.0.find_entry(hash_of_key(key), |e| &*e.key == key) {
            held.remove();
        }
        // A burst of deletions (a namespace going) sized the table for all of them.
        if crate::left_by_a_burst(self.0.capacity(), self.0.len()) {
            self.0.shrink_to_fit(|e| hash_of_key(&e.key));
        }
    }
}

/// The watch cache of kind `K` (see the module's doc). Clones share it.
pub struct Cache<K> {
    state: Arc<RwLock<State<K>>>,
    codec: &'static Codec,
    /// What an object offers its kind's dictionaries (see [`Shape`]).
    shape: fn(&K) -> Shape,
}

struct State<K> {
    objects: Objects<K>,
    /// While a listing is under way: what it has shown so far.
    listing: Option<Objects<K>>,
    /// Moves with every event taken: what was read from every object stays true while it
    /// has not moved (see [`Cache::generation`]).
    generation: u64,
}

impl<K> Clone for Cache<K> {
    fn clone(&self) -> Self {
        Self {
            state: self.state.clone(),
            codec: self.codec,
            shape: self.shape,
        }
    }
}

impl<K: ManagedKind> Default for Cache<K> {
    fn default() -> Self {
        Self::new()
    }
}

/// The key of object `name` in `namespace`, as [`ManagedKind::key`] gives it.
pub fn key_of(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// The key of `obj` (see [`key_of`]), for any kind the cache holds.
pub fn key_of_object<K: Resource>(obj: &K) -> String {
    key_of(&obj.namespace().unwrap_or_default(), &obj.name_any())
}

/// Whether `key` (see [`key_of`]) is of an object in `namespace`.
pub fn in_namespace(key: &str, namespace: &str) -> bool {
    key.split_once('/').is_some_and(|(ns, _)| ns == namespace)
}

impl<K: ManagedKind> Cache<K> {
    /// The cache of a managed kind: an object's status and its Ready condition choose the
    /// dictionaries (see [`Shape::of_managed`]).
    pub fn new() -> Self {
        Self::with_shape(Shape::of_managed::<K>)
    }
}

impl<K: CachedKind> Cache<K> {
    /// The cache of any kind, whose objects offer `shape` to its dictionaries.
    pub fn with_shape(shape: fn(&K) -> Shape) -> Self {
        Self {
            state: Arc::new(RwLock::new(State {
                objects: Objects::new(),
                listing: None,
                generation: 0,
            })),
            codec: Codec::of::<K>(),
            shape,
        }
    }

    /// Takes one watch event, as kube's store does: a change or deletion at once, a
    /// listing's objects apart until the listing ends and replaces what was held.
    pub fn apply(&self, event: &Event<K>) {
        let entry = |obj: &K| {
            (
                key_of_object(obj).into_boxed_str(),
                Packed::pack_with(self.codec, (self.shape)(obj), obj),
            )
        };
        self.state.write().generation += 1;
        match event {
            Event::Apply(obj) => {
                let (key, packed) = entry(obj);
                self.state.write().objects.insert(key, packed);
            }
            Event::Delete(obj) => self.state.write().objects.remove(&key_of_object(obj)),
            Event::Init => self.state.write().listing = Some(Objects::new()),
            Event::InitApply(obj) => {
                let (key, packed) = entry(obj);
                let mut state = self.state.write();
                match state.listing.as_mut() {
                    Some(listing) => listing.insert(key, packed),
                    None => state.objects.insert(key, packed),
                };
            }
            Event::InitDone => {
                let mut state = self.state.write();
                if let Some(listing) = state.listing.take() {
                    state.objects = listing;
                }
            }
        }
    }

    /// Object `key`, unpacked; `None` if the cache does not hold it.
    pub fn get(&self, key: &str) -> Option<Result<K, PackError>> {
        let packed = self.state.read().objects.find(key)?.packed.clone();
        Some(packed.unpack_with(self.codec))
    }

    /// A number that moves whenever the cache takes an event: a caller that derived
    /// something from every object (the Secrets they name) reuses it while this has not
    /// moved, instead of unpacking them all again.
    pub fn generation(&self) -> u64 {
        self.state.read().generation
    }

    pub fn contains(&self, key: &str) -> bool {
        self.state.read().objects.find(key).is_some()
    }

    pub fn len(&self) -> usize {
        self.state.read().objects.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys `wanted` chooses (no object is unpacked).
    pub fn keys(&self, wanted: impl Fn(&str) -> bool) -> Vec<String> {
        self.state
            .read()
            .objects
            .0
            .iter()
            .filter(|e| wanted(&e.key))
            .map(|e| e.key.to_string())
            .collect()
    }

    /// The keys whose [`hash_of_key`] is `hash`: one object, but for a collision of hashes
    /// (each is then named), found without a look at the others.
    pub fn keys_of_hash(&self, hash: u64) -> Vec<String> {
        self.state
            .read()
            .objects
            .0
            .iter_hash(hash)
            // The table's probe compares only a few bits of the hash.
            .filter(|e| hash_of_key(&e.key) == hash)
            .map(|e| e.key.to_string())
            .collect()
    }

    /// The objects whose keys `wanted` chooses, unpacked one at a time as the iterator is
    /// read, after the lock is let go (the packed bodies are copied under it). An object
    /// that cannot be read back is skipped (see [`PackError`]).
    pub fn objects(&self, wanted: &dyn Fn(&str) -> bool) -> impl Iterator<Item = K> + use<K> {
        let chosen: Vec<Packed<K>> = self
            .state
            .read()
            .objects
            .0
            .iter()
            .filter(|e| wanted(&e.key))
            .map(|e| e.packed.clone())
            .collect();
        let codec = self.codec;
        chosen
            .into_iter()
            .filter_map(move |packed| packed.unpack_with(codec).ok())
    }

    /// Every object in `namespace`, unpacked.
    pub fn in_namespace(&self, namespace: &str) -> Vec<K> {
        self.objects(&|key| in_namespace(key, namespace)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_crd::{NetworkVolume, NetworkVolumeSpec};

    fn volume(namespace: &str, name: &str, size: i32) -> NetworkVolume {
        let spec: NetworkVolumeSpec =
            serde_json::from_value(serde_json::json!({"sizeGb": size, "dataCenterId": "EU-RO-1"}))
                .unwrap();
        let mut nv = NetworkVolume::new(name, spec);
        nv.metadata.namespace = Some(namespace.into());
        nv
    }

    fn sizes(cache: &Cache<NetworkVolume>) -> Vec<(String, i32)> {
        let mut out: Vec<_> = cache
            .objects(&|_| true)
            .map(|nv| (nv.key(), nv.spec.size_gb))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_burst_of_deletions_gives_its_room_back() {
        let cache = Cache::<NetworkVolume>::new();
        let names: Vec<String> = (0..1000).map(|i| format!("v{i}")).collect();
        for name in &names {
            cache.apply(&Event::Apply(volume("a", name, 1)));
        }
        for name in &names[1..] {
            cache.apply(&Event::Delete(volume("a", name, 1)));
        }
        assert_eq!(cache.keys(|_| true), ["a/v0"]);
        assert!(cache.state.read().objects.0.capacity() < 1000);
    }

    #[test]
    fn changes_and_deletions_apply_at_once() {
        let cache = Cache::<NetworkVolume>::new();
        cache.apply(&Event::Apply(volume("a", "data", 10)));
        cache.apply(&Event::Apply(volume("a", "logs", 5)));
        cache.apply(&Event::Apply(volume("a", "data", 20)));
        assert_eq!(
            cache.get("a/data").unwrap().unwrap().spec.size_gb,
            20,
            "the later version replaces the earlier"
        );
        cache.apply(&Event::Delete(volume("a", "logs", 5)));
        assert!(!cache.contains("a/logs"));
        assert!(cache.get("a/logs").is_none());
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_listing_replaces_what_was_held_only_when_it_ends() {
        let cache = Cache::<NetworkVolume>::new();
        cache.apply(&Event::Apply(volume("a", "data", 10)));
        cache.apply(&Event::Apply(volume("a", "gone", 10)));
        cache.apply(&Event::Init);
        cache.apply(&Event::InitApply(volume("a", "data", 30)));
        cache.apply(&Event::InitApply(volume("b", "new", 1)));
        // Mid-listing, readers see the previous state whole.
        assert_eq!(
            sizes(&cache),
            [("a/data".into(), 10), ("a/gone".into(), 10)]
        );
        cache.apply(&Event::InitDone);
        assert_eq!(sizes(&cache), [("a/data".into(), 30), ("b/new".into(), 1)]);
    }

    #[test]
    fn readers_choose_by_key_without_unpacking_the_rest() {
        let cache = Cache::<NetworkVolume>::new();
        for (ns, name) in [("a", "x"), ("a", "y"), ("ab", "z"), ("b", "x")] {
            cache.apply(&Event::Apply(volume(ns, name, 1)));
        }
        let mut in_a: Vec<String> = cache.in_namespace("a").iter().map(|o| o.key()).collect();
        in_a.sort();
        assert_eq!(in_a, ["a/x", "a/y"], "not the namespace `ab`");
        let mut xs = cache.keys(|k| k.ends_with("/x"));
        xs.sort();
        assert_eq!(xs, ["a/x", "b/x"]);
        assert_eq!(cache.keys_of_hash(hash_of_key("ab/z")), ["ab/z"]);
        assert!(cache.keys_of_hash(hash_of_key("ab/gone")).is_empty());
        assert_eq!(key_of("a", "x"), volume("a", "x", 1).key());
        assert_eq!(
            key_of_object(&volume("a", "x", 1)),
            volume("a", "x", 1).key()
        );
    }

    #[test]
    fn the_generation_moves_with_every_event_and_only_then() {
        let cache = Cache::<NetworkVolume>::new();
        let start = cache.generation();
        cache.apply(&Event::Apply(volume("a", "data", 10)));
        let applied = cache.generation();
        assert!(applied > start);
        let _ = cache.get("a/data");
        assert_eq!(cache.generation(), applied, "a read moves nothing");
        cache.apply(&Event::Delete(volume("a", "data", 10)));
        assert!(cache.generation() > applied);
    }
}
