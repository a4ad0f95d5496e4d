//! Wires an engine to the watches that feed it: its own kind (in the watched namespaces)
//! and the Secrets that hold API keys.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use futures::{Stream, StreamExt, stream};
use k8s_openapi::api::core::v1::Secret;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::utils::WatchStreamExt;
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use tokio::task::JoinHandle;
use tracing::warn;

use super::adapter::Adapter;
use super::cache::{Cache, in_namespace, key_of};
use super::conditions;
use super::controller::{self, Passes};
use super::credentials::SECRET_NOT_FOUND;
use super::engine::Engine;
use super::feed::Feed;
use super::fingerprint;
use super::namespace_streams::{Listings, watch_each_namespace, watch_namespaces};
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
    cache: Cache<K>,
    gone: impl Fn(&str) + Send + 'static,
    echo: impl Fn(&K) -> bool + Send + 'static,
    delivered: impl Fn(&K) + Send + 'static,
    synced: tokio::sync::watch::Sender<bool>,
    listings: Listings,
) -> impl Stream<Item = String> + Send {
    let config = match &selector {
        Some(s) => watcher::Config::default().labels(s),
        None => watcher::Config::default(),
    };
    // What the cache holds in a namespace: read when one is relisted or stops being watched.
    let held = {
        let cache = cache.clone();
        move |ns: &str| cache.in_namespace(ns).into_iter().map(Arc::new).collect()
    };
    watch_namespaces(&client, &namespaces, config, held, listings)
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
                    // The watcher backs off and watches again; its relisting triggers what
                    // changed meanwhile.
                    warn!(kind = %K::kind(&()), error = %err, "watch");
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

/// Marks, in memory only, a Secret seen in the watch's first listing rather than changed.
const FIRST_LISTING: &str = "gpucloud.io/operator-first-listing";

/// Turns the watch events of Secrets into the Secrets that changed. The listing at start
/// is not a change: every object is reconciled at start anyway, and treating it as one
/// would give every object a second pass (and a Stalled object a second try of what it
/// was refused). Its Secrets come out marked with [`FIRST_LISTING`], for the objects whose
/// pass at start ran before the Secret existed (see [`waits_for_a_missing_secret`]). In a later relisting (after the watch fell
/// behind) a Secret counts as changed if it is new or its resourceVersion moved.
#[derive(Default)]
struct SecretChanges {
    /// resourceVersion by Secret, both hashed (this may see every Secret of the cluster).
    versions: HashMap<u64, u64>,
    synced: bool,
}

impl SecretChanges {
    fn on<K: kube::Resource>(&mut self, event: watcher::Event<K>) -> Option<K> {
        let key =
            |obj: &K| fingerprint::of((obj.meta().namespace.as_ref(), obj.meta().name.as_ref()));
        let version = |obj: &K| fingerprint::of(obj.meta().resource_version.as_ref());
        match event {
            watcher::Event::Init => None,
            watcher::Event::InitDone => {
                self.synced = true;
                None
            }
            watcher::Event::InitApply(mut obj) => {
                let previous = self.versions.insert(key(&obj), version(&obj));
                if !self.synced {
                    obj.meta_mut()
                        .annotations
                        .get_or_insert_with(Default::default)
                        .insert(FIRST_LISTING.into(), "true".into());
                    return Some(obj);
                }
                (previous != Some(version(&obj))).then_some(obj)
            }
            watcher::Event::Apply(obj) => {
                self.versions.insert(key(&obj), version(&obj));
                Some(obj)
            }
            watcher::Event::Delete(obj) => {
                self.versions.remove(&key(&obj));
                Some(obj)
            }
        }
    }
}

/// The Secrets that change, from one watch.
fn secret_changes<K: kube::Resource + Send + 'static>(
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send {
    events
        .scan(SecretChanges::default(), |changes, event| {
            let out = match event {
                Ok(event) => changes.on(event).map(Ok),
                Err(err) => Some(Err(err)),
            };
            futures::future::ready(Some(out))
        })
        .filter_map(futures::future::ready)
}

/// The keys of the objects in `cache` that read their key from Secret `namespace/name` (all of them when
/// it holds the operator's default key); with `only_missing_it`, only those whose last
/// pass found no such Secret.
fn users_of_secret<A: Adapter>(
    engine: &Engine<A>,
    cache: &Cache<A::Kind>,
    namespace: &str,
    name: &str,
    only_missing_it: bool,
) -> Vec<String> {
    let default = engine.shared.credentials.is_default_secret(namespace, name);
    if default && !only_missing_it {
        // Every object reads the default key: no need to unpack one to know it.
        return cache.keys(|_| true);
    }
    cache
        .objects(&|key| default || in_namespace(key, namespace))
        .filter(|obj| default || engine.adapter.secrets(obj).iter().any(|s| s == name))
        .filter(|obj| !only_missing_it || waits_for_a_missing_secret(obj))
        .map(|obj| obj.key())
        .collect()
}

/// Whether the object's last pass ended because its Secret, or the key in it, was missing:
/// the only failure a Secret showing up in the first listing can end. A refused key
/// (`Unauthorized`, `Forbidden`) or an unreadable value came from a Secret that was read;
/// its first listing says nothing new, and a pass for it would only repeat the refused call.
/// A live change of the Secret re-triggers every user, whatever its failure.
fn waits_for_a_missing_secret<K: ManagedKind>(obj: &K) -> bool {
    obj.current_status()
        .and_then(|s| conditions::find(&K::common(s).conditions, conditions::READY))
        .is_some_and(|ready| ready.status != "True" && ready.reason == SECRET_NOT_FOUND)
}

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
    let client = engine.shared.kube.clone();
    let cache = engine.cache().clone();
    let (synced, synced_rx) = tokio::sync::watch::channel(false);
    let forgetting = engine.clone();
    let namespaces = &watched.namespaces;
    let objects = watch_kind(
        client.clone(),
        namespaces.clone(),
        watched.selector.clone(),
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
        Listings::new(engine.shared.metrics.clone(), A::KIND),
    );

    // Each namespace's Secrets apart: each watch's first listing is not a change.
    let secrets = watch_each_namespace::<PartialObjectMeta<Secret>, _>(
        &client,
        namespaces,
        watcher::Config::default(),
        Listings::new(engine.shared.metrics.clone(), A::KIND),
        |_, events| secret_changes(events).boxed(),
    );
    let secret_users = {
        let (engine, cache) = (engine.clone(), cache.clone());
        secrets.flat_map(move |secret| {
            let users = match secret {
                Ok(secret) => {
                    let (ns, name) = (secret.namespace().unwrap_or_default(), secret.name_any());
                    let first_listing = secret.annotations().contains_key(FIRST_LISTING);
                    if !first_listing {
                        engine.shared.credentials.forget(&ns, &name);
                    }
                    users_of_secret(&engine, &cache, &ns, &name, first_listing)
                }
                Err(error) => {
                    // The watcher backs off and watches again.
                    warn!(kind = A::KIND, %error, "watch of Secrets");
                    Vec::new()
                }
            };
            stream::iter(users)
        })
    };
    let companion = companion.map(|start| start(cache.clone(), synced_rx));
    let releaser = {
        let engine = engine.clone();
        let every = engine
            .shared
            .config
            .progress_interval
            .max(MIN_RELEASE_EVERY);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                engine.release_unread_listings();
            }
        })
    };

    let wakes = wakes.map(|r| key_of(r.namespace.as_deref().unwrap_or_default(), &r.name));
    let requests = stream::select_all([objects.boxed(), secret_users.boxed(), wakes.boxed()]);
    let passes = Passes {
        reconcile: |obj| engine.clone().reconcile(Arc::new(obj)),
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
    releaser.abort();
    if let Some(companion) = companion {
        companion.abort();
    }
    tracing::info!(kind = A::KIND, "controller stopped");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::annotations as ann;
    use gpucloud_crd::{NetworkVolume, NetworkVolumeSpec};

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

    fn secret(name: &str, version: &str) -> PartialObjectMeta<Secret> {
        let mut meta = PartialObjectMeta::<Secret>::default();
        meta.metadata.namespace = Some("ns".into());
        meta.metadata.name = Some(name.into());
        meta.metadata.resource_version = Some(version.into());
        meta
    }

    fn names(out: Option<PartialObjectMeta<Secret>>) -> Option<String> {
        out.map(|s| s.name_any())
    }

    #[test]
    fn the_first_listing_of_secrets_is_not_a_change() {
        type Meta = PartialObjectMeta<Secret>;
        let mut changes = SecretChanges::default();
        let first_listing =
            |out: Option<Meta>| out.is_some_and(|s| s.annotations().contains_key(FIRST_LISTING));
        assert!(changes.on(watcher::Event::<Meta>::Init).is_none());
        assert!(
            first_listing(changes.on(watcher::Event::InitApply(secret("key", "1")))),
            "listed at start: marked, not a change"
        );
        assert!(changes.on(watcher::Event::<Meta>::InitDone).is_none());
        // Live changes are changes.
        let changed = changes.on(watcher::Event::Apply(secret("key", "2")));
        assert_eq!(names(changed.clone()).as_deref(), Some("key"));
        assert!(!first_listing(changed));
        assert_eq!(
            names(changes.on(watcher::Event::Apply(secret("new", "3")))).as_deref(),
            Some("new")
        );
        // A relisting reports what moved or appeared while the watch was behind.
        changes.on(watcher::Event::<Meta>::Init);
        assert!(
            changes
                .on(watcher::Event::InitApply(secret("key", "2")))
                .is_none()
        );
        let moved = changes.on(watcher::Event::InitApply(secret("new", "5")));
        assert_eq!(names(moved.clone()).as_deref(), Some("new"));
        assert!(!first_listing(moved));
        assert_eq!(
            names(changes.on(watcher::Event::InitApply(secret("later", "6")))).as_deref(),
            Some("later")
        );
        changes.on(watcher::Event::<Meta>::InitDone);
        assert_eq!(
            names(changes.on(watcher::Event::Delete(secret("key", "7")))).as_deref(),
            Some("key")
        );
    }

    #[test]
    fn only_objects_that_found_no_secret_wait_for_its_first_listing() {
        use gpucloud_crd::condition::Condition;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let with_ready = |status: &str, reason: &str| {
            let mut nv = object(&[]);
            let mut st = gpucloud_crd::network_volume::NetworkVolumeStatus::default();
            st.common.conditions = vec![Condition {
                type_: "Ready".into(),
                status: status.into(),
                reason: reason.into(),
                message: "".into(),
                observed_generation: Some(1),
                last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
            }];
            nv.status = Some(st);
            nv
        };
        assert!(waits_for_a_missing_secret(&with_ready(
            "False",
            "CredentialsNotFound"
        )));
        // The Secret was read and its key refused or unusable: its first listing is no news.
        for read_but_refused in [
            "Unauthorized",
            "Forbidden",
            "CredentialsInvalid",
            "CredentialsForbidden",
        ] {
            assert!(
                !waits_for_a_missing_secret(&with_ready("False", read_but_refused)),
                "{read_but_refused}"
            );
        }
        assert!(!waits_for_a_missing_secret(&with_ready(
            "False",
            "InvalidSpec"
        )));
        assert!(!waits_for_a_missing_secret(&with_ready(
            "True",
            "Available"
        )));
        assert!(!waits_for_a_missing_secret(&object(&[])));
    }
}
