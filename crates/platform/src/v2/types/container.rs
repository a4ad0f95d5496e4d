//! The document's one container configuration (`ContainerConfig`: `image`, `args`,
//! `disk`, `ports`, `env` and `registry`), which pods, serverless endpoints and templates
//! all compose (`allOf`). Each resource flattens it into its own fields, so the JSON is
//! the document's; it comes in three shapes, as the document's readers and writers use it:
//! as answered, as sent to create, and as sent to change.

use serde::{Deserialize, Serialize};

use super::common::{Env, nullable};

/// What `image` is on a schema: required (`String`, always sent) or optional
/// (`Option<String>`, sent when set). Pods and templates answer with an image; an
/// endpoint made from a template may have none. A template's `name` is the same kind of
/// field: required on a create, optional on an update ([`super::TemplateBody`]).
pub trait ImageField: Default {
    /// Whether the field stays out of the JSON.
    fn is_unset(&self) -> bool;
}

impl ImageField for String {
    fn is_unset(&self) -> bool {
        false
    }
}

impl ImageField for Option<String> {
    fn is_unset(&self) -> bool {
        self.is_none()
    }
}

/// The container settings of an answer. Absent lists and maps read as empty.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(
        serialize = "I: Serialize + ImageField",
        deserialize = "I: Deserialize<'de> + ImageField"
    )
)]
pub struct ContainerConfig<I = String> {
    #[serde(default, skip_serializing_if = "ImageField::is_unset")]
    pub image: I,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<String>,
    /// Container disk, GB (wiped on restart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<u32>,
    /// `port/protocol`, such as `8888/http`.
    #[serde(default)]
    pub ports: Vec<String>,
    #[serde(default)]
    pub env: Env,
    /// Registry credential id, for private images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
}

/// The container settings of a create body: only what is set is sent. An `image` of
/// type `String` is required (templates); `Option<String>` may be left to a template.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(
        serialize = "I: Serialize + ImageField",
        deserialize = "I: Deserialize<'de> + ImageField"
    )
)]
pub struct CreateContainerConfig<I = Option<String>> {
    #[serde(skip_serializing_if = "ImageField::is_unset")]
    pub image: I,
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
}

/// The container settings of an update body: only what is set changes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateContainerConfig {
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
}
