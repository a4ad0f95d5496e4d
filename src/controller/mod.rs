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

pub mod budget_controller;
pub mod cli;
pub mod dependency;
pub mod docker_config;
pub mod endpoint;
pub mod network_volume;
pub mod pod;
pub mod references;
pub mod registry_credential;
pub mod secret_env;
pub mod spawn;
pub mod template;

pub use gpucloud_engine::{
    adapter, annotations, backoff, conditions, context, credentials, decide, engine, events,
    failure, ownership, recent_writes, runner, triggers, vanished, watch_merge,
};
pub use gpucloud_policy::{budget, guardrails, orphans::census as orphan_census, placement};
