//! What the platform billed this month, for Budgets' `spentThisMonth` and
//! `maxSpendPerMonth`: every `interval` while a Budget exists, one read of the billing of
//! the Pods, one of the serverless Endpoints and one of the Instant Clusters (REST v2, the
//! operator's default key) from
//! the first of the month (UTC), summed by platform id into the ledger. Each Budget then
//! sums what its own members were billed. The window and the sums are pure.

use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc::UnboundedSender;
use k8s_openapi::jiff::Timestamp;
use k8s_openapi::jiff::tz::TimeZone;
use parking_lot::RwLock;
use tracing::{debug, warn};

use gpucloud_engine::context::Shared;
use gpucloud_platform::PlatformApi;
use gpucloud_platform::v2::{
    BillingBucketSize, BillingWindow, ClusterBilling, PodBilling, ServerlessBilling,
};
use gpucloud_policy::budget::BudgetLedger;
use gpucloud_policy::budget::ledger::MonthSpend;

/// Where the month's billing stands, for the Budgets' condition.
#[derive(Clone, Debug, PartialEq)]
pub enum Billing {
    /// Not read yet.
    Unread,
    /// Read at that time.
    Read(Timestamp),
    /// The backend has no billing (the seed API).
    Unsupported,
    /// The last read failed: why (the platform's words, never the key).
    Failed(String),
}

/// The state every Budget's status reads.
pub type BillingState = Arc<RwLock<Billing>>;

/// Midnight UTC on the first day of `now`'s month.
pub fn month_start(now: Timestamp) -> Timestamp {
    let date = now.to_zoned(TimeZone::UTC).date();
    date.first_of_month()
        .to_zoned(TimeZone::UTC)
        .map(|z| z.timestamp())
        .unwrap_or(now)
}

/// The records of the three families, summed by platform id.
pub fn by_id(
    pods: &PodBilling,
    serverless: &ServerlessBilling,
    clusters: &ClusterBilling,
) -> MonthSpend {
    let mut spend = MonthSpend::new();
    for r in &pods.records {
        *spend.entry(r.pod_id.clone()).or_default() += r.amounts.total_amount;
    }
    for r in &serverless.records {
        *spend.entry(r.serverless_id.clone()).or_default() += r.amounts.total_amount;
    }
    for r in &clusters.records {
        *spend.entry(r.cluster_id.clone()).or_default() += r.amounts.total_amount;
    }
    spend
}

/// Reads the month's billing every `interval` while a Budget exists, and asks for every
/// Budget's reconcile after each read.
pub async fn refresh(
    shared: Arc<Shared>,
    ledger: Arc<BudgetLedger>,
    state: BillingState,
    interval: Duration,
    reconcile_all: UnboundedSender<()>,
) {
    loop {
        if ledger.any_budget() {
            let outcome = read_once(&shared).await;
            let billing = match outcome {
                Ok(Some(spend)) => {
                    debug!(objects = spend.len(), "read this month's billing");
                    ledger.set_spend(spend);
                    Billing::Read(Timestamp::now())
                }
                Ok(None) => Billing::Unsupported,
                Err(why) => {
                    warn!(error = %why, "could not read this month's billing");
                    Billing::Failed(why)
                }
            };
            let unsupported = billing == Billing::Unsupported;
            *state.write() = billing;
            let _ = reconcile_all.unbounded_send(());
            if unsupported {
                return;
            }
        }
        tokio::time::sleep(interval).await;
    }
}

/// One read of the three families; `None` when the backend has no billing.
async fn read_once(shared: &Shared) -> Result<Option<MonthSpend>, String> {
    let namespace = &shared.config.operator_namespace;
    let credentials = shared
        .credentials
        .resolve(namespace, None)
        .await
        .map_err(|f| f.message)?;
    let platform = shared.platform.with_api_key(credentials.key);
    if platform.api() != PlatformApi::V2 {
        return Ok(None);
    }
    let window = BillingWindow {
        start_time: Some(month_start(Timestamp::now()).to_string()),
        end_time: None,
        bucket_size: Some(BillingBucketSize::Month),
        last_n: None,
    };
    let v2 = platform.v2();
    let pods = v2
        .pod_billing(&window, None)
        .await
        .map_err(|e| e.to_string())?;
    let serverless = v2
        .serverless_billing(&window, None)
        .await
        .map_err(|e| e.to_string())?;
    let clusters = v2
        .cluster_billing(&window, None)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Some(by_id(&pods, &serverless, &clusters)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_month_starts_at_midnight_utc_on_the_first() {
        let now: Timestamp = "2026-11-26T04:15:00Z".parse().unwrap();
        assert_eq!(month_start(now).to_string(), "2026-11-01T00:00:00Z");
        let first: Timestamp = "2026-12-01T00:00:00Z".parse().unwrap();
        assert_eq!(month_start(first), first);
    }

    #[test]
    fn records_are_summed_by_the_id_they_bill() {
        let pods: PodBilling = serde_json::from_value(serde_json::json!({
            "records": [
                {"startTime": "a", "endTime": "b", "podId": "p1", "totalAmount": 1.5},
                {"startTime": "b", "endTime": "c", "podId": "p1", "totalAmount": 0.5},
                {"startTime": "a", "endTime": "b", "podId": "p2", "totalAmount": 0.25},
            ],
            "metadata": {"query": {"startTime": "a", "endTime": "c"}, "recordCount": 3, "totals": {}},
        }))
        .unwrap();
        let serverless: ServerlessBilling = serde_json::from_value(serde_json::json!({
            "records": [{"startTime": "a", "endTime": "b", "serverlessId": "e1", "totalAmount": 2.0}],
            "metadata": {"query": {"startTime": "a", "endTime": "c"}, "recordCount": 1, "totals": {}},
        }))
        .unwrap();
        let clusters: ClusterBilling = serde_json::from_value(serde_json::json!({
            "records": [{"startTime": "a", "endTime": "b", "clusterId": "c1", "totalAmount": 99.0}],
            "metadata": {"query": {"startTime": "a", "endTime": "c"}, "recordCount": 1, "totals": {}},
        }))
        .unwrap();
        let spend = by_id(&pods, &serverless, &clusters);
        assert_eq!(spend.get("c1"), Some(&99.0));
        assert_eq!(spend.get("p1"), Some(&2.0));
        assert_eq!(spend.get("p2"), Some(&0.25));
        assert_eq!(spend.get("e1"), Some(&2.0));
    }
}
