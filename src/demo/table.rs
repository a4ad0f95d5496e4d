//! The demo's live table: one row per object, what a user looks at while things converge.
//! Pure, so its content is tested without a cluster.

use crate::crd::common::CommonStatus;
use crate::crd::{Budget, Endpoint, NetworkVolume, Pod, RegistryCredential, Template};

/// One line of the table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub kind: &'static str,
    pub name: String,
    pub state: String,
    pub gpu: String,
    pub cost_per_hour: Option<f64>,
    /// `True`, or the Ready condition's reason while it is not.
    pub ready: String,
    pub is_ready: bool,
}

/// The Ready column: `True` when the operator says so for the current generation; otherwise
/// the condition's reason, so the table tells why something waits.
fn ready_of(generation: Option<i64>, status: Option<&CommonStatus>) -> (String, bool) {
    let Some(status) = status else {
        return ("-".into(), false);
    };
    let Some(ready) = status.conditions.iter().find(|c| c.type_ == "Ready") else {
        return ("-".into(), false);
    };
    let current = status.observed_generation == generation;
    if ready.status == "True" && current {
        ("True".into(), true)
    } else if ready.reason.is_empty() {
        (ready.status.to_string(), false)
    } else {
        (ready.reason.to_string(), false)
    }
}

pub fn pod_row(pod: &Pod) -> Row {
    let status = pod.status.as_ref();
    let (ready, is_ready) = ready_of(pod.metadata.generation, status.map(|s| &s.common));
    let gpu = status
        .and_then(|s| s.gpu_type_id.clone())
        .map(|t| {
            let count = status.and_then(|s| s.gpu_count).unwrap_or(1);
            format!("{count}x {}", short_gpu(&t))
        })
        .unwrap_or_else(|| "-".into());
    Row {
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
    }
}

/// A Budget's row: its cost against its cap, and how many Pods and Endpoints it holds. It is "ready"
/// once its status is computed for the current spec.
pub fn budget_row(budget: &Budget) -> Row {
    let status = budget.status.as_ref();
    let current = status.is_some_and(|s| s.observed_generation == budget.metadata.generation);
    let held = status.map_or(0, |s| s.held_count);
    Row {
        kind: "Budget",
        name: budget.metadata.name.clone().unwrap_or_default(),
        state: format!("max {:.2}/h, {held} held", budget.spec.max_cost_per_hour),
        gpu: "-".into(),
        cost_per_hour: status.map(|s| s.cost_per_hour),
        ready: if current { "True".into() } else { "-".into() },
        is_ready: current,
    }
}

pub fn endpoint_row(endpoint: &Endpoint) -> Row {
    let status = endpoint.status.as_ref();
    let (ready, is_ready) = ready_of(endpoint.metadata.generation, status.map(|s| &s.common));
    let workers = status.and_then(|s| s.workers.clone());
    Row {
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
    }
}

pub fn volume_row(volume: &NetworkVolume) -> Row {
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
        kind: "NetworkVolume",
        name: volume.metadata.name.clone().unwrap_or_default(),
        state,
        gpu: "-".into(),
        cost_per_hour: None,
        ready,
        is_ready,
    }
}

pub fn template_row(template: &Template) -> Row {
    let status = template.status.as_ref();
    let (ready, is_ready) = ready_of(template.metadata.generation, status.map(|s| &s.common));
    Row {
        kind: "Template",
        name: template.metadata.name.clone().unwrap_or_default(),
        state: status
            .and_then(|s| s.image.clone())
            .unwrap_or_else(|| "-".into()),
        gpu: "-".into(),
        cost_per_hour: None,
        ready,
        is_ready,
    }
}

pub fn registry_credential_row(credential: &RegistryCredential) -> Row {
    let status = credential.status.as_ref();
    let (ready, is_ready) = ready_of(credential.metadata.generation, status.map(|s| &s.common));
    Row {
        kind: "RegistryCredential",
        name: credential.metadata.name.clone().unwrap_or_default(),
        state: credential.spec.registry.clone(),
        gpu: "-".into(),
        cost_per_hour: None,
        ready,
        is_ready,
    }
}

/// A kind with rows in the table; its registration (`crate::kinds`) lists them.
pub trait TableRow {
    fn row(&self) -> Row;
}

impl TableRow for Pod {
    fn row(&self) -> Row {
        pod_row(self)
    }
}

impl TableRow for Endpoint {
    fn row(&self) -> Row {
        endpoint_row(self)
    }
}

impl TableRow for Budget {
    fn row(&self) -> Row {
        budget_row(self)
    }
}

impl TableRow for NetworkVolume {
    fn row(&self) -> Row {
        volume_row(self)
    }
}

impl TableRow for Template {
    fn row(&self) -> Row {
        template_row(self)
    }
}

impl TableRow for RegistryCredential {
    fn row(&self) -> Row {
        registry_credential_row(self)
    }
}

/// `NVIDIA GeForce RTX 4090` reads as `RTX 4090`: the column stays narrow.
fn short_gpu(id: &str) -> String {
    id.trim_start_matches("NVIDIA ")
        .trim_start_matches("GeForce ")
        .to_string()
}

/// The table as text, rows sorted by kind and name, columns as wide as their content.
pub fn render(rows: &[Row]) -> String {
    let mut rows = rows.to_vec();
    rows.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
    let header = ["KIND", "NAME", "STATE", "GPU", "COST/HR", "READY"];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            [
                r.kind.to_string(),
                r.name.clone(),
                r.state.clone(),
                r.gpu.clone(),
                r.cost_per_hour
                    .map(|c| format!("${c:.2}"))
                    .unwrap_or_else(|| "-".into()),
                r.ready.clone(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}   "));
            }
        }
        out.push('\n');
        out
    };
    let mut out = line(&header.map(String::from));
    for row in &cells {
        out.push_str(&line(row));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(status: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "apiVersion": "gpucloud.io/v1alpha1", "kind": "Pod",
            "metadata": {"name": "trainer", "generation": 2},
            "spec": {"image": "img", "gpu": {"types": ["NVIDIA A100 80GB PCIe"], "count": 1}},
            "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn a_running_pod_shows_phase_gpu_cost_and_ready() {
        let row = pod_row(&pod(json!({
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
    fn ready_for_an_older_generation_is_not_ready_and_a_reason_is_shown() {
        let row = pod_row(&pod(json!({
            "observedGeneration": 1, "phase": "Running",
            "conditions": [{"type": "Ready", "status": "True", "reason": "Available",
                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        })));
        assert!(!row.is_ready);
        let row = pod_row(&pod(json!({
            "observedGeneration": 2, "phase": "Pending",
            "conditions": [{"type": "Ready", "status": "False", "reason": "NoCapacity",
                "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        })));
        assert_eq!((row.ready.as_str(), row.is_ready), ("NoCapacity", false));
        let row = pod_row(&pod(serde_json::Value::Null));
        assert_eq!((row.state.as_str(), row.ready.as_str()), ("-", "-"));
    }

    #[test]
    fn columns_line_up_and_rows_are_sorted() {
        let a = Row {
            kind: "Pod",
            name: "b".into(),
            state: "Running".into(),
            gpu: "1x RTX 4090".into(),
            cost_per_hour: Some(0.34),
            ready: "True".into(),
            is_ready: true,
        };
        let b = Row {
            kind: "NetworkVolume",
            name: "a-long-name".into(),
            state: "50 GB in EU-RO-1".into(),
            gpu: "-".into(),
            cost_per_hour: None,
            ready: "Creating".into(),
            is_ready: false,
        };
        let text = render(&[a, b]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[1].starts_with("NetworkVolume"), "{text}");
        let column = lines[0].find("STATE").unwrap();
        assert_eq!(&lines[1][column..column + 16], "50 GB in EU-RO-1");
        assert_eq!(&lines[2][column..column + 7], "Running");
    }
}
