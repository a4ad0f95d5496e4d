//! The CRDs as the operator installs them: what `#[derive(CustomResource)]` generates, with
//! the conventions every kind shares added in one place rather than repeated in each
//! type's `#[kube(...)]` attribute.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition, JSON,
};
use kube::CustomResourceExt;

use crate::common::{GROUP, VERSION};
use crate::{ManagedKind, v1alpha1};

/// The CRD of a kind that mirrors a platform object: the type's own columns, then the two
/// that `kubectl get` shows last for every such kind: READY (its Ready condition, the one
/// kstatus and Argo CD read) and AGE. A kind that shows a column after READY (the
/// Endpoint's URL) places READY in its own attribute, and gets AGE only.
pub fn managed_crd<K: ManagedKind + CustomResourceExt>() -> CustomResourceDefinition {
    let mut crd = K::crd();
    for version in &mut crd.spec.versions {
        let columns = version
            .additional_printer_columns
            .get_or_insert_with(Vec::new);
        if !columns.iter().any(|c| c.name == "READY") {
            columns.push(column(
                "READY",
                "string",
                ".status.conditions[?(@.type==\"Ready\")].status",
            ));
        }
        columns.push(column("AGE", "date", ".metadata.creationTimestamp"));
    }
    crd
}

fn column(name: &str, type_: &str, json_path: &str) -> CustomResourceColumnDefinition {
    CustomResourceColumnDefinition {
        name: name.to_string(),
        type_: type_.to_string(),
        json_path: json_path.to_string(),
        ..Default::default()
    }
}

/// Gives `status` the default `{observedGeneration: 0}`. The apiserver applies it to every
/// object that has no status yet, from the first read on: kstatus and Argo CD then see
/// a generation not yet observed (in progress) instead of an object without conditions
/// (which kstatus calls Current), and the operator needs no status write of its own
/// before its first platform call.
pub fn with_unobserved_status(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    for version in &mut crd.spec.versions {
        let status = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
            .and_then(|s| s.properties.as_mut())
            .and_then(|p| p.get_mut("status"));
        if let Some(status) = status {
            status.default = Some(JSON(serde_json::json!({ "observedGeneration": 0 })));
        }
    }
    crd
}

/// The message `kubectl` prints for every request in `v1alpha1`.
pub fn deprecation_warning(kind: &str) -> String {
    format!(
        "{GROUP}/{alpha} {kind} is deprecated; use {GROUP}/{VERSION} {kind} (docs/api-versions.md)",
        alpha = v1alpha1::VERSION
    )
}

/// A kind's CRD as the operator publishes it: `crd` (the current version, generated from
/// its type, which is served and stored) and the frozen `v1alpha1` before it, served and
/// deprecated, with the default status of [`with_unobserved_status`]. Both versions hold the
/// same objects, so the apiserver needs the conversion webhook between them: what
/// `spec.conversion` says is the install's (its Service and CA bundle).
pub fn published(crd: CustomResourceDefinition) -> CustomResourceDefinition {
    let mut crd = with_unobserved_status(crd);
    for version in &mut crd.spec.versions {
        version.storage = true;
    }
    if let Some(mut old) = v1alpha1::schema(&crd.spec.names.plural) {
        old.storage = false;
        old.deprecated = Some(true);
        old.deprecation_warning = Some(deprecation_warning(&crd.spec.names.kind));
        crd.spec.versions.insert(0, old);
    }
    crd
}
