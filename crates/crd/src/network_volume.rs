//! `NetworkVolume`: a network volume on the platform, attachable to pods and endpoints.

// Each `printcolumn(...)` repeats the same keys, which clippy takes for duplicates.
#![allow(clippy::duplicated_attributes)]

use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{CommonStatus, CredentialsSecretRef, DeletionPolicy, ManagementPolicy};

/// Largest network volume the platform allows, in gigabytes.
pub const MAX_SIZE_GB: i32 = 4000;

/// A network volume on the GPU cloud. It can only grow, and by default its data is kept
/// when the Kubernetes object is deleted.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq)]
#[kube(
    group = "gpucloud.io",
    version = "v1beta1",
    kind = "NetworkVolume",
    namespaced,
    status = "NetworkVolumeStatus",
    shortname = "gnv",
    category = "gpucloud",
    doc = "A network volume on the GPU cloud. It only grows; by default its data outlives the object.",
    printcolumn(name = "ID", type_ = "string", json_path = ".status.id"),
    printcolumn(
        name = "SIZE",
        type_ = "integer",
        json_path = ".status.sizeGb",
        description = "Size in GB as the platform reports it"
    ),
    printcolumn(
        name = "DATACENTER",
        type_ = "string",
        json_path = ".spec.dataCenterId"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct NetworkVolumeSpec {
    /// Name of the volume on the platform, 1 to 128 characters;
    /// `<namespace>-<name>-<uid8>` (the first eight hex digits of the object's UID) when
    /// unset. It need not be unique there. Changing it renames the remote volume.
    #[schemars(length(min = 1, max = 128))]
    pub name: Option<String>,
    /// Size in gigabytes, 0 to 4,000. It can only grow: the platform cannot shrink a volume.
    #[x_kube(validation = Rule::new("self >= oldSelf").message("sizeGb may only grow: the platform cannot shrink a network volume"))]
    #[schemars(range(min = 0, max = 4000))]
    pub size_gb: i32,
    /// Data center that holds the volume, such as `EU-RO-1`, 1 to 64 characters. Cannot
    /// change once set.
    #[x_kube(validation = Rule::new("self == oldSelf").message("dataCenterId is immutable: a volume cannot move between data centers"))]
    #[schemars(length(min = 1, max = 64))]
    pub data_center_id: String,
    /// Storage class: `STANDARD` (the default) or `HIGH_PERFORMANCE` (REST v2 only). Cannot
    /// change once set.
    #[serde(default, rename = "type")]
    #[x_kube(validation = Rule::new("self == oldSelf").message("type is immutable: a volume cannot change its storage class"))]
    pub volume_type: VolumeClass,
    /// What happens to the remote volume when this object is deleted: `Orphan` (the
    /// default, so that deleting the object never deletes data) or `Delete`.
    #[serde(default = "orphan")]
    pub deletion_policy: DeletionPolicy,
    /// `Manage` the volume (the default), or `ObserveOnly`.
    #[serde(default)]
    pub management_policy: ManagementPolicy,
    /// Secret holding the API key for this object; the operator's default key when unset.
    pub credentials_secret_ref: Option<CredentialsSecretRef>,
}

/// A volume's storage class.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum VolumeClass {
    #[default]
    Standard,
    HighPerformance,
}

fn orphan() -> DeletionPolicy {
    DeletionPolicy::Orphan
}

/// What the platform reports about the volume.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NetworkVolumeStatus {
    #[serde(flatten)]
    pub common: CommonStatus,
    /// Name of the volume on the platform.
    pub name: Option<String>,
    /// Size in gigabytes on the platform.
    pub size_gb: Option<i32>,
    /// Data center of the volume on the platform.
    pub data_center_id: Option<String>,
    /// Storage class on the platform: `STANDARD` or `HIGH_PERFORMANCE`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub volume_type: Option<String>,
}

crate::managed::managed_kind!(NetworkVolume, NetworkVolumeStatus);
