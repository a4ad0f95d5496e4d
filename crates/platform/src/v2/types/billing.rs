//! Billing histories: time buckets of spend, per resource or in aggregate.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::common::open_enum;

open_enum! {
    /// Length of one billing bucket.
    BillingBucketSize {
        Hour => "hour",
        Day => "day",
        Week => "week",
        Month => "month",
        Year => "year",
    }
}

/// The window of a billing request: `start_time`/`end_time` (RFC 3339) or `last_n`
/// buckets, not both; the platform's defaults are the last 30 days by day.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BillingWindow {
    pub start_time: Option<String>,
    pub end_time: Option<String>,
    pub bucket_size: Option<BillingBucketSize>,
    pub last_n: Option<u32>,
}

/// A billing answer: the records and what the platform resolved the query to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BillingHistory<R, T> {
    #[serde(default = "Vec::new")]
    pub records: Vec<R>,
    pub metadata: BillingMetadata<T>,
}

/// The resolved query, record count and totals of a billing answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BillingMetadata<T> {
    pub query: ResolvedBillingQuery,
    #[serde(default)]
    pub record_count: u64,
    pub totals: T,
    /// Per-resource counts (`uniquePodCount`, `uniqueServerlessCount`, ...).
    #[serde(flatten)]
    pub counts: BTreeMap<String, Value>,
}

/// The window and filter the platform applied.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedBillingQuery {
    pub start_time: String,
    pub end_time: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bucket_size: Option<BillingBucketSize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serverless_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_volume_id: Option<String>,
}

/// USD of one bucket across every resource family.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BillingAmounts {
    pub total_amount: f64,
    pub pod_gpu_amount: f64,
    pub pod_cpu_amount: f64,
    pub pod_disk_amount: f64,
    pub serverless_gpu_amount: f64,
    pub serverless_cpu_amount: f64,
    pub serverless_disk_amount: f64,
    pub serverless_fee_amount: f64,
    pub storage_standard_amount: f64,
    pub storage_high_performance_amount: f64,
    pub endpoint_amount: f64,
    pub cluster_gpu_amount: f64,
    pub cluster_disk_amount: f64,
    pub cluster_networking_amount: f64,
}

/// One bucket of `GET /v2/billing`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BillingRecord {
    pub start_time: String,
    pub end_time: String,
    #[serde(flatten)]
    pub amounts: BillingAmounts,
}

/// USD of pods in one bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodBillingAmounts {
    pub total_amount: f64,
    pub gpu_amount: f64,
    pub cpu_amount: f64,
    pub disk_amount: f64,
}

/// One pod in one bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodBillingRecord {
    pub start_time: String,
    pub end_time: String,
    pub pod_id: String,
    #[serde(flatten)]
    pub amounts: PodBillingAmounts,
}

/// USD of serverless endpoints in one bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServerlessBillingAmounts {
    pub total_amount: f64,
    pub gpu_amount: f64,
    pub cpu_amount: f64,
    pub disk_amount: f64,
    pub fee_amount: f64,
}

/// One endpoint in one bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerlessBillingRecord {
    pub start_time: String,
    pub end_time: String,
    pub serverless_id: String,
    #[serde(flatten)]
    pub amounts: ServerlessBillingAmounts,
}

/// USD of network volumes in one bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NetworkVolumeBillingAmounts {
    pub total_amount: f64,
    pub standard_amount: f64,
    pub high_performance_amount: f64,
}

/// One volume in one bucket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkVolumeBillingRecord {
    pub start_time: String,
    pub end_time: String,
    pub network_volume_id: String,
    #[serde(flatten)]
    pub amounts: NetworkVolumeBillingAmounts,
}

/// `GET /v2/billing`.
pub type AggregateBilling = BillingHistory<BillingRecord, BillingAmounts>;
/// `GET /v2/billing/pods`.
pub type PodBilling = BillingHistory<PodBillingRecord, PodBillingAmounts>;
/// `GET /v2/billing/serverless`.
pub type ServerlessBilling = BillingHistory<ServerlessBillingRecord, ServerlessBillingAmounts>;
/// `GET /v2/billing/network-volumes`.
pub type NetworkVolumeBilling =
    BillingHistory<NetworkVolumeBillingRecord, NetworkVolumeBillingAmounts>;
