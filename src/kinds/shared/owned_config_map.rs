//! ConfigMaps a kind keeps beside its objects for in-cluster programs (an Endpoint's
//! connection, a Cluster's node addresses): written by server-side apply, owned by the
//! object (garbage-collected with it) and labelled with its name.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};

use gpucloud_engine::context::{FIELD_MANAGER, Shared};
use gpucloud_engine::failure::Failure;

/// What the kinds do with the ConfigMaps beside their objects, and so what the operator's
/// ClusterRole and its Roles in the watched namespaces grant on ConfigMaps
/// (`tests/manifests.rs` holds them to it): [`apply`] is a server-side apply, a `patch`
/// that the apiserver also authorises as a `create` when it makes the object; [`delete`]
/// and an Endpoint's removal of a ConfigMap it wrote under an earlier name are a `delete`,
/// and the Endpoint finds those with a `list` by label.
pub const VERBS: &[&str] = &["create", "list", "patch", "delete"];

/// The failure of a ConfigMap call: the apiserver may be back soon.
pub fn kube_failure(e: kube::Error) -> Failure {
    Failure::retryable(
        "KubernetesUnavailable",
        format!("could not write the ConfigMap: {e}"),
    )
}

/// Applies ConfigMap `name` in `owner`'s namespace with `data`, owned by `owner` and
/// labelled `label=<owner's name>`.
pub async fn apply<K: Resource<DynamicType = ()>>(
    shared: &Shared,
    owner: &K,
    name: &str,
    label: &str,
    data: BTreeMap<String, String>,
) -> Result<(), Failure> {
    let config_maps: Api<ConfigMap> =
        Api::namespaced(shared.kube.clone(), &owner.namespace().unwrap_or_default());
    let owner_ref = owner
        .controller_owner_ref(&())
        .expect("an object read from the API has a name and uid");
    let metadata = ObjectMeta {
        name: Some(name.to_string()),
        labels: Some(BTreeMap::from([(label.to_string(), owner.name_any())])),
        owner_references: Some(vec![owner_ref]),
        ..Default::default()
    };
    let body = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": data,
    });
    config_maps
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(body),
        )
        .await
        .map(drop)
        .map_err(kube_failure)
}

/// Deletes ConfigMap `name` of `owner`'s namespace; one already gone is no error.
pub async fn delete<K: Resource<DynamicType = ()>>(
    kube: &kube::Client,
    owner: &K,
    name: &str,
) -> Result<(), Failure> {
    let config_maps: Api<ConfigMap> =
        Api::namespaced(kube.clone(), &owner.namespace().unwrap_or_default());
    match config_maps.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(kube_failure(e)),
    }
}
