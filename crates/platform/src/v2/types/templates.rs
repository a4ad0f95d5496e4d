//! Templates: reusable container settings for pods and endpoints.

use serde::{Deserialize, Serialize};

use super::common::{Env, TemplateMounts, nullable, open_enum};

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
    #[serde(default)]
    pub image: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mounts: Option<TemplateMounts>,
    #[serde(default)]
    pub ports: Vec<String>,
    #[serde(default)]
    pub env: Env,
    /// Registry credential id; always unset on templates of others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
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
    pub image: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Env>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Env>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<String>>,
    /// `Some(None)` sends `null`: no credential.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "nullable"
    )]
    pub registry: Option<Option<String>>,
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
