//! `RegistryCredential`: a container registry username and password, read from a
//! `kubernetes.io/dockerconfigjson` Secret and registered on the platform, so that templates
//! and pods can pull private images.

// Each `printcolumn(...)` repeats the same keys, which clippy takes for duplicates.
#![allow(clippy::duplicated_attributes)]

use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{CommonStatus, CredentialsSecretRef, DeletionPolicy, ManagementPolicy};

/// The Secret type `kubectl create secret docker-registry` makes.
pub const DOCKER_CONFIG_JSON_TYPE: &str = "kubernetes.io/dockerconfigjson";
/// The key of that Secret type.
pub const DOCKER_CONFIG_JSON_KEY: &str = ".dockerconfigjson";

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

/// A docker-registry Secret in the object's namespace.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DockerConfigSecretRef {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// What the operator knows of the platform's credential. Never the username or password.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RegistryCredentialStatus {
    #[serde(flatten)]
    pub common: CommonStatus,
    /// Name of the credential on the platform.
    pub name: Option<String>,
    /// A salted, truncated SHA-256 of the registry, username and password the current
    /// credential was registered with: how a change of the Secret is noticed (the platform
    /// never returns the password).
    pub secret_hash: Option<String>,
    /// Credentials replaced by a newer one, deleted from the platform once no template
    /// uses them any more.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retiring_ids: Vec<String>,
}

crate::managed::managed_kind!(RegistryCredential, RegistryCredentialStatus);
