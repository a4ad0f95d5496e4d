//! Wires an engine to the watches that feed it: its own kind (in the watched namespaces)
//! and the Secrets that hold API keys.

use std::collections::hash_map::DefaultHasher;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use futures::{Stream, StreamExt, stream};
use k8s_openapi::api::core::v1::Secret;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Config as ControllerConfig;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::utils::WatchStreamExt;
use kube::runtime::{Controller, PredicateConfig, watcher};
use kube::{Api, Client, ResourceExt};
use tracing::{debug, warn};

use super::adapter::Adapter;
use super::annotations::triggers_reconcile;
use super::engine::Engine;
use super::kind::ManagedKind;

/// Which namespaces the operator watches.
#[derive(Clone, Debug, Default)]
pub enum Namespaces {
    #[default]
    All,
    Only(Vec<String>),
}

impl Namespaces {
    fn apis<K>(&self, client: &Client) -> Vec<Api<K>>
    where
        K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>,
    {
        match self {
            Namespaces::All => vec![Api::all(client.clone())],
            Namespaces::Only(list) => list
                .iter()
                .map(|ns| Api::namespaced(client.clone(), ns))
                .collect(),
        }
    }
}

/// A hash of everything in an object that should trigger a reconcile: the spec
/// (generation), annotations, finalizers and deletion. Status writes and the engine's own
/// bookkeeping annotations (the create markers) are left out so they do not loop back.
fn change_hash<K: ManagedKind>(obj: &K) -> Option<u64> {
    let mut h = DefaultHasher::new();
    obj.meta().generation.hash(&mut h);
    for (key, value) in obj.annotations() {
        if triggers_reconcile(key) {
            (key, value).hash(&mut h);
        }
    }
    obj.finalizers().hash(&mut h);
    obj.meta().deletion_timestamp.is_some().hash(&mut h);
    Some(h.finish())
}

fn watch_kind<K: ManagedKind>(
    apis: Vec<Api<K>>,
    writer: reflector::store::Writer<K>,
) -> impl Stream<Item = Result<K, watcher::Error>> + Send {
    let streams = apis.into_iter().map(|api| {
        watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed()
    });
    stream::select_all(streams)
        .reflect(writer)
        .applied_objects()
        .predicate_filter(change_hash::<K>, PredicateConfig::default())
}

/// Objects in `store` that read their key from Secret `namespace/name` (all of them when
/// it holds the operator's default key).
fn users_of_secret<A: Adapter>(
    engine: &Engine<A>,
    store: &Store<A::Kind>,
    namespace: &str,
    name: &str,
) -> Vec<ObjectRef<A::Kind>> {
    let default = engine.shared.credentials.is_default_secret(namespace, name);
    store
        .state()
        .into_iter()
        .filter(|obj| {
            default
                || (obj.namespace().as_deref() == Some(namespace)
                    && engine.adapter.secrets(obj).iter().any(|s| s == name))
        })
        .map(|obj| ObjectRef::from_obj(obj.as_ref()))
        .collect()
}

/// Runs the controller of one kind until `shutdown` resolves.
pub async fn run_kind<A: Adapter>(
    engine: Arc<Engine<A>>,
    namespaces: Namespaces,
    concurrency: u16,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    tracing::info!(kind = A::KIND, "starting controller");
    let client = engine.shared.kube.clone();
    let (reader, writer) = reflector::store::<A::Kind>();
    let objects = watch_kind(namespaces.apis::<A::Kind>(&client), writer);

    let secret_streams = namespaces
        .apis::<PartialObjectMeta<Secret>>(&client)
        .into_iter()
        .map(|api| {
            watcher(api, watcher::Config::default())
                .default_backoff()
                .touched_objects()
                .boxed()
        });
    let secrets = stream::select_all(secret_streams);
    let (secret_engine, secret_store) = (engine.clone(), reader.clone());

    Controller::for_stream(objects, reader)
        .watches_stream(secrets, move |secret| {
            let (ns, name) = (secret.namespace().unwrap_or_default(), secret.name_any());
            secret_engine.shared.credentials.forget(&ns, &name);
            users_of_secret(&secret_engine, &secret_store, &ns, &name)
        })
        .with_config(ControllerConfig::default().concurrency(concurrency))
        .graceful_shutdown_on(shutdown)
        .run(
            |obj, engine: Arc<Engine<A>>| engine.reconcile(obj),
            |obj, err, engine: Arc<Engine<A>>| engine.error_policy(&obj, err),
            engine,
        )
        .for_each(|result| async move {
            match result {
                Ok((obj, _)) => debug!(kind = A::KIND, object = %obj, "reconciled"),
                Err(err) => warn!(kind = A::KIND, error = %err, "controller"),
            }
        })
        .await;
    tracing::info!(kind = A::KIND, "controller stopped");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::annotations as ann;
    use crate::crd::{NetworkVolume, NetworkVolumeSpec};

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
    fn the_engines_own_markers_do_not_trigger_a_reconcile() {
        let plain = change_hash(&object(&[]));
        let pending = change_hash(&object(&[(ann::CREATE_PENDING, "2026-01-01T00:00:00Z")]));
        let succeeded = change_hash(&object(&[(ann::CREATE_SUCCEEDED, "2026-01-01T00:00:00Z")]));
        assert_eq!(plain, pending);
        assert_eq!(plain, succeeded);
    }

    #[test]
    fn user_facing_annotations_and_spec_do_trigger() {
        let plain = change_hash(&object(&[]));
        for key in [
            ann::EXTERNAL_ID,
            ann::PAUSED,
            ann::POLL_INTERVAL,
            ann::RECONCILE_REQUESTED_AT,
            "example.com/anything",
        ] {
            assert_ne!(plain, change_hash(&object(&[(key, "x")])), "{key}");
        }
        let mut newer = object(&[]);
        newer.metadata.generation = Some(2);
        assert_ne!(plain, change_hash(&newer));
        let mut finalized = object(&[]);
        finalized
            .finalizers_mut()
            .push("gpucloud.io/finalizer".into());
        assert_ne!(plain, change_hash(&finalized));
    }
}
