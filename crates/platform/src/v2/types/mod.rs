//! The REST v2 document's schemas, per resource. Answers tolerate fields they do not know
//! and enums hold values they do not know (`Other`); request bodies send only what is set.

mod billing;
mod catalog;
mod clusters;
mod common;
mod container;
mod pods;
mod registries;
mod serverless;
mod templates;
mod volumes;

#[cfg(test)]
mod tests;

pub use billing::*;
pub use catalog::*;
pub use clusters::*;
pub use common::{
    Cloud, CpuConfig, CreateCpuConfig, CreateGpuConfig, CudaVersions, Env, GpuConfig, Mounts,
    NetworkMount, PersistentMount, TemplateMounts, VolumeType,
};
pub use container::{
    ContainerConfig, ContainerRequest, CreateContainerConfig, ImageField, RegistryField,
    UpdateContainerConfig,
};
pub(crate) use pods::PodActionRequest;
pub use pods::*;
pub use registries::*;
pub use serverless::*;
pub use templates::*;
pub use volumes::*;

/// The wrapped listings of v2 (`{"pods": [...]}`), unwrapped by the calls.
pub(crate) mod listing {
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize)]
    pub struct Pods {
        pub pods: Vec<Pod>,
    }
    #[derive(Deserialize)]
    pub struct Templates {
        pub templates: Vec<Template>,
    }
    /// Decoded by the calls field by field (see `crate::streamed_json::Listing`); whole in
    /// the tests of the wire format.
    #[cfg(test)]
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct NetworkVolumes {
        pub network_volumes: Vec<NetworkVolume>,
    }
    #[cfg(test)]
    #[derive(Deserialize)]
    pub struct Registries {
        pub registries: Vec<Registry>,
    }
    #[derive(Deserialize)]
    pub struct Gpus {
        pub gpus: Vec<GpuType>,
    }
    #[derive(Deserialize)]
    pub struct Cpus {
        pub cpus: Vec<CpuType>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct DataCenters {
        pub data_centers: Vec<DataCenter>,
    }
}
