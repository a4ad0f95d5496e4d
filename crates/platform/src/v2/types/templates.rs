//! Templates: reusable container settings for pods and endpoints.

use serde::{Deserialize, Serialize};

use super::common::{TemplateMounts, open_enum};
use super::container::{ContainerConfig, CreateContainerConfig, ImageField, UpdateContainerConfig};

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
pub type CreateTemplate = TemplateBody<String, CreateContainerConfig<String>>;

/// Body of `PATCH /v2/templates/{id}`: only what is set changes.
pub type UpdateTemplate = TemplateBody<Option<String>, UpdateContainerConfig>;

/// The body a template is created ([`CreateTemplate`]) or changed ([`UpdateTemplate`])
/// with. The two have the same fields in the same order and differ only in whether the
/// name is required (`String`) or optional (`Option<String>`) and in the container's shape,
/// so they are one struct.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(
        serialize = "N: Serialize + ImageField, C: Serialize",
        deserialize = "N: Deserialize<'de> + ImageField, C: Deserialize<'de>"
    )
)]
pub struct TemplateBody<N, C> {
    #[serde(skip_serializing_if = "ImageField::is_unset")]
    pub name: N,
    /// `image`, `args`, `disk`, `ports`, `env` and `registry`.
    #[serde(flatten)]
    pub container: C,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mounts: Option<TemplateMounts>,
    /// The platform's default on a create is `NVIDIA`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<TemplateCategory>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serverless: Option<bool>,
    /// The platform's default on a create is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_jupyter: Option<bool>,
    /// The platform's default on a create is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_ssh: Option<bool>,
    /// On an update, an empty list clears the constraint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_cuda_versions: Option<Vec<String>>,
}
