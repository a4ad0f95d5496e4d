//! gpucloud-operator, the binary: the operator's kinds on top of the layers of the
//! workspace (see docs/architecture.md).
//!
//! - [`kinds`]: one folder per kind (its adapter, its decisions, its table line), and the
//!   one list of kinds that the CRDs, `run`, the demo and the manifests follow;
//! - [`app`]: the process wiring of `run` (every kind's controller as a task, the metrics
//!   and health server, the logs);
//! - [`cli`]: every subcommand (`run`, `crds`, `emulator`, `platform`, `orphans`, `demo`);
//! - [`demo`]: `gpucloud-operator demo`, and applying manifests the way the examples are.
//!
//! Below it: `gpucloud_policy`, `gpucloud_engine`, `gpucloud_crd`, `gpucloud_platform`,
//! and, standing alone, `gpucloud_emulator`.

pub mod app;
pub mod cli;
pub mod demo;
pub mod kinds;
pub mod plugin;
