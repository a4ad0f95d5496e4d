//! The Cluster line of the operator's tables (the demo's, `kubectl gpucloud status`): its
//! nodes, GPU, cost and whether it is Ready.

use crate::kinds::summary::{Row, TableRow, ready_of, short_gpu, why_of};
use gpucloud_crd::Cluster;

pub fn summarize(cluster: &Cluster) -> Row {
    let status = cluster.status.as_ref();
    let (ready, is_ready) = ready_of(cluster.metadata.generation, status.map(|s| &s.common));
    let state = match (
        status.and_then(|s| s.phase),
        status.and_then(|s| s.nodes.clone()),
    ) {
        (Some(phase), Some(nodes)) => format!("{phase:?} {nodes} nodes"),
        (Some(phase), None) => format!("{phase:?}"),
        _ => "-".into(),
    };
    let gpu = status
        .and_then(|s| s.gpu_type_id.as_deref())
        .map(|g| {
            format!(
                "{}x{} {}",
                cluster.spec.node_count,
                cluster.spec.gpu.count,
                short_gpu(g)
            )
        })
        .unwrap_or_else(|| "-".into());
    Row {
        namespace: cluster.metadata.namespace.clone().unwrap_or_default(),
        kind: "Cluster",
        name: cluster.metadata.name.clone().unwrap_or_default(),
        state,
        gpu,
        cost_per_hour: status.and_then(|s| s.cost_per_hour),
        ready,
        is_ready,
        why: why_of(status.map_or(&[][..], |s| &s.common.conditions)),
    }
}

impl TableRow for Cluster {
    fn row(&self) -> Row {
        summarize(self)
    }
}
