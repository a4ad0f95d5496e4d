//! Which objects a watch's relisting no longer shows.
//!
//! A watch that falls behind lists again, and an object deleted meanwhile is simply absent
//! from the new listing: no `Delete` event tells of it. kube's store swaps the listing in
//! whole, so it forgets such an object by itself; anything else kept per object from the
//! events (the Budgets' ledger) must be told. [`Vanished`] keeps the keys one watch holds
//! and, at the end of each listing, gives those it did not show.

use std::collections::HashSet;

use kube::ResourceExt;
use kube::runtime::watcher::Event;

/// `(namespace, name)` of an object.
pub type Key = (String, String);

fn key_of<K: ResourceExt>(obj: &K) -> Key {
    (obj.namespace().unwrap_or_default(), obj.name_any())
}

/// The keys one watch holds.
#[derive(Debug, Default)]
pub struct Vanished {
    held: HashSet<Key>,
    /// During a listing: what it has shown so far.
    listing: Option<HashSet<Key>>,
}

impl Vanished {
    /// Takes the watch's next event; at the end of a listing, the keys it did not show.
    pub fn on<K: ResourceExt>(&mut self, event: &Event<K>) -> Vec<Key> {
        match event {
            Event::Init => {
                self.listing = Some(HashSet::new());
                Vec::new()
            }
            Event::InitApply(obj) => {
                let key = key_of(obj);
                if let Some(listing) = self.listing.as_mut() {
                    listing.insert(key.clone());
                }
                self.held.insert(key);
                Vec::new()
            }
            Event::InitDone => match self.listing.take() {
                Some(listed) => {
                    let mut gone: Vec<Key> = self.held.difference(&listed).cloned().collect();
                    gone.sort();
                    self.held = listed;
                    gone
                }
                None => Vec::new(),
            },
            Event::Apply(obj) => {
                self.held.insert(key_of(obj));
                Vec::new()
            }
            Event::Delete(obj) => {
                self.held.remove(&key_of(obj));
                Vec::new()
            }
        }
    }

    /// Every key the watch holds, sorted, and holds none from then on: the watch stopped
    /// (its namespace is no longer watched), and what it told of must be let go of.
    pub fn take_all(&mut self) -> Vec<Key> {
        self.listing = None;
        let mut all: Vec<Key> = std::mem::take(&mut self.held).into_iter().collect();
        all.sort();
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn obj(ns: &str, name: &str) -> ConfigMap {
        let mut c = ConfigMap::default();
        c.metadata.namespace = Some(ns.into());
        c.metadata.name = Some(name.into());
        c
    }

    #[test]
    fn a_relisting_tells_what_it_no_longer_shows() {
        let mut v = Vanished::default();
        let mut gone = Vec::new();
        for event in [
            Event::Init,
            Event::InitApply(obj("a", "kept")),
            Event::InitApply(obj("a", "deleted-while-away")),
            Event::InitDone,
            Event::Apply(obj("b", "made-later")),
            Event::Apply(obj("b", "deleted-live")),
            Event::Delete(obj("b", "deleted-live")),
        ] {
            gone.extend(v.on(&event));
        }
        assert!(
            gone.is_empty(),
            "the first listing and live events: {gone:?}"
        );
        for event in [
            Event::Init,
            Event::InitApply(obj("a", "kept")),
            Event::InitApply(obj("c", "new-while-away")),
            Event::InitDone,
        ] {
            gone.extend(v.on(&event));
        }
        assert_eq!(
            gone,
            vec![
                ("a".to_string(), "deleted-while-away".to_string()),
                ("b".to_string(), "made-later".to_string()),
            ]
        );
        // A listing that starts again before it ends (a restarted watch) starts afresh.
        let mut again = Vec::new();
        for event in [
            Event::Init,
            Event::InitApply(obj("a", "kept")),
            Event::Init,
            Event::InitApply(obj("a", "kept")),
            Event::InitApply(obj("c", "new-while-away")),
            Event::InitDone,
        ] {
            again.extend(v.on(&event));
        }
        assert!(again.is_empty(), "{again:?}");
        assert_eq!(
            v.take_all(),
            vec![
                ("a".to_string(), "kept".to_string()),
                ("c".to_string(), "new-while-away".to_string()),
            ]
        );
        assert!(v.take_all().is_empty());
    }
}
