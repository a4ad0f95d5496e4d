//! `Template` in `v1alpha1`: `startSsh` and `startJupyter` may be unset (the platform's
//! default), and the container fields have the Template's own bounds.

use serde::{Deserialize, Serialize};

use super::Object;
use crate::common::{CredentialsSecretRef, DeletionPolicy, LocalObjectReference, ManagementPolicy};
use crate::container::EnvVar;
use crate::template::{TemplateCategory, TemplateStatus};

/// A `v1alpha1` Template.
pub type Template = Object<TemplateSpec, TemplateStatus>;

/// The spec of a `v1alpha1` Template.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TemplateSpec {
    pub name: Option<String>,
    pub image: String,
    pub args: Option<String>,
    pub container_disk_gb: Option<i32>,
    pub volume_gb: Option<i32>,
    pub volume_mount_path: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    #[serde(default)]
    pub serverless: bool,
    pub category: Option<TemplateCategory>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_cuda_versions: Vec<String>,
    pub start_ssh: Option<bool>,
    pub start_jupyter: Option<bool>,
    pub registry_credential_ref: Option<LocalObjectReference>,
    #[serde(default)]
    pub deletion_policy: DeletionPolicy,
    #[serde(default)]
    pub management_policy: ManagementPolicy,
    pub credentials_secret_ref: Option<CredentialsSecretRef>,
}
