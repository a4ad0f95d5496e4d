//! The apiserver's two reviews of a bearer token, made with the operator's own client: a
//! TokenReview, then, for a token it accepts, a SubjectAccessReview. The operator's
//! ServiceAccount needs `create` on both (the built-in ClusterRole `system:auth-delegator`).

use std::future::Future;

use k8s_openapi::api::authentication::v1::TokenReview;
use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use kube::Api;
use kube::api::PostParams;
use tracing::{debug, info};

use super::error::ServerError;
use super::verdict::{Verdict, access_review, access_verdict, reviewed_user, token_review};

/// Who decides on a token; the guard caches what it says.
pub trait Reviewer: Send + Sync + 'static {
    fn review(&self, token: &str) -> impl Future<Output = Result<Verdict, ServerError>> + Send;
}

/// The reviews asked of the apiserver.
pub struct ApiserverReviewer {
    client: kube::Client,
}

impl ApiserverReviewer {
    pub fn new(client: kube::Client) -> Self {
        Self { client }
    }
}

impl Reviewer for ApiserverReviewer {
    async fn review(&self, token: &str) -> Result<Verdict, ServerError> {
        let tokens: Api<TokenReview> = Api::all(self.client.clone());
        let reviewed = tokens
            .create(&PostParams::default(), &token_review(token))
            .await
            .map_err(ServerError::TokenReview)?;
        let Some(user) = reviewed_user(reviewed.status.as_ref()) else {
            debug!("a /metrics request with a token the apiserver does not accept");
            return Ok(Verdict::Unauthenticated);
        };
        let name = user.username.as_deref().unwrap_or_default();
        let access: Api<SubjectAccessReview> = Api::all(self.client.clone());
        let answer = access
            .create(&PostParams::default(), &access_review(user))
            .await
            .map_err(ServerError::AccessReview)?;
        let verdict = access_verdict(answer.status.as_ref());
        match verdict {
            Verdict::Allowed => debug!(user = %name, "a /metrics reader"),
            _ => info!(
                user = %name,
                "refused /metrics: the user may not get the non-resource URL /metrics \
                 (bind the ClusterRole gpucloud-metrics-reader)"
            ),
        }
        Ok(verdict)
    }
}
