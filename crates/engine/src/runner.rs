//! Runs one kind's [`Reconciler`]: wires it to what feeds it, the watch of its own kind (in
//! the watched namespaces), the re-reading of the Secrets its objects name
//! ([`crate::secret_recheck`]) when they read any, and what the caller wakes it for, and
//! hands its passes to the engine's loop ([`crate::controller`]). Nothing here knows what a
//! pass does.

use std::future::Future;
use std::sync::Arc;

use futures::{Stream, StreamExt, stream};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::utils::WatchStreamExt;
use kube::runtime::watcher;
use tokio::task::JoinHandle;
use tracing::debug;

use super::cache::{Cache, CachedKind, key_of};
use super::controller::{self, Passes};
use super::feed::Feed;
use super::namespace_streams::{WatchReport, watch_namespaces};
use super::reconciler::Reconciler;
use super::secret_recheck::{SecretRecheck, changed_secret_users};
use super::watch_loop::watch_config;
pub use super::watched::{Namespaces, Watched};

/// The annotation `kubectl apply` keeps a whole copy of the object in (its last applied
/// configuration): as large as the spec and metadata together, never read here.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops what the operator never reads from an object before the watch cache keeps it:
/// managedFields (the bulk of a stored object) and kubectl's copy of the last applied
/// configuration. Both would otherwise cost their size again for every object watched.
fn trim_for_cache<K: CachedKind>(obj: &mut K) {
    let meta = obj.meta_mut();
    meta.managed_fields = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
    }
}

/// The keys of the objects of `reconciler`'s kind whose change should trigger a pass, each
/// in its cache (see [`crate::triggers::Triggers`]). The watch's hooks are `reconciler`'s:
/// [`Reconciler::seen`] hears of every object the watch brings; [`Reconciler::forget`]
/// (by `namespace/name`) of every object deleted from the cluster, also of those a
/// relisting no longer shows, so that what is kept about it goes with it even when no pass
/// follows; [`Reconciler::is_echo`] tells the operator's own writes coming back;
/// [`Reconciler::caught_up`] hears of every object a live change brings, once the cache
/// has it (see [`Feed::on`]). `synced` turns true once the cache holds a whole listing.
/// The cache keeps each object packed (see [`crate::packed`]); the hooks see it whole, as
/// the watch brings it.
fn watch_kind<R: Reconciler>(
    reconciler: Arc<R>,
    namespaces: &Namespaces,
    selector: Option<&str>,
    synced: tokio::sync::watch::Sender<bool>,
) -> impl Stream<Item = String> + Send + use<R> {
    let shared = reconciler.shared().clone();
    let config = watch_config(selector, shared.config.watch_timeout);
    let report = WatchReport::new(shared.metrics.clone(), R::KIND);
    let cache = reconciler.cache().clone();
    // What the cache holds in a namespace: read when one is relisted or stops being watched.
    let held = {
        let cache = cache.clone();
        move |ns: &str| cache.in_namespace(ns).into_iter().map(Arc::new).collect()
    };
    watch_namespaces(&shared.kube, namespaces, config, held, report)
        .modify(trim_for_cache::<R::Kind>)
        .scan(Feed::new(cache), move |feed, event| {
            let objects = match event {
                Ok(event) => {
                    if let watcher::Event::Apply(obj) | watcher::Event::InitApply(obj) = &event {
                        reconciler.seen(obj);
                    }
                    let due = feed.on(
                        &event,
                        |obj| reconciler.is_echo(obj),
                        |key| reconciler.forget(key),
                        |obj| reconciler.caught_up(obj),
                    );
                    // The cache has the event: a listing's objects are in it.
                    if matches!(event, watcher::Event::InitDone) {
                        synced.send_replace(true);
                    }
                    due
                }
                Err(err) => {
                    // The watch tries again on its own (its health said what matters); its
                    // relisting triggers what changed meanwhile.
                    debug!(kind = R::KIND, error = %err, "watch");
                    Vec::new()
                }
            };
            futures::future::ready(Some(stream::iter(objects)))
        })
        .flatten()
}

/// The shortest time between two looks for what no pass has read lately (see
/// [`Reconciler::release_unread_listings`]).
const MIN_RELEASE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// A task that runs beside a kind's controller and reads its cache (the orphan census, the
/// Budgets' member watches): started with the cache and a flag that turns true once the
/// first listing is in it, and aborted when the controller stops. The runtime only starts
/// it; what it does is the caller's.
pub type Companion<K> =
    Box<dyn FnOnce(Cache<K>, tokio::sync::watch::Receiver<bool>) -> JoinHandle<()> + Send>;

/// Runs the controller of `reconciler`'s kind until `shutdown` resolves: passes of the objects
/// its watch triggers, of those `wakes` names, of those whose Secret changed (when the
/// kind reads Secrets) and of those due for their resync.
pub async fn run_kind<R: Reconciler>(
    reconciler: Arc<R>,
    watched: Watched,
    concurrency: u16,
    wakes: impl Stream<Item = ObjectRef<R::Kind>> + Send + 'static,
    companion: Option<Companion<R::Kind>>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    tracing::info!(kind = R::KIND, "starting controller");
    let shared = reconciler.shared().clone();
    // Running until this returns; stopped rather than ended once `shutdown` resolved.
    let life = shared.progress.controller(R::KIND);
    let shutdown = life.until(shutdown);
    let cache = reconciler.cache().clone();
    let (synced, synced_rx) = tokio::sync::watch::channel(false);
    let objects = watch_kind(
        reconciler.clone(),
        &watched.namespaces,
        watched.selector.as_deref(),
        synced,
    );

    // The Secrets the objects name, read again on an interval: never listed nor watched.
    let recheck = Arc::new(SecretRecheck::default());
    let secret_users = if R::READS_SECRETS {
        changed_secret_users(
            reconciler.clone(),
            recheck.clone(),
            synced_rx.clone(),
            shared.config.secret_recheck_interval,
        )
        .boxed()
    } else {
        stream::empty().boxed()
    };
    let _companion = companion.map(|start| AbortOnDrop(start(cache.clone(), synced_rx)));
    let _releaser = {
        let reconciler = reconciler.clone();
        let every = shared.config.progress_interval.max(MIN_RELEASE_EVERY);
        AbortOnDrop(tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                reconciler.release_unread_listings();
            }
        }))
    };

    let wakes = wakes.map(|r| key_of(r.namespace.as_deref().unwrap_or_default(), &r.name));
    let requests = stream::select_all([objects.boxed(), secret_users, wakes.boxed()]);
    let passes = Passes {
        reconcile: |obj| {
            let (reconciler, recheck) = (reconciler.clone(), recheck.clone());
            let under_way = shared.progress.pass(R::KIND);
            async move {
                let _under_way = under_way;
                if R::READS_SECRETS {
                    recheck.before_pass(reconciler.as_ref(), &obj).await;
                }
                reconciler.reconcile(Arc::new(obj)).await
            }
        },
        on_error: |key: &str, err: &_| reconciler.error_policy(key, err),
    };
    controller::run(
        cache,
        requests,
        reconciler.resync(),
        usize::from(concurrency),
        passes,
        shutdown,
    )
    .await;
    tracing::info!(kind = R::KIND, "controller stopped");
}

/// A task beside the controller, aborted when the controller's future goes: when it
/// returns, and also when its own task is aborted (a stopping process cuts the passes
/// that do not end in time).
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations as ann;
    use gpucloud_crd::{NetworkVolume, NetworkVolumeSpec};
    use kube::ResourceExt;

    fn object(annotations: &[(&str, &str)]) -> NetworkVolume {
        let spec: NetworkVolumeSpec =
            serde_json::from_value(serde_json::json!({"sizeGb": 10, "dataCenterId": "EU-RO-1"}))
                .unwrap();
        let mut nv = NetworkVolume::new("data", spec);
        nv.metadata.generation = Some(1);
        for (k, v) in annotations {
            nv.annotations_mut().insert(k.to_string(), v.to_string());
        }
        nv
    }

    #[test]
    fn the_cache_keeps_no_managed_fields_nor_kubectls_copy() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
        let mut nv = object(&[(LAST_APPLIED, "{\"spec\":{}}"), (ann::EXTERNAL_ID, "v1")]);
        nv.metadata.managed_fields = Some(vec![ManagedFieldsEntry {
            manager: Some("kubectl".into()),
            ..Default::default()
        }]);
        trim_for_cache(&mut nv);
        assert!(nv.metadata.managed_fields.is_none());
        assert!(!nv.annotations().contains_key(LAST_APPLIED));
        assert_eq!(
            nv.annotations().get(ann::EXTERNAL_ID).map(String::as_str),
            Some("v1"),
            "what the operator reads stays"
        );
        assert_eq!(nv.spec.size_gb, 10);
    }
}
