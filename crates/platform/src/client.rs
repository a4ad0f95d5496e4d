//! The client value itself: what every clone shares (connection pool, limiters, metrics,
//! catalog cache) and the key it speaks with. The per-surface calls and the domain facades
//! hang off it from their own modules.

use std::sync::Arc;

use crate::config::{ApiKey, BaseUrls, PlatformApi, PlatformConfig};
use crate::domain::catalog_cache::CatalogCache;
use crate::error::PlatformError;
use crate::graphql::Graphql;
use crate::jobs::Jobs;
use crate::metrics::ClientMetrics;
use crate::registry::Registry;
use crate::rest::Rest;
use crate::transport::Transport;
use crate::v2::V2;

/// The platform client: one connection pool, one set of rate limiters and metrics, and an
/// API key. `Clone + Send + Sync`; clones share everything.
#[derive(Clone, Debug)]
pub struct PlatformClient {
    t: Transport,
    /// The catalog facts the domain facades reuse across calls and keys.
    catalog: Arc<CatalogCache>,
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

    /// The catalog facts every clone shares (see [`crate::domain::Catalog`]).
    pub(crate) fn catalog_cache(&self) -> &CatalogCache {
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
