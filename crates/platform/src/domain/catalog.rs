//! The GPU catalog, as the other facades need it: which pool each GPU type belongs to
//! (REST v2 selects serverless GPUs by pool) and what one serverless GPU costs per hour
//! (a Budget counts an endpoint's minimum workers at it), cached because it changes
//! rarely.

use std::sync::Arc;
use std::time::Instant;

use super::super::config::PlatformApi;
use super::super::error::PlatformError;
use super::super::graphql::types::LowestPriceInput;
use super::super::{PlatformClient, v2};
use super::pods::GpuOffer;

pub use super::catalog_cache::{POOLS_LIFETIME, PoolMap, ServerlessPrices, Unpriced};

type Result<T> = std::result::Result<T, PlatformError>;

/// Catalog reads; obtained from [`PlatformClient::catalog`].
#[derive(Clone, Debug)]
pub struct Catalog {
    client: PlatformClient,
}

impl PlatformClient {
    /// The GPU catalog as the facades need it.
    pub fn catalog(&self) -> Catalog {
        Catalog::new(self.clone())
    }
}

impl Catalog {
    pub(crate) fn new(client: PlatformClient) -> Self {
        Self { client }
    }

    pub(super) fn client(&self) -> &PlatformClient {
        &self.client
    }

    /// GPU type to pool, read at most once per [`POOLS_LIFETIME`].
    pub async fn pools(&self) -> Result<Arc<PoolMap>> {
        let cache = self.client.catalog_cache();
        if let Some((at, map)) = cache.pools.lock().as_ref()
            && at.elapsed() < POOLS_LIFETIME
        {
            return Ok(map.clone());
        }
        let gpus = self
            .client
            .v2()
            .list_gpu_types(&v2::GpuQuery::default())
            .await?;
        let prices = Arc::new(v2_serverless_prices(&gpus));
        let map = Arc::new(PoolMap::new(
            gpus.into_iter().filter_map(|g| Some((g.id, g.pool?))),
        ));
        // One read, both answers: the prices need no second call.
        *cache.prices.lock() = Some((Instant::now(), prices));
        *cache.pools.lock() = Some((Instant::now(), map.clone()));
        Ok(map)
    }

    /// What one serverless GPU of each type costs per hour (see [`ServerlessPrices`]),
    /// read at most once per [`POOLS_LIFETIME`]: on REST v2 the same read as the pools.
    pub async fn serverless_prices(&self) -> Result<Arc<ServerlessPrices>> {
        let cache = self.client.catalog_cache();
        if let Some((at, prices)) = cache.prices.lock().as_ref()
            && at.elapsed() < POOLS_LIFETIME
        {
            return Ok(prices.clone());
        }
        let prices = match self.client.api() {
            PlatformApi::V2 => {
                self.pools().await?;
                if let Some((_, prices)) = cache.prices.lock().as_ref() {
                    return Ok(prices.clone());
                }
                // Unreachable unless the cache was cleared in between: read again.
                let gpus = self
                    .client
                    .v2()
                    .list_gpu_types(&v2::GpuQuery::default())
                    .await?;
                Arc::new(v2_serverless_prices(&gpus))
            }
            PlatformApi::Seed => {
                let secure = LowestPriceInput {
                    gpu_count: Some(1),
                    secure_cloud: Some(true),
                };
                let types = self.client.graphql().gpu_types(None, &secure).await?;
                Arc::new(ServerlessPrices::new(types.into_iter().filter_map(|g| {
                    let price = g
                        .secure_price
                        .or(g.lowest_price.and_then(|l| l.uninterruptable_price))?;
                    Some((g.id, price))
                })))
            }
        };
        *cache.prices.lock() = Some((Instant::now(), prices.clone()));
        Ok(prices)
    }
}

/// Pure: the serverless price per GPU of each type of a REST v2 catalog answer, else its
/// secure-cloud price (see [`ServerlessPrices`]).
pub fn v2_serverless_prices(gpus: &[v2::GpuType]) -> ServerlessPrices {
    ServerlessPrices::new(gpus.iter().map(|g| {
        let price = g.price.serverless.unwrap_or(g.price.secure);
        (g.id.clone(), price)
    }))
}

impl Catalog {
    /// Where `count` GPUs can be placed, per GPU type (and per data center where the
    /// backend tells them apart), in `cloud` (`None`: both). One call on the seed API; on
    /// REST v2 one per cloud asked for.
    pub async fn gpu_offers(&self, count: i32, cloud: Option<bool>) -> Result<Vec<GpuOffer>> {
        match self.client.api() {
            PlatformApi::Seed => {
                let price = LowestPriceInput {
                    gpu_count: Some(count),
                    secure_cloud: cloud,
                };
                let types = self.client.graphql().gpu_types(None, &price).await?;
                Ok(types
                    .into_iter()
                    .map(|g| {
                        let lp = g.lowest_price.unwrap_or(super::super::LowestPrice {
                            uninterruptable_price: None,
                            stock_status: None,
                            available_gpu_counts: Vec::new(),
                        });
                        GpuOffer {
                            gpu_type_id: g.id,
                            data_center_id: None,
                            secure_cloud: cloud,
                            price_per_hour: lp.uninterruptable_price,
                            in_stock: lp
                                .stock_status
                                .as_deref()
                                .is_some_and(|s| !s.eq_ignore_ascii_case("none")),
                            gpu_counts: lp.available_gpu_counts,
                            cuda_versions: Vec::new(),
                        }
                    })
                    .collect())
            }
            PlatformApi::V2 => {
                let clouds: Vec<bool> = match cloud {
                    Some(c) => vec![c],
                    None => vec![true, false],
                };
                let mut offers = Vec::new();
                for secure in clouds {
                    let query = v2::GpuQuery {
                        availability: true,
                        products: vec![v2::Product::Pod],
                        count: u32::try_from(count.max(1)).ok(),
                        cloud: Some(if secure {
                            v2::Cloud::Secure
                        } else {
                            v2::Cloud::Community
                        }),
                        ..Default::default()
                    };
                    let types = self.client.v2().list_gpu_types(&query).await?;
                    offers.extend(v2_offers(types, count, secure));
                }
                Ok(offers)
            }
        }
    }
}

/// The offers of one catalog answer (for `count` GPUs in one cloud): one per GPU type and
/// data center, most available first, as the platform lists them.
pub fn v2_offers(types: Vec<v2::GpuType>, count: i32, secure: bool) -> Vec<GpuOffer> {
    let mut offers = Vec::new();
    for g in types {
        let per_gpu = if secure {
            g.price.secure
        } else {
            g.price.community
        };
        let offered = if secure { g.secure } else { g.community };
        let price = (offered && per_gpu > 0.0).then(|| per_gpu * f64::from(count.max(1)));
        let cuda: Vec<String> = g
            .cuda_versions
            .iter()
            .flatten()
            .filter(|c| c.available)
            .map(|c| c.version.clone())
            .collect();
        let mut dcs = g.data_centers.clone().unwrap_or_default();
        dcs.sort_by_key(|d| std::cmp::Reverse(level(&d.availability)));
        if dcs.is_empty() {
            // Known to the catalog, in no data center: still a known type, never placed.
            offers.push(GpuOffer {
                gpu_type_id: g.id.clone(),
                data_center_id: None,
                secure_cloud: Some(secure),
                price_per_hour: price,
                in_stock: false,
                gpu_counts: Vec::new(),
                cuda_versions: cuda.clone(),
            });
        }
        for dc in dcs {
            let in_stock = level(&dc.availability) > 0;
            offers.push(GpuOffer {
                gpu_type_id: g.id.clone(),
                data_center_id: Some(dc.id),
                secure_cloud: Some(secure),
                price_per_hour: price,
                in_stock,
                // The catalog's availability is for the count asked.
                gpu_counts: if in_stock {
                    vec![i64::from(count)]
                } else {
                    Vec::new()
                },
                cuda_versions: cuda.clone(),
            });
        }
    }
    offers
}

/// An availability level as a number: 0 is none, 3 is high.
pub(super) fn level(a: &v2::AvailabilityLevel) -> u8 {
    match a {
        v2::AvailabilityLevel::High => 3,
        v2::AvailabilityLevel::Medium => 2,
        v2::AvailabilityLevel::Low => 1,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map() -> PoolMap {
        PoolMap::new([
            ("NVIDIA A100 80GB PCIe".to_string(), "AMPERE_80".to_string()),
            ("NVIDIA A100-SXM4-80GB".to_string(), "AMPERE_80".to_string()),
            ("NVIDIA L40S".to_string(), "ADA_48_PRO".to_string()),
            ("NVIDIA RTX 6000 Ada".to_string(), "ADA_48_PRO".to_string()),
        ])
    }

    #[test]
    fn a_selection_names_the_pools_and_excludes_the_rest_of_them() {
        let sel = map()
            .selection_for(&["NVIDIA L40S".into(), "NVIDIA A100 80GB PCIe".into()], 2)
            .unwrap();
        assert_eq!(sel.pools, vec!["ADA_48_PRO", "AMPERE_80"]);
        let mut excluded = sel.options.excluded_types.unwrap();
        excluded.sort();
        assert_eq!(
            excluded,
            vec!["NVIDIA A100-SXM4-80GB", "NVIDIA RTX 6000 Ada"]
        );
        assert_eq!(sel.options.count, Some(2));
    }

    #[test]
    fn reading_back_gives_exactly_the_types_asked_for() {
        let m = map();
        let types = vec!["NVIDIA L40S".to_string()];
        let sel = m.selection_for(&types, 1).unwrap();
        let back = m.types_of(&sel.pools, &sel.options.excluded_types.unwrap_or_default());
        assert_eq!(back, types.into_iter().collect());
    }

    #[test]
    fn min_workers_are_counted_at_the_dearest_allowed_type() {
        let prices = ServerlessPrices::new([
            ("A40".to_string(), 0.48),
            ("L40S".to_string(), 0.95),
            ("FREE".to_string(), 0.0),
        ]);
        let types = |ts: &[&str]| ts.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        // (workersMin, gpuCount, types, cost; None: cannot be priced)
        let cases: &[(i64, i64, &[&str], Option<f64>)] = &[
            // workersMin x gpuCount x the dearest price.
            (2, 1, &["A40"], Some(0.96)),
            (1, 2, &["A40", "L40S"], Some(1.90)),
            (3, 4, &["L40S", "A40"], Some(11.40)),
            // No minimum workers: nothing, even on types the catalog cannot price.
            (0, 8, &["A40"], Some(0.0)),
            (0, 1, &["B300"], Some(0.0)),
            // A type without a price cannot be counted (a zero price is none).
            (1, 1, &["A40", "B300"], None),
            (1, 1, &["FREE"], None),
        ];
        for (workers, gpus, ts, want) in cases {
            let got = prices.min_workers_cost(*workers, *gpus, &types(ts)).ok();
            match (got, want) {
                (Some(g), Some(w)) => assert!((g - w).abs() < 1e-9, "{ts:?}: {g} != {w}"),
                (None, None) => {}
                (g, w) => panic!("{workers} x {gpus} on {ts:?}: {g:?}, wanted {w:?}"),
            }
        }
        let err = prices
            .min_workers_cost(1, 1, &types(&["A40", "B300", "FREE"]))
            .unwrap_err();
        assert_eq!(
            err.types,
            types(&["B300", "FREE"]),
            "names what it cannot price"
        );
    }

    #[test]
    fn v2_prices_are_the_serverless_ones_else_secure() {
        let gpu = |id: &str, secure: f64, serverless: Option<f64>| v2::GpuType {
            id: id.into(),
            price: v2::GpuPrice {
                secure,
                community: 0.1,
                serverless,
            },
            ..Default::default()
        };
        let prices = v2_serverless_prices(&[
            gpu("A40", 0.40, Some(0.48)),
            gpu("OLD", 0.30, None),
            gpu("NONE", 0.0, None),
        ]);
        let cost = |t: &str| prices.min_workers_cost(1, 1, &[t.to_string()]);
        assert_eq!(cost("A40"), Ok(0.48));
        assert_eq!(cost("OLD"), Ok(0.30));
        assert!(cost("NONE").is_err());
    }

    #[test]
    fn an_unknown_type_names_the_field() {
        let err = map().selection_for(&["NVIDIA B300".into()], 1).unwrap_err();
        assert!(err.to_string().contains("gpuTypeIds"), "{err}");
    }
}
