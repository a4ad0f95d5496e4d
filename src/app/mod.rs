//! The process wiring of `run`: the word to stop ([`stop`]), the conversion webhook
//! ([`conversion`]), the metrics registry ([`metrics`]), the `/metrics`, `/healthz` and
//! `/readyz` server with its HTTPS and its token check on `/metrics` ([`server`]), the stall
//! limit of the liveness probe ([`liveness`]), the logs ([`telemetry`]), the Lease a process
//! holds before it acts ([`lease`]) through its elector ([`election`]), and the terms of
//! the controllers, which run while the process leads ([`terms`]).

pub mod conversion;
pub mod election;
pub mod lease;
pub mod liveness;
pub mod metrics;
pub mod server;
pub mod stop;
pub mod telemetry;
pub mod terms;
