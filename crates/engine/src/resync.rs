//! When each converged object of a kind is due for its next resync pass, kept here rather
//! than in the controller's scheduler ([`crate::scheduler`]).
//!
//! Why: an object that waits for its resync (all of them, once converged) would wait in a
//! scheduler as two copies of its key plus a time (in kube's, with a timer: about 550
//! bytes per object), for as long as it exists. Here it is one entry of a table, a hash of its
//! `namespace/name` and the second it is due (about 20 bytes). Once a second the controller
//! takes the due ones, as hashes, and starts their passes as it has room (see
//! [`crate::controller`]): a resync of every object never holds a key or a scheduler entry
//! for each of them at once.
//!
//! Only the regular resync waits here (the poll interval, or an object's own). A pass that
//! must come back sooner or by its own timer (a change in progress on the platform, a
//! backoff, a schedule boundary) returns its delay to the controller, which keeps it to the
//! millisecond; and the start of every pass takes the object off this table.

use std::collections::HashMap;
use std::hash::Hasher;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use parking_lot::Mutex;
use tokio::time::Instant;

/// The hash an object is known by here: of its namespace and name. Its keys are the
/// process's own ([`crate::fingerprint`]): the watch cache places objects by this hash
/// (see [`crate::cache`]), and names that collide under a fixed key could be chosen to
/// slow it down.
pub fn key_hash(namespace: &str, name: &str) -> u64 {
    let mut h = crate::fingerprint::hasher();
    h.write(namespace.as_bytes());
    h.write_u8(b'/');
    h.write(name.as_bytes());
    h.finish()
}

/// [`key_hash`] of an object's metadata (whole or packed, the same hash).
pub fn meta_hash(meta: &ObjectMeta) -> u64 {
    key_hash(
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    )
}

/// [`key_hash`] of a `namespace/name` key.
pub fn hash_of_key(key: &str) -> u64 {
    let (namespace, name) = key.split_once('/').unwrap_or(("", key));
    key_hash(namespace, name)
}

/// The resync table of one kind (see the module's doc).
pub struct Resync {
    /// Seconds since `epoch` at which each object is due.
    due: Mutex<HashMap<u64, u32>>,
    epoch: Instant,
}

impl Default for Resync {
    fn default() -> Self {
        Self::new(Instant::now())
    }
}

impl Resync {
    pub fn new(epoch: Instant) -> Self {
        Self {
            due: Mutex::new(HashMap::new()),
            epoch,
        }
    }

    fn seconds(&self, at: Instant) -> u32 {
        u32::try_from(at.saturating_duration_since(self.epoch).as_secs()).unwrap_or(u32::MAX)
    }

    /// Object `key` is due `after` from `now` (rounded up to the second).
    pub fn schedule(&self, key: &str, now: Instant, after: Duration) {
        let at = self.seconds(now + after + Duration::from_millis(999));
        self.due.lock().insert(hash_of_key(key), at);
    }

    /// Object `key` no longer waits here: a pass has started, or it is gone.
    pub fn cancel(&self, key: &str) {
        self.due.lock().remove(&hash_of_key(key));
    }

    /// Takes the objects due at `now` off the table, by hash (8 bytes each: the controller
    /// holds them until it has room for their passes).
    pub fn take_due(&self, now: Instant) -> Vec<u64> {
        let now = self.seconds(now);
        let mut taken = Vec::new();
        self.due.lock().retain(|hash, at| {
            let due = *at <= now;
            if due {
                taken.push(*hash);
            }
            !due
        });
        taken
    }

    /// How many objects wait here.
    pub fn len(&self) -> usize {
        self.due.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_due_once_its_time_has_come() {
        let t0 = Instant::now();
        let resync = Resync::new(t0);
        resync.schedule("ns/a", t0, Duration::from_secs(60));
        resync.schedule("ns/b", t0, Duration::from_secs(30));
        assert!(resync.take_due(t0 + Duration::from_secs(29)).is_empty());
        assert_eq!(
            resync.take_due(t0 + Duration::from_secs(31)),
            [key_hash("ns", "b")]
        );
        assert!(
            resync.take_due(t0 + Duration::from_secs(40)).is_empty(),
            "taken once"
        );
        assert_eq!(
            resync.take_due(t0 + Duration::from_secs(61)),
            [hash_of_key("ns/a")]
        );
        assert!(resync.is_empty());
    }

    #[test]
    fn a_new_schedule_replaces_the_old_and_a_cancel_drops_it() {
        let t0 = Instant::now();
        let resync = Resync::new(t0);
        resync.schedule("ns/a", t0, Duration::from_secs(10));
        resync.schedule("ns/a", t0, Duration::from_secs(100));
        assert!(resync.take_due(t0 + Duration::from_secs(50)).is_empty());
        assert_eq!(resync.len(), 1);
        resync.cancel("ns/a");
        assert!(resync.take_due(t0 + Duration::from_secs(200)).is_empty());
    }

    #[test]
    fn never_early_even_within_a_second() {
        let t0 = Instant::now();
        let resync = Resync::new(t0);
        resync.schedule(
            "ns/a",
            t0 + Duration::from_millis(900),
            Duration::from_secs(1),
        );
        assert!(resync.take_due(t0 + Duration::from_millis(1800)).is_empty());
        assert_eq!(resync.take_due(t0 + Duration::from_secs(3)).len(), 1);
    }

    #[test]
    fn namespace_and_name_hash_as_their_key() {
        assert_eq!(key_hash("team-a", "data"), hash_of_key("team-a/data"));
        assert_ne!(key_hash("team-a", "data"), key_hash("team-ad", "ata"));
    }
}
