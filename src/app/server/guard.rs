//! The guard in front of `/metrics`: the bearer token of each request, its verdict from the
//! cache or else from the reviews, and a 401 or 403 for a refused one. The probes are not
//! behind it.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use parking_lot::Mutex;
use tracing::error;

use super::bearer::bearer_token;
use super::cache::{CAPACITY, TokenKey, VERDICT_TTL, VerdictCache};
use super::error::ServerError;
use super::review::Reviewer;
use super::verdict::Verdict;

/// A reviewer and the verdicts it gave lately.
pub struct MetricsGuard<R> {
    reviewer: R,
    cache: Mutex<VerdictCache>,
}

impl<R: Reviewer> MetricsGuard<R> {
    pub fn new(reviewer: R) -> Self {
        Self {
            reviewer,
            cache: Mutex::new(VerdictCache::new(VERDICT_TTL, CAPACITY)),
        }
    }

    /// The verdict on a request whose bearer token is `token`: without one, unauthenticated
    /// at once; else the cached verdict, else the reviewer's, then cached. A failed review is
    /// not cached.
    pub async fn verdict(&self, token: Option<&str>) -> Result<Verdict, ServerError> {
        let Some(token) = token else {
            return Ok(Verdict::Unauthenticated);
        };
        let key = TokenKey::of(token);
        let cached = self.cache.lock().get(&key, Instant::now());
        if let Some(verdict) = cached {
            return Ok(verdict);
        }
        let verdict = self.reviewer.review(token).await?;
        self.cache.lock().insert(key, verdict, Instant::now());
        Ok(verdict)
    }
}

/// `routes` behind the guard.
pub fn protect<R: Reviewer>(routes: Router, guard: Arc<MetricsGuard<R>>) -> Router {
    routes.route_layer(middleware::from_fn_with_state(guard, require_reader::<R>))
}

async fn require_reader<R: Reviewer>(
    State(guard): State<Arc<MetricsGuard<R>>>,
    request: Request,
    next: Next,
) -> Response {
    // Owned, so that no borrow of the request (whose body is not Sync) is held across the
    // review.
    let token = bearer_token(
        request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok()),
    )
    .map(str::to_owned);
    match guard.verdict(token.as_deref()).await {
        Ok(verdict) => match verdict.refusal() {
            None => next.run(request).await,
            Some(StatusCode::UNAUTHORIZED) => (
                StatusCode::UNAUTHORIZED,
                [(header::WWW_AUTHENTICATE, "Bearer")],
                "a bearer token the Kubernetes apiserver accepts is required\n",
            )
                .into_response(),
            Some(status) => (
                status,
                "the token's identity may not get /metrics: bind the ClusterRole \
                 gpucloud-metrics-reader to it\n",
            )
                .into_response(),
        },
        Err(err) => {
            error!(
                error = %err,
                "could not review a /metrics request; the operator's ServiceAccount needs \
                 create on tokenreviews and subjectaccessreviews (ClusterRole \
                 system:auth-delegator)"
            );
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "could not review the token\n",
            )
                .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::body::Body;
    use axum::routing::get;
    use tower::ServiceExt as _;

    use super::*;

    /// Allows the token "reader", forbids "other", does not know any other; counts calls.
    #[derive(Default)]
    struct FakeReviewer {
        calls: Arc<AtomicUsize>,
        fail: bool,
    }

    impl Reviewer for FakeReviewer {
        async fn review(&self, token: &str) -> Result<Verdict, ServerError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            if self.fail {
                return Err(ServerError::TokenReview(kube::Error::Service(
                    "apiserver down".into(),
                )));
            }
            Ok(match token {
                "reader" => Verdict::Allowed,
                "other" => Verdict::Forbidden,
                _ => Verdict::Unauthenticated,
            })
        }
    }

    fn app(reviewer: FakeReviewer) -> Router {
        let guarded = Router::new().route("/metrics", get(|| async { "metrics" }));
        let open = Router::new().route("/healthz", get(|| async { "ok" }));
        protect(guarded, Arc::new(MetricsGuard::new(reviewer))).merge(open)
    }

    async fn status(app: &Router, path: &str, authorization: Option<&str>) -> StatusCode {
        let mut request = Request::get(path);
        if let Some(value) = authorization {
            request = request.header(header::AUTHORIZATION, value);
        }
        let request = request.body(Body::empty()).unwrap();
        app.clone().oneshot(request).await.unwrap().status()
    }

    #[tokio::test]
    async fn metrics_answers_401_403_or_200_by_the_tokens_verdict() {
        let app = app(FakeReviewer::default());
        assert_eq!(
            status(&app, "/metrics", None).await,
            StatusCode::UNAUTHORIZED
        );
        let basic = Some("Basic dXNlcjpwYXNz");
        assert_eq!(
            status(&app, "/metrics", basic).await,
            StatusCode::UNAUTHORIZED
        );
        let unknown = Some("Bearer nobody");
        assert_eq!(
            status(&app, "/metrics", unknown).await,
            StatusCode::UNAUTHORIZED
        );
        let other = Some("Bearer other");
        assert_eq!(status(&app, "/metrics", other).await, StatusCode::FORBIDDEN);
        let reader = Some("Bearer reader");
        assert_eq!(status(&app, "/metrics", reader).await, StatusCode::OK);
    }

    #[tokio::test]
    async fn the_probes_need_no_token() {
        let app = app(FakeReviewer::default());
        assert_eq!(status(&app, "/healthz", None).await, StatusCode::OK);
    }

    #[tokio::test]
    async fn repeated_scrapes_cost_one_review_per_token() {
        let calls = Arc::new(AtomicUsize::new(0));
        let app = app(FakeReviewer {
            calls: calls.clone(),
            fail: false,
        });
        for _ in 0..10 {
            let reader = Some("Bearer reader");
            assert_eq!(status(&app, "/metrics", reader).await, StatusCode::OK);
            let other = Some("Bearer other");
            assert_eq!(status(&app, "/metrics", other).await, StatusCode::FORBIDDEN);
        }
        assert_eq!(calls.load(Ordering::SeqCst), 2, "one review per token");
        assert_eq!(
            status(&app, "/metrics", None).await,
            StatusCode::UNAUTHORIZED
        );
        assert_eq!(calls.load(Ordering::SeqCst), 2, "no review without a token");
    }

    #[tokio::test]
    async fn a_failed_review_is_a_500_and_is_not_cached() {
        let calls = Arc::new(AtomicUsize::new(0));
        let app = app(FakeReviewer {
            calls: calls.clone(),
            fail: true,
        });
        let reader = Some("Bearer reader");
        for _ in 0..2 {
            assert_eq!(
                status(&app, "/metrics", reader).await,
                StatusCode::INTERNAL_SERVER_ERROR
            );
        }
        assert_eq!(calls.load(Ordering::SeqCst), 2, "each request asks again");
    }
}
