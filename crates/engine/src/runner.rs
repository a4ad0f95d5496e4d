//! Wires an engine to what feeds it: the watch of its own kind (in the watched namespaces)
//! and the re-reading of the Secrets its objects name ([`crate::secret_recheck`]).

use std::future::Future;
use std::sync::Arc;

use futures::{Stream, StreamExt, stream};
use kube::Client;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::utils::WatchStreamExt;
use kube::runtime::watcher;
use tokio::task::JoinHandle;
use tracing::debug;

use super::adapter::Adapter;
use super::cache::{Cache, key_of};
use super::controller::{self, Passes};
use super::engine::Engine;
use super::feed::Feed;
use super::namespace_streams::{WatchReport, watch_namespaces};
use super::secret_recheck::{SecretRecheck, changed_secret_users};
use super::watch_loop::watch_config;
pub use super::watched::{Namespaces, Watched};
use gpucloud_crd::ManagedKind;

/// The annotation `kubectl apply` keeps a whole copy of the object in (its last applied
/// configuration): as large as the spec and metadata together, never read here.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops what the operator never reads from an object before the watch cache keeps it:
/// managedFields (the bulk of a stored object) and kubectl's copy of the last applied
/// configuration. Both would otherwise cost their size again for every object watched.
fn trim_for_cache<K: ManagedKind>(obj: &mut K) {
    let meta = obj.meta_mut();
    meta.managed_fields = None;
    if let Some(annotations) = meta.annotations.as_mut() {
        annotations.remove(LAST_APPLIED);
    }
}

/// The keys of the objects of one kind whose change should trigger a reconcile, each in
/// `cache` (see [`crate::triggers::Triggers`]). `gone` hears (by `namespace/name`) of every object deleted
/// from the cluster, also of those a relisting no longer shows, so that what is kept about
/// it (backoff, caches) goes with it even when no reconcile follows (no finalizer of ours).
/// `echo` tells the operator's own writes coming back (see [`Engine::is_echo`]);
/// `delivered` hears of every object a live change brings, once the cache has it (see
/// [`Feed::on`] and [`Engine::caught_up`]).
/// `synced` turns true once the cache holds a whole listing. The cache keeps each object
/// packed (see [`crate::packed`]); the filters above see it whole, as the watch brings it.
#[allow(clippy::too_many_arguments)]
fn watch_kind<K: ManagedKind>(
    client: Client,
    namespaces: Namespaces,
    selector: Option<String>,
    watch_timeout: std::time::Duration,
    cache: Cache<K>,
    gone: impl Fn(&str) + Send + 'static,
    echo: impl Fn(&K) -> bool + Send + 'static,
    delivered: impl Fn(&K) + Send + 'static,
    synced: tokio::sync::watch::Sender<bool>,
    report: WatchReport,
) -> impl Stream<Item = String> + Send {
    let config = watch_config(selector.as_deref(), watch_timeout);
    // What the cache holds in a namespace: read when one is relisted or stops being watched.
    let held = {
        let cache = cache.clone();
        move |ns: &str| cache.in_namespace(ns).into_iter().map(Arc::new).collect()
    };
    watch_namespaces(&client, &namespaces, config, held, report)
        .modify(trim_for_cache::<K>)
        .scan(Feed::new(cache), move |feed, event| {
            let objects = match event {
                Ok(event) => {
                    let due = feed.on(&event, &echo, &gone, &delivered);
                    // The cache has the event: a listing's objects are in it.
                    if matches!(event, watcher::Event::InitDone) {
                        synced.send_replace(true);
                    }
                    due
                }
                Err(err) => {
                    // The watch tries again on its own (its health said what matters); its
                    // relisting triggers what changed meanwhile.
                    debug!(kind = %K::kind(&()), error = %err, "watch");
                    Vec::new()
                }
            };
            futures::future::ready(Some(stream::iter(objects)))
        })
        .flatten()
}

/// The shortest time between two looks for shared listings nobody reads (see
/// [`Engine::release_unread_listings`]).
const MIN_RELEASE_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// A task that runs beside a kind's controller and reads its cache (the orphan census):
/// started with the cache and a flag that turns true once the first listing is in it,
/// and aborted when the controller stops. The engine only starts it; what it does is the
/// caller's.
pub type Companion<K> =
    Box<dyn FnOnce(Cache<K>, tokio::sync::watch::Receiver<bool>) -> JoinHandle<()> + Send>;

/// Runs the controller of one kind until `shutdown` resolves.
pub async fn run_kind<A: Adapter>(
    engine: Arc<Engine<A>>,
    watched: Watched,
    concurrency: u16,
    wakes: impl Stream<Item = ObjectRef<A::Kind>> + Send + 'static,
    companion: Option<Companion<A::Kind>>,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    tracing::info!(kind = A::KIND, "starting controller");
    // Running until this returns; stopped rather than ended once `shutdown` resolved.
    let life = engine.shared.progress.controller(A::KIND);
    let shutdown = life.until(shutdown);
    let client = engine.shared.kube.clone();
    let cache = engine.cache().clone();
    let (synced, synced_rx) = tokio::sync::watch::channel(false);
    let forgetting = engine.clone();
    let namespaces = &watched.namespaces;
    let objects = watch_kind(
        client.clone(),
        namespaces.clone(),
        watched.selector.clone(),
        engine.shared.config.watch_timeout,
        cache.clone(),
        move |key: &str| forgetting.forget(key),
        {
            let engine = engine.clone();
            move |obj| engine.is_echo(obj)
        },
        {
            let engine = engine.clone();
            move |obj| engine.caught_up(obj)
        },
        synced,
        WatchReport::new(engine.shared.metrics.clone(), A::KIND),
    );

    // The Secrets the objects name, read again on an interval: never listed nor watched.
    let recheck = Arc::new(SecretRecheck::default());
    let secret_users = changed_secret_users(
        engine.clone(),
        recheck.clone(),
        synced_rx.clone(),
        engine.shared.config.secret_recheck_interval,
    );
    let _companion = companion.map(|start| AbortOnDrop(start(cache.clone(), synced_rx)));
    let _releaser = {
        let engine = engine.clone();
        let every = engine
            .shared
            .config
            .progress_interval
            .max(MIN_RELEASE_EVERY);
        AbortOnDrop(tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                engine.release_unread_listings();
            }
        }))
    };

    let wakes = wakes.map(|r| key_of(r.namespace.as_deref().unwrap_or_default(), &r.name));
    let requests = stream::select_all([objects.boxed(), secret_users.boxed(), wakes.boxed()]);
    let passes = Passes {
        reconcile: |obj| {
            let (engine, recheck) = (engine.clone(), recheck.clone());
            let under_way = engine.shared.progress.pass(A::KIND);
            async move {
                let _under_way = under_way;
                recheck.before_pass(&engine, &obj).await;
                engine.reconcile(Arc::new(obj)).await
            }
        },
        on_error: |key: &str, err: &_| engine.error_policy(key, err),
    };
    controller::run(
        cache,
        requests,
        &engine.resync,
        usize::from(concurrency),
        passes,
        shutdown,
    )
    .await;
    tracing::info!(kind = A::KIND, "controller stopped");
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
