//! Delete phases of the operator benchmarks: every object of a namespace deleted at once,
//! timed to the last one gone, with the apiserver's writes meanwhile; and which deletion
//! policies a run measures (`BENCH_DELETE`).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, DeleteParams, ListParams};

use super::{apiserver_writes, writes_since};

/// Concurrent DELETEs a phase sends. One DELETE per object rather than a
/// deletecollection: a deletecollection of 10,000 objects outlasts the apiserver's 60 s
/// request timeout, which stops it where it got to, and every retry starts over.
pub const IN_FLIGHT: usize = 16;

/// The `deletionPolicy` values a run measures, from `BENCH_DELETE`: `orphan` (the default,
/// and NetworkVolume's own default), `delete`, or `both` (Orphan first).
pub fn policies() -> Vec<&'static str> {
    match std::env::var("BENCH_DELETE").as_deref() {
        Ok("delete") => vec!["Delete"],
        Ok("both") => vec!["Orphan", "Delete"],
        _ => vec!["Orphan"],
    }
}

/// What deleting every object of a namespace measured.
pub struct Deleted {
    /// How many objects there were.
    pub objects: usize,
    /// The DELETEs alone.
    pub sent: Duration,
    /// First DELETE to the last object gone; `None` if they were not all gone in time.
    pub gone: Option<Duration>,
    /// Apiserver writes meanwhile (the DELETEs included), by verb, resource and code.
    pub writes: BTreeMap<String, u64>,
}

impl Deleted {
    pub fn total_writes(&self) -> u64 {
        self.writes.values().sum()
    }

    /// Objects gone per second, first DELETE to the last one gone.
    pub fn per_second(&self) -> Option<f64> {
        self.gone
            .map(|d| self.objects as f64 / d.as_secs_f64().max(f64::EPSILON))
    }

    /// One line: time to all gone, deletes per second, writes per object.
    /// Records the deletion's figures as `what` ("Delete", "Orphan"...) in the run's
    /// report, and fails the run when they were not all gone in time.
    pub fn report(&self, what: &str) {
        let n = self.objects;
        match (self.gone, self.per_second()) {
            (Some(d), Some(rate)) => {
                super::report::figure(
                    &format!("{n} {what} deletes: all gone"),
                    d.as_secs_f64(),
                    "s",
                );
                super::report::figure(&format!("{n} {what} deletes: rate"), rate, "per s");
            }
            _ => super::report::fail(format!("NOT all of {n} {what} deletes gone in time")),
        }
        super::report::figure(
            &format!("{n} {what} deletes: apiserver writes per object"),
            self.total_writes() as f64 / n.max(1) as f64,
            "writes",
        );
    }

    pub fn describe(&self) -> String {
        let n = self.objects;
        let gone = match (self.gone, self.per_second()) {
            (Some(d), Some(rate)) => format!(
                "{n} gone in {:.2} s ({rate:.0} per second; DELETEs sent in {:.2} s)",
                d.as_secs_f64(),
                self.sent.as_secs_f64()
            ),
            _ => format!("NOT all of {n} gone in time"),
        };
        let writes = self.total_writes();
        format!(
            "{gone}; {writes} apiserver writes ({:.2} per object)",
            writes as f64 / n.max(1) as f64
        )
    }
}

/// Deletes every object of `api` ([`IN_FLIGHT`] at a time) and waits until all are gone,
/// at most `timeout`.
pub async fn delete_all<K>(client: &kube::Client, api: &Api<K>, timeout: Duration) -> Deleted
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let names: Vec<String> = api
        .list_metadata(&ListParams::default())
        .await
        .expect("list the objects")
        .items
        .into_iter()
        .filter_map(|m| m.metadata.name)
        .collect();
    let objects = names.len();
    let before = apiserver_writes(client, true).await.unwrap_or_default();
    let started = Instant::now();
    futures::stream::iter(names)
        .for_each_concurrent(IN_FLIGHT, |name| async move {
            if let Err(e) = api.delete(&name, &DeleteParams::default()).await {
                eprintln!("  delete {name}: {e}");
            }
        })
        .await;
    let sent = started.elapsed();
    let all_gone = crate::common::wait_until(timeout.saturating_sub(started.elapsed()), || async {
        api.list_metadata(&ListParams::default().limit(1))
            .await
            .is_ok_and(|l| l.items.is_empty())
    })
    .await;
    let gone = all_gone.then(|| started.elapsed());
    let after = apiserver_writes(client, true).await.unwrap_or_default();
    Deleted {
        objects,
        sent,
        gone,
        writes: writes_since(&before, &after),
    }
}
