//! 64-bit fingerprints of values, for the tables that keep a hash where a key would cost
//! more (the watch cache's places, the change filter, the resync table, the Ready tally,
//! the Event log, the Secrets' versions).
//!
//! The hasher's keys are drawn once per process (std's `RandomState`). No fingerprint is
//! stored or sent anywhere: it is only ever compared with another taken by the same process,
//! so nothing needs the keys to be fixed. With fixed keys (`DefaultHasher::new()`), names
//! chosen to collide could have merged two objects' entries: one object's change hidden by
//! another's, or one Event counted as another's repeat.

use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::LazyLock;

static KEYS: LazyLock<RandomState> = LazyLock::new(RandomState::new);

/// The fingerprint of `value`.
pub fn of(value: impl Hash) -> u64 {
    KEYS.hash_one(value)
}

/// A hasher with this process's keys, for a fingerprint fed in parts.
pub fn hasher() -> impl std::hash::Hasher {
    KEYS.build_hasher()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hasher;

    #[test]
    fn a_value_has_one_fingerprint_and_its_parts_count() {
        assert_eq!(of(("ns", "a")), of(("ns", "a")));
        assert_ne!(of(("ns", "a")), of(("ns", "b")));
        // Tuples hash their parts with lengths: "ab","c" is not "a","bc".
        assert_ne!(of(("ab", "c")), of(("a", "bc")));
        let mut parts = hasher();
        ("ns", "a").hash(&mut parts);
        assert_eq!(parts.finish(), of(("ns", "a")));
    }
}
