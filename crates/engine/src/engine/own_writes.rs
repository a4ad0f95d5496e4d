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

/// How two resourceVersions of one object are ordered. They are etcd revisions, comparable
/// as integers (Kubernetes 1.35 made that a guarantee); anything else is not compared.
pub(super) fn version_order(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    Some(a.parse::<u64>().ok()?.cmp(&b.parse::<u64>().ok()?))
}

/// Whether the object delivered by the watch at `version` is one of `writes`, this
/// process's own patches of it, coming back. Writes the watch has now gone past are
/// dropped: their echo was this one, or never comes (a relisting shows only the latest).
pub(super) fn is_echo(writes: &mut Vec<Box<str>>, version: &str) -> bool {
    let echo = writes.iter().any(|w| &**w == version);
    delivered(writes, version);
    echo
}

/// Drops the writes that the watch has delivered `version` of, or gone past: their echo
/// was this event or an earlier one. Told of every delivered version, not only of the
/// changes [`is_echo`] is asked about: a patch whose echo the watch brought before the
/// patch's answer was recorded (the answer and the event race) is otherwise kept until the
/// object's next change of spec or metadata, which may never come.
pub(super) fn delivered(writes: &mut Vec<Box<str>>, version: &str) {
    // Kept: the writes still to come back, and those whose order cannot be told.
    writes.retain(|w| &**w != version && version_order(version, w) != Some(Ordering::Greater));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This process wrote the object at each of `versions`, in turn.
    fn wrote(versions: &[&str]) -> Vec<Box<str>> {
        versions.iter().map(|v| (*v).into()).collect()
    }

    #[test]
    fn a_write_recorded_after_its_echo_goes_with_the_next_delivery() {
        let mut own = Vec::new();
        // The watch brought version 10 before the patch's answer was recorded.
        assert!(!is_echo(&mut own, "10"));
        own.push("10".into());
        // A status write follows (no change the trigger filter asks about).
        delivered(&mut own, "11");
        assert!(own.is_empty());
    }

    #[test]
    fn two_writes_in_a_row_are_both_echoes() {
        let mut own = wrote(&["10", "11"]);
        assert!(is_echo(&mut own, "10"));
        assert!(is_echo(&mut own, "11"));
        assert!(own.is_empty());
    }

    #[test]
    fn a_change_by_someone_else_is_no_echo() {
        let mut own = wrote(&["10", "12"]);
        assert!(is_echo(&mut own, "10"));
        // A user's change between our two writes.
        assert!(!is_echo(&mut own, "11"));
        assert!(is_echo(&mut own, "12"));
    }

    #[test]
    fn writes_the_watch_went_past_are_dropped() {
        let mut own = wrote(&["10", "11"]);
        // A relisting shows only a later version.
        assert!(!is_echo(&mut own, "15"));
        assert!(own.is_empty());
    }

    #[test]
    fn versions_that_are_no_numbers_wait_for_their_echo() {
        let mut own = wrote(&["x"]);
        assert!(!is_echo(&mut own, "y"));
        assert!(is_echo(&mut own, "x"));
    }
}
