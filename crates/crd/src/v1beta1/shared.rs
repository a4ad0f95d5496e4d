//! The spec parts that Pod, Endpoint, Template and Cluster share in `v1beta1`: the GPU block
//! and the container settings, one type each, so that the same field has the same name, bound,
//! default and rule on every kind.

use kube::KubeSchema;
use schemars::Schema;
use serde::{Deserialize, Serialize};

use crate::pod::{EnvVar, PORTS_MESSAGE, PORTS_RULE};

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

/// The container settings of every kind that runs a container (Pod, Template, Cluster),
/// flattened into its spec.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ContainerSettings {
    /// Arguments given to the container, space-separated, at most 4,096 characters. Unset:
    /// the image's own command (with `templateRef`, the Template's arguments).
    #[schemars(length(max = 4096))]
    pub args: Option<String>,
    /// Ports to expose, at most 32, each `<port>/<type>` with a port from 1 to 65535 and a
    /// type of `http` or `tcp`, such as `8888/http`. None when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        inner(regex(pattern = r"^[0-9]{1,5}/(http|tcp)$"), length(max = 10)),
        length(max = 32)
    )]
    // The pattern checks the shape; the range needs the rule, which also says in words what
    // is wrong (a pattern failure only quotes the regex).
    #[x_kube(validation = Rule::new(PORTS_RULE).message(PORTS_MESSAGE))]
    pub ports: Vec<String>,
    /// Environment variables of the container, each with `value` or `valueFrom` (a key of a
    /// Secret in this namespace), not both. A Secret's value goes to the platform and
    /// nowhere else. None when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub env: Vec<EnvVar>,
}
