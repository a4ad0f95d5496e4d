//! What kind of endpoint and workers a spec asks for beyond the queue-and-GPU-types one
//! both backends know: a load balancer with its ports, GPUs by pool, CPU workers; and the
//! workers an endpoint runs, by state. The REST v2 bodies and readings of them are here;
//! the seed API has none of it (`seed_unsupported`, beside the endpoint's spec, names what
//! it cannot do). Also the
//! cached read of the CPU flavours' prices, for what CPU workers cost.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use super::catalog_cache::{CpuPrices, POOLS_LIFETIME};
use crate::PlatformClient;
use crate::config::PlatformApi;
use crate::error::PlatformError;
use crate::v2;

/// The env variable of a load balancer's serving port (REST v2 reads it from the env).
pub const PORT_ENV: &str = "PORT";
/// The env variable of a load balancer's health-check port.
pub const PORT_HEALTH_ENV: &str = "PORT_HEALTH";
/// The env variable of a load balancer's health-check path.
pub const HEALTH_CHECK_PATH_ENV: &str = "HEALTH_CHECK_PATH";

/// The platform's own defaults when an env variable is unset.
const DEFAULT_PORT: i64 = 80;
const DEFAULT_HEALTH_PATH: &str = "/ping";

/// How requests reach the workers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Routing {
    /// Through the platform's job queue.
    Queue,
    /// Straight to the workers' HTTP server, behind a load balancer.
    LoadBalancer(LoadBalancerPorts),
}

/// Where a load balancer's workers serve and are checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadBalancerPorts {
    pub port: i64,
    pub health_port: i64,
    pub health_path: String,
}

impl Default for LoadBalancerPorts {
    fn default() -> Self {
        Self {
            port: DEFAULT_PORT,
            health_port: DEFAULT_PORT,
            health_path: DEFAULT_HEALTH_PATH.into(),
        }
    }
}

impl LoadBalancerPorts {
    /// Pure: the three env variables the platform reads them from.
    pub fn env(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (PORT_ENV.to_string(), self.port.to_string()),
            (PORT_HEALTH_ENV.to_string(), self.health_port.to_string()),
            (HEALTH_CHECK_PATH_ENV.to_string(), self.health_path.clone()),
        ])
    }

    /// Pure: the ports an endpoint's env gives, the platform's defaults for what is unset
    /// (or not a number).
    pub fn from_env(env: &BTreeMap<String, String>) -> Self {
        let port = |key: &str| {
            env.get(key)
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(DEFAULT_PORT)
        };
        Self {
            port: port(PORT_ENV),
            health_port: port(PORT_HEALTH_ENV),
            health_path: env
                .get(HEALTH_CHECK_PATH_ENV)
                .cloned()
                .unwrap_or_else(|| DEFAULT_HEALTH_PATH.into()),
        }
    }
}

/// GPUs by the catalog's serverless pools, minus some types.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuPools {
    pub pools: Vec<String>,
    pub excluded_types: Vec<String>,
}

impl GpuPools {
    /// Pure: the same selection, whatever the order the platform lists it in.
    pub fn same_as(&self, other: &GpuPools) -> bool {
        let sorted = |v: &[String]| {
            let mut v = v.to_vec();
            v.sort();
            v
        };
        sorted(&self.pools) == sorted(&other.pools)
            && sorted(&self.excluded_types) == sorted(&other.excluded_types)
    }
}

/// CPU workers: the eligible flavours in priority order, and the vCPUs of each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuWorkers {
    pub flavors: Vec<String>,
    pub vcpu_count: i64,
}

impl CpuWorkers {
    /// The REST v2 body: one configuration per flavour, all at the same size.
    pub(crate) fn to_v2(&self, vcpu_count: u32) -> Vec<v2::CreateCpuConfig> {
        self.flavors
            .iter()
            .map(|f| v2::CreateCpuConfig {
                id: f.clone(),
                vcpu_count,
            })
            .collect()
    }

    /// Pure: the CPU workers a REST v2 record reports, `None` for a GPU endpoint. A record
    /// of several sizes reads as the first one's (the operator only makes one size).
    pub(crate) fn from_v2(cpu: Option<&Vec<v2::CpuConfig>>) -> Option<Self> {
        let cpu = cpu.filter(|c| !c.is_empty())?;
        Some(Self {
            flavors: cpu.iter().map(|c| c.id.clone()).collect(),
            vcpu_count: i64::from(cpu[0].vcpu_count),
        })
    }
}

/// An endpoint's workers by state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkerStates {
    pub running: i64,
    pub idle: i64,
    pub initializing: i64,
    pub throttled: i64,
    pub unhealthy: i64,
    pub total: i64,
}

impl WorkerStates {
    /// Pure: the summary of a REST v2 workers list.
    pub(crate) fn from_v2(s: &v2::WorkerSummary) -> Self {
        Self {
            running: i64::from(s.running),
            idle: i64::from(s.idle),
            initializing: i64::from(s.initializing),
            throttled: i64::from(s.throttled),
            unhealthy: i64::from(s.unhealthy),
            total: i64::from(s.total),
        }
    }

    /// Workers that are up and billed: running a request or idle, waiting for one.
    pub fn serving(&self) -> i64 {
        self.running + self.idle
    }
}

/// The CPU flavours' serverless prices, read at most once per [`POOLS_LIFETIME`] (one
/// `GET /v2/catalog/cpus`). The seed API has no CPU endpoints: no prices, no call.
pub(crate) async fn cpu_prices(client: &PlatformClient) -> Result<Arc<CpuPrices>, PlatformError> {
    let cache = client.catalog_cache();
    if let Some((at, prices)) = cache.cpu_prices.lock().as_ref()
        && at.elapsed() < POOLS_LIFETIME
    {
        return Ok(prices.clone());
    }
    let prices = Arc::new(match client.api() {
        PlatformApi::Seed => CpuPrices::default(),
        PlatformApi::V2 => {
            let cpus = client.v2().list_cpu_types(&v2::CpuQuery::default()).await?;
            CpuPrices::new(cpus.into_iter().map(|c| {
                let price = if c.price.serverless_per_vcpu > 0.0 {
                    c.price.serverless_per_vcpu
                } else {
                    c.price.secure_per_vcpu
                };
                (c.id, price)
            }))
        }
    });
    *cache.cpu_prices.lock() = Some((Instant::now(), prices.clone()));
    Ok(prices)
}

/// A load balancer's URLs: the base of the workers' own paths, and the health check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadBalancerUrls {
    pub base: String,
    pub health: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_go_to_the_env_and_back() {
        let ports = LoadBalancerPorts {
            port: 8000,
            health_port: 8001,
            health_path: "/healthz".into(),
        };
        let env = ports.env();
        assert_eq!(env["PORT"], "8000");
        assert_eq!(env["PORT_HEALTH"], "8001");
        assert_eq!(env["HEALTH_CHECK_PATH"], "/healthz");
        assert_eq!(LoadBalancerPorts::from_env(&env), ports);
    }

    #[test]
    fn unset_ports_read_as_the_platform_defaults() {
        let mut env = BTreeMap::new();
        env.insert("PORT".to_string(), "nope".to_string());
        assert_eq!(
            LoadBalancerPorts::from_env(&env),
            LoadBalancerPorts::default()
        );
    }

    #[test]
    fn cpu_workers_cost_the_dearest_flavour_per_vcpu() {
        let prices = CpuPrices::new([("cpu3c".to_string(), 0.04), ("cpu5c".to_string(), 0.05)]);
        let cpu = CpuWorkers {
            flavors: vec!["cpu3c".into(), "cpu5c".into()],
            vcpu_count: 4,
        };
        let cost = prices.workers_cost(2, &cpu.flavors, 4).unwrap();
        assert!((cost - 0.4).abs() < 1e-9, "{cost}");
        assert_eq!(prices.workers_cost(0, &cpu.flavors, 4), Ok(0.0));
        let unknown = CpuWorkers {
            flavors: vec!["cpu9x".into()],
            vcpu_count: 4,
        };
        assert_eq!(
            prices.workers_cost(1, &unknown.flavors, unknown.vcpu_count),
            Err(super::super::catalog_cache::Unpriced {
                types: vec!["cpu9x".into()]
            })
        );
    }

    #[test]
    fn pools_compare_without_order() {
        let a = GpuPools {
            pools: vec!["A".into(), "B".into()],
            excluded_types: vec!["x".into()],
        };
        let b = GpuPools {
            pools: vec!["B".into(), "A".into()],
            excluded_types: vec!["x".into()],
        };
        assert!(a.same_as(&b));
        let c = GpuPools {
            excluded_types: vec![],
            ..b
        };
        assert!(!a.same_as(&c));
    }
}
