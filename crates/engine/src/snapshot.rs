//! A shared, time-stamped listing of one kind of remote object for one account.
//!
//! Every object's reconcile reads the listing instead of asking the platform about itself,
//! so the platform sees one list call per kind per interval however many objects there
//! are. Callers that need a listing newer than some instant (after a create, or after a
//! failure that may have created something) wait for one shared refresh: a burst of
//! 1,000 callers costs one call, not 1,000. That holds for a refresh that fails too: the
//! callers that waited for it get its error instead of each trying again in turn, so an
//! outage or a refused key costs one call per burst, not one per object.
//!
//! Refreshes are also spaced by their own cost. While objects are being created one after
//! another, every pass after a create asks for a listing newer than its create, so without
//! spacing the listing would be refreshed back to back, once per create. A refresh starts
//! no sooner than [`REST_PER_LISTING_TIME`] times the previous one's duration after it
//! ended (at most [`MAX_REST`] per [`OBJECTS_PER_MAX_REST`] objects listed): listing takes
//! at most a fifth of the time, and the callers that arrive meanwhile share the next
//! refresh. A small listing (a few ms) is hardly delayed; a large one is batched. The cap
//! grows with the listing because its cost does: a listing of a second or more would
//! otherwise follow the previous one after a second's rest for as long as creates go on.
//! Only a refresh that succeeded sets a rest: a failed one's time is mostly the client's
//! retry waits, and what follows a failure is the engine's backoff.
//!
//! A listing nobody has read for a while is let go ([`Snapshots::release_unread`]): once
//! converged, the passes read it in bursts (a resync, a few changes), and between them it
//! would hold memory in proportion to the account for nothing. The next burst lists again,
//! as it would have anyway once the listing was older than the poll interval; a change that
//! comes in between costs one more list call.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Mutex as AsyncMutex;
use tokio::time::Instant;

/// One listing and the instant its list call started (anything the platform did before
/// that instant is in it).
#[derive(Debug)]
pub struct Listing<T> {
    pub items: Vec<T>,
    pub started_at: Instant,
}

impl<T> Listing<T> {
    pub fn age(&self) -> Duration {
        self.started_at.elapsed()
    }
}

/// What a caller needs of a listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freshness {
    /// Any listing younger than this.
    MaxAge(Duration),
    /// A listing whose call started after this instant.
    StartedAfter(Instant),
}

impl Freshness {
    fn satisfied_by<T>(&self, listing: &Listing<T>) -> bool {
        self.satisfied_by_start(listing.started_at)
    }

    /// Whether a list call that started at `started_at` is recent enough.
    fn satisfied_by_start(&self, started_at: Instant) -> bool {
        match *self {
            Freshness::MaxAge(max) => started_at.elapsed() <= max,
            Freshness::StartedAfter(instant) => started_at > instant,
        }
    }
}

/// How long a slot rests after a refresh, as a multiple of that refresh's duration.
pub const REST_PER_LISTING_TIME: u32 = 4;
/// The longest rest after a listing of up to [`OBJECTS_PER_MAX_REST`] objects: a listing
/// slowed by the client's retries (a 429 answered after a wait) says nothing of the cost
/// of the next, but its size does.
pub const MAX_REST: Duration = Duration::from_secs(1);
/// Objects listed per [`MAX_REST`] of the longest rest.
pub const OBJECTS_PER_MAX_REST: usize = 10_000;

/// The last refresh's call, for spacing the next one.
#[derive(Clone, Copy)]
struct LastCall {
    finished_at: Instant,
    took: Duration,
    /// How many objects it listed.
    listed: usize,
}

impl LastCall {
    /// When the next refresh may start.
    fn next_at(&self) -> Instant {
        let per_size = u32::try_from(self.listed.div_ceil(OBJECTS_PER_MAX_REST))
            .unwrap_or(u32::MAX)
            .max(1);
        self.finished_at + (self.took * REST_PER_LISTING_TIME).min(MAX_REST * per_size)
    }
}

/// A refresh that failed.
struct Failed<E> {
    started_at: Instant,
    finished_at: Instant,
    error: E,
}

struct Slot<T, E> {
    /// Held while a refresh is in flight, so concurrent callers queue behind it and then
    /// find the fresh listing instead of calling again.
    refresh: AsyncMutex<()>,
    current: parking_lot::Mutex<Option<Arc<Listing<T>>>>,
    /// When a caller last got `current`.
    last_read: parking_lot::Mutex<Option<Instant>>,
    /// The last refresh, if it failed.
    failed: parking_lot::Mutex<Option<Failed<E>>>,
    last_call: parking_lot::Mutex<Option<LastCall>>,
}

impl<T, E> Default for Slot<T, E> {
    fn default() -> Self {
        Self {
            refresh: AsyncMutex::new(()),
            current: parking_lot::Mutex::new(None),
            last_read: parking_lot::Mutex::new(None),
            failed: parking_lot::Mutex::new(None),
            last_call: parking_lot::Mutex::new(None),
        }
    }
}

/// Listings of one kind, one per account; `E` is the error of a failed list call.
pub struct Snapshots<A, T, E> {
    slots: parking_lot::Mutex<HashMap<A, Arc<Slot<T, E>>>>,
}

impl<A, T, E> Default for Snapshots<A, T, E> {
    fn default() -> Self {
        Self {
            slots: parking_lot::Mutex::new(HashMap::new()),
        }
    }
}

impl<A: Eq + Hash + Clone, T, E: Clone> Snapshots<A, T, E> {
    pub fn new() -> Self {
        Self::default()
    }

    fn slot(&self, account: &A) -> Arc<Slot<T, E>> {
        self.slots
            .lock()
            .entry(account.clone())
            .or_default()
            .clone()
    }

    /// Every account's slot, copied out of the map so that no slot's lock is taken while
    /// the map's is held.
    fn every_slot(&self) -> Vec<Arc<Slot<T, E>>> {
        self.slots.lock().values().cloned().collect()
    }

    /// A listing for `account` that meets `need`, calling `fetch` at most once for all the
    /// callers waiting at the same time. A caller that was waiting when a refresh it could
    /// use failed gets that refresh's error instead of calling again; a caller that comes
    /// later calls again.
    pub async fn get<F, Fut>(
        &self,
        account: &A,
        need: Freshness,
        fetch: F,
    ) -> Result<Arc<Listing<T>>, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<Vec<T>, E>>,
    {
        let asked_at = Instant::now();
        let slot = self.slot(account);
        *slot.last_read.lock() = Some(asked_at);
        if let Some(listing) = slot.current.lock().clone().filter(|l| need.satisfied_by(l)) {
            return Ok(listing);
        }
        let _refreshing = slot.refresh.lock().await;
        // Someone else may have refreshed while we waited for the lock.
        if let Some(listing) = slot.current.lock().clone().filter(|l| need.satisfied_by(l)) {
            return Ok(listing);
        }
        if let Some(failed) = slot
            .failed
            .lock()
            .as_ref()
            .filter(|f| f.finished_at >= asked_at && need.satisfied_by_start(f.started_at))
        {
            return Err(failed.error.clone());
        }
        // Rest after the previous refresh (holding the refresh lock, so that whoever
        // comes meanwhile waits for this refresh and shares it).
        let next_at = slot.last_call.lock().map(|c| c.next_at());
        if let Some(at) = next_at.filter(|at| *at > Instant::now()) {
            tokio::time::sleep_until(at).await;
        }
        // The listing this refresh replaces is let go before the call, not after: the new
        // one is then decoded into the memory it held, rather than beside it, which would
        // leave a listing's worth of freed pages to the allocator after every refresh (the
        // passes that still read it keep it alive until they end; callers that come
        // meanwhile wait for this refresh).
        drop(slot.current.lock().take());
        let started_at = Instant::now();
        match fetch().await {
            Ok(mut items) => {
                // A decoded list grows by doubling, and a conversion that reuses its buffer
                // keeps that room until the next refresh: give it back.
                items.shrink_to_fit();
                *slot.last_call.lock() = Some(LastCall {
                    finished_at: Instant::now(),
                    took: started_at.elapsed(),
                    listed: items.len(),
                });
                let listing = Arc::new(Listing { items, started_at });
                *slot.current.lock() = Some(listing.clone());
                *slot.failed.lock() = None;
                Ok(listing)
            }
            Err(error) => {
                *slot.last_call.lock() = None;
                *slot.failed.lock() = Some(Failed {
                    started_at,
                    finished_at: Instant::now(),
                    error: error.clone(),
                });
                Err(error)
            }
        }
    }

    /// Lets go of every listing no caller has asked for in `unread_for`. Passes that still
    /// hold one keep it until they end; the next caller lists again.
    pub fn release_unread(&self, unread_for: Duration) {
        for slot in self.every_slot() {
            let unread = slot
                .last_read
                .lock()
                .is_none_or(|at| at.elapsed() >= unread_for);
            if unread {
                drop(slot.current.lock().take());
            }
        }
    }

    /// Age of the oldest current listing, for the snapshot-age metric.
    pub fn oldest_age(&self) -> Option<Duration> {
        self.every_slot()
            .iter()
            .filter_map(|s| s.current.lock().as_ref().map(|l| l.age()))
            .max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// `callers` concurrent `get`s of one account's listing, each of which would fetch
    /// with a call that takes `takes` and answers `answer`: what each caller got, and how
    /// many calls were made.
    async fn concurrent_gets<E: Clone + Send + Sync + 'static>(
        snapshots: &Arc<Snapshots<&'static str, u32, E>>,
        callers: usize,
        takes: Duration,
        answer: Result<Vec<u32>, E>,
    ) -> (Vec<Result<usize, E>>, usize) {
        let calls = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..callers {
            let (snapshots, calls, answer) = (snapshots.clone(), calls.clone(), answer.clone());
            tasks.push(tokio::spawn(async move {
                let fetch = || async {
                    calls.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(takes).await;
                    answer
                };
                let need = Freshness::MaxAge(Duration::from_secs(30));
                let got = snapshots.get(&"acct", need, fetch).await;
                got.map(|listing| listing.items.len())
            }));
        }
        let mut got = Vec::new();
        for t in tasks {
            got.push(t.await.unwrap());
        }
        (got, calls.load(Ordering::SeqCst))
    }

    #[tokio::test]
    async fn concurrent_callers_share_one_fetch() {
        let snapshots: Arc<Snapshots<&str, u32, ()>> = Arc::new(Snapshots::new());
        let took = Duration::from_millis(20);
        let (got, calls) = concurrent_gets(&snapshots, 100, took, Ok(vec![1, 2, 3])).await;
        assert!(got.iter().all(|g| *g == Ok(3)), "{got:?}");
        assert_eq!(calls, 1);
    }

    #[tokio::test]
    async fn started_after_forces_a_newer_listing() {
        let snapshots: Snapshots<u8, u32, ()> = Snapshots::new();
        let first = snapshots
            .get(&1, Freshness::MaxAge(Duration::from_secs(60)), || async {
                Ok::<_, ()>(vec![1])
            })
            .await
            .unwrap();
        let write_done = Instant::now();
        let again = snapshots
            .get(&1, Freshness::MaxAge(Duration::from_secs(60)), || async {
                Ok::<_, ()>(vec![9])
            })
            .await
            .unwrap();
        assert_eq!(again.items, vec![1], "a fresh enough listing is reused");
        let newer = snapshots
            .get(&1, Freshness::StartedAfter(write_done), || async {
                Ok::<_, ()>(vec![1, 2])
            })
            .await
            .unwrap();
        assert_eq!(newer.items, vec![1, 2]);
        assert!(newer.started_at > first.started_at);
    }

    #[tokio::test(start_paused = true)]
    async fn a_listing_unread_for_a_while_is_let_go_and_listed_again() {
        let snapshots: Snapshots<u8, u32, ()> = Snapshots::new();
        let need = Freshness::MaxAge(Duration::from_secs(60));
        let unread_for = Duration::from_secs(5);
        let listed = |n: u32| move || async move { Ok::<_, ()>(vec![n]) };
        let held = snapshots.get(&1, need, listed(1)).await.unwrap();
        tokio::time::advance(Duration::from_secs(3)).await;
        snapshots.release_unread(unread_for);
        let read = snapshots.get(&1, need, listed(2)).await.unwrap();
        assert_eq!(read.items, [1], "read 3 s after: kept");
        tokio::time::advance(Duration::from_secs(4)).await;
        snapshots.release_unread(unread_for);
        let read = snapshots.get(&1, need, listed(3)).await.unwrap();
        assert_eq!(read.items, [1], "read again 4 s after the last read: kept");
        tokio::time::advance(Duration::from_secs(6)).await;
        snapshots.release_unread(unread_for);
        assert_eq!(held.items, [1], "a caller holding it keeps it");
        assert!(snapshots.oldest_age().is_none(), "let go");
        let read = snapshots.get(&1, need, listed(4)).await.unwrap();
        assert_eq!(read.items, [4], "listed again, though 60 s had not passed");
    }

    #[tokio::test]
    async fn a_refresh_lets_go_of_the_listing_it_replaces_before_it_calls() {
        let snapshots: Snapshots<u8, u32, ()> = Snapshots::new();
        let first = snapshots
            .get(&1, Freshness::MaxAge(Duration::ZERO), || async {
                Ok::<_, ()>(vec![1])
            })
            .await
            .unwrap();
        let old = Arc::downgrade(&first);
        drop(first);
        let written = Instant::now();
        let new = snapshots
            .get(&1, Freshness::StartedAfter(written), || async {
                // Nobody reads the old listing any more: it is gone before the call.
                assert!(old.upgrade().is_none(), "the old listing outlived the call");
                Ok::<_, ()>(vec![1, 2])
            })
            .await
            .unwrap();
        assert_eq!(new.items, vec![1, 2]);
    }

    #[tokio::test]
    async fn a_refresh_rests_four_times_the_previous_ones_duration() {
        let snapshots: Arc<Snapshots<u8, u32, ()>> = Arc::new(Snapshots::new());
        let starts = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let slow_fetch = |starts: Arc<parking_lot::Mutex<Vec<Instant>>>| async move {
            starts.lock().push(Instant::now());
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok::<_, ()>(vec![1])
        };
        let begin = Instant::now();
        snapshots
            .get(&1, Freshness::StartedAfter(begin), || {
                slow_fetch(starts.clone())
            })
            .await
            .unwrap();
        // Ten passes that each need a listing newer than their own write, at once.
        let written = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..10 {
            let (snapshots, starts) = (snapshots.clone(), starts.clone());
            tasks.push(tokio::spawn(async move {
                snapshots
                    .get(&1, Freshness::StartedAfter(written), || slow_fetch(starts))
                    .await
                    .unwrap()
                    .started_at
            }));
        }
        for t in tasks {
            assert!(t.await.unwrap() > written);
        }
        let starts = starts.lock().clone();
        assert_eq!(starts.len(), 2, "the ten share one refresh");
        assert!(
            starts[1] - starts[0] >= Duration::from_millis(100 + 400),
            "the second starts after the first ended and rested 4 x 100 ms, not after {:?}",
            starts[1] - starts[0]
        );
    }

    #[tokio::test]
    async fn a_failed_refresh_sets_no_rest() {
        let snapshots: Snapshots<u8, u32, ()> = Snapshots::new();
        assert!(
            snapshots
                .get(&1, Freshness::StartedAfter(Instant::now()), || async {
                    tokio::time::sleep(Duration::from_millis(400)).await;
                    Err(())
                })
                .await
                .is_err()
        );
        let asked = Instant::now();
        snapshots
            .get(&1, Freshness::StartedAfter(asked), || async { Ok(vec![1]) })
            .await
            .unwrap();
        // After a success of 400 ms the rest would be a whole second.
        assert!(
            asked.elapsed() < MAX_REST,
            "rested {:?} after a failure",
            asked.elapsed()
        );
    }

    #[test]
    fn a_slow_refresh_rests_at_most_a_second_per_ten_thousand_objects_listed() {
        let finished_at = Instant::now();
        let rest = |took, listed| {
            LastCall {
                finished_at,
                took,
                listed,
            }
            .next_at()
                - finished_at
        };
        assert_eq!(
            rest(Duration::from_millis(20), 10),
            Duration::from_millis(80)
        );
        assert_eq!(rest(Duration::from_millis(400), 0), MAX_REST);
        assert_eq!(rest(Duration::from_secs(12), 10_000), MAX_REST);
        // 100,000 objects: the cap is ten seconds, and a listing of 1.5 s rests 6 s.
        assert_eq!(
            rest(Duration::from_millis(1500), 100_000),
            Duration::from_secs(6)
        );
        assert_eq!(rest(Duration::from_secs(5), 100_000), MAX_REST * 10);
        assert_eq!(rest(Duration::from_secs(5), 100_001), MAX_REST * 11);
    }

    #[tokio::test]
    async fn callers_waiting_for_a_failing_refresh_share_its_error() {
        let snapshots: Arc<Snapshots<&str, u32, String>> = Arc::new(Snapshots::new());
        let took = Duration::from_millis(50);
        let (got, calls) = concurrent_gets(&snapshots, 50, took, Err("401".to_string())).await;
        assert!(got.iter().all(|g| *g == Err("401".to_string())), "{got:?}");
        assert_eq!(
            calls, 1,
            "one failed call answers everyone who waited for it"
        );
        // A caller that comes after the failure tries again, and a success clears it.
        let later = snapshots
            .get(
                &"acct",
                Freshness::MaxAge(Duration::from_secs(30)),
                || async { Ok(vec![7]) },
            )
            .await
            .unwrap();
        assert_eq!(later.items, vec![7]);
    }

    #[tokio::test]
    async fn accounts_are_separate_and_errors_keep_nothing() {
        let snapshots: Snapshots<u8, u32, &str> = Snapshots::new();
        let need = Freshness::MaxAge(Duration::from_secs(60));
        assert!(
            snapshots
                .get(&1, need, || async { Err::<Vec<u32>, _>("boom") })
                .await
                .is_err()
        );
        let a = snapshots
            .get(&1, need, || async { Ok::<_, &str>(vec![1]) })
            .await
            .unwrap();
        let b = snapshots
            .get(&2, need, || async { Ok::<_, &str>(vec![2]) })
            .await
            .unwrap();
        assert_eq!((a.items.clone(), b.items.clone()), (vec![1], vec![2]));
    }
}
