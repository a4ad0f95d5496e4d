//! Spec and status parts that every kind shares.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::condition::Condition;

/// The API group of every kind of this operator.
pub const GROUP: &str = "gpucloud.io";
/// The stored version, and the one the operator reads and writes; `v1alpha1` is still
/// served ([`crate::v1alpha1`]).
pub const VERSION: &str = "v1beta1";

/// What happens to the remote object when the Kubernetes object is deleted.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum DeletionPolicy {
    /// Delete the remote object (terminate the pod, delete the endpoint or volume).
    #[default]
    Delete,
    /// Leave the remote object on the platform; only the Kubernetes object goes.
    Orphan,
}

/// Whether the operator may change the remote object or only report on it.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum ManagementPolicy {
    /// Create, update and delete the remote object to match the spec.
    #[default]
    Manage,
    /// Never write to the platform: find the remote object (by `gpucloud.io/external-id`)
    /// and report what it looks like in status.
    ObserveOnly,
}

/// A Secret in the object's own namespace that holds the platform API key to use for
/// this object instead of the operator's default key.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CredentialsSecretRef {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Key inside the Secret that holds the API key.
    #[serde(default = "default_api_key_key")]
    pub key: String,
}

fn default_api_key_key() -> String {
    "apiKey".to_string()
}

/// A reference to another object of this operator in the same namespace.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct LocalObjectReference {
    /// Name of the object.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// Status fields every kind reports. Conditions follow kstatus: `Ready`, `Synced`,
/// `Reconciling` and `Stalled`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, KubeSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CommonStatus {
    /// The `metadata.generation` this status was computed for.
    pub observed_generation: Option<i64>,
    /// Identifier of the remote object on the platform.
    pub id: Option<String>,
    /// Current state, one condition per type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    pub conditions: Vec<Condition>,
    /// When the operator last compared the remote object with the spec.
    pub last_sync_time: Option<Time>,
}
