//! The custom resources users apply: their types in `gpucloud.io/v1beta1` (the stored
//! version, the one the operator reads), OpenAPI schemas and CEL rules, and the spec and
//! status parts every kind shares; [`v1alpha1`], the deprecated version still served, and
//! [`conversion`] between the two.
//!
//! Which kinds the operator runs, and so which CRDs it installs, is the binary's list
//! (`gpucloud_operator::kinds`): this crate knows the types, not the registration.

pub mod budget;
pub mod cluster;
pub mod common;
pub mod condition;
pub mod container;
pub mod conversion;
pub mod endpoint;
pub mod gpu;
pub mod guardrails;
pub mod managed;
pub mod network_volume;
pub mod pod;
pub mod pod_startup;
pub mod published;
pub mod reference;
pub mod registry_credential;
pub mod template;
pub mod v1alpha1;

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
pub use published::{managed_crd, published, with_unobserved_status};
pub use registry_credential::{
    RegistryCredential, RegistryCredentialSpec, RegistryCredentialStatus,
};
pub use template::{Template, TemplateSpec, TemplateStatus};

/// `gpucloud.io/v1beta1`.
pub fn api_version() -> String {
    format!("{GROUP}/{VERSION}")
}

#[cfg(test)]
mod tests;
