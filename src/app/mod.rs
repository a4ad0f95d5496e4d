//! The process wiring of `run`: the controllers of every kind started as tasks
//! ([`controllers`]), the metrics registry ([`metrics`]), the `/metrics`, `/healthz` and
//! `/readyz` server ([`server`]) and the logs ([`telemetry`]).

pub mod controllers;
pub mod metrics;
pub mod server;
pub mod telemetry;
