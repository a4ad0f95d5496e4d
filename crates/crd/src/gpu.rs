//! The GPU block every kind that runs on GPUs shares (Pod, Endpoint, Cluster): the types in
//! priority order and the count per machine.

use kube::KubeSchema;
use schemars::Schema;
use serde::{Deserialize, Serialize};

/// The GPUs of each machine the kind runs on: a pod, a worker, a node.
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Gpu {
    /// GPU type ids in priority order, as the platform's catalog names them, such as
    /// `NVIDIA GeForce RTX 4090`: the first type with stock (and within the price cap, where
    /// there is one) is used. 1 to 32 ids of 1 to 128 characters each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1, max = 32), inner(length(min = 1, max = 128)))]
    pub type_ids: Vec<String>,
    /// GPUs on each machine (per pod, per worker, per node), 1 to 16; 1 when unset. At most
    /// the GPU type's largest machine, which the platform checks.
    #[serde(default = "one")]
    #[schemars(range(min = 1, max = 16))]
    pub count: i32,
}

impl Default for Gpu {
    fn default() -> Self {
        Self {
            type_ids: Vec::new(),
            count: one(),
        }
    }
}

fn one() -> i32 {
    1
}

/// Marks `typeIds` required in the schema of a GPU block whose kind has no other way to say
/// its GPUs (a Pod, a Cluster); an Endpoint may name pools instead.
pub(crate) fn type_ids_required(schema: &mut Schema) {
    if let Some(required) = schema
        .ensure_object()
        .entry("required")
        .or_insert_with(|| serde_json::json!([]))
        .as_array_mut()
    {
        let name = serde_json::Value::from("typeIds");
        if !required.contains(&name) {
            required.push(name);
        }
    }
}
