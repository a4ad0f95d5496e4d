//! The resourceVersions of this process's own metadata patches of each object, until the
//! watch brings each of them back.
//!
//! One pass can write an object twice in a row (a create the platform refused: the marker,
//! then its removal). Both versions come back through the watch, one after the other, and
//! each is an echo: a pass for the first would read the cache before the second arrived
//! and find the marker of a create that is over, which it must take for one an earlier
//! process left, and wait the whole create timeout. So every write is kept, not only the
//! last one, and what the watch has gone past is dropped.

use std::cmp::Ordering;
use std::collections::HashMap;

use super::memory::version_order;

/// Own writes per object key (see the module's doc).
#[derive(Default)]
pub(super) struct OwnWrites {
    by_key: HashMap<String, Vec<Box<str>>>,
}

impl OwnWrites {
    /// Notes that this process wrote the object `key`, which is now at `version`.
    pub fn record(&mut self, key: String, version: &str) {
        self.by_key.entry(key).or_default().push(version.into());
    }

    /// Whether the object `key` delivered by the watch at `version` is one of this
    /// process's own writes coming back. Writes the watch has now gone past are dropped:
    /// their echo was this one, or never comes (a relisting shows only the latest).
    pub fn is_echo(&mut self, key: &str, version: Option<&str>) -> bool {
        let Some(version) = version else {
            return false;
        };
        let echo = self
            .by_key
            .get(key)
            .is_some_and(|writes| writes.iter().any(|w| &**w == version));
        self.delivered(key, version);
        echo
    }

    /// Drops the writes of `key` that the watch has delivered `version` of, or gone past:
    /// their echo was this event or an earlier one. Told of every delivered version, not
    /// only of the changes [`OwnWrites::is_echo`] is asked about: a patch whose echo the
    /// watch brought before the patch's answer was recorded (the answer and the event
    /// race) is otherwise kept until the object's next change of spec or metadata, which
    /// may never come (one in three volumes of a 3,000-volume run kept one).
    pub fn delivered(&mut self, key: &str, version: &str) {
        let Some(writes) = self.by_key.get_mut(key) else {
            return;
        };
        // Kept: the writes still to come back, and those whose order cannot be told.
        writes.retain(|w| &**w != version && version_order(version, w) != Some(Ordering::Greater));
        if writes.is_empty() {
            self.by_key.remove(key);
            crate::shrink_after_burst(&mut self.by_key);
        }
    }

    /// Drops what is kept of `key`: the object is gone.
    pub fn forget(&mut self, key: &str) {
        self.by_key.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This process wrote `ns/a` at each of `versions`, in turn.
    fn wrote_a(versions: &[&str]) -> OwnWrites {
        let mut own = OwnWrites::default();
        for version in versions {
            own.record("ns/a".into(), version);
        }
        own
    }

    #[test]
    fn a_write_recorded_after_its_echo_goes_with_the_next_delivery() {
        let mut own = OwnWrites::default();
        // The watch brought version 10 before the patch's answer was recorded.
        assert!(!own.is_echo("ns/a", Some("10")));
        own.record("ns/a".into(), "10");
        // A status write follows (no change the trigger filter asks about).
        own.delivered("ns/a", "11");
        assert!(own.by_key.is_empty());
    }

    #[test]
    fn two_writes_in_a_row_are_both_echoes() {
        let mut own = wrote_a(&["10", "11"]);
        assert!(own.is_echo("ns/a", Some("10")));
        assert!(own.is_echo("ns/a", Some("11")));
        assert!(own.by_key.is_empty());
    }

    #[test]
    fn a_change_by_someone_else_is_no_echo() {
        let mut own = wrote_a(&["10", "12"]);
        assert!(own.is_echo("ns/a", Some("10")));
        // A user's change between our two writes.
        assert!(!own.is_echo("ns/a", Some("11")));
        assert!(own.is_echo("ns/a", Some("12")));
        assert!(!own.is_echo("ns/b", Some("12")));
        assert!(!own.is_echo("ns/a", None));
    }

    #[test]
    fn writes_the_watch_went_past_are_dropped() {
        let mut own = wrote_a(&["10", "11"]);
        // A relisting shows only a later version.
        assert!(!own.is_echo("ns/a", Some("15")));
        assert!(own.by_key.is_empty());
    }

    #[test]
    fn versions_that_are_no_numbers_wait_for_their_echo_or_the_objects_end() {
        let mut own = wrote_a(&["x"]);
        assert!(!own.is_echo("ns/a", Some("y")));
        assert!(own.is_echo("ns/a", Some("x")));
        own.record("ns/b".into(), "x");
        own.forget("ns/b");
        assert!(!own.is_echo("ns/b", Some("x")));
    }
}
