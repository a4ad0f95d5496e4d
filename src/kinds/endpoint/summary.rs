//! The Endpoint line of the operator's tables (the demo's): its state, what it runs on, its
//! cost and whether it is Ready.

use crate::kinds::summary::{Row, TableRow, ready_of, short_gpu, why_of};
use gpucloud_crd::Endpoint;

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
        gpu: endpoint
            .spec
            .gpu_type_ids
            .first()
            .map(|t| short_gpu(t))
            .unwrap_or_else(|| "-".into()),
        cost_per_hour: None,
        ready,
        is_ready,
        why: why_of(status.map_or(&[][..], |s| &s.common.conditions)),
    }
}

impl TableRow for Endpoint {
    fn row(&self) -> Row {
        summarize(self)
    }
}
