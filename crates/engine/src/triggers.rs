//! Which watch events of a kind trigger a reconcile, and when.
//!
//! Two rules, both pure (the runner feeds the events and looks the objects up):
//!
//! - **Only changes count.** A reconcile follows a change of what the user (or a
//!   deletion) can change: generation, the annotations that mean something, finalizers,
//!   deletion. Status writes and the engine's own bookkeeping do not loop back.
//! - **A listing triggers at its end.** While the watch lists (at start, and again when it
//!   fell behind and the apiserver answered 410 Gone), the cache ([`crate::cache`]) keeps
//!   the listed objects aside and swaps them in only when the listing is done. A pass asked
//!   for mid-listing would find no object in the cache and be dropped, and since the
//!   object's hash is then known, nothing would ask again: an object created while the
//!   watch was behind was never reconciled (seen as 215 of 10,000 volumes with kube's
//!   store, which behaves the same). So objects that changed during a listing are handed
//!   on at its end, from the swapped-in cache.
//!
//! What is remembered of an object is kept small, since it is kept for every object
//! watched: a hash of its namespace and name, and two numbers (see [`Seen`]). What is
//! handed on is the object's key, `namespace/name`.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;

use kube::ResourceExt;
use kube::runtime::watcher;

use super::annotations::triggers_reconcile;
use super::cache::{CachedKind, key_of_object};
use super::resync::meta_hash;

/// A hash of everything in an object that should trigger a reconcile: the spec
/// (generation), annotations, finalizers and deletion. Status writes and the engine's own
/// bookkeeping annotations (the create markers) are left out so they do not loop back.
pub fn change_hash<K: CachedKind>(obj: &K) -> u64 {
    let mut h = crate::fingerprint::hasher();
    obj.meta().generation.hash(&mut h);
    for (key, value) in obj.annotations() {
        if triggers_reconcile(key) {
            (key, value).hash(&mut h);
        }
    }
    obj.finalizers().hash(&mut h);
    obj.meta().deletion_timestamp.is_some().hash(&mut h);
    h.finish()
}

/// What is remembered of one object: one hash of its UID (an object deleted and made again
/// under the same name is a new object) and of its last change, and the last listing that
/// showed it (or the listing it was last seen live after). 16 bytes.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Seen {
    hash: u64,
    listing: u32,
}

impl Seen {
    fn of<K: CachedKind>(obj: &K, listing: u32) -> Self {
        Self {
            hash: crate::fingerprint::of((obj.uid(), change_hash(obj))),
            listing,
        }
    }

    fn same_object_unchanged(&self, other: &Seen) -> bool {
        self.hash == other.hash
    }
}

/// The objects whose events should trigger a reconcile (see the module's doc).
pub struct Triggers<K: CachedKind> {
    /// By [`meta_hash`].
    seen: HashMap<u64, Seen>,
    /// The number of the listing under way or last done.
    listing: u32,
    /// A listing is under way: what changed in it so far.
    changed_in_listing: Option<Vec<String>>,
    /// [`meta_hash`] of the objects the last listing no longer showed, until taken.
    vanished: Vec<u64>,
    /// One kind's objects only.
    kind: PhantomData<fn() -> K>,
}

impl<K: CachedKind> Default for Triggers<K> {
    fn default() -> Self {
        Self {
            seen: HashMap::new(),
            listing: 0,
            changed_in_listing: None,
            vanished: Vec::new(),
            kind: PhantomData,
        }
    }
}

impl<K: CachedKind> Triggers<K> {
    /// Whether `obj` changed since it was last seen; remembers it either way.
    fn changed(&mut self, obj: &K) -> bool {
        let now = Seen::of(obj, self.listing);
        let key = meta_hash(obj.meta());
        match self.seen.get_mut(&key) {
            Some(before) => {
                let changed = !before.same_object_unchanged(&now);
                *before = now;
                changed
            }
            None => {
                self.seen.insert(key, now);
                true
            }
        }
    }

    /// The keys of the objects to reconcile after `event`, to be looked up in the cache
    /// once the event has been applied to it. `echo` tells a live change that is the
    /// operator's own write coming back: it is remembered, and triggers nothing. (A
    /// relisting is not asked: an object listed after the watch fell behind may hold other
    /// changes besides the operator's own.)
    pub fn on(&mut self, event: &watcher::Event<K>, echo: impl Fn(&K) -> bool) -> Vec<String> {
        match event {
            watcher::Event::Apply(obj) => match self.changed(obj) && !echo(obj) {
                true => vec![key_of_object(obj)],
                false => Vec::new(),
            },
            watcher::Event::Delete(obj) => {
                self.seen.remove(&meta_hash(obj.meta()));
                Vec::new()
            }
            watcher::Event::Init => {
                self.listing = self.listing.wrapping_add(1);
                self.changed_in_listing = Some(Vec::new());
                Vec::new()
            }
            watcher::Event::InitApply(obj) => {
                let changed = self.changed(obj);
                match self.changed_in_listing.as_mut() {
                    Some(listed) => {
                        if changed {
                            listed.push(key_of_object(obj));
                        }
                        Vec::new()
                    }
                    // A listed object with no listing begun: kube's watcher always sends
                    // Init first, but if it did not, the object is not held back forever.
                    None if changed => vec![key_of_object(obj)],
                    None => Vec::new(),
                }
            }
            watcher::Event::InitDone => match self.changed_in_listing.take() {
                Some(changed) => {
                    // What the listing did not show was deleted while the watch was
                    // behind: nothing of it is kept, and the engine is told (no Delete
                    // event will).
                    let (listing, vanished) = (self.listing, &mut self.vanished);
                    self.seen.retain(|key, seen| {
                        let shown = seen.listing == listing;
                        if !shown {
                            vanished.push(*key);
                        }
                        shown
                    });
                    changed
                }
                None => Vec::new(),
            },
        }
    }

    /// [`meta_hash`] of the objects the last listing no longer showed (deleted while the
    /// watch was behind), once each: the cache still holds them until the listing's end is
    /// applied to it.
    pub fn take_vanished(&mut self) -> Vec<u64> {
        std::mem::take(&mut self.vanished)
    }

    /// How many objects are remembered (for tests and the memory budget).
    pub fn len(&self) -> usize {
        self.seen.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations as ann;
    use gpucloud_crd::{NetworkVolume, NetworkVolumeSpec};
    use watcher::Event;

    fn volume(name: &str, uid: &str, generation: i64) -> NetworkVolume {
        let spec: NetworkVolumeSpec =
            serde_json::from_value(serde_json::json!({"sizeGb": 10, "dataCenterId": "EU-RO-1"}))
                .unwrap();
        let mut nv = NetworkVolume::new(name, spec);
        nv.metadata.namespace = Some("ns".into());
        nv.metadata.uid = Some(uid.into());
        nv.metadata.generation = Some(generation);
        nv
    }

    fn no_echo(_: &NetworkVolume) -> bool {
        false
    }

    fn names(keys: Vec<String>) -> Vec<String> {
        keys.into_iter()
            .map(|k| k.split_once('/').unwrap().1.to_string())
            .collect()
    }

    /// The watch's first listing, as kube's watcher sends it.
    fn list(t: &mut Triggers<NetworkVolume>, objects: &[NetworkVolume]) -> Vec<String> {
        assert!(t.on(&Event::Init, no_echo).is_empty());
        for obj in objects {
            assert!(
                t.on(&Event::InitApply(obj.clone()), no_echo).is_empty(),
                "nothing is handed on while the cache does not hold the listing yet"
            );
        }
        names(t.on(&Event::InitDone, no_echo))
    }

    #[test]
    fn the_first_listing_triggers_every_object_once_it_is_done() {
        let mut t = Triggers::default();
        let listed = list(&mut t, &[volume("a", "1", 1), volume("b", "2", 1)]);
        assert_eq!(listed, ["a", "b"]);
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn a_relisting_triggers_what_appeared_or_changed_while_the_watch_was_behind() {
        let mut t = Triggers::default();
        list(&mut t, &[volume("a", "1", 1), volume("b", "2", 1)]);
        let relisted = list(
            &mut t,
            &[
                volume("a", "1", 1),
                volume("b", "2", 2),
                volume("new", "3", 1),
            ],
        );
        assert_eq!(relisted, ["b", "new"], "a did not change");
    }

    #[test]
    fn a_relisting_forgets_what_it_no_longer_shows() {
        let mut t = Triggers::default();
        list(&mut t, &[volume("a", "1", 1), volume("gone", "2", 1)]);
        assert!(t.take_vanished().is_empty());
        list(&mut t, &[volume("a", "1", 1)]);
        assert_eq!(t.len(), 1);
        assert_eq!(
            t.take_vanished(),
            [crate::resync::key_hash("ns", "gone")],
            "the engine forgets it too"
        );
        assert!(t.take_vanished().is_empty(), "once");
        // Made again later with the same content: a new object, so a change.
        assert_eq!(
            names(t.on(&Event::Apply(volume("gone", "2", 1)), no_echo)),
            ["gone"]
        );
    }

    #[test]
    fn live_events_trigger_at_once_and_only_on_a_change() {
        let mut t = Triggers::default();
        list(&mut t, &[]);
        assert_eq!(
            names(t.on(&Event::Apply(volume("a", "1", 1)), no_echo)),
            ["a"]
        );
        assert!(
            t.on(&Event::Apply(volume("a", "1", 1)), no_echo).is_empty(),
            "a status write"
        );
        let mut marked = volume("a", "1", 1);
        marked
            .annotations_mut()
            .insert(ann::CREATE_PENDING.into(), "2026-01-01T00:00:00Z".into());
        assert!(
            t.on(&Event::Apply(marked), no_echo).is_empty(),
            "the engine's own marker"
        );
        assert_eq!(
            names(t.on(&Event::Apply(volume("a", "1", 2)), no_echo)),
            ["a"]
        );
    }

    #[test]
    fn the_operators_own_write_coming_back_triggers_nothing() {
        let mut t = Triggers::default();
        list(&mut t, &[volume("a", "1", 1)]);
        let mut claimed = volume("a", "1", 1);
        claimed
            .finalizers_mut()
            .push("gpucloud.io/finalizer".into());
        assert!(t.on(&Event::Apply(claimed.clone()), |_| true).is_empty());
        // Remembered as seen: the same object again is no change either.
        assert!(t.on(&Event::Apply(claimed), no_echo).is_empty());
        // Someone else's change still counts.
        assert_eq!(
            names(t.on(&Event::Apply(volume("a", "1", 2)), |_| false)),
            ["a"]
        );
    }

    #[test]
    fn what_is_handed_on_is_the_objects_key() {
        let mut t = Triggers::default();
        list(&mut t, &[]);
        let mut nv = volume("a", "1", 1);
        nv.metadata.resource_version = Some("42".into());
        assert_eq!(t.on(&Event::Apply(nv), no_echo), ["ns/a"]);
    }

    #[test]
    fn an_object_changed_live_between_two_listings_is_not_taken_for_vanished() {
        let mut t = Triggers::default();
        list(&mut t, &[volume("a", "1", 1)]);
        t.on(&Event::Apply(volume("b", "2", 1)), no_echo);
        list(&mut t, &[volume("a", "1", 1), volume("b", "2", 1)]);
        assert!(t.take_vanished().is_empty());
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn a_relisting_does_not_take_changes_for_echoes() {
        let mut t = Triggers::default();
        list(&mut t, &[volume("a", "1", 1)]);
        t.on(&Event::Init, no_echo);
        t.on(&Event::InitApply(volume("a", "1", 2)), |_| true);
        assert_eq!(names(t.on(&Event::InitDone, no_echo)), ["a"]);
    }

    #[test]
    fn the_same_name_under_a_new_uid_is_a_new_object() {
        let mut t = Triggers::default();
        list(&mut t, &[volume("a", "1", 1)]);
        assert_eq!(
            names(t.on(&Event::Apply(volume("a", "9", 1)), no_echo)),
            ["a"]
        );
    }

    #[test]
    fn a_deleted_object_is_forgotten() {
        let mut t = Triggers::default();
        list(&mut t, &[volume("a", "1", 1)]);
        assert!(
            t.on(&Event::Delete(volume("a", "1", 1)), no_echo)
                .is_empty()
        );
        assert!(t.is_empty());
    }

    #[test]
    fn the_engines_own_markers_do_not_change_the_hash() {
        let plain = change_hash(&volume("a", "1", 1));
        for key in [ann::CREATE_PENDING, ann::CREATE_SUCCEEDED] {
            let mut marked = volume("a", "1", 1);
            marked
                .annotations_mut()
                .insert(key.into(), "2026-01-01T00:00:00Z".into());
            assert_eq!(plain, change_hash(&marked), "{key}");
        }
    }

    #[test]
    fn user_facing_annotations_spec_and_finalizers_change_the_hash() {
        let plain = change_hash(&volume("a", "1", 1));
        for key in [
            ann::EXTERNAL_ID,
            ann::PAUSED,
            ann::POLL_INTERVAL,
            ann::RECONCILE_REQUESTED_AT,
            "example.com/anything",
        ] {
            let mut annotated = volume("a", "1", 1);
            annotated.annotations_mut().insert(key.into(), "x".into());
            assert_ne!(plain, change_hash(&annotated), "{key}");
        }
        assert_ne!(plain, change_hash(&volume("a", "1", 2)));
        let mut finalized = volume("a", "1", 1);
        finalized
            .finalizers_mut()
            .push("gpucloud.io/finalizer".into());
        assert_ne!(plain, change_hash(&finalized));
    }
}
