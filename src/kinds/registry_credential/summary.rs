//! The RegistryCredential line of the operator's tables (the demo's): its state, what it runs on, its
//! cost and whether it is Ready.

use crate::kinds::summary::{Row, TableRow, ready_of, why_of};
use gpucloud_crd::RegistryCredential;

pub fn summarize(credential: &RegistryCredential) -> Row {
    let status = credential.status.as_ref();
    let (ready, is_ready) = ready_of(credential.metadata.generation, status.map(|s| &s.common));
    Row {
        namespace: credential.metadata.namespace.clone().unwrap_or_default(),
        kind: "RegistryCredential",
        name: credential.metadata.name.clone().unwrap_or_default(),
        state: credential.spec.registry.clone(),
        gpu: "-".into(),
        cost_per_hour: None,
        ready,
        is_ready,
        why: why_of(status.map_or(&[][..], |s| &s.common.conditions)),
    }
}

impl TableRow for RegistryCredential {
    fn row(&self) -> Row {
        summarize(self)
    }
}
