//! What the engine keeps of each object between its passes: one [`Record`] per object,
//! under its [`ObjectKey`]. A record exists only while one of its fields holds something
//! (a converged object has none), and an object that goes is one removal
//! ([`Records::forget`]). The kind's own state of the object
//! ([`Actuator::State`](crate::adapter::Actuator::State)) is a field of the same record.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::adapter::{KindState, StateCells};
use crate::decide::UnsureCreate;

use super::create::RefusedCreate;

/// An object's key, `namespace/name`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectKey(Box<str>);

impl ObjectKey {
    pub fn new(key: &str) -> Self {
        Self(key.into())
    }
}

impl Borrow<str> for ObjectKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// What this process remembers of one object; `S` is the kind's status, `T` the kind's
/// own state of it.
pub(super) struct Record<S, T> {
    /// When this process last changed the object's remote object: a listing that started
    /// before that would show the old state (see `observe::listing_need`). Dropped once
    /// older than the oldest listing a pass takes anyway.
    pub last_write: Option<Instant>,
    /// A create this process sent whose outcome it does not know (a 5xx or a timeout):
    /// from when a listing can tell whether it happened.
    pub unsure_create: Option<UnsureCreate>,
    /// A create the platform refused for good: another trigger for the same generation
    /// and key must not send it again.
    pub refused_create: Option<Box<RefusedCreate>>,
    /// The status this process last wrote, with the resourceVersion the write returned,
    /// until the watch delivers it: a pass that starts before must not take the older
    /// status it sees for the current one.
    pub own_status: Option<Box<(String, S)>>,
    /// The resourceVersions of this process's metadata patches the watch has not brought
    /// back yet: their echo is no reason for another pass.
    pub own_writes: Vec<Box<str>>,
    /// The remote id this object claimed by adoption, until its status records it.
    pub claimed_id: Option<Box<str>>,
    /// Another install holds the object, and this process has said so.
    pub told_claimed: bool,
    /// Passes that failed in a row, for the backoff.
    pub failures: u32,
    /// What the kind keeps of the object.
    pub kind: T,
}

impl<S, T: Default> Default for Record<S, T> {
    fn default() -> Self {
        Self {
            last_write: None,
            unsure_create: None,
            refused_create: None,
            own_status: None,
            own_writes: Vec::new(),
            claimed_id: None,
            told_claimed: false,
            failures: 0,
            kind: T::default(),
        }
    }
}

impl<S, T: KindState> Record<S, T> {
    /// Whether the record keeps nothing: then it goes.
    fn is_empty(&self) -> bool {
        self.last_write.is_none()
            && self.unsure_create.is_none()
            && self.refused_create.is_none()
            && self.own_status.is_none()
            && self.own_writes.is_empty()
            && self.claimed_id.is_none()
            && !self.told_claimed
            && self.failures == 0
            && self.kind.is_empty()
    }
}

/// The records of one kind's objects.
pub(super) struct Records<S, T> {
    by_key: Mutex<HashMap<ObjectKey, Record<S, T>>>,
    /// A last write older than this no longer matters (see [`Record::last_write`]).
    writes_matter_for: Duration,
    last_sweep: Mutex<Instant>,
}

impl<S, T: KindState> Records<S, T> {
    pub fn new(writes_matter_for: Duration, now: Instant) -> Self {
        Self {
            by_key: Mutex::new(HashMap::new()),
            writes_matter_for,
            last_sweep: Mutex::new(now),
        }
    }

    /// Reads the record of `key`, if it has one.
    pub fn read<R>(&self, key: &str, f: impl FnOnce(&Record<S, T>) -> R) -> Option<R> {
        self.by_key.lock().get(key).map(f)
    }

    /// Changes the record of `key` (made if it has none); a record left keeping nothing
    /// goes, and a table left mostly empty after a burst gives its room back.
    pub fn update<R>(&self, key: &str, f: impl FnOnce(&mut Record<S, T>) -> R) -> R {
        let mut all = self.by_key.lock();
        let record = match all.get_mut(key) {
            Some(record) => record,
            None => all.entry(ObjectKey::new(key)).or_default(),
        };
        let out = f(record);
        if record.is_empty() {
            all.remove(key);
            crate::shrink_after_burst(&mut all);
        }
        out
    }

    /// Drops the record of `key`: the object is gone. Returns it, for what indexes it.
    pub fn forget(&self, key: &str) -> Option<Record<S, T>> {
        let mut all = self.by_key.lock();
        let gone = all.remove(key);
        crate::shrink_after_burst(&mut all);
        gone
    }

    /// Runs `f` on the kind's state of `key` (the default one when the object has no
    /// record), for the kind's pure calls. A kind whose state holds no data (`()`) never
    /// takes the records' lock here: every pass calls this.
    pub fn read_state<R>(&self, key: &str, f: impl FnOnce(&T) -> R) -> R {
        if std::mem::size_of::<T>() == 0 {
            return f(&T::default());
        }
        let all = self.by_key.lock();
        match all.get(key) {
            Some(record) => f(&record.kind),
            None => f(&T::default()),
        }
    }

    /// How many objects have a record.
    pub fn len(&self) -> usize {
        self.by_key.lock().len()
    }

    /// Notes that this process changed `key`'s remote object at `now`; sweeps the writes
    /// that no longer matter, at most once per [`Records::writes_matter_for`].
    pub fn wrote(&self, key: &str, now: Instant) {
        let sweep = {
            let mut last = self.last_sweep.lock();
            let due = now.saturating_duration_since(*last) >= self.writes_matter_for;
            if due {
                *last = now;
            }
            due
        };
        if sweep {
            self.sweep_writes(now);
        }
        self.update(key, |r| r.last_write = Some(now));
    }

    /// When `key`'s remote object was last changed, if that still matters at `now`.
    pub fn last_write(&self, key: &str, now: Instant) -> Option<Instant> {
        self.read(key, |r| r.last_write)
            .flatten()
            .filter(|at| now.saturating_duration_since(*at) < self.writes_matter_for)
    }

    fn sweep_writes(&self, now: Instant) {
        let relevant_for = self.writes_matter_for;
        let mut all = self.by_key.lock();
        all.retain(|_, r| {
            if r.last_write
                .is_some_and(|at| now.saturating_duration_since(at) >= relevant_for)
            {
                r.last_write = None;
            }
            !r.is_empty()
        });
        crate::shrink_after_burst(&mut all);
    }
}

impl<S: Send, T: KindState> StateCells<T> for Records<S, T> {
    fn with_state(&self, key: &str, f: &mut dyn FnMut(&mut T)) {
        let mut all = self.by_key.lock();
        if let Some(record) = all.get_mut(key) {
            f(&mut record.kind);
            if record.is_empty() {
                all.remove(key);
                crate::shrink_after_burst(&mut all);
            }
            return;
        }
        // No record: one is made only when the state is left holding something.
        let mut state = T::default();
        f(&mut state);
        if !state.is_empty() {
            let record = Record {
                kind: state,
                ..Record::default()
            };
            all.insert(ObjectKey::new(key), record);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLL: Duration = Duration::from_secs(60);

    #[test]
    fn a_record_exists_only_while_it_keeps_something() {
        let records: Records<u8, ()> = Records::new(POLL, Instant::now());
        records.update("ns/a", |r| r.failures = 2);
        records.update("ns/b", |r| r.told_claimed = true);
        assert_eq!(records.len(), 2);
        records.update("ns/a", |r| r.failures = 0);
        assert_eq!(records.len(), 1, "a record that keeps nothing goes");
        assert!(records.read("ns/a", |_| ()).is_none());
        // Reading makes no record.
        assert_eq!(records.read("ns/c", |r| r.failures), None);
        assert_eq!(records.len(), 1);
    }

    #[test]
    fn forgetting_an_object_is_one_removal_of_everything_it_kept() {
        let records: Records<u8, ()> = Records::new(POLL, Instant::now());
        records.wrote("ns/a", Instant::now());
        records.update("ns/a", |r| {
            r.failures = 1;
            r.own_status = Some(Box::new(("5".into(), 7)));
            r.own_writes.push("4".into());
            r.claimed_id = Some("vol-1".into());
            r.told_claimed = true;
        });
        let gone = records.forget("ns/a").expect("it had a record");
        assert_eq!(gone.claimed_id.as_deref(), Some("vol-1"));
        assert_eq!(records.len(), 0);
        assert_eq!(records.last_write("ns/a", Instant::now()), None);
    }

    /// A kind's state for the tests: what it last wrote.
    #[derive(Default)]
    struct Wrote(Option<&'static str>);

    impl KindState for Wrote {
        fn is_empty(&self) -> bool {
            self.0.is_none()
        }
    }

    #[test]
    fn the_kinds_state_is_kept_in_the_record_and_goes_with_it() {
        use crate::adapter::StateOf;
        let records: Records<u8, Wrote> = Records::new(POLL, Instant::now());
        let a = StateOf::new(&records, "ns/a");
        assert!(a.read(|s| s.0.is_none()));
        assert_eq!(records.len(), 0, "reading an empty state makes no record");
        a.update(|s| s.0 = Some("config"));
        assert_eq!(records.len(), 1);
        assert_eq!(records.read_state("ns/a", |s| s.0), Some("config"));
        records.update("ns/a", |r| r.failures = 1);
        a.update(|s| s.0 = None);
        assert_eq!(records.len(), 1, "the engine's part still holds something");
        a.update(|s| s.0 = Some("again"));
        records.forget("ns/a");
        assert_eq!(records.len(), 0);
        assert_eq!(
            records.read_state("ns/a", |s| s.0),
            None,
            "forgotten with the record"
        );
    }

    #[test]
    fn a_write_matters_for_one_poll_interval_and_is_then_swept() {
        let t0 = Instant::now();
        let records: Records<u8, ()> = Records::new(POLL, t0);
        records.wrote("ns/old", t0);
        assert_eq!(records.last_write("ns/old", t0 + POLL / 2), Some(t0));
        assert_eq!(records.last_write("ns/old", t0 + POLL), None);
        // The next write after an interval sweeps the old one out.
        records.wrote("ns/new", t0 + POLL);
        assert_eq!(records.len(), 1);
        assert!(records.read("ns/old", |_| ()).is_none());
    }
}
