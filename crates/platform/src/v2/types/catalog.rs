//! The catalogue: GPU types, CPU flavours and data centres, with the filters of their
//! listings.

use serde::{Deserialize, Serialize};

use super::common::{Cloud, VolumeType, open_enum};

open_enum! {
    /// How much of something is free now.
    AvailabilityLevel { None => "NONE", Low => "LOW", Medium => "MEDIUM", High => "HIGH" }
}

open_enum! {
    /// The product availability is asked for: stock differs between them.
    Product { Pod => "POD", Cluster => "CLUSTER", Serverless => "SERVERLESS" }
}

open_enum! {
    /// GPU maker.
    #[derive(Default)]
    GpuManufacturer { Nvidia => "NVIDIA", Amd => "AMD", #[default] Unknown => "UNKNOWN" }
}

open_enum! {
    /// Continent of a data centre.
    #[derive(Default)]
    DataCenterRegion {
        NorthAmerica => "NORTH_AMERICA",
        SouthAmerica => "SOUTH_AMERICA",
        Europe => "EUROPE",
        Asia => "ASIA",
        MiddleEast => "MIDDLE_EAST",
        Africa => "AFRICA",
        Oceania => "OCEANIA",
        Antarctica => "ANTARCTICA",
        #[default]
        Unknown => "UNKNOWN",
    }
}

open_enum! {
    /// A certification a data centre holds.
    Compliance {
        Gdpr => "GDPR",
        IsoIec27001 => "ISO_IEC_27001",
        Iso14001 => "ISO_14001",
        PciDss => "PCI_DSS",
        Hitrust => "HITRUST",
        Soc1Type2 => "SOC_1_TYPE_2",
        Soc2Type2 => "SOC_2_TYPE_2",
        Soc3Type2 => "SOC_3_TYPE_2",
        Itar => "ITAR",
        FismaHigh => "FISMA_HIGH",
        Hipaa => "HIPAA",
        Renewable => "RENEWABLE",
    }
}

/// A GPU type with its prices and, when asked for, its availability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GpuType {
    /// The id pods ask for in `gpu.id`.
    pub id: String,
    pub name: String,
    /// Serverless pool holding this type (endpoints ask for pools); unset if none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    #[serde(default)]
    pub manufacturer: GpuManufacturer,
    /// VRAM, GB.
    #[serde(default)]
    pub memory: u32,
    /// Offered on the secure cloud.
    #[serde(default)]
    pub secure: bool,
    /// Offered on the community cloud.
    #[serde(default)]
    pub community: bool,
    #[serde(default)]
    pub price: GpuPrice,
    #[serde(default)]
    pub max_count: GpuMaxCount,
    /// With `include=AVAILABILITY` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub availability: Option<AvailabilityLevel>,
    /// With `include=AVAILABILITY` only: data centres offering it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_centers: Option<Vec<DataCenterAvailability>>,
    /// With `include=AVAILABILITY` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_versions: Option<Vec<CudaVersionAvailability>>,
}

/// USD per hour for one GPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GpuPrice {
    #[serde(default)]
    pub secure: f64,
    #[serde(default)]
    pub community: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serverless: Option<f64>,
}

/// Most GPUs of this type one pod may have, per cloud.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GpuMaxCount {
    #[serde(default)]
    pub secure: u32,
    #[serde(default)]
    pub community: u32,
}

/// Availability in one data centre.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataCenterAvailability {
    pub id: String,
    #[serde(default)]
    pub name: String,
    pub availability: AvailabilityLevel,
}

/// Whether hosts with this CUDA version have room now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CudaVersionAvailability {
    pub version: String,
    pub available: bool,
}

/// Filters and expansions of `GET /v2/catalog/gpus` (and of one GPU type).
/// `availability` requires at least one product; the other filters require
/// `availability` (the platform answers 400 otherwise).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuQuery {
    /// `include=AVAILABILITY`.
    pub availability: bool,
    pub products: Vec<Product>,
    /// GPUs per pod the availability is for (the platform's default is 1).
    pub count: Option<u32>,
    /// The platform's default is `SECURE`.
    pub cloud: Option<Cloud>,
    /// ISO 3166-1 alpha-2, upper case.
    pub country_codes: Vec<String>,
    /// Exact `major.minor` versions.
    pub cuda_versions: Vec<String>,
    /// `major` or `major.minor`.
    pub min_cuda_version: Option<String>,
}

/// A CPU flavour.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuType {
    /// The id pods ask for in `cpu.id`.
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub vcpu: VcpuRange,
    #[serde(default)]
    pub ram_gb_per_vcpu: f64,
    #[serde(default)]
    pub price: CpuPrice,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub availability: Option<AvailabilityLevel>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_centers: Option<Vec<DataCenterAvailability>>,
}

/// vCPU counts a flavour allows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VcpuRange {
    pub min: u32,
    pub max: u32,
}

/// USD per hour per vCPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuPrice {
    #[serde(default)]
    pub secure_per_vcpu: f64,
    #[serde(default)]
    pub serverless_per_vcpu: f64,
}

/// Filters of `GET /v2/catalog/cpus`; as [`GpuQuery`], the others need `availability`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuQuery {
    pub availability: bool,
    /// `POD` or `SERVERLESS`.
    pub products: Vec<Product>,
    /// A power of two.
    pub vcpu_count: Option<u32>,
}

/// A data centre.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DataCenter {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub region: DataCenterRegion,
    /// Supports the private cross-data-centre network.
    #[serde(default)]
    pub global_network: bool,
    /// Volume tiers offered here; empty: none.
    #[serde(default)]
    pub network_volume_types: Vec<VolumeType>,
    #[serde(default)]
    pub compliance: Vec<Compliance>,
    /// With `include=GPU_AVAILABILITY` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_availability: Option<Vec<CatalogResourceAvailability>>,
    /// With `include=CPU_AVAILABILITY` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_availability: Option<Vec<CatalogResourceAvailability>>,
}

/// Availability of one GPU type or CPU flavour in a data centre.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CatalogResourceAvailability {
    pub id: String,
    #[serde(default)]
    pub name: String,
    pub availability: AvailabilityLevel,
}

/// Filters and expansions of `GET /v2/catalog/datacenters`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataCenterQuery {
    /// `include=GPU_AVAILABILITY`.
    pub gpu_availability: bool,
    /// `include=CPU_AVAILABILITY`.
    pub cpu_availability: bool,
    /// Any of these regions.
    pub regions: Vec<DataCenterRegion>,
    /// All of these tiers.
    pub network_volume_types: Vec<VolumeType>,
    /// All of these certifications.
    pub compliance: Vec<Compliance>,
    pub global_network: Option<bool>,
}
