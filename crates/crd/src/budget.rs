//! `Budget`: a cap on what the GPU pods and the minimum workers of the serverless
//! endpoints of a namespace may cost per hour.
//!
//! A Budget is not a platform object: the operator enforces it before its own platform
//! calls (a deploy, resume, endpoint create or raise of minimum workers that would go over
//! is held) and, with `StopNewest`, by stopping the most recently started pods when the
//! running total goes over.

// Each `printcolumn(...)` repeats the same keys, which clippy takes for duplicates.
#![allow(clippy::duplicated_attributes)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::condition::Condition;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The condition a Budget reports: `True` while a Pod or Endpoint is held or a Pod is
/// being stopped for it.
pub const BUDGET_EXCEEDED: &str = "BudgetExceeded";

/// A cap on the hourly cost of the gpucloud Pods and Endpoints of a namespace.
#[serde_with::skip_serializing_none]
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq)]
#[kube(
    group = "gpucloud.io",
    version = "v1beta1",
    kind = "Budget",
    namespaced,
    status = "BudgetStatus",
    shortname = "gbud",
    category = "gpucloud",
    doc = "A cap on what the gpucloud Pods and the minimum workers of the Endpoints of a namespace may cost per hour: deploys, resumes and endpoint creates or raises that would go over are held.",
    printcolumn(name = "MAX/HR", type_ = "number", json_path = ".spec.maxCostPerHour"),
    printcolumn(name = "COST/HR", type_ = "number", json_path = ".status.costPerHour"),
    printcolumn(
        name = "HEADROOM",
        type_ = "number",
        json_path = ".status.headroomPerHour"
    ),
    printcolumn(name = "HELD", type_ = "integer", json_path = ".status.heldCount"),
    printcolumn(
        name = "SPENT/MO",
        type_ = "number",
        json_path = ".status.spentThisMonth"
    ),
    printcolumn(name = "ACTION", type_ = "string", json_path = ".spec.action"),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct BudgetSpec {
    /// The most the matched Pods and Endpoints may cost together, per hour, in the
    /// platform's currency: a pod counts the `costPerHour` the platform reports, an
    /// endpoint its minimum workers at the catalog's price (its status's
    /// `minWorkersCostPerHour`).
    #[schemars(range(min = 0.0, max = 1000000.0))]
    pub max_cost_per_hour: f64,
    /// Which Pods and Endpoints of the namespace count (all of them when absent).
    pub selector: Option<LabelSelector>,
    /// What happens when the running total would go over.
    #[serde(default)]
    pub action: BudgetAction,
    /// The most the matched Pods and Endpoints may be billed in a calendar month (UTC),
    /// as the platform's billing reports it (REST v2; read every few minutes). Once
    /// reached, no hourly room is left: `Deny` holds every deploy, resume and endpoint
    /// create or raise, and `StopNewest` also stops the running Pods, newest first.
    #[schemars(range(min = 0.0, max = 100000000.0))]
    pub max_spend_per_month: Option<f64>,
}

/// What a Budget does when its Pods and Endpoints would cost more than `maxCostPerHour`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum BudgetAction {
    /// Hold deploys, resumes and endpoint creates or raises of minimum workers that would
    /// go over until there is room; what runs is left alone.
    #[default]
    Deny,
    /// Hold as `Deny` does, and when the running total goes over anyway (a price change,
    /// a pod resumed outside the operator) stop the most recently started pods until it
    /// fits. Endpoints count in the total but are never stopped (the operator cannot stop
    /// an endpoint's minimum workers without changing its spec): only Pods are.
    StopNewest,
}

/// What the Budget's Pods and Endpoints cost, and who waits for room.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BudgetStatus {
    /// The `metadata.generation` this status was computed for.
    pub observed_generation: Option<i64>,
    /// What the matched Pods that run (as the platform reports it) and the minimum workers
    /// of the matched Endpoints (at the catalog's price) cost per hour.
    #[serde(default)]
    pub cost_per_hour: f64,
    /// Deploys, resumes and endpoint changes admitted and not yet seen in status, at their
    /// expected price.
    #[serde(default)]
    pub reserved_per_hour: f64,
    /// `maxCostPerHour` minus the cost and the reservations (negative when over).
    #[serde(default)]
    pub headroom_per_hour: f64,
    /// Matched Pods that run or are about to, and matched Endpoints on the platform.
    #[serde(default)]
    pub running_count: i32,
    /// How many Pods and Endpoints are held for this Budget.
    #[serde(default)]
    pub held_count: i32,
    /// The held Pods and Endpoints as `Pod/<name>` and `Endpoint/<name>` (the first 50,
    /// sorted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<String>,
    /// Pods being stopped to bring the total under the cap (`StopNewest`), as
    /// `Pod/<name>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stopping: Vec<String>,
    /// What the platform billed this calendar month (UTC) for the matched Pods and
    /// Endpoints that exist, from its billing API; unset until read (and on the seed API,
    /// which has no billing).
    pub spent_this_month: Option<f64>,
    /// `Ready` (the Budget is enforced), `Stalled` (its selector is invalid) and
    /// `BudgetExceeded` (`True` while a Pod or Endpoint is held, or a Pod stopped, for
    /// this Budget).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
