//! The generic managed-resource engine and one adapter per kind.
//!
//! - [`engine`]: the reconcile every kind shares (finalizer, policies, annotations,
//!   crash-safe create, status, Events, backoff).
//! - [`adapter`]: the small trait a kind implements; [`network_volume`] is one.
//! - [`conditions`], [`failure`], [`backoff`], [`annotations`]: pure decisions.
//! - [`runner`]: watches feeding the engine ([`triggers`]: which of their events count;
//!   [`watch_merge`]: several namespaces' watches as one); [`spawn`]: one kind's controller as a task;
//!   [`cli`]: the `run` subcommand, which starts every kind of `crate::kinds`.
//! - [`orphan_census`]: the `gpucloud_orphans` metric, from the listings the kinds share.

pub mod adapter;
pub mod annotations;
pub mod backoff;
pub mod budget;
pub mod cli;
pub mod conditions;
pub mod context;
pub mod credentials;
pub mod decide;
pub mod dependency;
pub mod docker_config;
pub mod endpoint;
pub mod engine;
pub mod events;
pub mod failure;
pub mod guardrails;
pub mod kind;
pub mod naming;
pub mod network_volume;
pub mod orphan_census;
pub mod ownership;
pub mod placement;
pub mod pod;
pub mod recent_writes;
pub mod references;
pub mod registry_credential;
pub mod runner;
pub mod secret_env;
pub mod spawn;
pub mod template;
pub mod triggers;
pub mod vanished;
pub mod watch_merge;

/// Gives back the room a burst left in `table` once most of it has been swept: 10,000
/// objects created at once size a table for 10,000, and a `HashMap` keeps its capacity
/// for good otherwise. Called after a sweep by the tables that expire their entries.
pub(crate) fn shrink_after_burst<K: Eq + std::hash::Hash, V>(
    table: &mut std::collections::HashMap<K, V>,
) {
    if table.capacity() > 4 * table.len().max(64) {
        table.shrink_to_fit();
    }
}
