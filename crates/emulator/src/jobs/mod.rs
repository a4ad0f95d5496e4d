//! The serverless job API: job model, built-in handler, per-endpoint runtime with workers,
//! webhooks and the HTTP routes.

pub mod handler;
pub mod model;
pub mod rollout;
pub mod routes;
pub mod runtime;
pub mod webhook;
