//! Which objects' passes are due, and when: the pure part of the engine's controller
//! ([`crate::controller`]), tested without a runtime.
//!
//! The rules are kube's controller's: an object waits once however often it is asked for,
//! at the earliest time asked; an object's passes never overlap (one asked for while its
//! pass runs comes after it, at once); a pass that ends asking to come back later waits
//! for that time unless something asks sooner. Converged objects are not here: they wait
//! for their resync in [`crate::resync`]'s table, which is smaller per object.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use tokio::time::Instant;

/// The objects waiting for their pass and those whose pass runs, by `namespace/name`.
#[derive(Default)]
pub struct Scheduler {
    /// When each waiting object is due.
    waiting: HashMap<Arc<str>, Instant>,
    /// The same, in the order they are due.
    order: BTreeSet<(Instant, Arc<str>)>,
    /// Objects whose pass runs, with the earliest time another was asked for meanwhile.
    running: HashMap<Arc<str>, Option<Instant>>,
}

impl Scheduler {
    /// A pass of `key` is asked for, due at `at`.
    pub fn request(&mut self, key: &str, at: Instant) {
        if let Some(again) = self.running.get_mut(key) {
            *again = Some(again.map_or(at, |t| t.min(at)));
            return;
        }
        match self.waiting.get_mut(key) {
            Some(due) if *due <= at => {}
            Some(due) => {
                let key = self
                    .order
                    .take(&(*due, Arc::from(key)))
                    .map_or_else(|| Arc::from(key), |(_, k)| k);
                *due = at;
                self.order.insert((at, key));
            }
            None => {
                let key: Arc<str> = Arc::from(key);
                self.waiting.insert(key.clone(), at);
                self.order.insert((at, key));
            }
        }
    }

    /// The next object due by `now`, taken as running; `None` if none is due.
    pub fn start_due(&mut self, now: Instant) -> Option<Arc<str>> {
        let (at, _) = self.order.first()?;
        if *at > now {
            return None;
        }
        let (_, key) = self.order.pop_first()?;
        self.waiting.remove(&key);
        self.running.insert(key.clone(), None);
        Some(key)
    }

    /// The pass of `key` ended; it asks to come back at `next` (if at all). It waits again
    /// for the earlier of that and what was asked while it ran.
    pub fn finish(&mut self, key: &str, next: Option<Instant>) {
        let again = self.running.remove(key).flatten();
        let at = match (again, next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(at) = at {
            self.request(key, at);
        }
        if self.running.is_empty() && self.waiting.is_empty() {
            // A burst (every object at start) sized these for all of them.
            self.running.shrink_to_fit();
            self.waiting.shrink_to_fit();
        }
    }

    /// When the next waiting object is due.
    pub fn next_due(&self) -> Option<Instant> {
        self.order.first().map(|(at, _)| *at)
    }

    pub fn running(&self) -> usize {
        self.running.len()
    }

    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(base: Instant, secs: u64) -> Instant {
        base + Duration::from_secs(secs)
    }

    fn due(s: &mut Scheduler, now: Instant) -> Vec<String> {
        std::iter::from_fn(|| s.start_due(now))
            .map(|k| k.to_string())
            .collect()
    }

    #[test]
    fn an_object_waits_once_at_the_earliest_time_asked() {
        let t = Instant::now();
        let mut s = Scheduler::default();
        s.request("ns/a", at(t, 10));
        s.request("ns/a", at(t, 5));
        s.request("ns/a", at(t, 20));
        s.request("ns/b", at(t, 7));
        assert_eq!(s.waiting(), 2);
        assert_eq!(s.next_due(), Some(at(t, 5)));
        assert!(due(&mut s, at(t, 4)).is_empty());
        assert_eq!(due(&mut s, at(t, 5)), ["ns/a"]);
        assert_eq!(due(&mut s, at(t, 10)), ["ns/b"]);
        assert_eq!(s.running(), 2);
        assert_eq!(s.next_due(), None);
    }

    #[test]
    fn objects_come_due_in_order() {
        let t = Instant::now();
        let mut s = Scheduler::default();
        for (key, secs) in [("ns/c", 3), ("ns/a", 1), ("ns/b", 2)] {
            s.request(key, at(t, secs));
        }
        assert_eq!(due(&mut s, at(t, 9)), ["ns/a", "ns/b", "ns/c"]);
    }

    #[test]
    fn a_pass_asked_for_while_one_runs_comes_after_it() {
        let t = Instant::now();
        let mut s = Scheduler::default();
        s.request("ns/a", t);
        assert_eq!(due(&mut s, t), ["ns/a"]);
        // Asked again while running: not started twice.
        s.request("ns/a", t);
        assert!(due(&mut s, t).is_empty());
        assert_eq!(s.waiting(), 0);
        // It ends asking for a recheck in 30 s; the request made meanwhile wins.
        s.finish("ns/a", Some(at(t, 30)));
        assert_eq!(due(&mut s, t), ["ns/a"]);
        s.finish("ns/a", None);
        assert_eq!(
            (s.running(), s.waiting()),
            (0, 0),
            "nothing asked: it is done"
        );
    }

    #[test]
    fn a_pass_that_asks_to_come_back_waits_for_it() {
        let t = Instant::now();
        let mut s = Scheduler::default();
        s.request("ns/a", t);
        due(&mut s, t);
        s.finish("ns/a", Some(at(t, 30)));
        assert_eq!(s.next_due(), Some(at(t, 30)));
        // A change brings it sooner.
        s.request("ns/a", at(t, 1));
        assert_eq!(s.next_due(), Some(at(t, 1)));
        assert_eq!(s.waiting(), 1);
        assert_eq!(due(&mut s, at(t, 1)), ["ns/a"]);
    }
}
