//! Recent verdicts by token, so that a scraper asking every 15 s costs the apiserver two
//! reviews a minute at most rather than two per scrape. Keyed by the SHA-256 of the token:
//! the cache holds no token. Small and bounded, since a few scrapers (an HA pair of
//! Prometheus, a person with `curl`) are all it serves; tokens sent at random cannot grow it.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use aws_lc_rs::digest::{SHA256, digest};

use super::verdict::Verdict;

/// How long a verdict stands. A token revoked, or a right removed, is honoured this much
/// later at most; a right granted, too.
pub const VERDICT_TTL: Duration = Duration::from_secs(60);

/// How many tokens the cache remembers at once.
pub const CAPACITY: usize = 256;

/// A token's key in the cache: its SHA-256.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TokenKey([u8; 32]);

impl TokenKey {
    pub fn of(token: &str) -> Self {
        let mut key = [0; 32];
        key.copy_from_slice(digest(&SHA256, token.as_bytes()).as_ref());
        Self(key)
    }
}

#[derive(Debug)]
struct Entry {
    verdict: Verdict,
    expires: Instant,
}

/// Verdicts that stand until their time is up; the clock is the caller's.
#[derive(Debug)]
pub struct VerdictCache {
    ttl: Duration,
    capacity: usize,
    entries: HashMap<TokenKey, Entry>,
}

impl VerdictCache {
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            ttl,
            capacity: capacity.max(1),
            entries: HashMap::new(),
        }
    }

    /// The verdict on `key` if it still stands at `now`; an expired one is dropped.
    pub fn get(&mut self, key: &TokenKey, now: Instant) -> Option<Verdict> {
        let entry = self.entries.get(key)?;
        if entry.expires > now {
            return Some(entry.verdict);
        }
        self.entries.remove(key);
        None
    }

    /// Remembers `verdict` on `key` from `now`. When full, the expired entries go first,
    /// then the one closest to expiring (the oldest).
    pub fn insert(&mut self, key: TokenKey, verdict: Verdict, now: Instant) {
        if !self.entries.contains_key(&key) && self.entries.len() >= self.capacity {
            self.entries.retain(|_, entry| entry.expires > now);
            if self.entries.len() >= self.capacity
                && let Some(oldest) = self
                    .entries
                    .iter()
                    .min_by_key(|(_, entry)| entry.expires)
                    .map(|(key, _)| *key)
            {
                self.entries.remove(&oldest);
            }
        }
        let expires = now + self.ttl;
        self.entries.insert(key, Entry { verdict, expires });
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn the_key_is_the_tokens_hash_not_the_token() {
        let key = TokenKey::of("secret-token");
        assert_eq!(key, TokenKey::of("secret-token"));
        assert_ne!(key, TokenKey::of("secret-tokem"));
        assert!(
            !format!("{key:?}").contains("secret"),
            "the key shows no token"
        );
    }

    #[test]
    fn a_verdict_stands_for_its_time_and_then_is_gone() {
        let start = Instant::now();
        let mut cache = VerdictCache::new(60 * SECOND, 8);
        let key = TokenKey::of("a");
        assert_eq!(cache.get(&key, start), None);
        cache.insert(key, Verdict::Allowed, start);
        assert_eq!(cache.get(&key, start + 59 * SECOND), Some(Verdict::Allowed));
        assert_eq!(cache.get(&key, start + 60 * SECOND), None);
        assert_eq!(cache.len(), 0, "the expired entry is dropped");
    }

    #[test]
    fn each_token_has_its_own_verdict() {
        let now = Instant::now();
        let mut cache = VerdictCache::new(60 * SECOND, 8);
        cache.insert(TokenKey::of("reader"), Verdict::Allowed, now);
        cache.insert(TokenKey::of("other"), Verdict::Forbidden, now);
        assert_eq!(
            cache.get(&TokenKey::of("reader"), now),
            Some(Verdict::Allowed)
        );
        assert_eq!(
            cache.get(&TokenKey::of("other"), now),
            Some(Verdict::Forbidden)
        );
        assert_eq!(cache.get(&TokenKey::of("stranger"), now), None);
    }

    #[test]
    fn a_full_cache_drops_the_expired_then_the_oldest() {
        let start = Instant::now();
        let mut cache = VerdictCache::new(60 * SECOND, 3);
        cache.insert(TokenKey::of("a"), Verdict::Allowed, start);
        cache.insert(TokenKey::of("b"), Verdict::Allowed, start + 10 * SECOND);
        cache.insert(TokenKey::of("c"), Verdict::Allowed, start + 20 * SECOND);
        // Full: "a" is the oldest, still standing, and goes.
        let now = start + 30 * SECOND;
        cache.insert(TokenKey::of("d"), Verdict::Forbidden, now);
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get(&TokenKey::of("a"), now), None);
        for kept in ["b", "c", "d"] {
            assert!(cache.get(&TokenKey::of(kept), now).is_some(), "{kept}");
        }
        // Later "b" and "c" have expired: both go, and "d" stays.
        let later = start + 85 * SECOND;
        cache.insert(TokenKey::of("e"), Verdict::Allowed, later);
        assert_eq!(cache.len(), 2);
        assert!(cache.get(&TokenKey::of("d"), later).is_some());
    }

    #[test]
    fn many_tokens_never_grow_it_past_its_capacity() {
        let now = Instant::now();
        let mut cache = VerdictCache::new(60 * SECOND, CAPACITY);
        for n in 0..10 * CAPACITY {
            cache.insert(TokenKey::of(&n.to_string()), Verdict::Unauthenticated, now);
        }
        assert_eq!(cache.len(), CAPACITY);
    }

    #[test]
    fn a_token_seen_again_is_renewed_in_place() {
        let start = Instant::now();
        let mut cache = VerdictCache::new(60 * SECOND, 1);
        cache.insert(TokenKey::of("a"), Verdict::Forbidden, start);
        cache.insert(TokenKey::of("a"), Verdict::Allowed, start + 30 * SECOND);
        assert_eq!(cache.len(), 1);
        assert_eq!(
            cache.get(&TokenKey::of("a"), start + 80 * SECOND),
            Some(Verdict::Allowed)
        );
    }
}
