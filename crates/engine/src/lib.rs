//! The managed-resource engine: everything a kind of the operator shares, and nothing of
//! any one kind. A kind plugs in by implementing the three traits of [`adapter`] for its custom
//! resource (a [`gpucloud_crd::ManagedKind`]); the engine does the rest.
//!
//! One object's pass, from the watch to the platform:
//! - [`runner`] runs a [`reconciler::Reconciler`], the one seam between the runtime and what
//!   a pass does (an engine is one; so is a controller with no platform object), and feeds
//!   it: the kind's watch ([`triggers`] says which events count,
//!   [`watch_merge`] merges several namespaces' watches, [`namespace_streams`] runs one
//!   watch per namespace as [`namespace_watch`]'s selected namespaces come and go,
//!   [`vanished`] tells what a relisting no longer shows; each watch is a [`watch_loop`],
//!   which lives through the apiserver going away and reports to [`watch_health`] and
//!   [`apiserver_reach`], whose log lines [`episode`] paces) and the
//!   Secrets its objects name,
//!   read again on an interval ([`secret_recheck`], over [`secret_users`] and
//!   [`secret_versions`]: never listed nor watched);
//! - [`engine`] runs the pass as a pipeline, one module per stage: observe the facts
//!   ([`snapshot`]: the one shared listing per kind and account; [`annotations`],
//!   [`credentials`]), ask [`decide`] (pure) for the step, execute it
//!   through the adapter, and report it in status ([`conditions`], [`failure`],
//!   [`events`], [`backoff`], [`metrics`]);
//! - [`progress`] records each kind's controller and passes under way, for the liveness
//!   probe;
//! - [`ownership`] keeps one install per object, [`released`] remembers the remote objects
//!   let go of on purpose, [`marker`] is how a remote object is known as ours, and
//!   [`tenancy`] says which object holds a remote object, so that no namespace takes
//!   another's.
//!
//! Layers: this crate imports the platform client and the CRD types, never the binary or
//! a policy; the policies and the kinds import it.

pub mod action;
pub mod adapter;
pub mod annotations;
pub mod apiserver_reach;
pub mod backoff;
pub mod cache;
pub mod clock;
pub mod conditions;
pub mod context;
pub mod controller;
pub mod credentials;
pub mod decide;
pub mod engine;
pub mod episode;
pub mod events;
pub mod failure;
pub mod feed;
pub mod fingerprint;
pub mod marker;
pub mod metrics;
pub mod namespace_streams;
pub mod namespace_watch;
pub mod note;
pub mod ownership;
pub mod packed;
pub mod progress;
pub mod reconciler;
pub mod released;
pub mod resync;
pub mod runner;
pub mod scheduler;
pub mod secret_recheck;
pub mod secret_users;
pub mod secret_versions;
pub mod snapshot;
pub mod tenancy;
pub mod triggers;
pub mod vanished;
pub mod watch_health;
pub mod watch_loop;
pub mod watch_merge;
pub mod watched;

/// Gives back the room a burst left in `table` once most of it has been swept: 10,000
/// objects created at once size a table for 10,000, and a `HashMap` keeps its capacity
/// for good otherwise. Called after a sweep by the tables that expire their entries.
pub(crate) fn shrink_after_burst<K: Eq + std::hash::Hash, V>(
    table: &mut std::collections::HashMap<K, V>,
) {
    if left_by_a_burst(table.capacity(), table.len()) {
        table.shrink_to_fit();
    }
}

/// Whether a table of `capacity` holding `len` entries is mostly room a burst left (see
/// [`shrink_after_burst`]; the watch cache's own table asks it too).
pub(crate) fn left_by_a_burst(capacity: usize, len: usize) -> bool {
    capacity > 4 * len.max(64)
}
