//! Records the operator's objects as the end-to-end suites see them, for kstatus and Argo
//! CD's health check to judge in the same run (`tests/kstatus`, `tests/argocd`): no
//! hand-captured fixture, and every kind in every state the suites reach.
//!
//! With `GPUCLOUD_TEST_RECORD_DIR` set (`scripts/test.sh` sets it on the REST v2 lane), an
//! object is written to `DIR/STATE/KIND/NAMESPACE.NAME.N.json` each time a wait sees it in
//! a state it was not yet recorded in by that wait. STATE is what the object says of
//! itself, by the operator's contract (docs/kinds/README.md, "Status"):
//! - `deleting`: it has a deletion timestamp (held by the finalizer);
//! - `paused`: the `gpucloud.io/paused` annotation is "true", Ready=True for its current
//!   generation (it was Ready when paused); `paused-not-ready` otherwise (paused before it
//!   was Ready, or not yet observed);
//! - `stalled`: Stalled=True for its current generation; `stalled-retrying` with
//!   Reconciling=True too (a failure retried with backoff that only a change outside the
//!   operator ends, such as no data center with room for a whole cluster);
//! - `ready`: Ready=True for its current generation;
//! - `progressing`: anything else (never reconciled, a generation not yet observed,
//!   Reconciling, not Ready yet).
//!
//! At most [`PER_STATE_AND_KIND`] objects are kept per state and kind.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

/// Enough variety per state and kind for the judges, and a bounded run.
const PER_STATE_AND_KIND: usize = 30;

/// The directory recordings go to, when this run records.
fn dir() -> Option<PathBuf> {
    std::env::var_os("GPUCLOUD_TEST_RECORD_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a str> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)?
        .get("status")?
        .as_str()
}

/// Pure: the state object `obj` says it is in (see the module's documentation).
pub fn state_of(obj: &Value) -> &'static str {
    let meta = &obj["metadata"];
    if !meta["deletionTimestamp"].is_null() {
        return "deleting";
    }
    let current = obj.pointer("/status/observedGeneration") == meta.get("generation")
        && !meta["generation"].is_null();
    if meta.pointer("/annotations/gpucloud.io~1paused") == Some(&Value::from("true")) {
        let ready = current && condition(obj, "Ready") == Some("True");
        return if ready { "paused" } else { "paused-not-ready" };
    }
    if current && condition(obj, "Stalled") == Some("True") {
        if condition(obj, "Reconciling") == Some("True") {
            "stalled-retrying"
        } else {
            "stalled"
        }
    } else if current && condition(obj, "Ready") == Some("True") {
        "ready"
    } else {
        "progressing"
    }
}

/// Records `obj` (serialized with its apiVersion and kind; an object of the operator's
/// group, others are left out) in the state it is in, unless `seen` shows this wait
/// recorded that state already; does nothing when the run does not record. Never fails the test: a recording that cannot be written is only
/// a smaller sample.
pub fn record<K: serde::Serialize>(obj: &K, seen: &mut Vec<&'static str>) {
    let Some(dir) = dir() else {
        return;
    };
    let Ok(value) = serde_json::to_value(obj) else {
        return;
    };
    let ours = value["apiVersion"]
        .as_str()
        .is_some_and(|v| v.starts_with("gpucloud.io/"));
    if !ours {
        return;
    }
    let state = state_of(&value);
    if seen.contains(&state) {
        return;
    }
    seen.push(state);
    let (Some(kind), Some(ns), Some(name)) = (
        value["kind"].as_str(),
        value.pointer("/metadata/namespace").and_then(Value::as_str),
        value.pointer("/metadata/name").and_then(Value::as_str),
    ) else {
        return;
    };
    let folder = dir.join(state).join(kind);
    if std::fs::create_dir_all(&folder).is_err() {
        return;
    }
    let kept = std::fs::read_dir(&folder).map_or(0, |d| d.count());
    if kept >= PER_STATE_AND_KIND {
        return;
    }
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let file = folder.join(format!("{ns}.{name}.{}.{n}.json", std::process::id()));
    if let Ok(text) = serde_json::to_string_pretty(&value) {
        let _ = std::fs::write(file, text);
    }
}
