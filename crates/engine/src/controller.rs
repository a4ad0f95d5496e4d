//! The loop that runs an engine's passes: requests in (object keys), passes out, at most
//! `concurrency` at once, each object's passes one after another ([`Scheduler`]'s rules).
//! Once a second it also takes the objects due for their resync off the resync table
//! ([`Resync`]) and starts them only as passes end, after any object asked for by a change:
//! handed over at once, a resync would hold a key and a scheduler entry for every object,
//! and changes would wait behind it. A resync waits while changes
//! keep every slot busy: it looks for drift nobody reported, and it comes as soon as a slot
//! is free of them.
//!
//! Why not kube's `Controller`: it reads objects from a kube reflector store, whose entry
//! costs an `ObjectRef` and a whole `ObjectMeta` before the object (see [`crate::cache`]);
//! this loop reads the
//! engine's own cache. It knows no kind and no Kubernetes call: a request is a key, a pass
//! is a future the caller makes from the unpacked object.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::pin;
use std::time::Duration;

use futures::stream::FuturesUnordered;
use futures::{FutureExt, Stream, StreamExt};
use tokio::time::Instant;
use tracing::warn;

use super::action::Action;
use super::cache::{Cache, CachedKind};
use super::resync::Resync;
use super::scheduler::Scheduler;

/// How a pass is run, and what follows a failed one.
pub struct Passes<R, P> {
    /// The pass of one object (whole, unpacked from the cache).
    pub reconcile: R,
    /// The next pass after a failed one, given the object's key.
    pub on_error: P,
}

/// How often the resync table is read.
const RESYNC_TICK: Duration = Duration::from_secs(1);

/// Runs passes of the objects `requests` names (by `namespace/name`) and of those due in
/// `resync` until `shutdown` resolves, then lets the passes under way end. An object the
/// cache no longer holds is skipped: it was deleted after the request.
pub async fn run<K, R, P, F, E>(
    cache: Cache<K>,
    requests: impl Stream<Item = String> + Send,
    resync: &Resync,
    concurrency: usize,
    passes: Passes<R, P>,
    shutdown: impl Future<Output = ()> + Send,
) where
    K: CachedKind,
    R: Fn(K) -> F + Send,
    P: Fn(&str, &E) -> Action + Send,
    F: Future<Output = Result<Action, E>> + Send,
    E: Send,
{
    let concurrency = concurrency.max(1);
    let mut scheduler = Scheduler::default();
    // Hashes of the objects due for their resync, taken off the table and not started yet.
    let mut resync_due: VecDeque<u64> = VecDeque::new();
    let mut resync_tick = tokio::time::interval(RESYNC_TICK);
    resync_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut running = FuturesUnordered::new();
    let mut requests = pin!(requests.fuse());
    let mut shutdown = pin!(shutdown.fuse());
    let mut stopping = false;
    loop {
        if !stopping {
            let now = Instant::now();
            while running.len() < concurrency {
                let Some(key) = scheduler.start_due(now) else {
                    // Nothing asked for is due: the next resync, if any.
                    let Some(hash) = resync_due.pop_front() else {
                        break;
                    };
                    for key in cache.keys_of_hash(hash) {
                        scheduler.request(&key, now);
                    }
                    if resync_due.is_empty() {
                        // Sized for the last resync's burst.
                        resync_due.shrink_to_fit();
                    }
                    continue;
                };
                match cache.get(&key) {
                    Some(Ok(obj)) => {
                        let pass = (passes.reconcile)(obj);
                        running.push(async move { (key, pass.await) });
                    }
                    Some(Err(error)) => {
                        warn!(kind = %K::kind(&()), object = %key, %error, "cached object unreadable");
                        scheduler.finish(&key, None);
                    }
                    None => scheduler.finish(&key, None),
                }
            }
        } else if running.is_empty() {
            return;
        }
        let free = running.len() < concurrency;
        let wake = scheduler.next_due().filter(|_| free && !stopping);
        tokio::select! {
            biased;
            () = &mut shutdown, if !stopping => stopping = true,
            Some((key, result)) = running.next(), if !running.is_empty() => {
                let action = match result {
                    Ok(action) => action,
                    Err(error) => (passes.on_error)(&key, &error),
                };
                let next = action.requeue_after().map(|delay| Instant::now() + delay);
                scheduler.finish(&key, next);
            }
            Some(key) = requests.next(), if !stopping => scheduler.request(&key, Instant::now()),
            _ = resync_tick.tick(), if !stopping => resync_due.extend(resync.take_due(Instant::now())),
            () = sleep_until(wake), if wake.is_some() => {}
            // Every branch is off only while stopping with nothing running, which returns
            // above.
            else => return,
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_crd::ManagedKind;
    use gpucloud_crd::{NetworkVolume, NetworkVolumeSpec};
    use kube::runtime::watcher::Event;
    use parking_lot::Mutex;
    use std::sync::Arc;
    use std::time::Duration;

    fn volume(name: &str) -> NetworkVolume {
        let spec: NetworkVolumeSpec =
            serde_json::from_value(serde_json::json!({"sizeGb": 10, "dataCenterId": "EU-RO-1"}))
                .unwrap();
        let mut nv = NetworkVolume::new(name, spec);
        nv.metadata.namespace = Some("ns".into());
        nv
    }

    /// Runs the loop over `requests` with passes that record their key and take `took`;
    /// the failing ones ask for another pass `retry` later.
    async fn run_passes(
        cache: Cache<NetworkVolume>,
        requests: Vec<&'static str>,
        concurrency: usize,
        took: Duration,
        stop_after: Duration,
    ) -> (Vec<String>, usize) {
        let requests = futures::stream::iter(requests.into_iter().map(String::from));
        let resync = Resync::default();
        run_with_resync(cache, requests, &resync, concurrency, took, stop_after).await
    }

    /// [`run_passes`] with requests that may come later and a resync table.
    async fn run_with_resync(
        cache: Cache<NetworkVolume>,
        requests: impl Stream<Item = String> + Send,
        resync: &Resync,
        concurrency: usize,
        took: Duration,
        stop_after: Duration,
    ) -> (Vec<String>, usize) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let at_once = Arc::new(Mutex::new((0usize, 0usize)));
        let requests = requests.chain(futures::stream::pending());
        let passes = Passes {
            reconcile: |obj: NetworkVolume| {
                let (seen, at_once) = (seen.clone(), at_once.clone());
                async move {
                    {
                        let mut n = at_once.lock();
                        n.0 += 1;
                        n.1 = n.1.max(n.0);
                    }
                    tokio::time::sleep(took).await;
                    at_once.lock().0 -= 1;
                    seen.lock().push(obj.key());
                    if obj.metadata.name.as_deref() == Some("failing") && seen.lock().len() < 3 {
                        return Err("refused".to_string());
                    }
                    Ok(Action::await_change())
                }
                .boxed()
            },
            on_error: |_: &str, _: &String| Action::requeue(Duration::from_secs(1)),
        };
        run(
            cache,
            requests,
            resync,
            concurrency,
            passes,
            tokio::time::sleep(stop_after),
        )
        .await;
        let seen = seen.lock().clone();
        let most = at_once.lock().1;
        (seen, most)
    }

    fn cache_of(names: &[&str]) -> Cache<NetworkVolume> {
        let cache = Cache::new();
        for name in names {
            cache.apply(&Event::Apply(volume(name)));
        }
        cache
    }

    #[tokio::test(start_paused = true)]
    async fn passes_run_at_most_concurrency_at_once() {
        let cache = cache_of(&["a", "b", "c", "d"]);
        let (seen, most) = run_passes(
            cache,
            vec!["ns/a", "ns/b", "ns/c", "ns/d"],
            2,
            Duration::from_millis(100),
            Duration::from_secs(5),
        )
        .await;
        assert_eq!(most, 2);
        let mut sorted = seen.clone();
        sorted.sort();
        assert_eq!(sorted, ["ns/a", "ns/b", "ns/c", "ns/d"]);
    }

    #[tokio::test(start_paused = true)]
    async fn resyncs_start_as_passes_end_and_after_what_a_change_asked_for() {
        let cache = cache_of(&["a", "b", "c", "d", "changed"]);
        let t0 = Instant::now();
        let resync = Resync::new(t0);
        for key in ["ns/a", "ns/b", "ns/c", "ns/d", "ns/deleted"] {
            resync.schedule(key, t0, Duration::from_secs(1));
        }
        // Asked for while the first resync pass runs (they are due at 1 s).
        let change = futures::stream::once(async {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            "ns/changed".to_string()
        });
        let (seen, most) = run_with_resync(
            cache,
            change,
            &resync,
            1,
            Duration::from_secs(1),
            Duration::from_secs(20),
        )
        .await;
        assert_eq!(most, 1);
        assert_eq!(seen.len(), 5, "{seen:?}");
        assert_eq!(
            seen[1], "ns/changed",
            "a change goes before the resyncs left"
        );
        let mut resynced: Vec<&str> = seen.iter().map(String::as_str).collect();
        resynced.remove(1);
        resynced.sort_unstable();
        assert_eq!(resynced, ["ns/a", "ns/b", "ns/c", "ns/d"]);
        assert!(resync.is_empty(), "taken off the table once");
    }

    #[tokio::test(start_paused = true)]
    async fn an_object_asked_for_while_it_waits_gets_one_pass() {
        let cache = cache_of(&["a", "b"]);
        let (seen, _) = run_passes(
            cache,
            vec!["ns/b", "ns/a", "ns/a", "ns/a"],
            1,
            Duration::from_millis(100),
            Duration::from_secs(5),
        )
        .await;
        assert_eq!(seen, ["ns/b", "ns/a"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_pass_comes_back_after_its_delay_and_a_deleted_object_is_skipped() {
        let cache = cache_of(&["failing"]);
        let (seen, _) = run_passes(
            cache,
            vec!["ns/failing", "ns/deleted"],
            4,
            Duration::from_millis(10),
            Duration::from_secs(10),
        )
        .await;
        assert_eq!(seen, ["ns/failing", "ns/failing", "ns/failing"]);
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_lets_the_passes_under_way_end() {
        let cache = cache_of(&["a"]);
        let (seen, _) = run_passes(
            cache,
            vec!["ns/a"],
            1,
            Duration::from_secs(3),
            Duration::from_secs(1),
        )
        .await;
        assert_eq!(
            seen,
            ["ns/a"],
            "started before the shutdown, ended after it"
        );
    }
}
