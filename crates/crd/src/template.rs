//! `Template`: a reusable container definition (image, disk, env, ports) on the platform,
//! which endpoints and pods are made from.

// Each `printcolumn(...)` repeats the same keys, which clippy takes for duplicates.
#![allow(clippy::duplicated_attributes)]

use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{
    CommonStatus, CredentialsSecretRef, DeletionPolicy, LocalObjectReference, ManagementPolicy,
};
use crate::container::ContainerSettings;

/// A template on the GPU cloud: the container that serverless workers or pods run.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq)]
#[kube(
    group = "gpucloud.io",
    version = "v1beta1",
    kind = "Template",
    namespaced,
    status = "TemplateStatus",
    shortname = "gtpl",
    category = "gpucloud",
    doc = "A template on the GPU cloud: the container that serverless workers or pods run.",
    printcolumn(name = "ID", type_ = "string", json_path = ".status.id"),
    printcolumn(name = "IMAGE", type_ = "string", json_path = ".spec.image"),
    printcolumn(name = "SERVERLESS", type_ = "boolean", json_path = ".spec.serverless")
)]
#[x_kube(
    validation = Rule::new("!has(self.volumeMountPath) || (has(self.volumeGb) && self.volumeGb > 0)").message("volumeMountPath needs volumeGb greater than 0")
)]
#[serde(rename_all = "camelCase")]
pub struct TemplateSpec {
    /// Name of the template on the platform, where it must be unique, 1 to 128 characters;
    /// `<namespace>-<name>-<uid8>` (the first eight hex digits of the object's UID) when
    /// unset. Changing it renames the template.
    #[schemars(length(min = 1, max = 128))]
    pub name: Option<String>,
    /// Container image, 1 to 512 characters.
    #[schemars(length(min = 1, max = 512))]
    pub image: String,
    /// Arguments, ports and environment of the container.
    #[serde(flatten)]
    pub container: ContainerSettings,
    /// Container disk in gigabytes (wiped on restart), 1 to 10,000; the platform's default
    /// when unset.
    #[schemars(range(min = 1, max = 10000))]
    pub container_disk_gb: Option<i32>,
    /// Local volume in gigabytes, kept across restarts, 0 to 10,000; none when unset.
    #[schemars(range(min = 0, max = 10000))]
    pub volume_gb: Option<i32>,
    /// Where the local volume is mounted: an absolute path of at most 255 characters;
    /// `/workspace` when unset. Needs `volumeGb` greater than 0.
    #[schemars(regex(pattern = r"^/.*"), length(max = 255))]
    pub volume_mount_path: Option<String>,
    /// For serverless workers (true) or pods (false, the default). The seed API cannot
    /// change it in place: there a change replaces the template.
    #[serde(default)]
    pub serverless: bool,
    /// Hardware family: `NVIDIA` (the platform's default when unset), `AMD` or `CPU`. The
    /// seed API cannot change it in place.
    pub category: Option<TemplateCategory>,
    /// CUDA versions (`major.minor`, such as `12.4`) a host may run, at most 32; any when
    /// empty. REST v2 only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(regex(pattern = r"^[0-9]+\.[0-9]+$")), length(max = 32))]
    pub allowed_cuda_versions: Vec<String>,
    /// Start an SSH server in pods made from it. Unset: the platform's default for a
    /// template, which is true. REST v2 only.
    pub start_ssh: Option<bool>,
    /// Start Jupyter in pods made from it. Unset: the platform's default for a template,
    /// which is true. REST v2 only.
    pub start_jupyter: Option<bool>,
    /// A `RegistryCredential` in this namespace to pull a private image with; none when
    /// unset. The template waits until it is Ready and follows it when it is replaced.
    pub registry_credential_ref: Option<LocalObjectReference>,
    /// What happens to the remote template when this object is deleted: `Delete` (the
    /// default) or `Orphan`. It is deleted only once no Endpoint or Pod of the cluster uses
    /// it any more.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    /// `Manage` the template (the default), or `ObserveOnly`.
    #[serde(default)]
    pub management_policy: ManagementPolicy,
    /// Secret holding the API key for this object; the operator's default key when unset.
    pub credentials_secret_ref: Option<CredentialsSecretRef>,
}

/// A template's hardware family.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "UPPERCASE")]
pub enum TemplateCategory {
    Nvidia,
    Amd,
    Cpu,
}

impl TemplateCategory {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Nvidia => "NVIDIA",
            Self::Amd => "AMD",
            Self::Cpu => "CPU",
        }
    }
}

/// What the platform reports about the template. Never env values.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TemplateStatus {
    #[serde(flatten)]
    pub common: CommonStatus,
    /// Name of the template on the platform.
    pub name: Option<String>,
    /// Image on the platform.
    pub image: Option<String>,
    /// Registry credential id the platform pulls the image with.
    pub registry_id: Option<String>,
}

crate::managed::managed_kind!(Template, TemplateStatus);
