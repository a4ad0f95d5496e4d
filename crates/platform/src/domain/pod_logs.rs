//! A pod's system log.
//!
//! REST v2 streams a pod's log (`GET /v2/pods/{id}/logs`, server-sent events); the
//! system source is where the platform says why a pod does not start (an image it cannot
//! pull, a driver too old), which no status field carries. The seed API has no log route:
//! [`PodLogs::supported`] says so, and callers read nothing there.

use futures::StreamExt;

use super::super::config::PlatformApi;
use super::super::error::PlatformError;
use super::super::{PlatformClient, v2};

/// One line of a pod's system log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemLine {
    pub line: String,
    /// RFC 3339, as the platform stamped it.
    pub at: String,
}

/// Lines as they come, until the platform closes the stream or the caller drops it.
pub type SystemLines =
    std::pin::Pin<Box<dyn futures::Stream<Item = Result<SystemLine, PlatformError>> + Send>>;

/// Pod log calls; obtained from [`PlatformClient::pod_logs`].
#[derive(Clone, Debug)]
pub struct PodLogs {
    client: PlatformClient,
}

impl PlatformClient {
    /// Pods' log streams (REST v2 only).
    pub fn pod_logs(&self) -> PodLogs {
        PodLogs {
            client: self.clone(),
        }
    }
}

impl PodLogs {
    /// Whether the backend streams pod logs at all.
    pub fn supported(&self) -> bool {
        self.client.api() == PlatformApi::V2
    }

    /// The pod's system lines: the last `tail` first, then new ones as they come.
    pub async fn system(&self, pod_id: &str, tail: u32) -> Result<SystemLines, PlatformError> {
        if !self.supported() {
            return Err(PlatformError::invalid_input(
                "logs",
                "the seed API has no pod log stream",
            ));
        }
        let q = v2::LogQuery {
            source: Some(v2::LogSource::System),
            tail: Some(tail),
            ..Default::default()
        };
        let stream = self.client.v2().pod_logs(pod_id, &q).await?;
        Ok(Box::pin(stream.map(|r| {
            r.map(|l| SystemLine {
                line: l.line,
                at: l.ts,
            })
        })))
    }
}
