//! The Budget line of the operator's tables (the demo's): its state, what it runs on, its
//! cost and whether it is Ready.

use crate::kinds::summary::{Row, TableRow, why_of};
use gpucloud_crd::Budget;

/// A Budget's row: its cost against its cap, and how many Pods and Endpoints it holds. It is "ready"
/// once its status is computed for the current spec.
pub fn summarize(budget: &Budget) -> Row {
    let status = budget.status.as_ref();
    let current = status.is_some_and(|s| s.observed_generation == budget.metadata.generation);
    let held = status.map_or(0, |s| s.held_count);
    Row {
        namespace: budget.metadata.namespace.clone().unwrap_or_default(),
        kind: "Budget",
        name: budget.metadata.name.clone().unwrap_or_default(),
        state: format!("max {:.2}/h, {held} held", budget.spec.max_cost_per_hour),
        gpu: "-".into(),
        cost_per_hour: status.map(|s| s.cost_per_hour),
        ready: if current { "True".into() } else { "-".into() },
        is_ready: current,
        why: why_of(status.map_or(&[][..], |s| &s.conditions)),
    }
}

impl TableRow for Budget {
    fn row(&self) -> Row {
        summarize(self)
    }
}
