//! The custom resources: `Pod`, `Endpoint` and `NetworkVolume` in `gpucloud.io/v1alpha1`.

pub mod cli;
