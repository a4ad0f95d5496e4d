//! The Endpoint line of the operator's tables (the demo's): its state, what it runs on, its
//! cost and whether it is Ready.

use crate::kinds::summary::{Row, TableRow, ready_of, short_gpu, why_of};
use gpucloud_crd::{Endpoint, EndpointSpec};

pub fn summarize(endpoint: &Endpoint) -> Row {
    let status = endpoint.status.as_ref();
    let (ready, is_ready) = ready_of(endpoint.metadata.generation, status.map(|s| &s.common));
    let workers = status.and_then(|s| s.workers.clone());
    Row {
        namespace: endpoint.metadata.namespace.clone().unwrap_or_default(),
        kind: "Endpoint",
        name: endpoint.metadata.name.clone().unwrap_or_default(),
        state: workers
            .map(|w| format!("workers {w}"))
            .unwrap_or_else(|| "-".into()),
        gpu: worker_kind(&endpoint.spec),
        cost_per_hour: None,
        ready,
        is_ready,
        why: why_of(status.map_or(&[][..], |s| &s.common.conditions)),
    }
}

/// What the workers run on: the first GPU type, the first pool, or the CPU flavour.
fn worker_kind(spec: &EndpointSpec) -> String {
    let gpu = spec.gpu.as_ref();
    if let Some(t) = gpu.and_then(|g| g.gpu.type_ids.first()) {
        short_gpu(t)
    } else if let Some(p) = gpu.and_then(|g| g.pools.first()) {
        format!("pool {p}")
    } else if let Some(c) = &spec.cpu {
        format!("cpu {}", c.flavors.first().map_or("-", String::as_str))
    } else {
        "-".into()
    }
}

impl TableRow for Endpoint {
    fn row(&self) -> Row {
        summarize(self)
    }
}
