//! Network volumes, whichever backend serves them.

use serde::{Deserialize, Serialize};

use super::super::config::PlatformApi;
use super::super::error::PlatformError;
use super::super::{NetworkVolumeCreate, NetworkVolumeUpdate, PlatformClient, v2};

type Result<T> = std::result::Result<T, PlatformError>;

/// The storage class of a volume. The seed backend knows only the standard one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum VolumeType {
    #[default]
    Standard,
    HighPerformance,
}

impl VolumeType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Standard => "STANDARD",
            Self::HighPerformance => "HIGH_PERFORMANCE",
        }
    }
}

/// A network volume as both backends describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Volume {
    pub id: String,
    pub name: String,
    pub size_gb: i64,
    pub data_center_id: String,
    pub volume_type: VolumeType,
}

/// What a create asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewVolume {
    pub name: String,
    pub size_gb: i64,
    pub data_center_id: String,
    pub volume_type: VolumeType,
}

/// An in-place change: a rename, a growth, or both.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VolumeUpdate {
    pub name: Option<String>,
    pub size_gb: Option<i64>,
}

/// Network volume calls; obtained from [`PlatformClient::volumes`].
#[derive(Clone, Debug)]
pub struct Volumes {
    client: PlatformClient,
}

impl PlatformClient {
    /// Network volumes, on whichever backend the configuration chose.
    pub fn volumes(&self) -> Volumes {
        Volumes::new(self.clone())
    }
}

impl Volumes {
    pub(crate) fn new(client: PlatformClient) -> Self {
        Self { client }
    }

    /// Every volume of the account, in one call.
    pub async fn list(&self) -> Result<Vec<Volume>> {
        super::list_from(
            self.client.api(),
            self.client.rest().list_network_volumes(),
            from_seed,
            self.client.v2().list_network_volumes_as(from_v2),
        )
        .await
    }

    /// Creates a volume. Never retried after an ambiguous failure: see
    /// [`PlatformError::may_have_been_applied`].
    pub async fn create(&self, new: &NewVolume) -> Result<Volume> {
        match self.client.api() {
            PlatformApi::Seed => {
                if new.volume_type != VolumeType::Standard {
                    return Err(PlatformError::invalid_input(
                        "type",
                        "the seed API (REST v1) offers only STANDARD volumes",
                    ));
                }
                let input = NetworkVolumeCreate {
                    name: new.name.clone(),
                    size: new.size_gb,
                    data_center_id: new.data_center_id.clone(),
                };
                Ok(from_seed(
                    self.client.rest().create_network_volume(&input).await?,
                ))
            }
            PlatformApi::V2 => {
                let input = v2::CreateNetworkVolume {
                    name: new.name.clone(),
                    size: gigabytes("size", new.size_gb)?,
                    data_center: new.data_center_id.clone(),
                    volume_type: Some(to_v2_type(new.volume_type)),
                };
                let created = self
                    .client
                    .v2()
                    .create_network_volume(&input)
                    .await
                    .map_err(|e| super::rename_field(e, "dataCenter", "dataCenterId"))?;
                Ok(from_v2(created))
            }
        }
    }

    /// Renames and/or grows a volume in one call.
    pub async fn update(&self, id: &str, change: &VolumeUpdate) -> Result<()> {
        match self.client.api() {
            PlatformApi::Seed => {
                let input = NetworkVolumeUpdate {
                    name: change.name.clone(),
                    size: change.size_gb,
                };
                self.client
                    .rest()
                    .update_network_volume(id, &input)
                    .await
                    .map(drop)
            }
            PlatformApi::V2 => {
                let input = v2::UpdateNetworkVolume {
                    name: change.name.clone(),
                    size: change.size_gb.map(|s| gigabytes("size", s)).transpose()?,
                };
                self.client
                    .v2()
                    .update_network_volume(id, &input)
                    .await
                    .map(drop)
            }
        }
    }

    pub async fn delete(&self, id: &str) -> Result<()> {
        match self.client.api() {
            PlatformApi::Seed => self.client.rest().delete_network_volume(id).await,
            PlatformApi::V2 => self.client.v2().delete_network_volume(id).await,
        }
    }
}

fn from_seed(v: super::super::NetworkVolume) -> Volume {
    Volume {
        id: v.id,
        name: v.name,
        size_gb: v.size,
        data_center_id: v.data_center_id,
        volume_type: VolumeType::Standard,
    }
}

fn from_v2(v: v2::NetworkVolume) -> Volume {
    Volume {
        id: v.id,
        name: v.name,
        size_gb: i64::from(v.size),
        data_center_id: v.data_center,
        volume_type: match v.volume_type {
            Some(v2::VolumeType::HighPerformance) => VolumeType::HighPerformance,
            _ => VolumeType::Standard,
        },
    }
}

/// A size in GB as REST v2 takes it (unsigned).
fn gigabytes(field: &str, size: i64) -> Result<u32> {
    u32::try_from(size)
        .map_err(|_| PlatformError::invalid_input(field, format!("{size} is not a size in GB")))
}

fn to_v2_type(t: VolumeType) -> v2::VolumeType {
    match t {
        VolumeType::Standard => v2::VolumeType::Standard,
        VolumeType::HighPerformance => v2::VolumeType::HighPerformance,
    }
}
