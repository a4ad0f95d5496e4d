//! What an endpoint's workers cost at the catalog's price, and what a Budget admission
//! decides from it. Pure but for the catalog read in [`costs_of`].

use std::sync::Arc;

use tracing::warn;

use gpucloud_platform::domain::{
    CpuPrices, CpuWorkers, EndpointChange, GpuPools, ServerlessEndpoint,
};
use gpucloud_platform::domain::{ServerlessPrices, Unpriced};
use gpucloud_platform::{PlatformClient, PlatformError};

use super::DesiredEndpoint;

/// What decides an endpoint's minimum-workers cost: workers, GPUs per worker, GPU types
/// (or the pools that hold them), or for a CPU endpoint its flavours and vCPUs.
#[derive(Clone, Debug, PartialEq)]
pub struct CostShape {
    pub workers_min: i64,
    pub gpu_count: i64,
    pub gpu_type_ids: Vec<String>,
    /// Pools asked for and not yet resolved to their types by the catalog.
    pub pools: Option<GpuPools>,
    /// CPU workers, priced per vCPU instead of per GPU.
    pub cpu: Option<CpuWorkers>,
}

impl CostShape {
    pub fn of_desired(d: &DesiredEndpoint) -> Self {
        Self {
            workers_min: d.workers_min,
            gpu_count: d.gpu_count,
            gpu_type_ids: d.gpu_type_ids.clone(),
            pools: d.gpu_pools.clone(),
            cpu: d.cpu.clone(),
        }
    }

    pub fn of_record(r: &ServerlessEndpoint) -> Self {
        Self {
            workers_min: r.workers_min.unwrap_or_default(),
            gpu_count: r.gpu_count.unwrap_or(1),
            gpu_type_ids: r.gpus.types(),
            pools: None,
            cpu: r.cpu.clone(),
        }
    }

    /// The record with `change` made.
    pub fn after(r: &ServerlessEndpoint, change: &EndpointChange) -> Self {
        let mut shape = Self::of_record(r);
        if let Some(w) = change.workers_min {
            shape.workers_min = w;
        }
        if let Some(c) = change.gpu_count {
            shape.gpu_count = c;
        }
        if let Some(t) = &change.gpu_type_ids {
            shape.gpu_type_ids = t.clone();
        }
        if let Some(c) = &change.cpu {
            shape.cpu = Some(c.clone());
        }
        if let Some(p) = &change.gpu_pools {
            shape.gpu_type_ids.clear();
            shape.pools = Some(p.clone());
        }
        shape
    }

    /// The same shape with one worker: what each running worker costs.
    pub fn one_worker(&self) -> Self {
        Self {
            workers_min: 1,
            ..self.clone()
        }
    }

    pub fn cost(&self, prices: &ServerlessPrices) -> Result<f64, Unpriced> {
        prices.min_workers_cost(self.workers_min, self.gpu_count, &self.gpu_type_ids)
    }

    /// Pure: whether no minimum worker runs, so that the cost is 0 without the catalog.
    pub fn is_free(&self) -> bool {
        self.workers_min <= 0
    }
}

/// Pure: whether `change` may move what the minimum workers cost.
pub fn moves_cost(change: &EndpointChange) -> bool {
    change.workers_min.is_some()
        || change.gpu_count.is_some()
        || change.gpu_type_ids.is_some()
        || change.gpu_pools.is_some()
        || change.cpu.is_some()
}

/// What the Budget admission of an endpoint decides, given its cost before and after.
#[derive(Clone, Debug, PartialEq)]
pub enum CostAdmission {
    /// No reservation needed: nothing more to pay (a create of no minimum workers, a
    /// change that lowers or keeps the cost).
    Proceed,
    /// Reserve this cost per hour first.
    Reserve(f64),
}

/// Pure: a create (`before` is `None`) or a change to an endpoint costing `before`, which
/// would make it cost `after`.
pub fn cost_admission(before: Option<f64>, after: f64) -> CostAdmission {
    const EPSILON: f64 = 1e-9;
    match before {
        _ if after <= EPSILON => CostAdmission::Proceed,
        Some(b) if after <= b + EPSILON => CostAdmission::Proceed,
        _ => CostAdmission::Reserve(after),
    }
}

/// Reads the catalog's prices only when `shapes` need them: the cost of each, or why it
/// cannot be priced.
pub async fn costs_of(
    client: &PlatformClient,
    shapes: &[&CostShape],
) -> Result<Vec<Result<f64, Unpriced>>, PlatformError> {
    let prices = if shapes.iter().all(|s| s.is_free()) {
        Arc::new(ServerlessPrices::default())
    } else {
        client.catalog().serverless_prices().await?
    };
    // Pools are priced at the dearest of their types, as the catalog (cached) groups them.
    let pool_map = if shapes.iter().any(|s| s.pools.is_some() && !s.is_free()) {
        Some(client.catalog().pools().await?)
    } else {
        None
    };
    let cpu_prices = if shapes.iter().any(|s| s.cpu.is_some() && !s.is_free()) {
        client.endpoints().cpu_prices().await?
    } else {
        Arc::new(CpuPrices::default())
    };
    Ok(shapes
        .iter()
        .map(|s| match (&s.cpu, &s.pools, &pool_map) {
            (Some(cpu), _, _) => {
                cpu_prices.workers_cost(s.workers_min, &cpu.flavors, cpu.vcpu_count)
            }
            (None, Some(p), Some(map)) => CostShape {
                gpu_type_ids: map
                    .types_of(&p.pools, &p.excluded_types)
                    .into_iter()
                    .collect(),
                pools: None,
                ..(*s).clone()
            }
            .cost(&prices),
            _ => s.cost(&prices),
        })
        .collect())
}

/// The cost of `shape`, `None` when it cannot be known now (logged: it only leaves the
/// last figure in status).
pub async fn cost_or_none(client: &PlatformClient, shape: &CostShape, id: &str) -> Option<f64> {
    match costs_of(client, &[shape]).await {
        Ok(mut costs) => costs.pop().and_then(Result::ok),
        Err(e) => {
            warn!(endpoint = %id, error = %e, "could not read the catalog's serverless prices");
            None
        }
    }
}
