//! The v2 error answer: an RFC 9457 problem (`application/problem+json`) with the document's
//! `ErrorResponse` body `{title, status, detail, errors?}`.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::collection::Refusal;
use crate::error::ApiError;

pub const PROBLEM_JSON: &str = "application/problem+json";

/// An error answered as a problem document. `errors` lists validation failures, each naming
/// the field path and the rule it broke (`gpu.count: must be at least 1`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {detail}")]
pub struct Problem {
    pub status: StatusCode,
    pub detail: String,
    pub errors: Vec<String>,
    /// Seconds for a `Retry-After` header (429 answers).
    pub retry_after: Option<u64>,
}

pub type V2Result<T> = Result<T, Problem>;

impl Problem {
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        // The same bare error the seed surfaces make; only the answer's shape differs.
        ApiError::new(status, detail).into()
    }

    /// 400: the request matches the document but breaks a rule (or cannot be placed).
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, detail)
    }

    /// 422: the request does not match the document; one entry per violation.
    pub fn unprocessable(errors: Vec<String>) -> Self {
        let detail = match errors.as_slice() {
            [one] => format!("request validation failed: {one}"),
            many => format!("request validation failed: {} problems", many.len()),
        };
        Self {
            errors,
            ..Self::new(StatusCode::UNPROCESSABLE_ENTITY, detail)
        }
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, detail)
    }

    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, detail)
    }

    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, detail)
    }

    pub fn unauthorized(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, detail)
    }

    pub fn payment_required(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYMENT_REQUIRED, detail)
    }

    /// 429 with `Retry-After` (at least one second).
    pub fn too_many(retry_after_secs: u64) -> Self {
        Self {
            retry_after: Some(retry_after_secs.max(1)),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate limit exceeded; wait for Retry-After seconds",
            )
        }
    }

    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, detail)
    }

    pub fn title(&self) -> &'static str {
        self.status.canonical_reason().unwrap_or("Error")
    }

    /// The `ErrorResponse` body.
    pub fn body(&self) -> serde_json::Value {
        let mut body = json!({
            "title": self.title(),
            "status": self.status.as_u16(),
            "detail": self.detail,
        });
        if !self.errors.is_empty() {
            body["errors"] = json!(self.errors);
        }
        body
    }
}

/// The seed surfaces' errors (faults, shared validation) answered in the v2 shape.
impl From<ApiError> for Problem {
    fn from(err: ApiError) -> Self {
        Self {
            status: err.status,
            detail: err.detail,
            errors: err.errors,
            retry_after: err.retry_after,
        }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let mut response = (self.status, self.body().to_string()).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if let Some(secs) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// A collection handler's refusal as REST v2 answers it.
impl From<Refusal> for Problem {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::NotFound(detail) => Problem::not_found(detail),
            Refusal::InUse(why) => Problem::bad_request(why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_matches_error_response() {
        let p = Problem::unprocessable(vec!["gpu.count: must be at least 1".into()]);
        let body = p.body();
        assert_eq!(body["title"], "Unprocessable Entity");
        assert_eq!(body["status"], 422);
        assert!(body["detail"].as_str().unwrap().contains("gpu.count"));
        assert_eq!(body["errors"][0], "gpu.count: must be at least 1");
        let plain = Problem::not_found("pod not found").body();
        assert!(plain.get("errors").is_none());
        assert_eq!(plain["title"], "Not Found");
    }

    #[test]
    fn answers_problem_json_with_retry_after() {
        let response = Problem::too_many(0).into_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(response.headers()[header::CONTENT_TYPE], PROBLEM_JSON);
        assert_eq!(response.headers()[header::RETRY_AFTER], "1");
    }

    #[test]
    fn seed_errors_convert() {
        let p: Problem = ApiError::too_many("slow down", 3).into();
        assert_eq!(p.status, StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(p.retry_after, Some(3));
    }
}
