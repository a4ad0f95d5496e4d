//! The kinds in `gpucloud.io/v1beta1`, the version `v1alpha1` converts to (docs/api-versions.md):
//! one name per concept, one way to say it, the same bounds for the same field. The group,
//! kind names, short names, categories and columns are those of `v1alpha1`, and so is every
//! status: a status type is shared by both versions, not copied.

pub mod budget;
pub mod cluster;
pub mod endpoint;
pub mod network_volume;
pub mod pod;
pub mod registry_credential;
pub mod shared;
pub mod template;

pub use budget::{Budget, BudgetSpec};
pub use cluster::{Cluster, ClusterSpec};
pub use endpoint::{Endpoint, EndpointGpu, EndpointSpec};
pub use network_volume::{NetworkVolume, NetworkVolumeSpec};
pub use pod::{Pod, PodGpu, PodSpec};
pub use registry_credential::{RegistryCredential, RegistryCredentialSpec};
pub use shared::{ContainerSettings, Gpu};
pub use template::{Template, TemplateSpec};

/// `v1beta1`.
pub const VERSION: &str = "v1beta1";
