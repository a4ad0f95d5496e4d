//! An endpoint as `GET /v2/serverless` lists it: the same view as `GET` of one endpoint,
//! with every object's keys in alphabetical order.
//!
//! The listing once wrote each view through a `serde_json::Value`, whose maps sort their
//! keys, and has answered in that order since; `GET` of one keeps the view's field order.
//! These structs declare the fields alphabetically and borrow everything from the view, so
//! a listing writes the same bytes without building a tree of values per endpoint.

use std::collections::BTreeMap;

use serde::{Serialize, Serializer};

use super::body::FlashBoot;
use super::view::{EndpointView, GpuView, RequestUrls, ScalingView, Url, WorkersView};
use crate::model::{CpuSelection, EndpointType};

/// The document's `Endpoint`, keys sorted.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedEndpoint<'a> {
    args: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu: Option<Cpus<'a>>,
    created_at: String,
    data_center_ids: &'a [String],
    disk: u64,
    env: &'a BTreeMap<String, String>,
    flashboot: FlashBoot,
    #[serde(skip_serializing_if = "Option::is_none")]
    gpu: Option<Option<Gpu<'a>>>,
    id: &'a str,
    image: &'a str,
    name: &'a str,
    network_volumes: &'a [String],
    ports: &'a [String],
    registry: Option<&'a str>,
    request_urls: Urls<'a>,
    scaling: Scaling,
    timeout: u64,
    #[serde(rename = "type")]
    endpoint_type: EndpointType,
    workers: Workers,
}

impl<'a> From<EndpointView<'a>> for ListedEndpoint<'a> {
    fn from(v: EndpointView<'a>) -> Self {
        Self {
            args: v.args,
            cpu: v.cpu.map(Cpus),
            created_at: v.created_at,
            data_center_ids: v.data_center_ids,
            disk: v.disk,
            env: v.env,
            flashboot: v.flashboot,
            gpu: v.gpu.map(|g| g.map(Gpu::from)),
            id: v.id,
            image: v.image,
            name: v.name,
            network_volumes: v.network_volumes,
            ports: v.ports,
            registry: v.registry,
            request_urls: v.request_urls.into(),
            scaling: v.scaling.into(),
            timeout: v.timeout,
            endpoint_type: v.endpoint_type,
            workers: v.workers.into(),
        }
    }
}

// A value lives for one write of one endpoint: boxing the larger variant would allocate
// for every endpoint of a listing, which is what borrowing the URLs avoids.
#[allow(clippy::large_enum_variant)]
#[derive(Serialize)]
#[serde(untagged)]
enum Urls<'a> {
    #[serde(rename_all = "camelCase")]
    Queue {
        cancel: Url<'a>,
        health: Url<'a>,
        purge_queue: Url<'a>,
        retry: Url<'a>,
        run: Url<'a>,
        run_sync: Url<'a>,
        status: Url<'a>,
        stream: Url<'a>,
    },
    LoadBalancer {
        base: Url<'a>,
        health: Url<'a>,
    },
}

impl<'a> From<RequestUrls<'a>> for Urls<'a> {
    fn from(u: RequestUrls<'a>) -> Self {
        match u {
            RequestUrls::Queue(q) => Self::Queue {
                cancel: q.cancel,
                health: q.health,
                purge_queue: q.purge_queue,
                retry: q.retry,
                run: q.run,
                run_sync: q.run_sync,
                status: q.status,
                stream: q.stream,
            },
            RequestUrls::LoadBalancer(lb) => Self::LoadBalancer {
                base: lb.base,
                health: lb.health,
            },
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Gpu<'a> {
    allowed_cuda_versions: &'a [String],
    count: u64,
    excluded_types: &'a [String],
    min_cuda_version: Option<&'a str>,
    pools: &'a [String],
}

impl<'a> From<GpuView<'a>> for Gpu<'a> {
    fn from(g: GpuView<'a>) -> Self {
        Self {
            allowed_cuda_versions: g.allowed_cuda_versions,
            count: g.count,
            excluded_types: g.excluded_types,
            min_cuda_version: g.min_cuda_version,
            pools: g.pools,
        }
    }
}

/// The CPU flavors, each `{id, memory, vcpuCount}`.
struct Cpus<'a>(&'a [CpuSelection]);

impl Serialize for Cpus<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Cpu<'a> {
            id: &'a str,
            memory: u32,
            vcpu_count: u32,
        }
        serializer.collect_seq(self.0.iter().map(|c| Cpu {
            id: &c.id,
            memory: c.memory,
            vcpu_count: c.vcpu_count,
        }))
    }
}

#[derive(Serialize)]
#[serde(untagged)]
enum Scaling {
    QueueDelay {
        #[serde(rename = "queueDelay")]
        queue_delay: f64,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    RequestCount {
        #[serde(rename = "requestCount")]
        request_count: u64,
        #[serde(rename = "type")]
        kind: &'static str,
    },
}

impl From<ScalingView> for Scaling {
    fn from(s: ScalingView) -> Self {
        match s {
            ScalingView::QueueDelay { queue_delay } => Self::QueueDelay {
                queue_delay,
                kind: "QUEUE_DELAY",
            },
            ScalingView::RequestCount { request_count } => Self::RequestCount {
                request_count,
                kind: "REQUEST_COUNT",
            },
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Workers {
    #[serde(skip_serializing_if = "Option::is_none")]
    idle_timeout: Option<u32>,
    max: u64,
    min: u64,
}

impl From<WorkersView> for Workers {
    fn from(w: WorkersView) -> Self {
        Self {
            idle_timeout: w.idle_timeout,
            max: w.max,
            min: w.min,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::fixtures::Fixtures;
    use crate::model::{EndpointRecord, ScalerType};
    use crate::state::World;
    use crate::v2::serverless::view::endpoint;

    /// Records in every shape the view distinguishes: queue and load balancer, GPU (with and
    /// without pools) and CPU, both scalers, each FlashBoot mode, optional fields set and not,
    /// text that needs escaping.
    fn every_shape() -> Vec<EndpointRecord> {
        let w = World::from_fixtures(&Fixtures::built_in()).unwrap();
        let base = w.endpoints.values().next().unwrap().clone();
        let mut out = vec![base.clone()];
        let mut e = base.clone();
        e.id = "ep-lb".into();
        e.name = "quote \" and \\ and \u{e9}\u{1F600}\n".into();
        e.endpoint_type = EndpointType::LoadBalancer;
        e.container
            .env
            .insert("HEALTH_CHECK_PATH".into(), "ready".into());
        e.container.registry = Some("reg-1".into());
        e.scaler_type = ScalerType::RequestCount;
        e.flashboot = true;
        e.min_cuda_version = Some("12.4".into());
        e.allowed_cuda_versions = vec!["12.4".into(), "12.8".into()];
        e.excluded_gpu_types = vec!["NVIDIA A40".into()];
        e.data_center_ids = vec!["EU-RO-1".into(), "US-TX-3".into()];
        e.network_volume_ids = vec!["nv-1".into(), "nv-2".into()];
        out.push(e.clone());
        e.id = "ep-cpu".into();
        e.cpu = vec![
            CpuSelection {
                id: "cpu3c".into(),
                vcpu_count: 2,
                memory: 4,
            },
            CpuSelection {
                id: "cpu5g".into(),
                vcpu_count: 8,
                memory: 32,
            },
        ];
        e.priority_flashboot = true;
        e.scaler_type = ScalerType::QueueDelay;
        e.queue_delay = Some(2.5);
        out.push(e);
        let mut e = base;
        e.id = "ep-no-pool".into();
        e.gpu_pools.clear();
        e.endpoint_type = EndpointType::Queue;
        e.scaler_type = ScalerType::RequestCount;
        e.container.env.clear();
        out.push(e);
        out
    }

    #[test]
    fn a_listed_endpoint_is_its_view_through_a_json_value() {
        let clock = Clock::new(1.0);
        clock.advance(3_723_000);
        let records = every_shape();
        for e in &records {
            let view = endpoint(e, "https://h:8443", &clock);
            let old = serde_json::to_vec(&serde_json::to_value(&view).unwrap()).unwrap();
            let new = serde_json::to_vec(&ListedEndpoint::from(view)).unwrap();
            // Equal bytes: the same values with their keys in the same order.
            assert_eq!(
                String::from_utf8(new).unwrap(),
                String::from_utf8(old).unwrap(),
                "{}",
                e.id
            );
        }
        // The shapes differ where the view does, so each branch above was written.
        let listed: Vec<serde_json::Value> = records
            .iter()
            .map(|e| serde_json::to_value(ListedEndpoint::from(endpoint(e, "h", &clock))).unwrap())
            .collect();
        assert!(listed[0]["requestUrls"]["runSync"].is_string());
        assert_eq!(listed[1]["requestUrls"]["health"], "h/lb/ep-lb/ready");
        assert_eq!(listed[1]["scaling"]["type"], "REQUEST_COUNT");
        assert_eq!(listed[1]["gpu"]["minCudaVersion"], "12.4");
        assert_eq!(listed[2]["cpu"][1]["vcpuCount"], 8);
        assert!(listed[2].get("gpu").is_none());
        assert_eq!(listed[2]["flashboot"], "PRIORITY_FLASHBOOT");
        assert_eq!(listed[2]["scaling"]["queueDelay"], 2.5);
        assert!(listed[3]["gpu"].is_null() && listed[3].get("gpu").is_some());
        assert!(listed[3]["workers"].get("idleTimeout").is_none());
    }
}
