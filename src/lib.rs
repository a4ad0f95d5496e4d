//! gpucloud-operator: a Kubernetes operator for GPU pods, serverless endpoints and network
//! volumes on a GPU cloud platform, and a local emulator of that platform's API.
//!
//! The layers, from the outside in:
//! - [`platform`]: typed client for the platform's four API surfaces; knows nothing of Kubernetes.
//! - [`emulator`]: a faithful local stand-in for the platform; knows nothing of the operator.
//! - [`crd`]: the custom resources users apply.
//! - [`controller`]: the managed-resource engine and one small adapter per kind.
//! - [`kinds`]: the one list of kinds that the CRDs, `run`, the demo and the manifests follow.
//! - [`demo`]: `gpucloud-operator demo`, and applying manifests the way the examples are.
//! - [`observe`]: shared snapshots of remote state, one list call per kind per interval.
//! - [`orphans`]: the sweep of remote pods with the operator's marker and no object.

pub mod app;
pub mod cli;
pub mod demo;
pub mod kinds;

pub use gpucloud_crd as crd;
pub use gpucloud_emulator as emulator;
pub use gpucloud_engine::metrics;
pub use gpucloud_platform as platform;
pub use gpucloud_policy::orphans;
