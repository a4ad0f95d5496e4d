//! Pod calls: list, get, create, update, delete, actions and the log stream.

use reqwest::Method;

use super::sse::{self, LogStream};
use super::types::{
    CreatePod, LogQuery, Pod, PodAction, PodActionRequest, PodListQuery, UpdatePod,
};
use super::{Result, V2, check_id, query};
use crate::error::PlatformError;
use crate::operation::Operation;
use crate::transport::{Auth, Call, PathApi};

impl V2 {
    /// `GET /v2/pods`.
    pub async fn list_pods(&self, filter: &PodListQuery) -> Result<Vec<Pod>> {
        let op = (Operation::V2ListPods, "pods");
        self.list(op, &["pods"], &query::pods(filter), std::convert::identity)
            .await
    }

    /// `GET /v2/pods/{id}`.
    pub async fn get_pod(&self, id: &str) -> Result<Pod> {
        let op = Operation::V2GetPod;
        check_id(op, "id", id)?;
        self.get(op, &["pods", id], &[]).await
    }

    /// `POST /v2/pods`. Never repeated after a 5xx or a timeout: on
    /// [`PlatformError::may_have_been_applied`], list the pods and look for the name.
    pub async fn create_pod(&self, input: &CreatePod) -> Result<Pod> {
        self.send_body(Operation::V2CreatePod, Method::POST, &["pods"], input)
            .await
    }

    /// `PATCH /v2/pods/{id}`.
    pub async fn update_pod(&self, id: &str, input: &UpdatePod) -> Result<Pod> {
        let op = Operation::V2UpdatePod;
        check_id(op, "id", id)?;
        self.send_body(op, Method::PATCH, &["pods", id], input)
            .await
    }

    /// `DELETE /v2/pods/{id}`: terminates the pod for good.
    pub async fn delete_pod(&self, id: &str) -> Result<()> {
        let op = Operation::V2DeletePod;
        check_id(op, "id", id)?;
        self.delete(op, &["pods", id]).await
    }

    /// `POST /v2/pods/{id}/action`. The pod after the transition, or `None` for
    /// `terminate` (the platform answers 204). An action the pod's status does not allow is
    /// a [`crate::ErrorClass::Conflict`].
    pub async fn pod_action(&self, id: &str, action: PodAction) -> Result<Option<Pod>> {
        let op = match action {
            PodAction::Start => Operation::V2StartPod,
            PodAction::Stop => Operation::V2StopPod,
            PodAction::Restart => Operation::V2RestartPod,
            PodAction::Terminate => Operation::V2TerminatePod,
            PodAction::Other(_) => {
                return Err(PlatformError::invalid_input(
                    "action",
                    "must be start, stop, restart or terminate",
                ));
            }
        };
        check_id(op, "id", id)?;
        let call = self
            .call(op, Method::POST, &["pods", id, "action"])
            .json_body(&PodActionRequest { action })?;
        let answer = self.t.send(&call).await?;
        if answer.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        crate::transport::decode(op, &answer.body).map(Some)
    }

    /// `GET /v2/pods/{id}/logs`: the backfill `q` asks for, then new lines as they come,
    /// until the platform closes the stream or the caller drops it.
    pub async fn pod_logs(&self, id: &str, q: &LogQuery) -> Result<LogStream> {
        let op = Operation::V2PodLogs;
        check_id(op, "id", id)?;
        self.log_stream(op, &["pods", id, "logs"], q).await
    }

    /// A log stream at `path` (a pod's, a serverless worker's): the same query, resume
    /// header and event format.
    pub(super) async fn log_stream(
        &self,
        op: Operation,
        path: &[&str],
        q: &LogQuery,
    ) -> Result<LogStream> {
        let mut call = Call::new(
            op,
            Method::GET,
            self.url(path, &query::logs(q)),
            Auth::Bearer,
        );
        if let Some(last) = &q.last_event_id {
            call = call.header("last-event-id", last)?;
        }
        let response = self.t.open_stream(&call).await?;
        Ok(sse::log_lines(op, response))
    }
}
