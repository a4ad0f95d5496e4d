//! The spec's error body (`title`, `status`, `detail`, optional `errors`) and the one error
//! type every REST, job and registry handler returns.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use crate::collection::Refusal;

/// The spec's error body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub title: String,
    pub status: u16,
    pub detail: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// An HTTP error answered with the spec's error body.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{status}: {detail}")]
pub struct ApiError {
    pub status: StatusCode,
    pub detail: String,
    pub errors: Vec<String>,
    /// Seconds for a `Retry-After` header (429 answers).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            status,
            detail: detail.into(),
            errors: Vec::new(),
            retry_after: None,
        }
    }

    /// A 400 listing validation problems, each naming the field and the rule.
    pub fn validation(errors: Vec<String>) -> Self {
        let detail = if errors.len() == 1 {
            format!("invalid request: {}", errors[0])
        } else {
            format!("invalid request: {} problems", errors.len())
        };
        Self {
            errors,
            ..Self::new(StatusCode::BAD_REQUEST, detail)
        }
    }

    pub fn bad_request(detail: impl Into<String>) -> Self {
        let detail = detail.into();
        Self {
            errors: vec![detail.clone()],
            ..Self::new(StatusCode::BAD_REQUEST, detail)
        }
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, detail)
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "missing or incorrect API key: send it as `Authorization: Bearer <API_KEY>`",
        )
    }

    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, detail)
    }

    pub fn too_many(detail: impl Into<String>, retry_after: u64) -> Self {
        Self {
            retry_after: Some(retry_after.max(1)),
            ..Self::new(StatusCode::TOO_MANY_REQUESTS, detail)
        }
    }

    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, detail)
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody {
            title: self
                .status
                .canonical_reason()
                .unwrap_or("Error")
                .to_string(),
            status: self.status.as_u16(),
            detail: self.detail.clone(),
            errors: self.errors.clone(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// A collection handler's refusal as REST v1 answers it.
impl From<Refusal> for ApiError {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::NotFound(detail) => ApiError::not_found(detail),
            Refusal::InUse(why) => ApiError::bad_request(why),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_has_title_status_detail_errors() {
        let err = ApiError::validation(vec!["size: must be greater than 100".into()]);
        let body = serde_json::to_value(err.body()).unwrap();
        assert_eq!(body["title"], "Bad Request");
        assert_eq!(body["status"], 400);
        assert_eq!(body["errors"][0], "size: must be greater than 100");
        assert!(body["detail"].as_str().unwrap().contains("size"));
    }

    #[test]
    fn empty_errors_are_omitted() {
        let body = serde_json::to_value(ApiError::not_found("no such volume").body()).unwrap();
        assert!(body.get("errors").is_none());
    }
}
