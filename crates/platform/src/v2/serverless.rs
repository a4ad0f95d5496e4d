//! Serverless endpoint calls.

use reqwest::Method;

use super::sse::LogStream;
use super::types::{CreateEndpoint, Endpoint, LogQuery, ReleaseList, UpdateEndpoint, WorkerList};
use super::{Result, V2, check_id};
use crate::operation::Operation;
use crate::transport::PathApi;

impl V2 {
    /// `GET /v2/serverless`.
    pub async fn list_endpoints(&self) -> Result<Vec<Endpoint>> {
        let op = (Operation::V2ListEndpoints, "endpoints");
        self.list(op, &["serverless"], &[], std::convert::identity)
            .await
    }

    /// `GET /v2/serverless/{id}`.
    pub async fn get_endpoint(&self, id: &str) -> Result<Endpoint> {
        let op = Operation::V2GetEndpoint;
        check_id(op, "id", id)?;
        self.get(op, &["serverless", id], &[]).await
    }

    /// `POST /v2/serverless`. Never repeated after a 5xx or a timeout: on
    /// [`crate::PlatformError::may_have_been_applied`], list and look for the name.
    pub async fn create_endpoint(&self, input: &CreateEndpoint) -> Result<Endpoint> {
        self.send_body(
            Operation::V2CreateEndpoint,
            Method::POST,
            &["serverless"],
            input,
        )
        .await
    }

    /// `PATCH /v2/serverless/{id}`.
    pub async fn update_endpoint(&self, id: &str, input: &UpdateEndpoint) -> Result<Endpoint> {
        let op = Operation::V2UpdateEndpoint;
        check_id(op, "id", id)?;
        self.send_body(op, Method::PATCH, &["serverless", id], input)
            .await
    }

    /// `DELETE /v2/serverless/{id}`.
    pub async fn delete_endpoint(&self, id: &str) -> Result<()> {
        let op = Operation::V2DeleteEndpoint;
        check_id(op, "id", id)?;
        self.delete(op, &["serverless", id]).await
    }

    /// `GET /v2/serverless/{id}/workers`.
    pub async fn endpoint_workers(&self, id: &str) -> Result<WorkerList> {
        let op = Operation::V2EndpointWorkers;
        check_id(op, "id", id)?;
        self.get(op, &["serverless", id, "workers"], &[]).await
    }

    /// `GET /v2/serverless/{id}/workers/{workerId}/logs`: a worker's log stream, as
    /// [`V2::pod_logs`] reads a pod's.
    pub async fn worker_logs(&self, id: &str, worker_id: &str, q: &LogQuery) -> Result<LogStream> {
        let op = Operation::V2WorkerLogs;
        check_id(op, "id", id)?;
        check_id(op, "workerId", worker_id)?;
        self.log_stream(op, &["serverless", id, "workers", worker_id, "logs"], q)
            .await
    }

    /// `GET /v2/serverless/{id}/releases`.
    pub async fn endpoint_releases(&self, id: &str) -> Result<ReleaseList> {
        let op = Operation::V2EndpointReleases;
        check_id(op, "id", id)?;
        self.get(op, &["serverless", id, "releases"], &[]).await
    }
}
