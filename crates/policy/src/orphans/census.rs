//! The orphan census behind the `gpucloud_orphans` and `gpucloud_orphan_cost_per_hour`
//! metrics: per kind, the remote objects that carry the operator's marker but have no
//! object in the cluster (the pure rule is [`super::orphans`]).
//!
//! It runs every `--orphan-census-interval` (10 minutes by default), and reads the listings
//! the reconciles already share: no platform call while objects of the kind are resynced
//! (a resync's listing is newer than the previous census); with none left, one listing per
//! census. The cluster side is the watch's store as it was
//! before the listing and after it, together: an object created or deleted in between is
//! in one of the two (an object is in the store before the operator creates its remote
//! object, and stays there until the operator has deleted it). A remote object is counted
//! only when two censuses in a row find it orphaned, so that an object deleted between a
//! listing and the read of the store is not counted for the moment it takes.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::time::Instant;
use tracing::{debug, info};

use super::{ClusterObjects, Orphan, Scope, orphans};
use gpucloud_engine::released;
use gpucloud_engine::snapshot::Freshness;

use gpucloud_crd::ManagedKind;
use gpucloud_engine::adapter::Adapter;
use gpucloud_engine::cache::Cache;
use gpucloud_engine::engine::Engine;
use gpucloud_engine::runner::Watched;

/// Which remote objects an install watching `watched` may judge now; `None` when it
/// watches by label, and so cannot tell an object it does not watch from one that is gone.
/// With `--namespace-selector`, the namespaces watched at the time: a namespace that no
/// longer matches has left the store, and its remote objects are no longer judged.
pub fn scope_of(watched: &Watched) -> Option<Scope> {
    if watched.selector.is_some() {
        return None;
    }
    Some(match watched.namespaces.now() {
        None => Scope::Cluster,
        Some(names) => Scope::Namespaces(names.iter().cloned().collect()),
    })
}

/// Pure: the orphans to report: those found now that the previous census found too.
pub fn confirmed(now: Vec<Orphan>, previous: &HashSet<String>) -> Vec<Orphan> {
    now.into_iter()
        .filter(|o| previous.contains(&o.id))
        .collect()
}

/// Counts the orphans of `A`'s kind until the task is dropped (see `runner::run_kind`).
pub async fn run<A: Adapter>(
    engine: Arc<Engine<A>>,
    store: Cache<A::Kind>,
    mut synced: tokio::sync::watch::Receiver<bool>,
    watched: Watched,
) {
    if scope_of(&watched).is_none() {
        info!(
            kind = A::KIND,
            "watching by label: no orphan census (objects outside the selector would count)"
        );
        return;
    }
    // The store holds a whole listing from here on.
    if synced.wait_for(|s| *s).await.is_err() {
        return;
    }
    let every = engine.shared.config.orphan_census_interval;
    if every.is_zero() {
        return;
    }
    // The cluster as it was at the previous census, and when it was read.
    let mut before: Option<(Instant, ClusterObjects)> = None;
    let mut suspects: HashSet<String> = HashSet::new();
    loop {
        // Read at each census: the namespaces a selector chooses come and go. A namespace
        // that has just come may not have its objects in the store yet; an object is only
        // counted when two censuses in a row find it orphaned, by when it has.
        if let (Some((since, cluster_before)), Some(scope)) = (before.take(), scope_of(&watched)) {
            match census(&engine, &store, &scope, since, cluster_before).await {
                Ok((found, cluster_now)) => {
                    let ids = found.iter().map(|o| o.id.clone()).collect();
                    let counted = confirmed(found, &suspects);
                    let cost: f64 = counted.iter().filter_map(|o| o.cost_per_hour).sum();
                    engine
                        .shared
                        .metrics
                        .set_orphans(A::KIND, counted.len(), cost);
                    if !counted.is_empty() {
                        debug!(kind = A::KIND, orphans = counted.len(), "orphan census");
                    }
                    suspects = ids;
                    before = Some(cluster_now);
                }
                Err(error) => {
                    debug!(kind = A::KIND, %error, "orphan census skipped");
                }
            }
        }
        if before.is_none() {
            before = Some((Instant::now(), cluster_in(&store)));
        }
        tokio::time::sleep(every).await;
    }
}

/// The objects of the store, unpacked one at a time (never all at once).
fn cluster_in<K: ManagedKind>(store: &Cache<K>) -> ClusterObjects {
    let mut out = ClusterObjects::default();
    for obj in store.objects(&|_| true) {
        out.add_object(&obj);
    }
    out
}

/// One census: listings that started after `since` (when `cluster_before` was read), then
/// the cluster now. Returns the orphans and the cluster as read now, with when.
async fn census<A: Adapter>(
    engine: &Engine<A>,
    store: &Cache<A::Kind>,
    scope: &Scope,
    since: Instant,
    cluster_before: ClusterObjects,
) -> Result<(Vec<Orphan>, (Instant, ClusterObjects)), String> {
    let mut listings = Vec::new();
    for credentials in engine.accounts().await {
        let listing = engine
            .shared_listing(&credentials, Freshness::StartedAfter(since))
            .await
            .map_err(|f| f.to_string())?;
        listings.push(listing);
    }
    let read_at = Instant::now();
    let cluster_now = cluster_in(store);
    let record = released::read_record(
        &engine.shared.kube,
        &engine.shared.config.operator_namespace,
    )
    .await
    .map_err(|e| e.to_string())?;
    let released = record.ids_of(A::KIND);
    let cluster = cluster_before.union(&cluster_now);
    let candidates: Vec<_> = listings
        .iter()
        .flat_map(|l| l.items.iter().filter_map(A::orphan_candidate))
        .collect();
    let mine = engine.shared.install_tag.get().map(|t| t.as_str());
    let found = orphans(&candidates, &cluster, &released, scope, mine);
    Ok((found, (read_at, cluster_now)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn orphan(id: &str) -> Orphan {
        Orphan {
            kind: "NetworkVolume",
            id: id.into(),
            name: format!("ns-{id}-0000ffff"),
            owner_uid: "0000ffff".into(),
            status: String::new(),
            cost_per_hour: None,
        }
    }

    #[test]
    fn an_orphan_counts_from_its_second_census() {
        let first = confirmed(vec![orphan("a")], &HashSet::new());
        assert!(first.is_empty(), "one census proves nothing");
        let previous: HashSet<String> = ["a".to_string(), "gone".to_string()].into();
        let second = confirmed(vec![orphan("a"), orphan("b")], &previous);
        assert_eq!(
            second.iter().map(|o| o.id.as_str()).collect::<Vec<_>>(),
            vec!["a"]
        );
    }

    use gpucloud_engine::namespace_watch::SelectedNamespaces;
    use gpucloud_engine::runner::Namespaces;

    #[test]
    fn an_install_by_label_takes_no_census() {
        let by_label = Watched {
            namespaces: Namespaces::All,
            selector: Some("team=a".into()),
        };
        assert_eq!(scope_of(&by_label), None);
        let some = Watched {
            namespaces: Namespaces::Only(vec!["a".into(), "b".into()]),
            selector: None,
        };
        assert_eq!(
            scope_of(&some),
            Some(Scope::Namespaces(vec!["a".into(), "b".into()]))
        );
        assert_eq!(scope_of(&Watched::default()), Some(Scope::Cluster));
        let selected = Watched {
            namespaces: Namespaces::Selected(SelectedNamespaces::fixed(["b".into(), "a".into()])),
            selector: None,
        };
        assert_eq!(
            scope_of(&selected),
            Some(Scope::Namespaces(vec!["a".into(), "b".into()])),
            "the namespaces the selector matches now"
        );
    }
}
