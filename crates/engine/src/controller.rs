//! The loop that runs an engine's passes: requests in (object keys), passes out, at most
//! `concurrency` at once, each object's passes one after another ([`Scheduler`]'s rules).
//!
//! Why not kube's `Controller`: it reads objects from a kube reflector store, whose entry
//! costs about 550 bytes before the object (see [`crate::cache`]); this loop reads the
//! engine's own cache. It knows no kind and no Kubernetes call: a request is a key, a pass
//! is a future the caller makes from the unpacked object.

use std::future::Future;
use std::pin::pin;

use futures::stream::FuturesUnordered;
use futures::{FutureExt, Stream, StreamExt};
use tokio::time::Instant;
use tracing::warn;

use super::action::Action;
use super::cache::Cache;
use super::scheduler::Scheduler;
use gpucloud_crd::ManagedKind;

/// How a pass is run, and what follows a failed one.
pub struct Passes<R, P> {
    /// The pass of one object (whole, unpacked from the cache).
    pub reconcile: R,
    /// The next pass after a failed one, given the object's key.
    pub on_error: P,
}

/// Runs passes of the objects `requests` names (by `namespace/name`) until `shutdown`
/// resolves, then lets the passes under way end. An object the cache no longer holds is
/// skipped: it was deleted after the request.
pub async fn run<K, R, P, F, E>(
    cache: Cache<K>,
    requests: impl Stream<Item = String> + Send,
    concurrency: usize,
    passes: Passes<R, P>,
    shutdown: impl Future<Output = ()> + Send,
) where
    K: ManagedKind,
    R: Fn(K) -> F + Send,
    P: Fn(&str, &E) -> Action + Send,
    F: Future<Output = Result<Action, E>> + Send,
    E: Send,
{
    let concurrency = concurrency.max(1);
    let mut scheduler = Scheduler::default();
    let mut running = FuturesUnordered::new();
    let mut requests = pin!(requests.fuse());
    let mut shutdown = pin!(shutdown.fuse());
    let mut stopping = false;
    loop {
        if !stopping {
            let now = Instant::now();
            while running.len() < concurrency {
                let Some(key) = scheduler.start_due(now) else {
                    break;
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
            () = sleep_until(wake), if wake.is_some() => {}
            // Every branch is off only when no request can come and nothing runs or waits
            // (a waiting object enables the timer).
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
        let seen = Arc::new(Mutex::new(Vec::new()));
        let at_once = Arc::new(Mutex::new((0usize, 0usize)));
        let requests = futures::stream::iter(requests.into_iter().map(String::from))
            .chain(futures::stream::pending());
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
