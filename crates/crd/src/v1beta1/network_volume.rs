//! `NetworkVolume` in `v1beta1`: as in `v1alpha1`, in the words every kind uses.

// Each `printcolumn(...)` repeats the same keys, which clippy takes for duplicates.
#![allow(clippy::duplicated_attributes)]

use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use crate::common::{CredentialsSecretRef, DeletionPolicy, ManagementPolicy};
use crate::network_volume::{NetworkVolumeStatus, VolumeClass};

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

fn orphan() -> DeletionPolicy {
    DeletionPolicy::Orphan
}

crate::managed::managed_kind!(NetworkVolume, NetworkVolumeStatus);
