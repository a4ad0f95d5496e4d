//! The kinds as `gpucloud.io/v1alpha1` says them: served (deprecated) so that manifests and
//! objects written in it keep working, never stored once the storage migration has run
//! (docs/api-versions.md), and never read by the operator, which reads the version at the
//! crate's root. The apiserver reaches this version through the conversion webhook
//! ([`crate::conversion`]).
//!
//! It is frozen: its schema is the one it was released with (v0.1.0), kept as data in
//! `schemas/` (each kind's entry of `spec.versions` as it was published), not generated from
//! types, so that no change made for the current version can change what `v1alpha1` takes.
//! The types here are what conversion reads and writes: the spec fields of the four kinds
//! whose spec differs, with the serde names and defaults of the release; NetworkVolume,
//! RegistryCredential and Budget say their spec the same way in both versions.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionVersion;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

pub mod cluster;
pub mod endpoint;
pub mod pod;
pub mod template;

pub use cluster::Cluster;
pub use endpoint::Endpoint;
pub use pod::Pod;
pub use template::Template;

/// `v1alpha1`.
pub const VERSION: &str = "v1alpha1";

/// An object of a kind in `v1alpha1`, without its `apiVersion` and `kind` (which conversion
/// writes: see [`crate::conversion::convert`]).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
pub struct Object<Spec, Status> {
    pub metadata: ObjectMeta,
    pub spec: Spec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

/// A `v1alpha1` NetworkVolume: the spec is the current version's.
pub type NetworkVolume = Object<crate::NetworkVolumeSpec, crate::NetworkVolumeStatus>;
/// A `v1alpha1` RegistryCredential: the spec is the current version's.
pub type RegistryCredential =
    Object<crate::RegistryCredentialSpec, crate::RegistryCredentialStatus>;
/// A `v1alpha1` Budget: the spec is the current version's.
pub type Budget = Object<crate::BudgetSpec, crate::BudgetStatus>;

/// The frozen `spec.versions` entry of the kind with plural `plural`, or `None` for a kind
/// `v1alpha1` never had.
pub fn schema(plural: &str) -> Option<CustomResourceDefinitionVersion> {
    let text = match plural {
        "networkvolumes" => include_str!("schemas/networkvolumes.json"),
        "endpoints" => include_str!("schemas/endpoints.json"),
        "pods" => include_str!("schemas/pods.json"),
        "budgets" => include_str!("schemas/budgets.json"),
        "registrycredentials" => include_str!("schemas/registrycredentials.json"),
        "templates" => include_str!("schemas/templates.json"),
        "clusters" => include_str!("schemas/clusters.json"),
        _ => return None,
    };
    // The files are this crate's own, checked by its tests: one that does not parse is a
    // build that must not ship.
    Some(serde_json::from_str(text).expect("a frozen v1alpha1 schema parses"))
}
