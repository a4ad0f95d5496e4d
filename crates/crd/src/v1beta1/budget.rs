//! `Budget` in `v1beta1`: the same as in `v1alpha1`.

// Each `printcolumn(...)` repeats the same keys, which clippy takes for duplicates.
#![allow(clippy::duplicated_attributes)]

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use crate::budget::{BudgetAction, BudgetStatus};

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
