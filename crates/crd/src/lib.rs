//! The custom resources users apply, in `gpucloud.io/v1alpha1`: their types, OpenAPI
//! schemas and CEL rules, and the spec and status parts every kind shares.
//!
//! Which kinds the operator runs, and so which CRDs it installs, is the binary's list
//! (`gpucloud_operator::kinds`): this crate knows the types, not the registration.

pub mod budget;
pub mod common;
pub mod condition;
pub mod endpoint;
pub mod guardrails;
pub mod managed;
pub mod network_volume;
pub mod pod;
pub mod registry_credential;
pub mod template;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

pub use budget::{Budget, BudgetSpec, BudgetStatus};
pub use common::{
    CommonStatus, CredentialsSecretRef, DeletionPolicy, GROUP, LocalObjectReference,
    ManagementPolicy, VERSION,
};
pub use endpoint::{Endpoint, EndpointSpec, EndpointStatus};
pub use managed::ManagedKind;
pub use network_volume::{NetworkVolume, NetworkVolumeSpec, NetworkVolumeStatus};
pub use pod::{Pod, PodSpec, PodStatus};
pub use registry_credential::{
    RegistryCredential, RegistryCredentialSpec, RegistryCredentialStatus,
};
pub use template::{Template, TemplateSpec, TemplateStatus};

/// `gpucloud.io/v1alpha1`.
pub fn api_version() -> String {
    format!("{GROUP}/{VERSION}")
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
            status.default = Some(
                k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSON(
                    serde_json::json!({ "observedGeneration": 0 }),
                ),
            );
        }
    }
    crd
}

#[cfg(test)]
mod tests;
