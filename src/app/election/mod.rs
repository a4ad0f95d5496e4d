//! Leader election on a Lease, with the semantics of client-go's: a follower takes a Lease
//! that is released, its own, or not renewed for the Lease's duration by its own clock; a
//! leader renews every 2 s and stops leading when it has not renewed for 10 s (before its
//! 15 s Lease can expire for anyone else); every write is conditional on the version read.
//!
//! - [`record`]: the pure decisions on a Lease record (who may take it, what a write puts
//!   in it, when a leader steps down) and the times.
//! - [`state`]: the elector's state between requests and its next step (pure).
//! - [`calls`]: the requests, each bounded in time, and their error type.
//! - [`elector`]: the task that does the requests and says who leads (a run of failed
//!   requests said as `gpucloud_engine::episode` says).

pub mod calls;
pub mod elector;
pub mod record;
pub mod state;

pub use calls::Reachable;
pub use elector::{Elector, Running};
pub use record::TIMING;
