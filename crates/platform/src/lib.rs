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
//! - `transport`: auth per surface, limits, timeouts, retries, metrics, logs.

pub mod config;
pub mod domain;
pub mod error;
pub mod graphql;
pub mod jobs;
pub mod metrics;
pub mod operation;
pub mod ratelimit;
pub mod registry;
pub mod rest;
mod transport;
pub mod types;
pub mod v2;
pub mod validate;

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

use transport::Transport;

/// The platform client: one connection pool, one set of rate limiters and metrics, and an
/// API key. `Clone + Send + Sync`; clones share everything.
#[derive(Clone, Debug)]
pub struct PlatformClient {
    t: Transport,
    /// The catalog facts the domain facades reuse across calls and keys.
    catalog: std::sync::Arc<domain::catalog::CatalogCache>,
}

impl PlatformClient {
    /// Builds a client with fresh metrics.
    pub fn new(config: PlatformConfig) -> Result<Self, PlatformError> {
        Self::with_metrics(config, ClientMetrics::new())
    }

    /// Builds a client that records into `metrics` (registered by the caller).
    pub fn with_metrics(
        config: PlatformConfig,
        metrics: ClientMetrics,
    ) -> Result<Self, PlatformError> {
        Ok(Self {
            t: Transport::new(config, metrics)?,
            catalog: Default::default(),
        })
    }

    /// The same client speaking with another key (for example the one an object's Secret
    /// names). Shares the pool, the limiters and the metrics; costs two reference counts.
    pub fn with_api_key(&self, key: ApiKey) -> Self {
        Self {
            t: self.t.with_key(key),
            catalog: self.catalog.clone(),
        }
    }

    /// Network volumes, on whichever backend the configuration chose.
    pub fn volumes(&self) -> domain::Volumes {
        domain::Volumes::new(self.clone())
    }

    /// Serverless endpoints, on whichever backend the configuration chose.
    pub fn endpoints(&self) -> domain::Endpoints {
        domain::Endpoints::new(self.clone())
    }

    /// GPU pods, on whichever backend the configuration chose.
    pub fn pods(&self) -> domain::Pods {
        domain::Pods::new(self.clone())
    }

    /// Templates, on whichever backend the configuration chose.
    pub fn templates(&self) -> domain::Templates {
        domain::Templates::new(self.clone())
    }

    /// Container registry credentials, on whichever backend the configuration chose.
    pub fn registries(&self) -> domain::RegistryCredentials {
        domain::RegistryCredentials::new(self.clone())
    }

    /// The GPU catalog as the facades need it.
    pub fn catalog(&self) -> domain::Catalog {
        domain::Catalog::new(self.clone())
    }

    pub(crate) fn catalog_cache(&self) -> &domain::catalog::CatalogCache {
        &self.catalog
    }

    /// Job API of serverless endpoints.
    pub fn jobs(&self) -> Jobs {
        Jobs::new(self.t.clone())
    }

    /// REST management API.
    pub fn rest(&self) -> Rest {
        Rest::new(self.t.clone())
    }

    /// Registry delegation API.
    pub fn registry(&self) -> Registry {
        Registry::new(self.t.clone())
    }

    /// GraphQL API.
    pub fn graphql(&self) -> Graphql {
        Graphql::new(self.t.clone())
    }

    /// REST v2 API.
    pub fn v2(&self) -> V2 {
        V2::new(self.t.clone())
    }

    /// The API generation the configuration chose (the client itself offers both).
    pub fn api(&self) -> PlatformApi {
        self.t.shared.api
    }

    /// The base URLs in use.
    pub fn urls(&self) -> &BaseUrls {
        self.t.urls()
    }

    /// The client's metrics.
    pub fn metrics(&self) -> &ClientMetrics {
        &self.t.shared.metrics
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync_clone<T: Send + Sync + Clone + 'static>() {}

    #[test]
    fn client_is_send_sync_clone() {
        assert_send_sync_clone::<PlatformClient>();
        assert_send_sync_clone::<Jobs>();
        assert_send_sync_clone::<Graphql>();
    }

    #[test]
    fn with_api_key_shares_the_pool_and_hides_both_keys() {
        let cfg = PlatformConfig::new(BaseUrls::default(), ApiKey::new("first-key").unwrap());
        let a = PlatformClient::new(cfg).unwrap();
        let b = a.with_api_key(ApiKey::new("second-key").unwrap());
        assert!(std::sync::Arc::ptr_eq(&a.t.shared, &b.t.shared));
        let dbg = format!("{a:?} {b:?}");
        assert!(
            !dbg.contains("first-key") && !dbg.contains("second-key"),
            "{dbg}"
        );
    }
}
