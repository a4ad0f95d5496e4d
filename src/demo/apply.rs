//! Applying a multi-document YAML manifest into one namespace, as
//! `kubectl apply --server-side -n NAMESPACE -f FILE` does: the demo applies `examples/`
//! with it, and the tests apply each example the same way.

use std::collections::HashMap;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::discovery::{self, ApiCapabilities, ApiResource, Scope};

/// One object written to the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub api_version: String,
    pub kind: String,
    pub name: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("{source_name}: not valid YAML: {message}")]
    Yaml {
        source_name: String,
        message: String,
    },
    #[error("{source_name}, document {index}: {problem}")]
    Document {
        source_name: String,
        index: usize,
        problem: String,
    },
    #[error("the cluster does not serve {kind} ({api_version}); are the CRDs installed? {source}")]
    NotServed {
        api_version: String,
        kind: String,
        source: kube::Error,
    },
    #[error("could not apply {kind} {name}: {source}")]
    Write {
        kind: String,
        name: String,
        source: kube::Error,
    },
}

/// Pure: the objects of a YAML stream, in order; empty documents (comments only) are skipped.
pub fn parse_documents(text: &str, source_name: &str) -> Result<Vec<DynamicObject>, ApplyError> {
    let values: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(text).map_err(|e| ApplyError::Yaml {
            source_name: source_name.to_string(),
            message: e.to_string(),
        })?;
    let mut objects = Vec::new();
    for (index, value) in values.into_iter().enumerate() {
        if value.is_null() {
            continue;
        }
        let problem = |problem: &str| ApplyError::Document {
            source_name: source_name.to_string(),
            index: index + 1,
            problem: problem.to_string(),
        };
        if !value.is_object() {
            return Err(problem("is not a mapping"));
        }
        let object: DynamicObject = serde_json::from_value(value)
            .map_err(|e| problem(&format!("is not a Kubernetes object: {e}")))?;
        if object.types.is_none() {
            return Err(problem("has no apiVersion and kind"));
        }
        if object
            .metadata
            .name
            .as_deref()
            .unwrap_or_default()
            .is_empty()
        {
            return Err(problem("has no metadata.name"));
        }
        objects.push(object);
    }
    Ok(objects)
}

/// Server-side applies `objects` in order. Namespaced ones go into `namespace` (any
/// namespace they name is replaced, so an example lands where it is asked to); cluster-scoped
/// ones are applied as they are.
pub async fn apply_objects(
    client: &kube::Client,
    namespace: &str,
    objects: &[DynamicObject],
    field_manager: &str,
) -> Result<Vec<Applied>, ApplyError> {
    let mut kinds: HashMap<GroupVersionKind, (ApiResource, ApiCapabilities)> = HashMap::new();
    let params = PatchParams::apply(field_manager).force();
    let mut applied = Vec::with_capacity(objects.len());
    for object in objects {
        let types = object.types.clone().unwrap_or_default();
        let (group, version) = types
            .api_version
            .rsplit_once('/')
            .unwrap_or(("", types.api_version.as_str()));
        let gvk = GroupVersionKind::gvk(group, version, &types.kind);
        if !kinds.contains_key(&gvk) {
            let found = discovery::pinned_kind(client, &gvk)
                .await
                .map_err(|source| ApplyError::NotServed {
                    api_version: types.api_version.clone(),
                    kind: types.kind.clone(),
                    source,
                })?;
            kinds.insert(gvk.clone(), found);
        }
        let (resource, capabilities) = &kinds[&gvk];
        let name = object.metadata.name.clone().unwrap_or_default();
        let mut object = object.clone();
        let api: Api<DynamicObject> = if capabilities.scope == Scope::Namespaced {
            object.metadata.namespace = Some(namespace.to_string());
            Api::namespaced_with(client.clone(), namespace, resource)
        } else {
            Api::all_with(client.clone(), resource)
        };
        api.patch(&name, &params, &Patch::Apply(&object))
            .await
            .map_err(|source| ApplyError::Write {
                kind: types.kind.clone(),
                name: name.clone(),
                source,
            })?;
        applied.push(Applied {
            api_version: types.api_version,
            kind: types.kind,
            name,
        });
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_in_order_and_empty_ones_skipped() {
        let text = "# a comment only\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\napiVersion: gpucloud.io/v1beta1\nkind: Pod\nmetadata: {name: b, namespace: elsewhere}\nspec: {image: x}\n";
        let objects = parse_documents(text, "t.yaml").unwrap();
        let names: Vec<_> = objects
            .iter()
            .map(|o| {
                (
                    o.types.clone().unwrap().kind,
                    o.metadata.name.clone().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            names,
            vec![("ConfigMap".into(), "a".into()), ("Pod".into(), "b".into())]
        );
        assert_eq!(objects[1].data["spec"]["image"], "x");
    }

    #[test]
    fn a_document_without_kind_or_name_is_named_in_the_error() {
        let err = parse_documents("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "x.yaml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("x.yaml, document 1") && err.contains("metadata.name"),
            "{err}"
        );
        let err = parse_documents("metadata: {name: a}\n", "y.yaml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("y.yaml, document 1") && err.contains("apiVersion"),
            "{err}"
        );
        let err = parse_documents("[1, 2]\n", "z.yaml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a mapping"), "{err}");
    }

    #[test]
    fn every_committed_example_parses() {
        for (file, text) in super::super::examples::EXAMPLES {
            let objects = parse_documents(text, file).unwrap();
            assert!(!objects.is_empty(), "{file} has no objects");
        }
    }
}
