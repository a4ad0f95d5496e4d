//! The operator's policies: libraries the kinds call, that call no kind.
//!
//! - [`placement`]: which GPU type, data center and cloud to try, in order, under a
//!   price cap; [`cpu_placement`]: the same for a CPU pod's flavors and data centers;
//! - [`fallback`]: the one loop that tries those placements in order;
//! - [`guardrails`]: a Pod's cost guardrails (run windows, maximum runtime, idle stop);
//! - [`budget`]: a namespace's hourly Budget, the ledger that admits or holds what would
//!   exceed it;
//! - [`orphans`]: which remote objects carry this operator's marker but have no object in
//!   the cluster, and the census behind the `gpucloud_orphans` metric.
//!
//! Layers: this crate imports the engine, the CRD types and the platform client; the
//! binary (its kinds) imports it.

pub mod budget;
pub mod cpu_placement;
pub mod fallback;
pub mod guardrails;
pub mod orphans;
pub mod placement;
