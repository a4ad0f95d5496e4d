//! The elector's requests to the apiserver: read, create and conditional write of one
//! Lease, each bounded in time, each telling whether the apiserver answered at all.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::Api;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use serde_json::json;

use gpucloud_engine::watch_health::Failure;

use super::record::Record;

/// Told, after each request, how it went: `Ok`, or its error, whose
/// [`ElectionError::answered`] says whether the apiserver answered at all.
pub type Reachable = Arc<dyn Fn(Result<(), &ElectionError>) + Send + Sync>;

/// Why a request about the Lease did not do what it asked.
#[derive(Debug, thiserror::Error)]
pub enum ElectionError {
    #[error("no answer from the apiserver within {} ms", .0.as_millis())]
    TimedOut(Duration),
    #[error("someone else wrote the Lease first")]
    Conflict,
    #[error("the Lease is gone")]
    Gone,
    #[error("the apiserver refused the request: {0}")]
    Refused(#[source] kube::Error),
    #[error("could not reach the apiserver: {0}")]
    Unreachable(#[source] kube::Error),
}

impl ElectionError {
    fn of(error: kube::Error) -> Self {
        match &error {
            kube::Error::Api(status) if status.code == 409 => Self::Conflict,
            kube::Error::Api(status) if status.code == 404 => Self::Gone,
            // An answer that does not decode still came from the apiserver.
            kube::Error::Api(_) | kube::Error::SerdeError(_) => Self::Refused(error),
            _ => Self::Unreachable(error),
        }
    }

    /// Whether the apiserver answered the request: an answer it could not serve (429,
    /// 5xx: its storage away, or itself starting) counts as none.
    pub fn answered(&self) -> bool {
        match self {
            Self::TimedOut(_) | Self::Unreachable(_) => false,
            Self::Refused(error) => Failure::of(error).answered(),
            Self::Conflict | Self::Gone => true,
        }
    }

    /// Whether the Lease changed under the request (another writer, or deleted): read it
    /// again rather than try later.
    pub fn changed_under(&self) -> bool {
        matches!(self, Self::Conflict | Self::Gone)
    }
}

/// The requests about one Lease.
pub struct LeaseCalls {
    leases: Api<Lease>,
    name: String,
    reachable: Reachable,
}

impl LeaseCalls {
    pub fn new(leases: Api<Lease>, name: &str, reachable: Reachable) -> Self {
        Self {
            leases,
            name: name.to_string(),
            reachable,
        }
    }

    /// The Lease, or `None` when there is none.
    pub async fn read(&self, within: Duration) -> Result<Option<Record>, ElectionError> {
        self.bounded(within, self.leases.get_opt(&self.name))
            .await
            .map(|lease| lease.map(record_of))
    }

    /// Makes the Lease holding `spec`; [`ElectionError::Conflict`] when it exists.
    pub async fn create(&self, spec: LeaseSpec, within: Duration) -> Result<Record, ElectionError> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(spec),
        };
        self.bounded(within, self.leases.create(&PostParams::default(), &lease))
            .await
            .map(record_of)
    }

    /// Writes `spec` over the Lease at `resource_version`: refused with
    /// [`ElectionError::Conflict`] if anyone wrote since. A merge patch that names the
    /// version is as conditional as a replace, and needs only the `patch` verb the
    /// install's RBAC grants on its Lease.
    pub async fn write(
        &self,
        spec: &LeaseSpec,
        resource_version: Option<&str>,
        within: Duration,
    ) -> Result<Record, ElectionError> {
        let mut body = json!({
            "spec": {
                // Every field the election owns, a cleared one as null (merge patch: removed).
                "holderIdentity": spec.holder_identity,
                "acquireTime": spec.acquire_time,
                "renewTime": spec.renew_time,
                "leaseDurationSeconds": spec.lease_duration_seconds,
                "leaseTransitions": spec.lease_transitions,
            }
        });
        if let Some(version) = resource_version {
            body["metadata"] = json!({ "resourceVersion": version });
        }
        let patch = Patch::Merge(body);
        self.bounded(
            within,
            self.leases
                .patch(&self.name, &PatchParams::default(), &patch),
        )
        .await
        .map(record_of)
    }

    /// `request`, at most `within`, said to [`Reachable`].
    async fn bounded<T>(
        &self,
        within: Duration,
        request: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ElectionError> {
        let result = match tokio::time::timeout(within, request).await {
            Ok(answer) => answer.map_err(ElectionError::of),
            Err(_) => Err(ElectionError::TimedOut(within)),
        };
        (self.reachable)(result.as_ref().map(|_| ()));
        result
    }
}

fn record_of(lease: Lease) -> Record {
    Record {
        spec: lease.spec.unwrap_or_default(),
        resource_version: lease.metadata.resource_version,
        uid: lease.metadata.uid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16) -> kube::Error {
        kube::Error::Api(Box::new(
            kube::core::Status::failure("no", "Reason").with_code(code),
        ))
    }

    #[test]
    fn an_answer_it_could_serve_is_reachable_and_a_409_or_404_means_read_again() {
        let conflict = ElectionError::of(api_error(409));
        assert!(conflict.answered() && conflict.changed_under());
        let gone = ElectionError::of(api_error(404));
        assert!(gone.answered() && gone.changed_under());
        let forbidden = ElectionError::of(api_error(403));
        assert!(forbidden.answered() && !forbidden.changed_under());
        let unavailable = ElectionError::of(api_error(503));
        assert!(
            !unavailable.answered(),
            "a 5xx is no answer: the apiserver cannot serve"
        );
        let timed_out = ElectionError::TimedOut(Duration::from_secs(5));
        assert!(!timed_out.answered() && !timed_out.changed_under());
        assert!(timed_out.to_string().contains("5000 ms"));
    }
}
