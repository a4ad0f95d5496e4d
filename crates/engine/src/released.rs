//! The record of remote objects released on purpose (`deletionPolicy: Orphan`, paused or
//! observe-only objects deleted): one ConfigMap in the operator's namespace (the namespace
//! of its leader-election Lease), a key per released object (`pod.<id>`) whose value names
//! the object it belonged to. It outlives the namespaces of the objects, unlike anything
//! kept beside them.

use std::collections::HashSet;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// The ConfigMap's name.
pub const CONFIG_MAP: &str = "gpucloud-released";

/// Pure: the key of a released object (ConfigMap keys allow `[-._a-zA-Z0-9]`).
pub fn key_of(kind: &str, id: &str) -> String {
    format!("{}.{id}", kind.to_ascii_lowercase())
}

/// Pure: the ids of `kind` in the ConfigMap's data.
pub fn ids_of(kind: &str, config_map: Option<&ConfigMap>) -> HashSet<String> {
    let prefix = format!("{}.", kind.to_ascii_lowercase());
    config_map
        .and_then(|c| c.data.as_ref())
        .map(|data| {
            data.keys()
                .filter_map(|k| k.strip_prefix(&prefix))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Records that `kind` `id` of object `owner` (`namespace/name`) was released on purpose.
pub async fn record(
    kube: &kube::Client,
    namespace: &str,
    field_manager: &str,
    kind: &str,
    id: &str,
    owner: &str,
) -> Result<(), kube::Error> {
    let api: Api<ConfigMap> = Api::namespaced(kube.clone(), namespace);
    let patch = json!({"data": {key_of(kind, id): owner}});
    let params = PatchParams {
        field_manager: Some(field_manager.to_string()),
        ..PatchParams::default()
    };
    match api.patch(CONFIG_MAP, &params, &Patch::Merge(&patch)).await {
        Err(kube::Error::Api(e)) if e.code == 404 => {
            let config_map: ConfigMap = serde_json::from_value(json!({
                "metadata": {"name": CONFIG_MAP},
                "data": {key_of(kind, id): owner},
            }))
            .expect("a ConfigMap");
            let create = PostParams {
                field_manager: Some(field_manager.to_string()),
                ..PostParams::default()
            };
            match api.create(&create, &config_map).await {
                // Made by someone else in the meantime: add to it.
                Err(kube::Error::Api(e)) if e.code == 409 => api
                    .patch(CONFIG_MAP, &params, &Patch::Merge(&patch))
                    .await
                    .map(|_| ()),
                other => other.map(|_| ()),
            }
        }
        other => other.map(|_| ()),
    }
}

/// The record kept in `namespace` (read once for every kind: see [`ids_of`]). Listed by
/// name rather than read: the operator's roles let it list ConfigMaps, not get them.
pub async fn read_record(
    kube: &kube::Client,
    namespace: &str,
) -> Result<Option<ConfigMap>, kube::Error> {
    let api: Api<ConfigMap> = Api::namespaced(kube.clone(), namespace);
    let by_name = ListParams::default().fields(&format!("metadata.name={CONFIG_MAP}"));
    Ok(api.list(&by_name).await?.items.into_iter().next())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_the_kind_and_read_back_per_kind() {
        assert_eq!(key_of("Pod", "abc123"), "pod.abc123");
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": CONFIG_MAP},
            "data": {"pod.abc": "ns/a", "pod.def": "ns/b", "networkvolume.xyz": "ns/v"}
        }))
        .unwrap();
        let pods = ids_of("Pod", Some(&cm));
        assert_eq!(pods, ["abc".to_string(), "def".to_string()].into());
        assert!(ids_of("Pod", None).is_empty());
    }
}
