//! Typed client for the platform's four API surfaces. Knows nothing of Kubernetes.

pub mod cli;
