//! The controllers' terms: they run while this process leads, and stop when it stops
//! leading or is told to stop. A process that stops leading (it could not renew its Lease
//! in time, or another process holds it now) stops its controllers as it would on
//! shutdown, waits for the Lease again in the same process, and starts fresh controllers
//! when it leads again: exiting instead would be a restart in a pod, and a crash loop for
//! as long as the apiserver is away.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{error, info, warn};

use gpucloud_engine::metrics::Metrics;

use crate::app::stop::stopped;

/// How long a stopping leader lets its passes under way end before it cuts them (as a
/// crash would, which the engine's protocol is made to survive): the next process leads
/// only once this one released the Lease, and should within a few seconds. A leader that
/// could not renew has stopped acting this long after its renew deadline, before its
/// Lease can expire for anyone else.
pub const DRAIN: Duration = Duration::from_secs(2);

/// Runs a term each time `leading` turns true, until `stop` turns true: `start` starts the
/// controllers with the term's own stop switch, which turns true when `stop` does or this
/// process stops leading. Sets the leader gauge of `metrics` while the controllers run.
/// How many controller tasks failed (panicked), over every term.
pub async fn run_terms<F, Started>(
    leading: watch::Receiver<bool>,
    stop: watch::Receiver<bool>,
    metrics: Arc<Metrics>,
    mut start: F,
) -> usize
where
    F: FnMut(watch::Receiver<bool>) -> Started,
    Started: Future<Output = Vec<JoinHandle<()>>>,
{
    let mut failed = 0;
    let mut term = 0u64;
    while wait_to_lead(leading.clone(), stop.clone()).await {
        term += 1;
        let term_stop = term_stop(leading.clone(), stop.clone());
        // The gauge covers every moment the controllers may act: from before they start
        // until after they stopped.
        metrics.set_leader(true);
        let kinds = start(term_stop.clone()).await;
        if term > 1 {
            info!(term, "controllers started again");
        }
        stopped(term_stop).await;
        failed += stop_controllers(kinds, DRAIN).await;
        metrics.set_leader(false);
        if is_stopping(&stop) {
            break;
        }
        warn!(
            term,
            "not leading any more: the controllers stopped; waiting for the Lease again"
        );
    }
    failed
}

/// Whether `stop` says to stop, or nobody can say so any more.
fn is_stopping(stop: &watch::Receiver<bool>) -> bool {
    *stop.borrow() || stop.has_changed().is_err()
}

/// Resolves true once this process leads, false once it is to stop (first).
async fn wait_to_lead(mut leading: watch::Receiver<bool>, stop: watch::Receiver<bool>) -> bool {
    if is_stopping(&stop) {
        return false;
    }
    let led = tokio::select! {
        biased;
        () = stopped(stop.clone()) => return false,
        led = leading.wait_for(|held| *held) => led.is_ok(),
    };
    if !led {
        // The elector is gone: nobody will lead here again.
        stopped(stop).await;
    }
    led
}

/// A term's stop switch: turns true when `stop` does, or this process stops leading (or
/// its elector is gone).
fn term_stop(
    mut leading: watch::Receiver<bool>,
    stop: watch::Receiver<bool>,
) -> watch::Receiver<bool> {
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        tokio::select! {
            () = stopped(stop) => {}
            _ = leading.wait_for(|held| !*held) => {}
        }
        let _ = tx.send(true);
    });
    rx
}

/// Waits, at most `drain`, for the controller tasks to end (their stop switch is on), then
/// aborts those still running and waits as long again for them to go, so that nothing of
/// a term outlives it (the next term's controllers take over each kind's progress and
/// wake-ups). How many ended with a panic.
pub async fn stop_controllers(kinds: Vec<JoinHandle<()>>, drain: Duration) -> usize {
    let aborts: Vec<_> = kinds.iter().map(JoinHandle::abort_handle).collect();
    let mut all = futures::future::join_all(kinds);
    let ended = match tokio::time::timeout(drain, &mut all).await {
        Ok(ended) => ended,
        Err(_) => {
            warn!(
                drain_s = drain.as_secs(),
                "passes still under way when stopping: cut, as a crash would"
            );
            for abort in &aborts {
                abort.abort();
            }
            tokio::time::timeout(drain, all).await.unwrap_or_default()
        }
    };
    let failed: Vec<_> = ended
        .into_iter()
        .filter_map(Result::err)
        .filter(|e| e.is_panic())
        .collect();
    for error in &failed {
        error!(error = %error, "a controller task failed");
    }
    failed.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A controller that runs until its term's stop switch turns true.
    fn controller(stop: watch::Receiver<bool>, running: Arc<AtomicUsize>) -> JoinHandle<()> {
        running.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(async move {
            stopped(stop).await;
            running.fetch_sub(1, Ordering::SeqCst);
        })
    }

    async fn settle() {
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
    }

    /// Waits, at most a second, until `holds` does; whether it did.
    async fn eventually(holds: impl Fn() -> bool) -> bool {
        for _ in 0..1000 {
            if holds() {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        holds()
    }

    #[tokio::test]
    async fn losing_the_lease_stops_the_term_and_leading_again_starts_a_new_one() {
        let (leading_tx, leading) = watch::channel(false);
        let (stop_tx, stop) = watch::channel(false);
        let metrics = Arc::new(Metrics::new());
        let running = Arc::new(AtomicUsize::new(0));
        let starts = Arc::new(AtomicUsize::new(0));
        let terms = tokio::spawn({
            let (metrics, running, starts) = (metrics.clone(), running.clone(), starts.clone());
            run_terms(leading, stop, metrics, move |term_stop| {
                starts.fetch_add(1, Ordering::SeqCst);
                std::future::ready(vec![controller(term_stop, running.clone())])
            })
        });
        let leads = || metrics.encode().lines().any(|l| l == "gpucloud_leader 1");
        let count = |n: &AtomicUsize| n.load(Ordering::SeqCst);
        settle().await;
        assert_eq!(count(&starts), 0, "a follower starts nothing");

        leading_tx.send_replace(true);
        assert!(eventually(|| leads() && count(&running) == 1).await);
        assert_eq!(count(&starts), 1);

        // Lost: the term's controllers stop, the gauge says so, the process waits.
        leading_tx.send_replace(false);
        assert!(eventually(|| !leads() && count(&running) == 0).await);
        settle().await;
        assert!(!terms.is_finished(), "no exit on loss");
        assert_eq!(count(&starts), 1);

        leading_tx.send_replace(true);
        assert!(eventually(|| leads() && count(&running) == 1).await);
        assert_eq!(count(&starts), 2, "fresh controllers");

        // The outer stop ends the term and the loop.
        stop_tx.send_replace(true);
        assert_eq!(terms.await.unwrap(), 0);
        assert_eq!(count(&running), 0);
        assert!(!leads());
    }

    #[test]
    fn a_leader_that_cannot_renew_stops_acting_before_its_lease_can_expire_for_another() {
        let timing = crate::app::election::TIMING;
        assert!(timing.renew_deadline + DRAIN < timing.lease_duration);
    }

    #[tokio::test]
    async fn a_follower_told_to_stop_returns_without_a_term() {
        let (_leading_tx, leading) = watch::channel(false);
        let (stop_tx, stop) = watch::channel(false);
        let terms = tokio::spawn(run_terms(
            leading,
            stop,
            Arc::new(Metrics::new()),
            |_| -> std::future::Ready<Vec<JoinHandle<()>>> { panic!("no term") },
        ));
        stop_tx.send_replace(true);
        assert_eq!(terms.await.unwrap(), 0);
    }

    #[tokio::test]
    async fn passes_that_do_not_end_are_cut_after_the_drain_and_panics_are_counted() {
        let stuck = tokio::spawn(std::future::pending::<()>());
        let panicked = tokio::spawn(async { panic!("a controller failed") });
        let ended = tokio::spawn(async {});
        settle().await;
        let drain = Duration::from_millis(200);
        let started = tokio::time::Instant::now();
        assert_eq!(
            stop_controllers(vec![stuck, panicked, ended], drain).await,
            1
        );
        let took = started.elapsed();
        assert!(
            took >= drain && took < drain * 2,
            "cut after the drain, and gone at once: {took:?}"
        );
    }
}
