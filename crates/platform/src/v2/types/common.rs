//! Pieces shared by several v2 resources: the open enums, mounts and
//! compute selections.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

/// Declares a string enum of the platform that may gain values: known ones get a variant,
/// anything else is kept verbatim in `Other` instead of failing the decode.
macro_rules! open_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident => $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        #[serde(from = "String", into = "String")]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
            /// A value this client does not know yet, as the platform sent it.
            Other(String),
        }

        impl $name {
            /// Every value this client knows.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),+];

            /// The value on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $wire,)+
                    $name::Other(s) => s,
                }
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                match s.as_str() {
                    $($wire => $name::$variant,)+
                    _ => $name::Other(s),
                }
            }
        }

        impl From<$name> for String {
            fn from(v: $name) -> String {
                match v {
                    $name::Other(s) => s,
                    known => known.as_str().to_owned(),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = std::convert::Infallible;
            /// Case-insensitive for known values (command lines); others kept as given.
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Ok($name::KNOWN
                    .iter()
                    .find(|k| k.as_str().eq_ignore_ascii_case(s.trim()))
                    .cloned()
                    .unwrap_or_else(|| $name::Other(s.trim().to_owned())))
            }
        }
    };
}
pub(crate) use open_enum;

open_enum! {
    /// Cloud tier of a pod.
    Cloud { Secure => "SECURE", Community => "COMMUNITY" }
}

open_enum! {
    /// Storage tier of a network volume.
    VolumeType { Standard => "STANDARD", HighPerformance => "HIGH_PERFORMANCE" }
}

/// Reads a field that may be absent, `null` or a value, keeping "null" apart from
/// "absent": `Some(None)` is an explicit null (a PATCH that clears the field).
pub(crate) fn nullable<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// Host-local storage kept across restarts (not across termination).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentMount {
    /// GB; the platform's floor is 10.
    pub size: u32,
    pub path: String,
}

/// A network volume mounted into the container.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkMount {
    pub volume_id: String,
    pub path: String,
}

/// Storage of a pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mounts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent: Option<PersistentMount>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<Vec<NetworkMount>>,
}

/// Storage of a template (network volumes are chosen per pod).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateMounts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent: Option<PersistentMount>,
}

/// GPUs of a pod, as answered.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GpuConfig {
    /// GPU type id, as `GET /v2/catalog/gpus` lists it.
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

/// GPUs asked for when creating a pod, with the host's CUDA constraints.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateGpuConfig {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// `allowedCudaVersions` and `minCudaVersion`.
    #[serde(flatten)]
    pub cuda: CudaVersions,
}

/// The CUDA versions a host may run, asked for with GPUs (a pod's or an endpoint's
/// workers'); each sent only when set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CudaVersions {
    /// `major.minor` versions the host may run; unset accepts any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_cuda_versions: Option<Vec<String>>,
    /// Lowest acceptable `major.minor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_cuda_version: Option<String>,
}

/// A CPU flavour and size, as answered (pods: with the memory it came with).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuConfig {
    /// CPU flavour id, as `GET /v2/catalog/cpus` lists it.
    pub id: String,
    pub vcpu_count: u32,
    /// GB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<u32>,
}

/// A CPU flavour and size asked for on create (memory follows from the flavour).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateCpuConfig {
    pub id: String,
    /// A power of two, at least 2.
    pub vcpu_count: u32,
}

/// Environment variables of a container.
pub type Env = BTreeMap<String, String>;
