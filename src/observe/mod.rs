//! Shared snapshots of remote state: one list call per kind per interval feeds every object.

pub mod snapshot;
