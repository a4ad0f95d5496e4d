//! The RegistryCredential line of the operator's tables (the demo's): its state, what it runs on, its
//! cost and whether it is Ready.

use crate::kinds::summary::{Row, TableRow, ready_of};
use gpucloud_crd::RegistryCredential;

pub fn summarize(credential: &RegistryCredential) -> Row {
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

impl TableRow for RegistryCredential {
    fn row(&self) -> Row {
        summarize(self)
    }
}
