//! The Endpoint's pure decisions: the endpoint a spec asks for, the plan against the
//! platform's record, readiness, and what the connection ConfigMap holds.

use gpucloud_crd::Endpoint;
use std::collections::BTreeMap;

use gpucloud_crd::endpoint::{EndpointStatus, EndpointType, ScalerType};
use gpucloud_engine::adapter::{Plan, Readiness};
use gpucloud_engine::annotations::parse_duration;
use gpucloud_engine::marker::{InstallTag, remote_name_of};
use gpucloud_platform::domain::{
    CpuWorkers, EndpointChange, EndpointSpec, GpuPools, LoadBalancerPorts, Routing, Scaler,
    ServerlessEndpoint,
};

use super::{DesiredEndpoint, RemoteEndpoint};

/// The remote name: the spec's, else the one its remote object has, else the tagged name.
pub(super) fn remote_name(obj: &Endpoint, tag: Option<&InstallTag>) -> String {
    let status_name = obj.status.as_ref().and_then(|s| s.name.as_deref());
    remote_name_of(obj, obj.spec.name.as_deref(), status_name, tag)
}

/// Pure: the desired endpoint, given the template and network volume ids already resolved
/// and this install's tag (for a name the spec does not give).
pub fn desired_of(
    obj: &Endpoint,
    template_id: String,
    network_volume_id: Option<String>,
    tag: Option<&InstallTag>,
) -> DesiredEndpoint {
    let s = &obj.spec;
    let scaler_value = i64::from(s.scaler_value);
    let routing = match s.endpoint_type {
        EndpointType::Queue => Routing::Queue,
        EndpointType::LoadBalancer => Routing::LoadBalancer(s.load_balancer.as_ref().map_or_else(
            LoadBalancerPorts::default,
            |lb| LoadBalancerPorts {
                port: i64::from(lb.port),
                health_port: i64::from(lb.health_check.port),
                health_path: lb.health_check.path.clone(),
            },
        )),
    };
    // A load balancer takes only request-count scaling (a CEL rule refuses another).
    let scaler_type = s.scaler_type.unwrap_or(match s.endpoint_type {
        EndpointType::Queue => ScalerType::QueueDelay,
        EndpointType::LoadBalancer => ScalerType::RequestCount,
    });
    let gpu = s.gpu.as_ref();
    let gpu_type_ids = gpu.map(|g| g.gpu.type_ids.clone()).unwrap_or_default();
    let gpu_count = gpu.map_or(1, |g| g.gpu.count);
    // The schema's CEL rules admit only durations in the platform's bounds.
    let idle_timeout_s = parse_duration(&s.idle_timeout).map_or(5, |d| d.as_secs());
    EndpointSpec {
        name: remote_name(obj, tag),
        template_id,
        routing,
        gpu_type_ids,
        gpu_pools: gpu.filter(|g| !g.pools.is_empty()).map(|g| GpuPools {
            pools: g.pools.clone(),
            excluded_types: g.excluded_types.clone(),
        }),
        cpu: s.cpu.as_ref().map(|c| CpuWorkers {
            flavors: c.flavors.clone(),
            vcpu_count: i64::from(c.vcpu_count),
        }),
        gpu_count: i64::from(gpu_count),
        workers_min: i64::from(s.workers_min),
        workers_max: i64::from(s.workers_max),
        idle_timeout_s: i64::try_from(idle_timeout_s).unwrap_or(i64::MAX),
        scaler: match scaler_type {
            ScalerType::QueueDelay => Scaler::QueueDelay(scaler_value),
            ScalerType::RequestCount => Scaler::RequestCount(scaler_value),
        },
        execution_timeout_ms: s
            .execution_timeout
            .as_deref()
            .and_then(parse_duration)
            .and_then(|d| i64::try_from(d.as_millis()).ok()),
        flashboot: s.flashboot,
        network_volume_id,
    }
}

/// Pure: the fields that differ, as one partial update.
pub fn plan_endpoint(
    desired: &DesiredEndpoint,
    record: &ServerlessEndpoint,
) -> Plan<EndpointChange> {
    fn differs<T: PartialEq + Clone>(want: &T, have: Option<T>) -> Option<T> {
        (have.as_ref() != Some(want)).then(|| want.clone())
    }
    let by_types = desired.gpu_pools.is_none() && desired.cpu.is_none();
    let mut change = EndpointChange {
        name: differs(&desired.name, Some(record.name.clone())),
        template_id: differs(&desired.template_id, record.template_id.clone()),
        gpu_type_ids: (by_types && !record.gpus.matches(&desired.gpu_type_ids))
            .then(|| desired.gpu_type_ids.clone()),
        gpu_pools: desired
            .gpu_pools
            .as_ref()
            .filter(|want| !record.pools.as_ref().is_some_and(|have| have.same_as(want)))
            .cloned(),
        cpu: desired
            .cpu
            .as_ref()
            .filter(|want| record.cpu.as_ref() != Some(*want))
            .cloned(),
        load_balancer: match (&desired.routing, &record.routing) {
            (Routing::LoadBalancer(want), Some(Routing::LoadBalancer(have))) if want != have => {
                Some(want.clone())
            }
            _ => None,
        },
        // A CPU worker has no GPUs to count.
        gpu_count: if desired.cpu.is_some() {
            None
        } else {
            differs(&desired.gpu_count, record.gpu_count)
        },
        workers_min: differs(&desired.workers_min, record.workers_min),
        workers_max: differs(&desired.workers_max, record.workers_max),
        idle_timeout_s: differs(&desired.idle_timeout_s, record.idle_timeout_s),
        network_volume_id: match (&desired.network_volume_id, &record.network_volume_id) {
            (Some(want), have) if have.as_ref() != Some(want) => Some(want.clone()),
            _ => None,
        },
        execution_timeout_ms: match desired.execution_timeout_ms {
            Some(want) if record.execution_timeout_ms != Some(want) => Some(want),
            _ => None,
        },
        scaler: differs(&desired.scaler, record.scaler),
        flashboot: differs(&desired.flashboot, record.flashboot),
    };
    // REST v2 replaces the whole env on an update, merged with the template's: a load
    // balancer's ports and its template are sent together, so neither loses the other.
    if let Routing::LoadBalancer(ports) = &desired.routing
        && (change.template_id.is_some() || change.load_balancer.is_some())
    {
        change.template_id = Some(desired.template_id.clone());
        change.load_balancer = Some(ports.clone());
    }
    if change.is_empty() {
        Plan::UpToDate
    } else {
        Plan::Update(vec![change])
    }
}

/// Pure: whether the endpoint serves its latest spec yet. Workers still on an older
/// release mean a rollout is under way. A load balancer has no queue to hold requests
/// until workers come: it is Ready once at least `workersMin` workers are up (running or
/// idle; initializing, throttled and unhealthy ones do not count), so at once with
/// `workersMin` 0. Its workers are read after the listing: until then (`worker_states`
/// unknown) it counts as Ready, so that the pass goes on to read them.
pub fn readiness_of(remote: &RemoteEndpoint) -> Readiness {
    let id = &remote.record.id;
    if let Some(r) = remote.rollout.filter(|r| r.in_progress) {
        return Readiness::Progressing {
            reason: "RollingOut".into(),
            message: format!(
                "{} of {} workers run the latest release of endpoint {id}",
                r.workers_on_latest, r.workers_total
            ),
        };
    }
    let wanted = remote.record.workers_min.unwrap_or_default();
    match remote.worker_states {
        Some(w) if w.serving() < wanted => Readiness::Progressing {
            reason: "WorkersStarting".into(),
            message: format!(
                "{} of the {wanted} minimum workers of load balancer {id} serve ({} initializing, {} throttled, {} unhealthy)",
                w.serving(),
                w.initializing,
                w.throttled,
                w.unhealthy
            ),
        },
        _ => Readiness::Ready {
            message: format!("endpoint {id} matches the spec"),
        },
    }
}

/// Pure: what the connection ConfigMap holds: the endpoint's id, type and URL, and a load
/// balancer's health-check URL.
pub fn connection_data(record: &ServerlessEndpoint) -> BTreeMap<String, String> {
    let mut data = BTreeMap::from([("id".to_string(), record.id.clone())]);
    match &record.load_balancer_urls {
        Some(lb) => {
            data.insert("type".into(), "LoadBalancer".into());
            data.insert("url".into(), lb.base.clone());
            data.insert("healthUrl".into(), lb.health.clone());
        }
        None => {
            data.insert("type".into(), "Queue".into());
            data.insert("url".into(), record.job_api_url.clone());
        }
    }
    data
}

/// Pure: what the workers cost per hour now: the workers up (at least the minimum) at
/// `per_worker` each. `None` when either is unknown.
pub fn workers_cost(remote: &RemoteEndpoint) -> Option<f64> {
    let per_worker = remote.worker_cost?;
    let up = match (&remote.worker_states, &remote.health) {
        (Some(w), _) => w.serving(),
        (None, Some(h)) => h.workers.running + h.workers.idle,
        (None, None) => return None,
    };
    let billed = up.max(remote.record.workers_min.unwrap_or_default());
    Some(per_worker * billed as f64)
}

/// Pure: whether a pass should ask how far a rollout has come: one the operator started
/// in this pass (`remote.rollout`), or one status still reports as under way. Other
/// passes cost no rollout call.
pub fn rollout_to_follow(status: Option<&EndpointStatus>, remote: &RemoteEndpoint) -> bool {
    let reported = status
        .and_then(|s| s.rollout.as_ref())
        .is_some_and(|r| r.in_progress);
    reported || remote.rollout.is_some_and(|r| r.in_progress)
}
