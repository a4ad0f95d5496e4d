//! The custom resources users apply, in `gpucloud.io/v1alpha1`: their types, OpenAPI
//! schemas and CEL rules, and the spec and status parts every kind shares.
//!
//! Which kinds the operator runs, and so which CRDs it installs, is the binary's list
//! (`gpucloud_operator::kinds`): this crate knows the types, not the registration.

pub mod budget;
pub mod cluster;
pub mod common;
pub mod condition;
pub mod conversion;
pub mod endpoint;
pub mod guardrails;
pub mod managed;
pub mod network_volume;
pub mod pod;
pub mod pod_startup;
pub mod published;
pub mod reference;
pub mod registry_credential;
pub mod template;
pub mod v1beta1;

pub use budget::{Budget, BudgetSpec, BudgetStatus};
pub use cluster::{Cluster, ClusterSpec, ClusterStatus};
pub use common::{
    CommonStatus, CredentialsSecretRef, DeletionPolicy, GROUP, LocalObjectReference,
    ManagementPolicy, VERSION,
};
pub use endpoint::{Endpoint, EndpointSpec, EndpointStatus, EndpointType};
pub use managed::{ManagedKind, NamespacedKind};
pub use network_volume::{NetworkVolume, NetworkVolumeSpec, NetworkVolumeStatus};
pub use pod::{Pod, PodSpec, PodStatus};
pub use published::{managed_crd, with_unobserved_status};
pub use registry_credential::{
    RegistryCredential, RegistryCredentialSpec, RegistryCredentialStatus,
};
pub use template::{Template, TemplateSpec, TemplateStatus};

/// `gpucloud.io/v1alpha1`.
pub fn api_version() -> String {
    format!("{GROUP}/{VERSION}")
}

#[cfg(test)]
mod tests;
