//! The NetworkVolume line of the operator's tables (the demo's): its state, what it runs on, its
//! cost and whether it is Ready.

use crate::kinds::summary::{Row, TableRow, ready_of, why_of};
use gpucloud_crd::NetworkVolume;

pub fn summarize(volume: &NetworkVolume) -> Row {
    let status = volume.status.as_ref();
    let (ready, is_ready) = ready_of(volume.metadata.generation, status.map(|s| &s.common));
    let state = match status.and_then(|s| s.size_gb) {
        Some(size) => format!(
            "{size} GB in {}",
            status
                .and_then(|s| s.data_center_id.clone())
                .unwrap_or_default()
        ),
        None => "-".into(),
    };
    Row {
        namespace: volume.metadata.namespace.clone().unwrap_or_default(),
        kind: "NetworkVolume",
        name: volume.metadata.name.clone().unwrap_or_default(),
        state,
        gpu: "-".into(),
        cost_per_hour: None,
        ready,
        is_ready,
        why: why_of(status.map_or(&[][..], |s| &s.common.conditions)),
    }
}

impl TableRow for NetworkVolume {
    fn row(&self) -> Row {
        summarize(self)
    }
}
