//! The Pod line of the operator's tables (the demo's): its state, what it runs on, its
//! cost and whether it is Ready.

use crate::kinds::summary::{Row, TableRow, ready_of, short_gpu, why_of};
use gpucloud_crd::Pod;

pub fn summarize(pod: &Pod) -> Row {
    let status = pod.status.as_ref();
    let (ready, is_ready) = ready_of(pod.metadata.generation, status.map(|s| &s.common));
    let gpu = status
        .and_then(|s| s.gpu_type_id.clone())
        .map(|t| {
            let count = status.and_then(|s| s.gpu_count).unwrap_or(1);
            format!("{count}x {}", short_gpu(&t))
        })
        .or_else(|| {
            // A CPU pod: its flavor and size in the same column.
            let flavor = status?.cpu_flavor_id.clone()?;
            let vcpus = status.and_then(|s| s.vcpu_count).unwrap_or_default();
            Some(format!("{flavor} {vcpus} vCPU"))
        })
        .unwrap_or_else(|| "-".into());
    Row {
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        kind: "Pod",
        name: pod.metadata.name.clone().unwrap_or_default(),
        state: status
            .and_then(|s| s.phase.as_ref())
            .map(|p| format!("{p:?}"))
            .unwrap_or_else(|| "-".into()),
        gpu,
        cost_per_hour: status.and_then(|s| s.cost_per_hour),
        ready,
        is_ready,
        why: why_of(status.map_or(&[][..], |s| &s.common.conditions)),
    }
}

impl TableRow for Pod {
    fn row(&self) -> Row {
        summarize(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::table::render;
    use serde_json::json;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "apiVersion": "gpucloud.io/v1beta1", "kind": "Pod",
            "metadata": {"name": "trainer", "generation": 2},
            "spec": {"image": "img", "gpu": {"typeIds": ["NVIDIA A100 80GB PCIe"], "count": 1}},
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn a_running_pod_shows_phase_gpu_cost_and_ready() {
        let row = summarize(&pod(json!({
            "observedGeneration": 2, "phase": "Running", "gpuTypeId": "NVIDIA A100 80GB PCIe",
            "gpuCount": 2, "costPerHour": 3.28,
            "conditions": [{"type": "Ready", "status": "True", "reason": "Available",
                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        })));
        assert_eq!(row.state, "Running");
        assert_eq!(row.gpu, "2x A100 80GB PCIe");
        assert!(row.is_ready);
        let text = render(&[row]);
        assert!(text.contains("$3.28"), "{text}");
        assert!(text.lines().nth(1).unwrap().ends_with("True"), "{text}");
    }

    #[test]
    fn a_cpu_pod_shows_its_flavor_and_vcpus_where_a_gpu_pod_shows_its_gpus() {
        let row = summarize(&pod(json!({
            "phase": "Running", "cpuFlavorId": "cpu3c", "vcpuCount": 4, "costPerHour": 0.12
        })));
        assert_eq!(row.gpu, "cpu3c 4 vCPU");
    }

    #[test]
    fn ready_for_an_older_generation_is_not_ready_and_a_reason_is_shown() {
        let row = summarize(&pod(json!({
            "observedGeneration": 1, "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "reason": "Available",
                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        })));
        assert!(!row.is_ready);
        let row = summarize(&pod(json!({
            "observedGeneration": 2, "phase": "Pending",
            "conditions": [{"type": "Ready", "status": "False", "reason": "NoCapacity",
                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        })));
        assert_eq!((row.ready.as_str(), row.is_ready), ("NoCapacity", false));
        let row = summarize(&pod(serde_json::Value::Null));
        assert_eq!((row.state.as_str(), row.ready.as_str()), ("-", "-"));
    }
}
