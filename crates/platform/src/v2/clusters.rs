//! Instant Cluster calls: list, get, create, rename, delete, the members and billing.

use reqwest::Method;

use super::types::listing;
use super::types::{
    BillingWindow, Cluster, ClusterBilling, CreateCluster, Pod, PodListQuery, RenameCluster,
};
use super::{Result, V2, check_id, query};
use crate::operation::Operation;
use crate::transport::PathApi;

impl V2 {
    /// `GET /v2/clusters`.
    pub async fn list_clusters(&self) -> Result<Vec<Cluster>> {
        let op = (Operation::V2ListClusters, "clusters");
        self.list(op, &["clusters"], &[], std::convert::identity)
            .await
    }

    /// `GET /v2/clusters/{id}`.
    pub async fn get_cluster(&self, id: &str) -> Result<Cluster> {
        let op = Operation::V2GetCluster;
        check_id(op, "id", id)?;
        self.get(op, &["clusters", id], &[]).await
    }

    /// `POST /v2/clusters`. Never repeated after a 5xx or a timeout: on
    /// [`crate::PlatformError::may_have_been_applied`], list the clusters and look for it.
    pub async fn create_cluster(&self, input: &CreateCluster) -> Result<Cluster> {
        self.send_body(
            Operation::V2CreateCluster,
            Method::POST,
            &["clusters"],
            input,
        )
        .await
    }

    /// `PATCH /v2/clusters/{id}`: renames the cluster, the only change it takes.
    pub async fn rename_cluster(&self, id: &str, name: &str) -> Result<Cluster> {
        let op = Operation::V2RenameCluster;
        check_id(op, "id", id)?;
        let body = RenameCluster { name: name.into() };
        self.send_body(op, Method::PATCH, &["clusters", id], &body)
            .await
    }

    /// `DELETE /v2/clusters/{id}`: deletes the cluster and terminates every member.
    pub async fn delete_cluster(&self, id: &str) -> Result<()> {
        let op = Operation::V2DeleteCluster;
        check_id(op, "id", id)?;
        self.delete(op, &["clusters", id]).await
    }

    /// `GET /v2/clusters/{id}/pods`: the members, as whole pods.
    pub async fn cluster_pods(&self, id: &str) -> Result<Vec<Pod>> {
        let op = Operation::V2ClusterPods;
        check_id(op, "id", id)?;
        let list: listing::Pods = self.get(op, &["clusters", id, "pods"], &[]).await?;
        Ok(list.pods)
    }

    /// Every member of every cluster in one call: `GET /v2/pods?includeClusterPods=true`,
    /// standalone pods left out.
    pub async fn all_cluster_members(&self) -> Result<Vec<Pod>> {
        let filter = PodListQuery {
            include_cluster_pods: Some(true),
        };
        let mut pods = self.list_pods(&filter).await?;
        pods.retain(|p| p.cluster.is_some());
        Ok(pods)
    }

    /// `GET /v2/billing/clusters`, for one cluster when `cluster_id` is given.
    pub async fn cluster_billing(
        &self,
        window: &BillingWindow,
        cluster_id: Option<&str>,
    ) -> Result<ClusterBilling> {
        let op = Operation::V2ClusterBilling;
        if let Some(id) = cluster_id {
            check_id(op, "clusterId", id)?;
        }
        let q = query::billing(window, cluster_id.map(|id| ("clusterId", id)));
        self.get(op, &["billing", "clusters"], &q).await
    }
}
