//! The document's one container configuration (`ContainerConfig`: `image`, `args`,
//! `disk`, `ports`, `env` and `registry`), which pods, serverless endpoints and templates
//! all compose (`allOf`). Each resource flattens it into its own fields, so the JSON is
//! the document's; it comes in three shapes, as the document's readers and writers use it:
//! as answered, as sent to create, and as sent to change.

use serde::{Deserialize, Deserializer, Serialize};

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

/// What `registry` is on a request body: `Option<String>` on a create, where absent and
/// `null` both mean none, or `Option<Option<String>>` on an update, where `Some(None)` is
/// sent (and read) as an explicit `null` that removes the credential.
pub trait RegistryField: Default + Serialize {
    /// Whether the field stays out of the JSON.
    fn is_unset(&self) -> bool;
    /// Reads the field when it is present (`null` included).
    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error>;
}

impl RegistryField for Option<String> {
    fn is_unset(&self) -> bool {
        self.is_none()
    }

    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Self::deserialize(d)
    }
}

impl RegistryField for Option<Option<String>> {
    fn is_unset(&self) -> bool {
        self.is_none()
    }

    fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        nullable(d)
    }
}

/// The container settings of a create body: only what is set is sent. An `image` of
/// type `String` is required (templates); `Option<String>` may be left to a template.
pub type CreateContainerConfig<I = Option<String>> = ContainerRequest<I, Option<String>>;

/// The container settings of an update body: only what is set changes.
pub type UpdateContainerConfig = ContainerRequest<Option<String>, Option<Option<String>>>;

/// The container settings a request sends ([`CreateContainerConfig`],
/// [`UpdateContainerConfig`]). Creates and updates send the same fields in the same order;
/// they differ only in whether `image` is required and whether `registry` can be cleared,
/// so they are one struct.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(
        serialize = "I: Serialize + ImageField, R: RegistryField",
        deserialize = "I: Deserialize<'de> + ImageField, R: RegistryField"
    )
)]
pub struct ContainerRequest<I, R> {
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
    /// On an update, `Some(None)` sends `null`: no credential.
    #[serde(
        default,
        skip_serializing_if = "RegistryField::is_unset",
        deserialize_with = "RegistryField::read"
    )]
    pub registry: R,
}
