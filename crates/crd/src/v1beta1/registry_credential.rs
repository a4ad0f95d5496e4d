//! `RegistryCredential` in `v1beta1`: as in `v1alpha1`, in the words every kind uses.

// Each `printcolumn(...)` repeats the same keys, which clippy takes for duplicates.
#![allow(clippy::duplicated_attributes)]

use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use crate::common::{CredentialsSecretRef, DeletionPolicy, ManagementPolicy};
use crate::registry_credential::{DockerConfigSecretRef, RegistryCredentialStatus};

/// Registry credentials for private images. The username and password go to the platform
/// and nowhere else; a change of the Secret replaces the platform's credential.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq)]
#[kube(
    group = "gpucloud.io",
    version = "v1beta1",
    kind = "RegistryCredential",
    namespaced,
    status = "RegistryCredentialStatus",
    shortname = "greg",
    category = "gpucloud",
    doc = "Container registry credentials for private images, read from a docker-registry Secret.",
    printcolumn(name = "ID", type_ = "string", json_path = ".status.id"),
    printcolumn(name = "REGISTRY", type_ = "string", json_path = ".spec.registry"),
    printcolumn(name = "SECRET", type_ = "string", json_path = ".spec.secretRef.name")
)]
#[serde(rename_all = "camelCase")]
pub struct RegistryCredentialSpec {
    /// Name of the credential on the platform, 1 to 100 characters;
    /// `<namespace>-<name>-<uid8>` (the first eight hex digits of the object's UID) when
    /// unset. A suffix that changes with the Secret's content is added, because a change is
    /// made by registering a new credential (the platform's names are unique).
    #[schemars(length(min = 1, max = 100))]
    pub name: Option<String>,
    /// A Secret of type `kubernetes.io/dockerconfigjson` in this namespace, as
    /// `kubectl create secret docker-registry` makes.
    pub secret_ref: DockerConfigSecretRef,
    /// Registry host whose entry of the Secret to use, such as `ghcr.io` or
    /// `registry.example.com:5000`: a host name with an optional port, no scheme or path,
    /// 1 to 253 characters.
    #[schemars(
        length(min = 1, max = 253),
        regex(pattern = r"^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]{1,5})?$")
    )]
    pub registry: String,
    /// What happens to the platform's credential when this object is deleted: `Delete`
    /// (the default) or `Orphan`.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    /// `Manage` the credential (the default), or `ObserveOnly`.
    #[serde(default)]
    pub management_policy: ManagementPolicy,
    /// Secret holding the API key for this object; the operator's default key when unset.
    pub credentials_secret_ref: Option<CredentialsSecretRef>,
}

crate::managed::managed_kind!(RegistryCredential, RegistryCredentialStatus);
