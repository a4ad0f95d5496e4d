//! Network volumes.

use serde::{Deserialize, Serialize};

use super::common::VolumeType;

/// A network volume as the platform describes it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkVolume {
    pub id: String,
    pub name: String,
    /// GB.
    pub size: u32,
    /// Data centre id; fixed at creation.
    pub data_center: String,
    /// Storage tier; fixed at creation.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub volume_type: Option<VolumeType>,
}

/// Body of `POST /v2/network-volumes`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateNetworkVolume {
    pub name: String,
    /// GB, 10 to 4096.
    pub size: u32,
    pub data_center: String,
    /// The data centre's default tier when unset.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub volume_type: Option<VolumeType>,
}

/// Body of `PATCH /v2/network-volumes/{id}`; at least one field. Size may only grow.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UpdateNetworkVolume {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u32>,
}
