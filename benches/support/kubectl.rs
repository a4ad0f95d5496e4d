//! Objects applied the way a user (or a GitOps tool) applies them: `kubectl apply` of one
//! file (kubectl on PATH), one object after another. The same apply into a namespace no
//! operator watches is the yardstick of the operator benchmarks: its time does not depend
//! on the operator, so "first create to all Ready" is divided by it.

use std::sync::Once;
use std::time::{Duration, Instant};

use kube::Client;
use serde::Serialize;

use super::report;
use crate::common::TestNamespace;

/// `kubectl apply` of `objects` (each with its apiVersion and kind) into `namespace`, in one
/// file; the time it took. Panics when kubectl fails. kubectl's discovery of the apiserver's
/// resources is cached before the first apply, outside its time, so that the first apply
/// (the baseline) does not pay for what later ones find in the cache.
pub fn apply<K: Serialize>(namespace: &str, objects: &[K]) -> Duration {
    static DISCOVERED: Once = Once::new();
    DISCOVERED.call_once(|| {
        let out = std::process::Command::new("kubectl")
            .args(["api-resources", "--cached=false"])
            .stdout(std::process::Stdio::null())
            .output()
            .expect("run kubectl (it must be on PATH)");
        assert!(
            out.status.success(),
            "kubectl api-resources failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
    let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects});
    let file = std::env::temp_dir().join(format!("bench-apply-{namespace}.json"));
    std::fs::write(&file, list.to_string()).expect("write the objects' file");
    let started = Instant::now();
    let out = std::process::Command::new("kubectl")
        .args(["apply", "--namespace", namespace, "--filename"])
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .output()
        .expect("run kubectl (it must be on PATH)");
    let took = started.elapsed();
    let _ = std::fs::remove_file(&file);
    assert!(
        out.status.success(),
        "kubectl apply failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

/// The yardstick: `objects` applied with [`apply`] into a namespace of their own that no
/// operator watches, which is then deleted. Records and prints the time as
/// "`what`: kubectl apply with no operator running".
pub async fn baseline<K: Serialize>(client: &Client, what: &str, objects: &[K]) -> Duration {
    let namespace = TestNamespace::create(client, "bench-baseline").await;
    let took = apply(namespace.name(), objects);
    namespace
        .delete_and_wait_within(client, Duration::from_secs(600))
        .await;
    println!(
        "  kubectl apply, no operator:   {what} in {:.2} s",
        took.as_secs_f64()
    );
    record_baseline(what, took);
    took
}

/// Records the yardstick's time as "`what`: kubectl apply with no operator running": for a
/// benchmark that applies its baseline itself (the volumes', which deletes them bare next).
pub fn record_baseline(what: &str, took: Duration) {
    report::figure(
        &format!("{what}: kubectl apply with no operator running"),
        took.as_secs_f64(),
        "s",
    );
}

/// Records and prints "first create to all Ready" over the [`baseline`].
pub fn report_ratio(converged: Duration, baseline: Duration) {
    let ratio = converged.as_secs_f64() / baseline.as_secs_f64();
    println!(
        "  first create to all Ready:    {ratio:.2}x kubectl apply with no operator (the design's bar: 1.5x)"
    );
    report::figure(
        "first create to all Ready over kubectl apply with no operator",
        ratio,
        "x",
    );
}
