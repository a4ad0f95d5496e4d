//! The Template line of the operator's tables (the demo's): its state, what it runs on, its
//! cost and whether it is Ready.

use crate::kinds::summary::{Row, TableRow, ready_of, why_of};
use gpucloud_crd::Template;

pub fn summarize(template: &Template) -> Row {
    let status = template.status.as_ref();
    let (ready, is_ready) = ready_of(template.metadata.generation, status.map(|s| &s.common));
    Row {
        namespace: template.metadata.namespace.clone().unwrap_or_default(),
        kind: "Template",
        name: template.metadata.name.clone().unwrap_or_default(),
        state: status
            .and_then(|s| s.image.clone())
            .unwrap_or_else(|| "-".into()),
        gpu: "-".into(),
        cost_per_hour: None,
        ready,
        is_ready,
        why: why_of(status.map_or(&[][..], |s| &s.common.conditions)),
    }
}

impl TableRow for Template {
    fn row(&self) -> Row {
        summarize(self)
    }
}
