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
use super::pod::{EnvVar, PORTS_MESSAGE, PORTS_RULE};

/// A template on the GPU cloud: the container that serverless workers or pods run.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq)]
#[kube(
    group = "gpucloud.io",
    version = "v1alpha1",
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
    /// Name of the template on the platform, where it must be unique. Defaults to
    /// `<namespace>-<name>-<uid>`. Changing it renames the template.
    #[schemars(length(min = 1, max = 128))]
    pub name: Option<String>,
    /// Container image.
    #[schemars(length(min = 1, max = 512))]
    pub image: String,
    /// Arguments given to the container, space-separated.
    #[schemars(length(max = 4096))]
    pub args: Option<String>,
    /// Container disk in GB (wiped on restart); the platform's default when unset.
    #[schemars(range(min = 1, max = 1000))]
    pub container_disk_gb: Option<i32>,
    /// Local volume in GB, kept across restarts; none when unset.
    #[schemars(range(min = 0, max = 4000))]
    pub volume_gb: Option<i32>,
    /// Where the local volume is mounted; `/workspace` when unset.
    #[schemars(regex(pattern = r"^/.*"), length(max = 255))]
    pub volume_mount_path: Option<String>,
    /// Ports to expose, each `<port>/<type>` such as `8888/http`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        inner(regex(pattern = r"^[0-9]{1,5}/(http|tcp)$"), length(max = 10)),
        length(max = 32)
    )]
    #[x_kube(validation = Rule::new(PORTS_RULE).message(PORTS_MESSAGE))]
    pub ports: Vec<String>,
    /// Environment variables of the container. Values from Secrets go to the platform and
    /// nowhere else.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub env: Vec<EnvVar>,
    /// For serverless workers (true) or pods (false). The seed API cannot change it in
    /// place: there a change replaces the template.
    #[serde(default)]
    pub serverless: bool,
    /// Hardware family: `NVIDIA` (the platform's default), `AMD` or `CPU`. The seed API
    /// cannot change it in place.
    pub category: Option<TemplateCategory>,
    /// CUDA versions (`major.minor`) a host may run; any when empty. REST v2 only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(regex(pattern = r"^[0-9]+\.[0-9]+$")), length(max = 32))]
    pub allowed_cuda_versions: Vec<String>,
    /// Start an SSH server in pods made from it (the platform's default is true). REST v2
    /// only.
    pub start_ssh: Option<bool>,
    /// Start Jupyter in pods made from it (the platform's default is true). REST v2 only.
    pub start_jupyter: Option<bool>,
    /// A `RegistryCredential` in this namespace to pull a private image with. The template
    /// waits until it is Ready and follows it when it is replaced.
    pub registry_credential_ref: Option<LocalObjectReference>,
    /// What happens to the remote template when this object is deleted. It is deleted only
    /// once no Endpoint or Pod of the cluster uses it any more.
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    /// Manage the template, or only observe it.
    #[serde(default)]
    pub management_policy: ManagementPolicy,
    /// Secret holding the API key for this object, instead of the operator's default.
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
