//! The container settings every kind that runs a container shares (Pod, Template,
//! Cluster): arguments, ports and environment, one type so that each field has the same
//! name, bound and rule on every kind.

use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The container settings of every kind that runs a container (Pod, Template, Cluster),
/// flattened into its spec.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ContainerSettings {
    /// Arguments given to the container, space-separated, at most 4,096 characters. Unset:
    /// the image's own command (with `templateRef`, the Template's arguments).
    #[schemars(length(max = 4096))]
    pub args: Option<String>,
    /// Ports to expose, at most 32, each `<port>/<type>` with a port from 1 to 65535 and a
    /// type of `http` or `tcp`, such as `8888/http`. None when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(
        inner(regex(pattern = r"^[0-9]{1,5}/(http|tcp)$"), length(max = 10)),
        length(max = 32)
    )]
    // The pattern checks the shape; the range needs the rule, which also says in words what
    // is wrong (a pattern failure only quotes the regex).
    #[x_kube(validation = Rule::new(PORTS_RULE).message(PORTS_MESSAGE))]
    pub ports: Vec<String>,
    /// Environment variables of the container, each with `value` or `valueFrom` (a key of a
    /// Secret in this namespace), not both. A Secret's value goes to the platform and
    /// nowhere else. None when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["name".into()]))]
    pub env: Vec<EnvVar>,
}

/// A key of a Secret in the pod's namespace.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SecretKeySelector {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Key inside the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub key: String,
}

/// Where an environment variable's value comes from.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EnvVarSource {
    /// A key of a Secret in the same namespace. The value goes to the platform and nowhere
    /// else: never into status, Events or logs.
    pub secret_key_ref: SecretKeySelector,
}

/// An environment variable of the pod's container.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[x_kube(validation = Rule::new("!(has(self.value) && has(self.valueFrom))").message("set value or valueFrom, not both"))]
#[serde(rename_all = "camelCase")]
pub struct EnvVar {
    /// Variable name: letters, digits and underscores, not starting with a digit.
    #[schemars(regex(pattern = r"^[A-Za-z_][A-Za-z0-9_]*$"), length(max = 256))]
    pub name: String,
    /// Literal value.
    pub value: Option<String>,
    /// Value taken from a Secret.
    pub value_from: Option<EnvVarSource>,
}

/// Every entry of `spec.ports` is a port from 1 to 65535 (no leading zero) and `http` or `tcp`.
/// Shared with the Template kind, whose `spec.ports` has the same form.
pub(crate) const PORTS_RULE: &str = "self.all(p, p.matches('^([1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])/(http|tcp)$'))";
pub(crate) const PORTS_MESSAGE: &str = "ports: each entry must be <port>/<type> with a port from 1 to 65535 and a type of http or tcp, such as 8888/http";
