//! What the catalog says that the other facades reuse: which pool each GPU type belongs
//! to and what one serverless GPU (or vCPU) costs per hour, and the cache that keeps them between
//! calls. Pure data: the reads that fill the cache are [`super::catalog::Catalog`]'s.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::error::PlatformError;
use crate::v2;

type Result<T> = std::result::Result<T, PlatformError>;

/// How long a read of the catalog's pools is reused. Pools of GPU types change with the
/// platform's hardware, not with the account's use of it.
pub const POOLS_LIFETIME: Duration = Duration::from_secs(600);

/// GPU type id to pool, and back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolMap {
    pool_of: BTreeMap<String, String>,
}

impl PoolMap {
    pub fn new(pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        Self {
            pool_of: pairs.into_iter().collect(),
        }
    }

    /// The types of `pools`, without `excluded`.
    pub fn types_of(&self, pools: &[String], excluded: &[String]) -> BTreeSet<String> {
        self.pool_of
            .iter()
            .filter(|(t, p)| pools.contains(p) && !excluded.contains(t))
            .map(|(t, _)| t.clone())
            .collect()
    }

    /// The pools that hold `types` and the other types of those pools to exclude, so that
    /// the selection is exactly `types`. An unknown type is an invalid input naming it.
    fn pools_and_exclusions(&self, types: &[String]) -> Result<(Vec<String>, Vec<String>)> {
        let mut pools: Vec<String> = Vec::new();
        for t in types {
            let pool = self.pool_of.get(t).ok_or_else(|| {
                PlatformError::invalid_input(
                    "gpuTypeIds",
                    format!("GPU type {t:?} is not in the platform's catalog"),
                )
            })?;
            if !pools.contains(pool) {
                pools.push(pool.clone());
            }
        }
        let excluded = self
            .pool_of
            .iter()
            .filter(|(t, p)| pools.contains(p) && !types.contains(t))
            .map(|(t, _)| t.clone())
            .collect();
        Ok((pools, excluded))
    }

    /// The create-time GPU configuration for exactly `types`.
    pub fn selection_for(
        &self,
        types: &[String],
        count: u32,
    ) -> Result<v2::CreateEndpointGpuConfig> {
        let (pools, excluded) = self.pools_and_exclusions(types)?;
        Ok(v2::CreateEndpointGpuConfig {
            pools,
            options: v2::EndpointGpuOptions {
                excluded_types: (!excluded.is_empty()).then_some(excluded),
                count: Some(count),
                ..Default::default()
            },
        })
    }

    /// The update-time GPU configuration for exactly `types`; the count is sent only
    /// when it changes.
    pub fn update_selection_for(
        &self,
        types: &[String],
        changed_count: Option<u32>,
    ) -> Result<v2::UpdateEndpointGpuConfig> {
        let (pools, excluded) = self.pools_and_exclusions(types)?;
        Ok(v2::UpdateEndpointGpuConfig {
            pools: Some(pools),
            options: v2::EndpointGpuOptions {
                excluded_types: Some(excluded),
                count: changed_count,
                ..Default::default()
            },
        })
    }
}

/// What one GPU of each type costs per hour on a serverless worker, as the catalog says.
///
/// REST v2 gives a serverless price (`price.serverless`); a type without one is counted
/// at its secure-cloud price, as the platform bills a worker it has no serverless price
/// for. The seed API's catalog has no serverless price at all: there, the secure-cloud
/// on-demand price (`securePrice`, else `lowestPrice.uninterruptablePrice` in the secure
/// cloud) stands for it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerlessPrices {
    per_gpu: BTreeMap<String, f64>,
}

/// Why an endpoint's minimum workers cannot be priced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unpriced {
    /// The GPU types the catalog has no price for.
    pub types: Vec<String>,
}

impl ServerlessPrices {
    pub fn new(pairs: impl IntoIterator<Item = (String, f64)>) -> Self {
        Self {
            per_gpu: pairs.into_iter().filter(|(_, p)| *p > 0.0).collect(),
        }
    }

    /// Pure: what `workers_min` workers of `gpu_count` GPUs each cost per hour when they
    /// may run on any of `types`: at the dearest of them, so that a Budget never counts
    /// less than the platform may bill. No workers cost nothing, whatever the types. A
    /// type the catalog has no price for cannot be counted: `Err` names them.
    pub fn min_workers_cost(
        &self,
        workers_min: i64,
        gpu_count: i64,
        types: &[String],
    ) -> std::result::Result<f64, Unpriced> {
        if workers_min <= 0 {
            return Ok(0.0);
        }
        let unpriced: Vec<String> = types
            .iter()
            .filter(|t| !self.per_gpu.contains_key(*t))
            .cloned()
            .collect();
        if !unpriced.is_empty() || types.is_empty() {
            return Err(Unpriced { types: unpriced });
        }
        let per_gpu = types
            .iter()
            .filter_map(|t| self.per_gpu.get(t))
            .copied()
            .fold(0.0, f64::max);
        Ok(per_gpu * gpu_count.max(1) as f64 * workers_min as f64)
    }
}

/// What one vCPU of each CPU flavour costs per hour on a serverless worker: the catalog's
/// serverless price, else its secure-cloud one (as GPUs are priced).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CpuPrices {
    per_vcpu: BTreeMap<String, f64>,
}

impl CpuPrices {
    pub fn new(pairs: impl IntoIterator<Item = (String, f64)>) -> Self {
        Self {
            per_vcpu: pairs.into_iter().filter(|(_, p)| *p > 0.0).collect(),
        }
    }

    /// Pure: what `workers` CPU workers of `vcpu_count` vCPUs on any of `flavors` cost per hour: at the dearest of its
    /// flavours, so that a Budget never counts less than the platform may bill. `Err`
    /// names the flavours the catalog has no price for.
    pub fn workers_cost(
        &self,
        workers: i64,
        flavors: &[String],
        vcpu_count: i64,
    ) -> std::result::Result<f64, Unpriced> {
        if workers <= 0 {
            return Ok(0.0);
        }
        let unpriced: Vec<String> = flavors
            .iter()
            .filter(|f| !self.per_vcpu.contains_key(*f))
            .cloned()
            .collect();
        if !unpriced.is_empty() || flavors.is_empty() {
            return Err(Unpriced { types: unpriced });
        }
        let per_vcpu = flavors
            .iter()
            .filter_map(|f| self.per_vcpu.get(f))
            .copied()
            .fold(0.0, f64::max);
        Ok(per_vcpu * vcpu_count.max(1) as f64 * workers as f64)
    }
}

/// The cached pool map and prices, shared by every clone of a client (all keys: the
/// catalog is the platform's, not the account's).
#[derive(Debug, Default)]
pub(crate) struct CatalogCache {
    pub(crate) pools: Mutex<Option<(Instant, Arc<PoolMap>)>>,
    pub(crate) prices: Mutex<Option<(Instant, Arc<ServerlessPrices>)>>,
    /// What a vCPU of each CPU flavour costs on a serverless worker (CPU endpoints).
    pub(crate) cpu_prices: Mutex<Option<(Instant, Arc<CpuPrices>)>>,
}
