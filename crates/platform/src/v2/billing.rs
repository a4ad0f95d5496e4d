//! Billing calls.

use super::types::{
    AggregateBilling, BillingWindow, NetworkVolumeBilling, PodBilling, ServerlessBilling,
};
use super::{Result, V2, check_id, query};
use crate::operation::Operation;

impl V2 {
    /// `GET /v2/billing`: spend across every resource family.
    pub async fn billing(&self, window: &BillingWindow) -> Result<AggregateBilling> {
        self.get(
            Operation::V2Billing,
            &["billing"],
            &query::billing(window, None),
        )
        .await
    }

    /// `GET /v2/billing/pods`, for one pod when `pod_id` is given.
    pub async fn pod_billing(
        &self,
        window: &BillingWindow,
        pod_id: Option<&str>,
    ) -> Result<PodBilling> {
        let op = Operation::V2PodBilling;
        if let Some(id) = pod_id {
            check_id(op, "podId", id)?;
        }
        let q = query::billing(window, pod_id.map(|id| ("podId", id)));
        self.get(op, &["billing", "pods"], &q).await
    }

    /// `GET /v2/billing/serverless`, for one endpoint when `serverless_id` is given.
    pub async fn serverless_billing(
        &self,
        window: &BillingWindow,
        serverless_id: Option<&str>,
    ) -> Result<ServerlessBilling> {
        let op = Operation::V2ServerlessBilling;
        if let Some(id) = serverless_id {
            check_id(op, "serverlessId", id)?;
        }
        let q = query::billing(window, serverless_id.map(|id| ("serverlessId", id)));
        self.get(op, &["billing", "serverless"], &q).await
    }

    /// `GET /v2/billing/network-volumes`, for one volume when `network_volume_id` is given.
    pub async fn network_volume_billing(
        &self,
        window: &BillingWindow,
        network_volume_id: Option<&str>,
    ) -> Result<NetworkVolumeBilling> {
        let op = Operation::V2NetworkVolumeBilling;
        if let Some(id) = network_volume_id {
            check_id(op, "networkVolumeId", id)?;
        }
        let q = query::billing(window, network_volume_id.map(|id| ("networkVolumeId", id)));
        self.get(op, &["billing", "network-volumes"], &q).await
    }
}
