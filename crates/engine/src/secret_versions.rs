//! What the operator last read of each Secret its objects name, and whether a new reading
//! is a change. Pure: [`crate::secret_recheck`] does the reading.
//!
//! The operator may only `get` Secrets (never list or watch them), so a rotated key is
//! noticed by reading again, on an interval, exactly the Secrets the watched objects name.
//! A Secret is known by the fingerprint of its `namespace/name` and remembered by the
//! fingerprint of its resourceVersion: a few bytes per Secret, nothing per object, and
//! nothing of its name or value kept.

use std::collections::HashMap;

use super::fingerprint;

/// What one `get` of a Secret said.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// It exists, at this resourceVersion (its fingerprint).
    Present(u64),
    /// 404: it does not exist.
    Absent,
    /// 403: the operator may not read it.
    Forbidden,
}

impl Reading {
    /// A Secret that exists, at `resource_version`.
    pub fn present(resource_version: Option<&str>) -> Self {
        Reading::Present(fingerprint::of(resource_version))
    }

    /// How the reading is named in logs.
    pub fn describe(self) -> &'static str {
        match self {
            Reading::Present(_) => "present",
            Reading::Absent => "absent",
            Reading::Forbidden => "forbidden",
        }
    }
}

/// What a reading says against the one before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// Nothing was known of the Secret: the reading is where later ones start. Not a
    /// change: every object that reads the Secret reads it itself in its pass, after a
    /// reading taken first (see [`crate::secret_recheck::SecretRecheck::before_pass`]).
    First,
    /// As before.
    Same,
    /// It moved: a new resourceVersion, or it appeared, disappeared, or its permission
    /// changed. Every object that reads it needs a pass.
    Changed,
}

/// Which objects a reading asks a pass of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Users {
    /// Every object that reads the Secret.
    All,
    /// Only those whose last pass found no such Secret: a Secret read for the first time
    /// may be one they wait for, and the others have read it themselves.
    MissingIt,
}

/// Which objects need a pass after a reading that is `seen` against the last: all of them
/// after a change; after a first reading that found the Secret, those that found none; else
/// none.
pub fn users_to_pass(seen: Seen, now: Reading) -> Option<Users> {
    match (seen, now) {
        (Seen::Changed, _) => Some(Users::All),
        (Seen::First, Reading::Present(_)) => Some(Users::MissingIt),
        (Seen::First, Reading::Absent | Reading::Forbidden) | (Seen::Same, _) => None,
    }
}

/// A reading against the one before it, if any.
pub fn compare(before: Option<Reading>, now: Reading) -> Seen {
    match before {
        None => Seen::First,
        Some(before) if before == now => Seen::Same,
        Some(_) => Seen::Changed,
    }
}

/// The fingerprint a Secret is known by.
pub fn secret_key(namespace: &str, name: &str) -> u64 {
    fingerprint::of((namespace, name))
}

/// The last reading of each Secret the objects name (by [`secret_key`]).
#[derive(Debug, Default)]
pub struct SecretVersions {
    readings: HashMap<u64, Reading>,
}

impl SecretVersions {
    pub fn knows(&self, secret: u64) -> bool {
        self.readings.contains_key(&secret)
    }

    /// Records a reading made before a pass reads the Secret itself, unless one is known:
    /// a change after the pass's read is then a change against this one. A known reading
    /// stays, so that a change the interval has not yet seen is still seen.
    pub fn start_from(&mut self, secret: u64, reading: Reading) {
        self.readings.entry(secret).or_insert(reading);
    }

    /// Records the interval's reading of a Secret, and says what it is against the last.
    pub fn record(&mut self, secret: u64, reading: Reading) -> Seen {
        compare(self.readings.insert(secret, reading), reading)
    }

    /// Forgets the Secrets no object names any more.
    pub fn keep_only(&mut self, named: impl Fn(u64) -> bool) {
        self.readings.retain(|secret, _| named(*secret));
        crate::shrink_after_burst(&mut self.readings);
    }

    pub fn len(&self) -> usize {
        self.readings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.readings.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_is_a_change_when_the_version_moves_or_the_secret_comes_or_goes() {
        let v1 = Reading::present(Some("1"));
        let v2 = Reading::present(Some("2"));
        assert_eq!(compare(None, v1), Seen::First);
        assert_eq!(compare(None, Reading::Absent), Seen::First);
        assert_eq!(compare(Some(v1), Reading::present(Some("1"))), Seen::Same);
        assert_eq!(compare(Some(v1), v2), Seen::Changed, "rotated");
        assert_eq!(
            compare(Some(Reading::Absent), v1),
            Seen::Changed,
            "appeared"
        );
        assert_eq!(compare(Some(v1), Reading::Absent), Seen::Changed, "gone");
        assert_eq!(
            compare(Some(Reading::Absent), Reading::Absent),
            Seen::Same,
            "gone only once"
        );
        assert_eq!(
            compare(Some(Reading::Forbidden), v1),
            Seen::Changed,
            "readable at last"
        );
        assert_eq!(
            compare(Some(Reading::Forbidden), Reading::Forbidden),
            Seen::Same
        );
    }

    #[test]
    fn a_change_passes_every_user_and_a_first_reading_those_that_found_nothing() {
        let v1 = Reading::present(Some("1"));
        assert_eq!(users_to_pass(Seen::Changed, v1), Some(Users::All));
        assert_eq!(
            users_to_pass(Seen::Changed, Reading::Absent),
            Some(Users::All)
        );
        assert_eq!(
            users_to_pass(Seen::Changed, Reading::Forbidden),
            Some(Users::All)
        );
        assert_eq!(users_to_pass(Seen::First, v1), Some(Users::MissingIt));
        // Nothing appeared: whoever waits for it still waits.
        assert_eq!(users_to_pass(Seen::First, Reading::Absent), None);
        assert_eq!(users_to_pass(Seen::First, Reading::Forbidden), None);
        assert_eq!(users_to_pass(Seen::Same, v1), None);
        assert_eq!(users_to_pass(Seen::Same, Reading::Absent), None);
    }

    #[test]
    fn the_table_compares_each_reading_with_the_last() {
        let key = secret_key("ns", "key");
        let mut versions = SecretVersions::default();
        assert_eq!(
            versions.record(key, Reading::present(Some("1"))),
            Seen::First
        );
        assert_eq!(
            versions.record(key, Reading::present(Some("1"))),
            Seen::Same
        );
        assert_eq!(
            versions.record(key, Reading::present(Some("2"))),
            Seen::Changed
        );
        assert_eq!(versions.record(key, Reading::Absent), Seen::Changed);
        assert_eq!(versions.record(key, Reading::Absent), Seen::Same);
        assert_eq!(
            versions.record(secret_key("ns", "other"), Reading::Absent),
            Seen::First,
            "each Secret apart"
        );
    }

    #[test]
    fn a_pass_sets_where_an_unknown_secret_starts_and_no_more() {
        let key = secret_key("ns", "key");
        let mut versions = SecretVersions::default();
        // Read before the object's first pass; rotated before the interval's reading.
        versions.start_from(key, Reading::present(Some("1")));
        assert!(versions.knows(key));
        assert_eq!(
            versions.record(key, Reading::present(Some("2"))),
            Seen::Changed,
            "the rotation between the pass and the interval is seen"
        );
        // A later pass does not hide a change the interval has not read yet.
        versions.start_from(key, Reading::present(Some("3")));
        assert_eq!(
            versions.record(key, Reading::present(Some("3"))),
            Seen::Changed
        );
    }

    #[test]
    fn secrets_no_object_names_are_forgotten() {
        let (a, b) = (secret_key("ns", "a"), secret_key("ns", "b"));
        let mut versions = SecretVersions::default();
        versions.record(a, Reading::Absent);
        versions.record(b, Reading::Absent);
        versions.keep_only(|s| s == a);
        assert!(versions.knows(a) && !versions.knows(b));
        assert_eq!(versions.len(), 1);
        // Named again later: a first reading, not a change.
        assert_eq!(versions.record(b, Reading::present(Some("9"))), Seen::First);
    }
}
