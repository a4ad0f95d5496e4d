//! The CRDs as the operator installs them: what `#[derive(CustomResource)]` generates, with
//! the conventions every kind shares added in one place rather than repeated in each
//! type's `#[kube(...)]` attribute.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition, JSON,
};
use kube::CustomResourceExt;
use kube::core::crd::{MergeError, merge_crds};

use crate::common::{GROUP, VERSION};
use crate::{ManagedKind, v1beta1};

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
        "{GROUP}/{VERSION} {kind} is deprecated; use {GROUP}/{beta} {kind} (docs/api-versions.md)",
        beta = v1beta1::VERSION
    )
}

/// A kind's CRD with both versions: `v1alpha1` served and deprecated, `v1beta1` served and
/// stored. Each is given as its own single-version CRD (what the kind's `crd` function
/// makes). Both versions hold the same objects, so installing this needs the operator's
/// conversion webhook in `spec.conversion`, which is the install's to say (its Service and
/// CA bundle).
pub fn with_both_versions(
    v1alpha1: CustomResourceDefinition,
    v1beta1: CustomResourceDefinition,
) -> Result<CustomResourceDefinition, MergeError> {
    let mut v1alpha1 = v1alpha1;
    for version in &mut v1alpha1.spec.versions {
        version.deprecated = Some(true);
        version.deprecation_warning = Some(deprecation_warning(&v1alpha1.spec.names.kind));
    }
    let merged = merge_crds(vec![v1alpha1, v1beta1], v1beta1::VERSION)?;
    Ok(with_unobserved_status(merged))
}

/// Every kind's CRD with both versions, in the order of the operator's CRD stream.
pub fn both_versions() -> Result<Vec<CustomResourceDefinition>, MergeError> {
    use crate::v1beta1 as beta;
    Ok(vec![
        with_both_versions(
            managed_crd::<crate::NetworkVolume>(),
            managed_crd::<beta::NetworkVolume>(),
        )?,
        with_both_versions(
            managed_crd::<crate::Endpoint>(),
            managed_crd::<beta::Endpoint>(),
        )?,
        with_both_versions(managed_crd::<crate::Pod>(), managed_crd::<beta::Pod>())?,
        with_both_versions(crate::Budget::crd(), beta::Budget::crd())?,
        with_both_versions(
            managed_crd::<crate::RegistryCredential>(),
            managed_crd::<beta::RegistryCredential>(),
        )?,
        with_both_versions(
            managed_crd::<crate::Template>(),
            managed_crd::<beta::Template>(),
        )?,
        with_both_versions(
            managed_crd::<crate::Cluster>(),
            managed_crd::<beta::Cluster>(),
        )?,
    ])
}
