//! Templates: reusable container settings for pods and endpoints.

use serde::{Deserialize, Serialize};

use super::common::{TemplateMounts, open_enum};
use super::container::{ContainerConfig, CreateContainerConfig, UpdateContainerConfig};

open_enum! {
    /// Hardware family a template is meant for.
    TemplateCategory { Cpu => "CPU", Nvidia => "NVIDIA", Amd => "AMD" }
}

open_enum! {
    /// Slice of the public template catalogue.
    PublicTemplateSource {
        Official => "official",
        Verified => "verified",
        Community => "community",
    }
}

/// A template as the platform describes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Template {
    pub id: String,
    pub name: String,
    /// `image`, `args`, `disk`, `ports`, `env` and `registry` (the registry is always unset
    /// on templates of others).
    #[serde(flatten)]
    pub container: ContainerConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mounts: Option<TemplateMounts>,
    /// For serverless workers (true) or pods (false).
    #[serde(default)]
    pub serverless: bool,
    #[serde(default)]
    pub public: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<TemplateCategory>,
    #[serde(default)]
    pub start_ssh: bool,
    #[serde(default)]
    pub start_jupyter: bool,
    /// Empty: any.
    #[serde(default)]
    pub allowed_cuda_versions: Vec<String>,
}

/// Body of `POST /v2/templates`; `name` and `image` are required.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateTemplate {
    pub name: String,
    /// `image`, `args`, `disk`, `ports`, `env` and `registry`.
    #[serde(flatten)]
    pub container: CreateContainerConfig<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mounts: Option<TemplateMounts>,
    /// The platform's default is `NVIDIA`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<TemplateCategory>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serverless: Option<bool>,
    /// The platform's default is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_jupyter: Option<bool>,
    /// The platform's default is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ssh: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_cuda_versions: Option<Vec<String>>,
}

/// Body of `PATCH /v2/templates/{id}`: only what is set changes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateTemplate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `image`, `args`, `disk`, `ports`, `env` and `registry`.
    #[serde(flatten)]
    pub container: UpdateContainerConfig,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mounts: Option<TemplateMounts>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<TemplateCategory>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serverless: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_jupyter: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ssh: Option<bool>,
    /// An empty list clears the constraint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_cuda_versions: Option<Vec<String>>,
}
