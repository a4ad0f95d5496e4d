//! The positive sign a "nothing happened" check waits for: the operator's reconcile passes
//! over a kind, counted on its `/metrics` (`gpucloud_reconciles_total{kind}`). A check that
//! something did not happen waits until the operator has made more passes over the kind
//! since the change, so the thing would have happened by then, and only then asserts that
//! it did not. Each test runs its own operator, so the count is the test's.

use std::time::Duration;

use kube::api::{Api, Patch, PatchParams};

use super::http::metrics_text;
use super::operator::{Env, Operator};
use super::process::OperatorProcess;
use super::wait_until;

/// The longest a test waits for passes that the poll interval (2 s in the tests) makes
/// every few seconds: well beyond it, for a loaded machine.
const PASSES_WITHIN: Duration = Duration::from_secs(60);

/// The reconcile passes over `kind` in the `/metrics` text `metrics`, every result summed.
pub fn reconcile_passes(metrics: &str, kind: &str) -> u64 {
    let label = format!("kind=\"{kind}\"");
    metrics
        .lines()
        .filter(|l| l.starts_with("gpucloud_reconciles_total{") && l.contains(&label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v as u64)
        .sum()
}

/// The passes over `kind` the operator serving `/metrics` on `port` has made so far.
pub async fn passes_on(port: u16, kind: &str) -> u64 {
    for _ in 0..100 {
        if let Some(text) = metrics_text(port).await {
            return reconcile_passes(&text, kind);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the operator's /metrics on port {port} did not answer within 20 s");
}

/// Waits until the operator serving `/metrics` on `port` has made `more` passes over
/// `kind` beyond the `since` it had made; fails the test when it does not within a
/// minute: a check after it would have checked nothing.
pub async fn wait_passes_on(port: u16, kind: &str, since: u64, more: u64) {
    let seen = std::sync::atomic::AtomicU64::new(since);
    let reached = wait_until(PASSES_WITHIN, || async {
        metrics_text(port).await.is_some_and(|m| {
            let passes = reconcile_passes(&m, kind);
            seen.store(passes, std::sync::atomic::Ordering::Relaxed);
            passes >= since + more
        })
    })
    .await;
    let made = seen.into_inner().saturating_sub(since);
    assert!(
        reached,
        "the operator made {made} of {more} passes over {kind} within {PASSES_WITHIN:?}: \
         a check that nothing happened would check nothing"
    );
}

/// Changes the annotation `e2e.gpucloud.io/touched` of object `name` of `api` to a new value:
/// a watch event for the operator, and nothing it acts on.
pub async fn touch<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let value = uuid::Uuid::new_v4().simple().to_string();
    let patch =
        serde_json::json!({"metadata": {"annotations": {"e2e.gpucloud.io/touched": value}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap_or_else(|e| panic!("touch {name}: {e}"));
}

/// [`wait_passes_on`] for the operator process `process`, which serves `/metrics` on the
/// port of its flags: `more` passes over `kind` from now.
pub async fn wait_more_process_passes(process: &OperatorProcess, kind: &str, more: u64) {
    let port = process
        .metrics_port()
        .expect("the operator process serves no /metrics");
    let since = passes_on(port, kind).await;
    wait_passes_on(port, kind, since, more).await;
}

/// Waits for a pass over `kind` that read a platform listing made after now: the
/// emulator's count of `route` (a listing the operator makes for its passes) grows, then
/// two more passes come, the second begun after the first ended, so after the listing
/// was stored. For a change on the platform (the emulator's clock moved on, a GPU's
/// utilisation set) that only a fresh listing shows. Assumes one object of `kind` and
/// nobody else listing `route` meanwhile.
pub async fn wait_pass_on_a_new_listing(env: &Env, op: &Operator, route: &str, kind: &str) {
    let admin = env.emulator.admin();
    let listings = admin.call_count(route).await.unwrap();
    let listed = wait_until(PASSES_WITHIN, || async {
        admin.call_count(route).await.unwrap() > listings
    })
    .await;
    assert!(listed, "no {route} within {PASSES_WITHIN:?}");
    op.wait_more_passes(kind, 2).await;
}
