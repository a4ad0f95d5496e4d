//! References between the operator's own objects: a Pod or Endpoint that attaches a
//! `NetworkVolume` by name (or uses a `Template`, a `RegistryCredential`) waits until that
//! object is Ready and then uses its id.

use kube::Api;

use gpucloud_crd::{LocalObjectReference, NetworkVolume};

use gpucloud_crd::ManagedKind;
use gpucloud_engine::conditions;
use gpucloud_engine::context::Shared;
use gpucloud_engine::failure::Failure;

/// The network volume id to attach: `id` when the spec gives one, else the id of the
/// Ready `NetworkVolume` named by `reference` in `namespace`, else none. Waiting (not an
/// error) while the volume is missing or not Ready.
pub async fn network_volume_id(
    shared: &Shared,
    namespace: &str,
    id: Option<&str>,
    reference: Option<&LocalObjectReference>,
) -> Result<Option<String>, Failure> {
    if let Some(id) = id {
        return Ok(Some(id.to_string()));
    }
    let Some(reference) = reference else {
        return Ok(None);
    };
    let volumes: Api<NetworkVolume> = Api::namespaced(shared.kube.clone(), namespace);
    let volume = volumes.get_opt(&reference.name).await.map_err(|e| {
        Failure::retryable(
            "KubernetesUnavailable",
            format!("could not read NetworkVolume {}: {e}", reference.name),
        )
    })?;
    let not_ready = |what: &str| {
        Failure::waiting(
            "DependencyNotReady",
            format!(
                "NetworkVolume {} (spec.networkVolumeRef) {what}",
                reference.name
            ),
        )
    };
    let Some(volume) = volume else {
        return Err(not_ready("does not exist yet"));
    };
    let status = volume.status.as_ref();
    let ready =
        status.is_some_and(|s| conditions::is_true(&s.common.conditions, conditions::READY));
    match status.and_then(|s| s.common.id.clone()).filter(|_| ready) {
        Some(id) => Ok(Some(id)),
        None => Err(not_ready("is not Ready yet")),
    }
}

/// The id of the Ready object of kind `K` named `name` in `namespace`, which the spec
/// refers to in `field` (such as `spec.templateRef`). Waiting (not an error) while it is
/// missing or not Ready; a replaced object's new id is read on every pass, so the referrer
/// follows it.
pub async fn ready_id<K: ManagedKind>(
    shared: &Shared,
    namespace: &str,
    name: &str,
    field: &str,
) -> Result<String, Failure> {
    ready_object::<K>(shared, namespace, name, field)
        .await
        .map(|(_, id)| id)
}

/// [`ready_id`] with the object itself, for a referrer that also reads its spec.
pub async fn ready_object<K: ManagedKind>(
    shared: &Shared,
    namespace: &str,
    name: &str,
    field: &str,
) -> Result<(K, String), Failure> {
    let kind = K::kind(&());
    let api: Api<K> = Api::namespaced(shared.kube.clone(), namespace);
    let obj = api.get_opt(name).await.map_err(|e| {
        Failure::retryable(
            "KubernetesUnavailable",
            format!("could not read {kind} {name}: {e}"),
        )
    })?;
    let not_ready = |what: &str| {
        Failure::waiting(
            "DependencyNotReady",
            format!("{kind} {name} ({field}) {what}"),
        )
    };
    let Some(obj) = obj else {
        return Err(not_ready("does not exist yet"));
    };
    let common = obj.current_status().map(K::common);
    let ready = common.is_some_and(|c| conditions::is_true(&c.conditions, conditions::READY));
    match common.and_then(|c| c.id.clone()).filter(|_| ready) {
        Some(id) => Ok((obj, id)),
        None => Err(not_ready("is not Ready yet")),
    }
}
