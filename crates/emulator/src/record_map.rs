//! Records by id, as every keyed collection of the world keeps them (endpoints, network
//! volumes, templates, registry credentials).
//!
//! Each record is behind an `Arc`, so that a listing takes the world's lock only to copy
//! pointers ([`RecordMap::shared`]) and serialises its answer after releasing it: with
//! 100,000 volumes, building the JSON under the lock held every other call for tens of
//! milliseconds. A write replaces the record or edits it in place; `Arc::make_mut` copies
//! it first only while a listing still holds the old one.
//!
//! A map may also keep a log of the ids written since it was last read
//! ([`RecordMap::with_change_log`], [`RecordMap::take_changes`]): the usage ledger follows
//! the network volumes through it, at the cost of the volumes a request changed rather than
//! of all of them.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::ops::Index;
use std::sync::Arc;

/// Records by id, in id order.
#[derive(Debug, Clone)]
pub struct RecordMap<R> {
    records: BTreeMap<String, Arc<R>>,
    /// Ids inserted, edited or removed since the last [`RecordMap::take_changes`]; `None`
    /// when the map keeps no log.
    changes: Option<Vec<String>>,
}

impl<R> Default for RecordMap<R> {
    fn default() -> Self {
        Self {
            records: BTreeMap::new(),
            changes: None,
        }
    }
}

impl<R> FromIterator<(String, R)> for RecordMap<R> {
    fn from_iter<I: IntoIterator<Item = (String, R)>>(iter: I) -> Self {
        Self {
            records: iter.into_iter().map(|(id, r)| (id, Arc::new(r))).collect(),
            changes: None,
        }
    }
}

/// `map[id]`: the record, or a panic when there is none (as a `BTreeMap`'s).
impl<R, Q: Ord + ?Sized> Index<&Q> for RecordMap<R>
where
    String: Borrow<Q>,
{
    type Output = R;

    fn index(&self, id: &Q) -> &R {
        self.records.get(id).expect("no record with this id")
    }
}

impl<R> RecordMap<R> {
    /// The same map, logging every write from now on; the records it holds count as
    /// written.
    pub fn with_change_log(mut self) -> Self {
        self.changes = Some(self.records.keys().cloned().collect());
        self
    }

    /// The ids written since the last call (repeats possible), oldest first.
    pub fn take_changes(&mut self) -> Vec<String> {
        self.changes
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    fn log(&mut self, id: &str) {
        if let Some(changes) = &mut self.changes {
            changes.push(id.to_owned());
        }
    }

    pub fn get(&self, id: &str) -> Option<&R> {
        self.records.get(id).map(Arc::as_ref)
    }

    /// The record `id` to edit in place (copied first if a listing still holds it).
    pub fn get_mut(&mut self, id: &str) -> Option<&mut R>
    where
        R: Clone,
    {
        if self.records.contains_key(id) {
            self.log(id);
        }
        self.records.get_mut(id).map(Arc::make_mut)
    }

    pub fn contains_key(&self, id: &str) -> bool {
        self.records.contains_key(id)
    }

    /// Adds or replaces the record `id`; returns the one it replaced.
    pub fn insert(&mut self, id: String, record: R) -> Option<Arc<R>> {
        self.log(&id);
        self.records.insert(id, Arc::new(record))
    }

    pub fn remove(&mut self, id: &str) -> Option<Arc<R>> {
        let removed = self.records.remove(id);
        if removed.is_some() {
            self.log(id);
        }
        removed
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Every id, in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.records.keys()
    }

    /// Every record, in id order.
    pub fn values(&self) -> impl Iterator<Item = &R> {
        self.records.values().map(Arc::as_ref)
    }

    /// Every record to edit in place, in id order; each counts as written.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut R>
    where
        R: Clone,
    {
        if let Some(changes) = &mut self.changes {
            changes.extend(self.records.keys().cloned());
        }
        self.records.values_mut().map(Arc::make_mut)
    }

    /// Every record, in id order, as pointers the caller may keep after the world's lock
    /// is released: what a listing copies under the lock.
    pub fn shared(&self) -> Vec<Arc<R>> {
        self.records.values().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> RecordMap<String> {
        [("b".to_string(), "B".to_string()), ("a".into(), "A".into())]
            .into_iter()
            .collect()
    }

    #[test]
    fn records_are_kept_in_id_order() {
        let m = map();
        assert_eq!(m.values().collect::<Vec<_>>(), ["A", "B"]);
        assert_eq!(m.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(m.shared().len(), 2);
    }

    #[test]
    fn a_listing_keeps_the_records_it_took_while_they_are_edited() {
        let mut m = map();
        let listed = m.shared();
        m.get_mut("a").unwrap().push('2');
        m.insert("b".into(), "B2".into());
        assert_eq!(
            listed.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
            ["A", "B"]
        );
        assert_eq!(m.values().collect::<Vec<_>>(), ["A2", "B2"]);
    }

    #[test]
    fn only_a_logged_map_logs_and_only_real_writes() {
        let mut plain = map();
        plain.insert("c".into(), "C".into());
        assert!(plain.take_changes().is_empty());

        let mut logged = map().with_change_log();
        assert_eq!(logged.take_changes(), ["a", "b"]);
        logged.insert("c".into(), "C".into());
        logged.get_mut("a").unwrap().push('2');
        assert!(logged.get_mut("missing").is_none());
        assert!(logged.remove("missing").is_none());
        logged.remove("b");
        assert_eq!(logged.take_changes(), ["c", "a", "b"]);
        assert!(logged.take_changes().is_empty());
    }
}
