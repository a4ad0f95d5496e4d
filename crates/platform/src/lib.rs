//! Typed client for the platform's four API surfaces. Knows nothing of Kubernetes.
//!
//! ```no_run
//! # async fn demo() -> Result<(), gpucloud_platform::PlatformError> {
//! use gpucloud_platform::{PlatformClient, PlatformConfig, JobRequest};
//! let client = PlatformClient::new(PlatformConfig::from_env()?)?;
//! let job = client.jobs().run("my-endpoint", &JobRequest::new(serde_json::json!({"x": 1}))).await?;
//! let pods = client.graphql().my_pods().await?;
//! # let _ = (job, pods); Ok(()) }
//! ```
//!
//! - [`config`]: URLs per surface, the [`ApiKey`] secret, timeouts, retry and rate limits.
//! - [`error`]: [`PlatformError`] and the [`ErrorClass`] callers act on.
//! - [`jobs`], [`rest`], [`registry`], [`graphql`]: one typed call per operation of the
//!   seed surfaces; [`v2`]: the REST v2 API that replaces REST v1 and GraphQL.
//! - [`PlatformClient`] (in `client`): the value every call starts from.
//! - `transport`: auth per surface, limits, timeouts, retries, metrics, logs.
//! - `log_capture` (feature `test-support`, for tests only): every log line of the process,
//!   for suites that assert no API key or Secret value was ever written.

mod client;
pub mod config;
pub mod domain;
pub mod error;
pub mod graphql;
pub mod jobs;
#[cfg(feature = "test-support")]
pub mod log_capture;
pub mod metrics;
pub mod operation;
pub mod ratelimit;
pub mod registry;
pub mod rest;
mod streamed_json;
mod transport;
pub mod types;
pub mod v2;
pub mod validate;

pub use client::PlatformClient;
pub use config::{ApiKey, BaseUrls, PlatformApi, PlatformConfig, RetryConfig, Timeouts};
pub use error::{ErrorClass, PlatformError};
pub use graphql::Graphql;
pub use graphql::types::{
    CloudType, DeployPodInput, DeployedPod, EnvVar, GpuType, LowestPrice, LowestPriceInput, Pod,
    PodState, ResumePodInput,
};
pub use jobs::{Jobs, PollOptions};
pub use metrics::ClientMetrics;
pub use operation::{Operation, Surface};
pub use ratelimit::{RateLimits, RateSpec};
pub use registry::Registry;
pub use rest::Rest;
pub use types::*;
pub use v2::V2;
