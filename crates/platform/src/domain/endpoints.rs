//! Serverless endpoints, whichever backend serves them.
//!
//! The two backends select GPUs differently: the seed API takes GPU type ids in priority
//! order; REST v2 takes the catalog's pools, minus excluded types, with no order. A record
//! read back therefore carries a [`GpuSelection`] that says whether it matches a list of
//! types on its backend's terms, instead of pretending to hold the list itself.

use std::collections::BTreeSet;

use super::super::config::PlatformApi;
use super::super::error::PlatformError;
use super::super::{EndpointCreate, EndpointOptions, EndpointUpdate, PlatformClient, v2};
use super::catalog::PoolMap;
pub use super::catalog_cache::CpuPrices;
pub use super::endpoint_shape::{
    CpuWorkers, GpuPools, LoadBalancerPorts, LoadBalancerUrls, Routing, WorkerStates,
};

type Result<T> = std::result::Result<T, PlatformError>;

/// How an endpoint adds workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scaler {
    /// Add a worker when a job has waited this many seconds.
    QueueDelay(i64),
    /// One worker per this many queued requests.
    RequestCount(i64),
}

/// The endpoint a spec asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointSpec {
    pub name: String,
    pub template_id: String,
    pub routing: Routing,
    /// In priority order (the seed API honours the order; REST v2 cannot). Empty when
    /// the workers are chosen by `gpu_pools` or are CPU workers.
    pub gpu_type_ids: Vec<String>,
    /// GPUs by pool, sent as they are (REST v2 only).
    pub gpu_pools: Option<GpuPools>,
    /// CPU workers instead of GPU ones (REST v2 only).
    pub cpu: Option<CpuWorkers>,
    pub gpu_count: i64,
    pub workers_min: i64,
    pub workers_max: i64,
    pub idle_timeout_s: i64,
    pub scaler: Scaler,
    pub execution_timeout_ms: Option<i64>,
    pub flashboot: bool,
    pub network_volume_id: Option<String>,
}

/// The GPUs an endpoint may use, as its backend records them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GpuSelection {
    /// GPU type ids in priority order (seed).
    Ordered(Vec<String>),
    /// The GPU types the pools and exclusions resolve to (REST v2); order is not kept.
    Unordered(BTreeSet<String>),
}

impl GpuSelection {
    /// Whether this selection is what `wanted` asks for on this backend.
    pub fn matches(&self, wanted: &[String]) -> bool {
        match self {
            Self::Ordered(have) => have == wanted,
            Self::Unordered(have) => *have == wanted.iter().cloned().collect(),
        }
    }

    /// The GPU types, for status: in priority order where the backend keeps one.
    pub fn types(&self) -> Vec<String> {
        match self {
            Self::Ordered(t) => t.clone(),
            Self::Unordered(t) => t.iter().cloned().collect(),
        }
    }
}

/// An endpoint as both backends describe it. Fields the platform did not report are `None`.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerlessEndpoint {
    pub id: String,
    pub name: String,
    /// `None` where the backend does not report it (REST v2).
    pub template_id: Option<String>,
    /// `None` where the backend does not say (an older REST v2 answer).
    pub routing: Option<Routing>,
    pub gpus: GpuSelection,
    /// The pools and exclusions as sent (REST v2), `None` on the seed API.
    pub pools: Option<GpuPools>,
    /// A CPU endpoint's workers (REST v2).
    pub cpu: Option<CpuWorkers>,
    /// A load balancer's URLs.
    pub load_balancer_urls: Option<LoadBalancerUrls>,
    pub gpu_count: Option<i64>,
    pub workers_min: Option<i64>,
    pub workers_max: Option<i64>,
    pub idle_timeout_s: Option<i64>,
    pub scaler: Option<Scaler>,
    pub execution_timeout_ms: Option<i64>,
    pub flashboot: Option<bool>,
    pub network_volume_id: Option<String>,
    /// Base URL of the endpoint's job API (`.../{id}/`), where `run`, `status`, `health` live.
    pub job_api_url: String,
}

/// Only the fields to change; `None` leaves a field as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointChange {
    pub name: Option<String>,
    pub template_id: Option<String>,
    pub gpu_type_ids: Option<Vec<String>>,
    pub gpu_pools: Option<GpuPools>,
    pub cpu: Option<CpuWorkers>,
    /// A load balancer's ports; sent as the env the platform reads them from, so it goes
    /// with `template_id` (REST v2 replaces the whole env, merged with the template's).
    pub load_balancer: Option<LoadBalancerPorts>,
    pub gpu_count: Option<i64>,
    pub workers_min: Option<i64>,
    pub workers_max: Option<i64>,
    pub idle_timeout_s: Option<i64>,
    pub scaler: Option<Scaler>,
    pub execution_timeout_ms: Option<i64>,
    pub flashboot: Option<bool>,
    pub network_volume_id: Option<String>,
}

impl EndpointChange {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// The names of the fields that change, for Events.
    pub fn fields(&self) -> Vec<&'static str> {
        [
            ("name", self.name.is_some()),
            ("templateId", self.template_id.is_some()),
            ("gpuTypeIds", self.gpu_type_ids.is_some()),
            ("gpu.pools", self.gpu_pools.is_some()),
            ("cpu", self.cpu.is_some()),
            ("loadBalancer", self.load_balancer.is_some()),
            ("gpuCount", self.gpu_count.is_some()),
            ("workersMin", self.workers_min.is_some()),
            ("workersMax", self.workers_max.is_some()),
            ("idleTimeoutSeconds", self.idle_timeout_s.is_some()),
            ("scaler", self.scaler.is_some()),
            ("executionTimeoutMs", self.execution_timeout_ms.is_some()),
            ("flashboot", self.flashboot.is_some()),
            ("networkVolume", self.network_volume_id.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect()
    }

    /// Whether the change makes the platform roll workers over to a new release (REST v2:
    /// anything but the name and the worker limits).
    pub fn rolls_workers(&self) -> bool {
        let limits_only = EndpointChange {
            name: self.name.clone(),
            workers_min: self.workers_min,
            workers_max: self.workers_max,
            idle_timeout_s: self.idle_timeout_s,
            scaler: self.scaler,
            ..Default::default()
        };
        *self != limits_only
    }
}

/// How far workers have moved to the endpoint's latest release.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rollout {
    pub in_progress: bool,
    pub workers_on_latest: i64,
    pub workers_total: i64,
}

/// Serverless endpoint calls; obtained from [`PlatformClient::endpoints`].
#[derive(Clone, Debug)]
pub struct Endpoints {
    client: PlatformClient,
}

impl PlatformClient {
    /// Serverless endpoints, on whichever backend the configuration chose.
    pub fn endpoints(&self) -> Endpoints {
        Endpoints::new(self.clone())
    }
}

impl Endpoints {
    pub(crate) fn new(client: PlatformClient) -> Self {
        Self { client }
    }

    /// Every endpoint of the account: one call (REST v2 also reads the GPU catalog when
    /// its cached copy is older than the catalog's lifetime).
    pub async fn list(&self) -> Result<Vec<ServerlessEndpoint>> {
        match self.client.api() {
            PlatformApi::Seed => {
                let base = self.client.urls().serverless.to_string();
                Ok(self
                    .client
                    .rest()
                    .list_endpoints()
                    .await?
                    .into_iter()
                    .map(|r| from_seed(r, &base))
                    .collect())
            }
            PlatformApi::V2 => {
                let pools = self.client.catalog().pools().await?;
                Ok(self
                    .client
                    .v2()
                    .list_endpoints()
                    .await?
                    .into_iter()
                    .map(|r| from_v2(r, &pools))
                    .collect())
            }
        }
    }

    /// Creates an endpoint. Never retried after an ambiguous failure.
    pub async fn create(&self, spec: &EndpointSpec) -> Result<ServerlessEndpoint> {
        match self.client.api() {
            PlatformApi::Seed => {
                if let Some(field) = seed_unsupported(spec) {
                    return Err(PlatformError::invalid_input(
                        field,
                        "the seed API has no load balancers, GPU pools or CPU endpoints",
                    ));
                }
                let (scaler_type, scaler_value) = seed_scaler(spec.scaler);
                let input = EndpointCreate {
                    name: spec.name.clone(),
                    template_id: spec.template_id.clone(),
                    gpu_type_ids: spec.gpu_type_ids.clone(),
                    workers_min: spec.workers_min,
                    workers_max: spec.workers_max,
                    idle_timeout: spec.idle_timeout_s,
                    options: EndpointOptions {
                        gpu_count: Some(spec.gpu_count),
                        network_volume_id: spec.network_volume_id.clone(),
                        execution_timeout_ms: spec.execution_timeout_ms,
                        scaler_type: Some(scaler_type.to_string()),
                        scaler_value: Some(scaler_value),
                    },
                    data_center_ids: None,
                    flashboot: Some(spec.flashboot),
                };
                let base = self.client.urls().serverless.to_string();
                Ok(from_seed(
                    self.client.rest().create_endpoint(&input).await?,
                    &base,
                ))
            }
            PlatformApi::V2 => {
                let pools = self.client.catalog().pools().await?;
                let gpu_count = count("gpuCount", spec.gpu_count)?;
                let (gpu, cpu) = match (&spec.cpu, &spec.gpu_pools) {
                    (Some(cpu), _) => (
                        None,
                        Some(cpu.to_v2(count("cpu.vcpuCount", cpu.vcpu_count)?)),
                    ),
                    (None, Some(p)) => (
                        Some(v2::CreateEndpointGpuConfig {
                            pools: p.pools.clone(),
                            options: v2::EndpointGpuOptions {
                                excluded_types: (!p.excluded_types.is_empty())
                                    .then(|| p.excluded_types.clone()),
                                count: Some(gpu_count),
                                ..Default::default()
                            },
                        }),
                        None,
                    ),
                    (None, None) => (
                        Some(pools.selection_for(&spec.gpu_type_ids, gpu_count)?),
                        None,
                    ),
                };
                let (endpoint_type, env) = match &spec.routing {
                    Routing::Queue => (v2::EndpointType::Queue, None),
                    Routing::LoadBalancer(ports) => {
                        (v2::EndpointType::LoadBalancer, Some(ports.env()))
                    }
                };
                let input = v2::CreateEndpoint {
                    name: spec.name.clone(),
                    endpoint_type,
                    scaling: v2_scaler(spec.scaler)?,
                    gpu,
                    cpu,
                    workers: Some(v2::EndpointWorkers {
                        min: Some(count("workersMin", spec.workers_min)?),
                        max: Some(count("workersMax", spec.workers_max)?),
                        idle_timeout: Some(count("idleTimeoutSeconds", spec.idle_timeout_s)?),
                    }),
                    settings: v2::EndpointSettings {
                        data_center_ids: None,
                        network_volumes: spec.network_volume_id.clone().map(|v| vec![v]),
                        timeout: spec
                            .execution_timeout_ms
                            .map(|ms| count("executionTimeoutMs", ms).map(u64::from))
                            .transpose()?,
                        flashboot: Some(v2_flashboot(spec.flashboot)),
                        template_id: Some(spec.template_id.clone()),
                    },
                    container: v2::CreateContainerConfig {
                        env,
                        ..Default::default()
                    },
                };
                let created = self
                    .client
                    .v2()
                    .create_endpoint(&input)
                    .await
                    .map_err(|e| {
                        super::refers_to_missing(
                            e,
                            &[("template", "templateId"), ("volume", "networkVolumeId")],
                        )
                    })?;
                Ok(from_v2(created, &pools))
            }
        }
    }

    /// Applies a change in one call. On REST v2 a change of what workers run starts a new
    /// release: follow it with [`Endpoints::rollout`].
    pub async fn update(&self, id: &str, change: &EndpointChange) -> Result<()> {
        match self.client.api() {
            PlatformApi::Seed => {
                if change.gpu_pools.is_some()
                    || change.cpu.is_some()
                    || change.load_balancer.is_some()
                {
                    return Err(PlatformError::invalid_input(
                        change.fields().join(", "),
                        "the seed API has no load balancers, GPU pools or CPU endpoints",
                    ));
                }
                let (scaler_type, scaler_value) = match change.scaler.map(seed_scaler) {
                    Some((t, v)) => (Some(t.to_string()), Some(v)),
                    None => (None, None),
                };
                let input = EndpointUpdate {
                    name: change.name.clone(),
                    template_id: change.template_id.clone(),
                    gpu_type_ids: change.gpu_type_ids.clone(),
                    workers_min: change.workers_min,
                    workers_max: change.workers_max,
                    idle_timeout: change.idle_timeout_s,
                    options: EndpointOptions {
                        gpu_count: change.gpu_count,
                        network_volume_id: change.network_volume_id.clone(),
                        execution_timeout_ms: change.execution_timeout_ms,
                        scaler_type,
                        scaler_value,
                    },
                    flashboot: change.flashboot,
                };
                self.client
                    .rest()
                    .update_endpoint(id, &input)
                    .await
                    .map(drop)
            }
            PlatformApi::V2 => {
                let gpu_count = change.gpu_count.map(|n| count("gpuCount", n)).transpose()?;
                let gpu = match (&change.gpu_pools, &change.gpu_type_ids) {
                    // Exclusions are sent with the pools every time: pools alone clear them.
                    (Some(p), _) => Some(v2::UpdateEndpointGpuConfig {
                        pools: Some(p.pools.clone()),
                        options: v2::EndpointGpuOptions {
                            excluded_types: Some(p.excluded_types.clone()),
                            count: gpu_count,
                            ..Default::default()
                        },
                    }),
                    (None, Some(types)) => {
                        let pools = self.client.catalog().pools().await?;
                        Some(pools.update_selection_for(types, gpu_count)?)
                    }
                    (None, None) => gpu_count.map(|n| v2::UpdateEndpointGpuConfig {
                        pools: None,
                        options: v2::EndpointGpuOptions {
                            count: Some(n),
                            ..Default::default()
                        },
                    }),
                };
                let opt = |field: &str, v: Option<i64>| v.map(|n| count(field, n)).transpose();
                let workers = (change.workers_min.is_some()
                    || change.workers_max.is_some()
                    || change.idle_timeout_s.is_some())
                .then(|| -> Result<v2::EndpointWorkers> {
                    Ok(v2::EndpointWorkers {
                        min: opt("workersMin", change.workers_min)?,
                        max: opt("workersMax", change.workers_max)?,
                        idle_timeout: opt("idleTimeoutSeconds", change.idle_timeout_s)?,
                    })
                })
                .transpose()?;
                let input = v2::UpdateEndpoint {
                    name: change.name.clone(),
                    gpu,
                    workers,
                    scaling: change.scaler.map(v2_scaler).transpose()?,
                    settings: v2::EndpointSettings {
                        template_id: change.template_id.clone(),
                        timeout: opt("executionTimeoutMs", change.execution_timeout_ms)?
                            .map(u64::from),
                        flashboot: change.flashboot.map(v2_flashboot),
                        network_volumes: change.network_volume_id.clone().map(|v| vec![v]),
                        data_center_ids: None,
                    },
                    cpu: change
                        .cpu
                        .as_ref()
                        .map(|c| count("cpu.vcpuCount", c.vcpu_count).map(|n| c.to_v2(n)))
                        .transpose()?,
                    container: v2::UpdateContainerConfig {
                        env: change.load_balancer.as_ref().map(LoadBalancerPorts::env),
                        ..Default::default()
                    },
                };
                self.client.v2().update_endpoint(id, &input).await.map(drop)
            }
        }
    }

    pub async fn delete(&self, id: &str) -> Result<()> {
        match self.client.api() {
            PlatformApi::Seed => self.client.rest().delete_endpoint(id).await,
            PlatformApi::V2 => self.client.v2().delete_endpoint(id).await,
        }
    }

    /// How far the endpoint's workers have rolled over to its latest release. The seed API
    /// has no releases: an update applies at once, so the answer is "done" without a call.
    pub async fn rollout(&self, id: &str) -> Result<Rollout> {
        match self.client.api() {
            PlatformApi::Seed => Ok(Rollout {
                in_progress: false,
                workers_on_latest: 0,
                workers_total: 0,
            }),
            PlatformApi::V2 => {
                let r = self.client.v2().endpoint_releases(id).await?.rollout;
                Ok(Rollout {
                    in_progress: r.in_progress,
                    workers_on_latest: i64::from(r.workers_on_latest),
                    workers_total: i64::from(r.workers_total),
                })
            }
        }
    }
}

impl Endpoints {
    /// What a vCPU of each CPU flavour costs on a serverless worker, for CPU endpoints'
    /// cost (cached as the GPU prices are).
    pub async fn cpu_prices(&self) -> Result<std::sync::Arc<CpuPrices>> {
        super::endpoint_shape::cpu_prices(&self.client).await
    }

    /// The endpoint's workers by state: one call on REST v2; the seed API has no workers
    /// list, so `None` without a call.
    pub async fn workers(&self, id: &str) -> Result<Option<WorkerStates>> {
        match self.client.api() {
            PlatformApi::Seed => Ok(None),
            PlatformApi::V2 => {
                let list = self.client.v2().endpoint_workers(id).await?;
                Ok(Some(WorkerStates::from_v2(&list.summary)))
            }
        }
    }
}

fn seed_scaler(s: Scaler) -> (&'static str, i64) {
    match s {
        Scaler::QueueDelay(v) => ("QUEUE_DELAY", v),
        Scaler::RequestCount(v) => ("REQUEST_COUNT", v),
    }
}

fn v2_scaler(s: Scaler) -> Result<v2::EndpointScaling> {
    Ok(match s {
        Scaler::QueueDelay(v) => v2::EndpointScaling::QueueDelay {
            queue_delay: v as f64,
        },
        Scaler::RequestCount(v) => v2::EndpointScaling::RequestCount {
            request_count: count("scalerValue", v)?,
        },
    })
}

/// A count REST v2 takes unsigned; a negative one names its field.
fn count(field: &str, n: i64) -> Result<u32> {
    u32::try_from(n).map_err(|_| {
        PlatformError::invalid_input(field, format!("{n} is not a count the platform takes"))
    })
}

fn v2_flashboot(on: bool) -> v2::FlashBoot {
    if on {
        v2::FlashBoot::Flashboot
    } else {
        v2::FlashBoot::Off
    }
}

/// The job API base of an endpoint: `{serverless}/{id}/`.
pub fn job_api_url(serverless: &str, id: &str) -> String {
    format!("{}/{id}/", serverless.trim_end_matches('/'))
}

fn from_seed(r: super::super::Endpoint, serverless: &str) -> ServerlessEndpoint {
    let extra_i64 = |key: &str| r.extra.get(key).and_then(|v| v.as_i64());
    let scaler_value = extra_i64("scalerValue");
    let scaler = match (
        r.extra.get("scalerType").and_then(|v| v.as_str()),
        scaler_value,
    ) {
        (Some("QUEUE_DELAY"), Some(v)) => Some(Scaler::QueueDelay(v)),
        (Some("REQUEST_COUNT"), Some(v)) => Some(Scaler::RequestCount(v)),
        _ => None,
    };
    ServerlessEndpoint {
        job_api_url: job_api_url(serverless, &r.id),
        execution_timeout_ms: extra_i64("executionTimeoutMs"),
        flashboot: r.extra.get("flashboot").and_then(|v| v.as_bool()),
        scaler,
        id: r.id,
        name: r.name,
        template_id: r.template_id,
        routing: Some(Routing::Queue),
        gpus: GpuSelection::Ordered(r.gpu_type_ids),
        pools: None,
        cpu: None,
        load_balancer_urls: None,
        gpu_count: r.gpu_count,
        workers_min: r.workers_min,
        workers_max: r.workers_max,
        idle_timeout_s: r.idle_timeout,
        network_volume_id: r.network_volume_id,
    }
}

fn from_v2(r: v2::Endpoint, pools: &PoolMap) -> ServerlessEndpoint {
    let (gpus, gpu_count, gpu_pools) = match &r.gpu {
        Some(g) => (
            GpuSelection::Unordered(pools.types_of(&g.pools, &g.excluded_types)),
            g.count.map(i64::from),
            Some(GpuPools {
                pools: g.pools.clone(),
                excluded_types: g.excluded_types.clone(),
            }),
        ),
        None => (GpuSelection::Unordered(BTreeSet::new()), None, None),
    };
    let routing = r.endpoint_type.as_ref().and_then(|t| match t {
        v2::EndpointType::Queue => Some(Routing::Queue),
        v2::EndpointType::LoadBalancer => Some(Routing::LoadBalancer(LoadBalancerPorts::from_env(
            &r.container.env,
        ))),
        _ => None,
    });
    let load_balancer_urls = match (&routing, &r.request_urls) {
        (Some(Routing::LoadBalancer(_)), Some(u)) => match (&u.base, &u.health) {
            (Some(base), Some(health)) => Some(LoadBalancerUrls {
                base: base.clone(),
                health: health.clone(),
            }),
            _ => None,
        },
        _ => None,
    };
    // The job API base is what `requestUrls.run` points at, without the operation.
    let job_api_url = r
        .request_urls
        .as_ref()
        .and_then(|u| u.run.as_deref())
        .and_then(|run| run.strip_suffix("run"))
        .map(str::to_string)
        .unwrap_or_default();
    ServerlessEndpoint {
        id: r.id,
        name: r.name,
        // REST v2 does not report the template an endpoint was made from.
        template_id: None,
        routing,
        gpus,
        pools: gpu_pools,
        cpu: CpuWorkers::from_v2(r.cpu.as_ref()),
        load_balancer_urls,
        gpu_count,
        workers_min: r.workers.min.map(i64::from),
        workers_max: r.workers.max.map(i64::from),
        idle_timeout_s: r.workers.idle_timeout.map(i64::from),
        scaler: match r.scaling {
            Some(v2::EndpointScaling::QueueDelay { queue_delay }) => {
                Some(Scaler::QueueDelay(queue_delay.round() as i64))
            }
            Some(v2::EndpointScaling::RequestCount { request_count }) => {
                Some(Scaler::RequestCount(i64::from(request_count)))
            }
            Some(v2::EndpointScaling::Unknown) | None => None,
        },
        execution_timeout_ms: r.timeout.and_then(|t| i64::try_from(t).ok()),
        flashboot: r.flashboot.map(|f| f != v2::FlashBoot::Off),
        network_volume_id: r.network_volumes.first().cloned(),
        job_api_url,
    }
}

/// Pure: the spec field of what the seed API cannot do (it has queue endpoints on GPU
/// types only), `None` when it can do all of `spec`.
pub fn seed_unsupported(spec: &EndpointSpec) -> Option<&'static str> {
    if matches!(spec.routing, Routing::LoadBalancer(_)) {
        Some("spec.type")
    } else if spec.gpu_pools.is_some() {
        Some("spec.gpu.pools")
    } else if spec.cpu.is_some() {
        Some("spec.cpu")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_selection_respects_priority() {
        let sel = GpuSelection::Ordered(vec!["A".into(), "B".into()]);
        assert!(sel.matches(&["A".into(), "B".into()]));
        assert!(!sel.matches(&["B".into(), "A".into()]));
    }

    #[test]
    fn unordered_selection_compares_sets() {
        let sel = GpuSelection::Unordered(["A".to_string(), "B".to_string()].into());
        assert!(sel.matches(&["B".into(), "A".into()]));
        assert!(!sel.matches(&["A".into()]));
    }

    #[test]
    fn a_v2_load_balancer_reads_back_with_its_ports_urls_and_pools() {
        let r: v2::Endpoint = serde_json::from_value(serde_json::json!({
            "id": "ep-1", "name": "chat", "type": "LOAD_BALANCER",
            "requestUrls": {"base": "http://h/lb/ep-1", "health": "http://h/lb/ep-1/healthz"},
            "gpu": {"pools": ["AMPERE_48"], "excludedTypes": ["NVIDIA RTX A6000"], "count": 1},
            "workers": {"min": 1, "max": 2},
            "env": {"PORT": "8000", "PORT_HEALTH": "8001", "HEALTH_CHECK_PATH": "/healthz", "LOG_LEVEL": "info"}
        }))
        .unwrap();
        let pools = PoolMap::new([
            ("NVIDIA A40".to_string(), "AMPERE_48".to_string()),
            ("NVIDIA RTX A6000".to_string(), "AMPERE_48".to_string()),
        ]);
        let e = from_v2(r, &pools);
        assert_eq!(
            e.routing,
            Some(Routing::LoadBalancer(LoadBalancerPorts {
                port: 8000,
                health_port: 8001,
                health_path: "/healthz".into()
            }))
        );
        assert_eq!(
            e.load_balancer_urls,
            Some(LoadBalancerUrls {
                base: "http://h/lb/ep-1".into(),
                health: "http://h/lb/ep-1/healthz".into()
            })
        );
        assert_eq!(e.gpus.types(), vec!["NVIDIA A40"]);
        assert_eq!(
            e.pools.map(|p| (p.pools, p.excluded_types)),
            Some((vec!["AMPERE_48".into()], vec!["NVIDIA RTX A6000".into()]))
        );
        assert_eq!(e.cpu, None);
    }

    #[test]
    fn a_v2_cpu_endpoint_reads_back_with_its_flavours_and_no_gpu() {
        let r: v2::Endpoint = serde_json::from_value(serde_json::json!({
            "id": "ep-2", "name": "cpu", "type": "QUEUE",
            "requestUrls": {"run": "http://h/v2/ep-2/run"},
            "cpu": [{"id": "cpu3c", "vcpuCount": 4}, {"id": "cpu5c", "vcpuCount": 4}],
            "workers": {}
        }))
        .unwrap();
        let e = from_v2(r, &PoolMap::default());
        assert_eq!(e.routing, Some(Routing::Queue));
        assert_eq!(e.job_api_url, "http://h/v2/ep-2/");
        assert_eq!(e.load_balancer_urls, None);
        assert_eq!(
            e.cpu,
            Some(CpuWorkers {
                flavors: vec!["cpu3c".into(), "cpu5c".into()],
                vcpu_count: 4
            })
        );
        assert_eq!((e.pools, e.gpu_count), (None, None));
    }

    #[test]
    fn worker_limits_alone_do_not_roll_workers() {
        let limits = EndpointChange {
            workers_max: Some(5),
            name: Some("x".into()),
            ..Default::default()
        };
        assert!(!limits.rolls_workers());
        let image = EndpointChange {
            template_id: Some("t2".into()),
            ..Default::default()
        };
        assert!(image.rolls_workers());
        assert_eq!(image.fields(), vec!["templateId"]);
    }
}
