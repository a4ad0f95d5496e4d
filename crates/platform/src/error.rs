//! The one error type of the client, and the parsing of every error shape the platform
//! answers with.
//!
//! Callers act on [`PlatformError::class`]: fix the input, fix the key, look elsewhere,
//! wait, try another GPU type, or retry later. Messages carry the operation and the
//! platform's own explanation, never the API key or a URL that could hold it.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde_json::Value;

/// What a caller should do about an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// The request is wrong; repeating it cannot help. Fix the named field.
    InvalidInput,
    /// Missing or incorrect API key (401).
    Unauthorized,
    /// A valid key without access to this resource or action (403).
    Forbidden,
    /// No such endpoint, job, pod, volume or template (404, or a null lookup).
    NotFound,
    /// Over the platform's limit (429); wait `retry_after` if given.
    RateLimited,
    /// No GPUs of the requested kind right now; try another type or later.
    Capacity,
    /// 5xx, timeout, connection failure: worth retrying later. On a create, check
    /// [`PlatformError::may_have_been_applied`] first.
    Transient,
    /// The answer could not be understood.
    Decode,
    /// The object is not in a state that allows the call (409): an action the pod's status
    /// does not permit, or a pod that belongs to a cluster. Read the object again first.
    Conflict,
    /// The account's balance does not cover the call (402). No other input will succeed
    /// until funds are added.
    PaymentRequired,
}

impl ErrorClass {
    /// A stable lower-case name, for metrics labels and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::InvalidInput => "invalid_input",
            ErrorClass::Unauthorized => "unauthorized",
            ErrorClass::Forbidden => "forbidden",
            ErrorClass::NotFound => "not_found",
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::Capacity => "capacity",
            ErrorClass::Transient => "transient",
            ErrorClass::Decode => "decode",
            ErrorClass::Conflict => "conflict",
            ErrorClass::PaymentRequired => "payment_required",
        }
    }
}

/// Every failure of a platform call.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PlatformError {
    #[error("{operation}: invalid {field}: {detail}")]
    InvalidInput {
        operation: &'static str,
        /// The offending field as the spec names it (`"request"` when the platform did not say).
        field: String,
        detail: String,
        /// The validation problems listed by the platform's error body, if any.
        problems: Vec<String>,
    },
    #[error("{operation}: unauthorized (missing or incorrect API key): {detail}")]
    Unauthorized {
        operation: &'static str,
        detail: String,
    },
    #[error("{operation}: forbidden (the API key lacks access): {detail}")]
    Forbidden {
        operation: &'static str,
        detail: String,
    },
    #[error("{operation}: not found: {detail}")]
    NotFound {
        operation: &'static str,
        detail: String,
    },
    #[error("{operation}: rate limited{}: {detail}", fmt_retry_after(.retry_after))]
    RateLimited {
        operation: &'static str,
        retry_after: Option<Duration>,
        detail: String,
    },
    #[error("{operation}: no capacity: {detail}")]
    Capacity {
        operation: &'static str,
        detail: String,
    },
    #[error("{operation}: transient failure{}: {detail}{}",
        .status.map(|s| format!(" (HTTP {s})")).unwrap_or_default(),
        if *.maybe_applied { " (the request may have taken effect)" } else { "" })]
    Transient {
        operation: &'static str,
        /// HTTP status when there was an answer.
        status: Option<u16>,
        detail: String,
        /// True when a non-idempotent call (a create) may have been carried out by the
        /// platform although we saw a failure: a 5xx answer or a timeout after the request
        /// was sent. The caller must look the object up before creating it again.
        maybe_applied: bool,
    },
    #[error("{operation}: cannot decode the answer: {detail}")]
    Decode {
        operation: &'static str,
        detail: String,
    },
    #[error("{operation}: conflict with the object's current state: {detail}")]
    Conflict {
        operation: &'static str,
        detail: String,
    },
    #[error("{operation}: insufficient balance (add funds to the account): {detail}")]
    PaymentRequired {
        operation: &'static str,
        detail: String,
    },
}

fn fmt_retry_after(d: &Option<Duration>) -> String {
    d.map(|d| format!(" (retry after {:.1}s)", d.as_secs_f64()))
        .unwrap_or_default()
}

impl PlatformError {
    /// A local validation failure, before any request.
    pub fn invalid_input(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::InvalidInput {
            operation: "validate",
            field: field.into(),
            detail: detail.into(),
            problems: Vec::new(),
        }
    }

    pub(crate) fn decode(operation: &'static str, detail: impl Into<String>) -> Self {
        Self::Decode {
            operation,
            detail: truncate(&detail.into()),
        }
    }

    /// The class callers branch on.
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::InvalidInput { .. } => ErrorClass::InvalidInput,
            Self::Unauthorized { .. } => ErrorClass::Unauthorized,
            Self::Forbidden { .. } => ErrorClass::Forbidden,
            Self::NotFound { .. } => ErrorClass::NotFound,
            Self::RateLimited { .. } => ErrorClass::RateLimited,
            Self::Capacity { .. } => ErrorClass::Capacity,
            Self::Transient { .. } => ErrorClass::Transient,
            Self::Decode { .. } => ErrorClass::Decode,
            Self::Conflict { .. } => ErrorClass::Conflict,
            Self::PaymentRequired { .. } => ErrorClass::PaymentRequired,
        }
    }

    /// The operation that failed (for example `jobs.run` or `graphql.podResume`).
    pub fn operation(&self) -> &'static str {
        match self {
            Self::InvalidInput { operation, .. }
            | Self::Unauthorized { operation, .. }
            | Self::Forbidden { operation, .. }
            | Self::NotFound { operation, .. }
            | Self::RateLimited { operation, .. }
            | Self::Capacity { operation, .. }
            | Self::Transient { operation, .. }
            | Self::Decode { operation, .. }
            | Self::Conflict { operation, .. }
            | Self::PaymentRequired { operation, .. } => operation,
        }
    }

    /// How long the platform asked us to wait, when it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// True when the platform may have carried the call out despite the error (5xx or a
    /// timeout on a create). False means a definite rejection: nothing happened.
    pub fn may_have_been_applied(&self) -> bool {
        matches!(
            self,
            Self::Transient {
                maybe_applied: true,
                ..
            }
        )
    }

    /// Whether trying the same call later can succeed without changing it.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.class(),
            ErrorClass::RateLimited | ErrorClass::Transient | ErrorClass::Capacity
        )
    }

    /// The HTTP status behind the error, when there was one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Transient { status, .. } => *status,
            Self::Unauthorized { .. } => Some(401),
            Self::Forbidden { .. } => Some(403),
            Self::RateLimited { .. } => Some(429),
            Self::Conflict { .. } => Some(409),
            Self::PaymentRequired { .. } => Some(402),
            _ => None,
        }
    }

    /// Replaces any occurrence of `secret` in the texts the platform sent back, in case a
    /// server echoes the request (key included) into an error.
    pub(crate) fn redact(mut self, secret: &str) -> Self {
        let scrub = |s: &mut String| {
            if !secret.is_empty() && s.contains(secret) {
                *s = s.replace(secret, "***");
            }
        };
        match &mut self {
            Self::InvalidInput {
                field,
                detail,
                problems,
                ..
            } => {
                scrub(field);
                scrub(detail);
                problems.iter_mut().for_each(scrub);
            }
            Self::Unauthorized { detail, .. }
            | Self::Forbidden { detail, .. }
            | Self::NotFound { detail, .. }
            | Self::RateLimited { detail, .. }
            | Self::Capacity { detail, .. }
            | Self::Transient { detail, .. }
            | Self::Decode { detail, .. }
            | Self::Conflict { detail, .. }
            | Self::PaymentRequired { detail, .. } => scrub(detail),
        }
        self
    }

    /// Sets the operation (validation helpers do not know it).
    pub(crate) fn in_operation(mut self, op: &'static str) -> Self {
        match &mut self {
            Self::InvalidInput { operation, .. }
            | Self::Unauthorized { operation, .. }
            | Self::Forbidden { operation, .. }
            | Self::NotFound { operation, .. }
            | Self::RateLimited { operation, .. }
            | Self::Capacity { operation, .. }
            | Self::Transient { operation, .. }
            | Self::Decode { operation, .. }
            | Self::Conflict { operation, .. }
            | Self::PaymentRequired { operation, .. } => *operation = op,
        }
        self
    }
}

/// Capacity failures are recognised by the platform's texts (deploy: "There are no longer any
/// instances available ..."; resume: "There are not enough free GPUs on the host machine ...").
pub fn is_capacity_message(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("no longer any instances available")
        || t.contains("not enough free gpus")
        || t.contains("no instances available")
}

/// The spec's error body (`title, status, detail, errors`) or any of the other shapes seen.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ErrorBody {
    pub title: Option<String>,
    pub detail: Option<String>,
    /// Validation problems (`errors` of the spec's body, or GraphQL `errors[].message`).
    pub problems: Vec<String>,
    /// GraphQL `extensions.code` values, when present.
    pub codes: Vec<String>,
}

impl ErrorBody {
    /// Reads whatever the server sent; never fails. Unknown JSON or text becomes the detail.
    pub fn parse(body: &[u8]) -> Self {
        let Ok(value) = serde_json::from_slice::<Value>(body) else {
            let text = String::from_utf8_lossy(body).trim().to_owned();
            return Self {
                detail: (!text.is_empty()).then(|| truncate(&text)),
                ..Self::default()
            };
        };
        Self::from_value(&value)
    }

    pub fn from_value(value: &Value) -> Self {
        let mut out = Self::default();
        let str_of = |v: Option<&Value>| v.and_then(Value::as_str).map(truncate);
        match value {
            Value::Object(map) => {
                out.title = str_of(map.get("title"));
                out.detail = str_of(map.get("detail")).or_else(|| str_of(map.get("message")));
                match map.get("error") {
                    Some(Value::String(s)) => {
                        out.detail.get_or_insert_with(|| truncate(s));
                    }
                    Some(Value::Object(inner)) => {
                        if let Some(m) = str_of(inner.get("message")) {
                            out.detail.get_or_insert(m);
                        }
                    }
                    _ => {}
                }
                if let Some(Value::Array(errors)) = map.get("errors") {
                    for e in errors {
                        match e {
                            Value::String(s) => out.problems.push(truncate(s)),
                            Value::Object(o) => {
                                if let Some(m) = str_of(o.get("message")) {
                                    out.problems.push(m);
                                }
                                if let Some(code) = o
                                    .get("extensions")
                                    .and_then(|x| x.get("code"))
                                    .and_then(Value::as_str)
                                {
                                    out.codes.push(code.to_owned());
                                }
                            }
                            _ => {}
                        }
                    }
                }
            }
            Value::String(s) => out.detail = Some(truncate(s)),
            _ => {}
        }
        out
    }

    /// One line explaining the failure.
    pub fn summary(&self, status: Option<StatusCode>) -> String {
        let mut parts: Vec<&str> = Vec::new();
        if let Some(d) = &self.detail {
            parts.push(d);
        } else if let Some(t) = &self.title {
            parts.push(t);
        }
        let problems = self.problems.join("; ");
        if !problems.is_empty() && self.detail.as_deref() != Some(problems.as_str()) {
            parts.push(&problems);
        }
        if parts.is_empty() {
            return status
                .map(|s| s.canonical_reason().unwrap_or("error").to_owned())
                .unwrap_or_else(|| "no explanation given".to_owned());
        }
        parts.join(": ")
    }

    fn all_text(&self) -> String {
        let mut s = String::new();
        for part in self
            .title
            .iter()
            .chain(self.detail.iter())
            .chain(self.problems.iter())
        {
            s.push_str(part);
            s.push('\n');
        }
        s
    }
}

/// Builds the error for a non-success HTTP answer.
///
/// `maybe_applied_on_5xx` is true for creates: a 5xx there does not prove nothing happened.
pub(crate) fn from_http(
    operation: &'static str,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    maybe_applied_on_5xx: bool,
) -> PlatformError {
    let parsed = ErrorBody::parse(body);
    let detail = parsed.summary(Some(status));
    if is_capacity_message(&parsed.all_text()) {
        return PlatformError::Capacity { operation, detail };
    }
    match status.as_u16() {
        401 => PlatformError::Unauthorized { operation, detail },
        403 => PlatformError::Forbidden { operation, detail },
        404 | 410 => PlatformError::NotFound { operation, detail },
        429 => PlatformError::RateLimited {
            operation,
            retry_after: parse_retry_after(headers),
            detail,
        },
        408 | 502 | 503 | 504 => PlatformError::Transient {
            operation,
            status: Some(status.as_u16()),
            detail,
            // A gateway that timed out or was unavailable may still have passed the request on.
            maybe_applied: maybe_applied_on_5xx && status.as_u16() != 503,
        },
        s if s >= 500 => PlatformError::Transient {
            operation,
            status: Some(s),
            detail,
            maybe_applied: maybe_applied_on_5xx,
        },
        _ => PlatformError::InvalidInput {
            operation,
            field: guess_field(&parsed).unwrap_or_else(|| "request".to_owned()),
            detail,
            problems: parsed.problems,
        },
    }
}

/// Builds the error for a non-success REST v2 answer (`application/problem+json`).
///
/// The v2 statuses are precise where v1's were not: 422 breaks the contract and 400 breaks
/// a rule or could not be placed (capacity, told apart only by the detail's wording); 402
/// is an empty balance; 409 a state conflict. `may_apply_on_failure` is the operation's.
pub(crate) fn from_problem(
    operation: &'static str,
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    may_apply_on_failure: bool,
) -> PlatformError {
    let parsed = ErrorBody::parse(body);
    let detail = parsed.summary(Some(status));
    match status.as_u16() {
        400 if is_capacity_message(&parsed.all_text()) => {
            PlatformError::Capacity { operation, detail }
        }
        400 | 422 => PlatformError::InvalidInput {
            operation,
            field: guess_field(&parsed).unwrap_or_else(|| "request".to_owned()),
            detail,
            problems: parsed.problems,
        },
        402 => PlatformError::PaymentRequired { operation, detail },
        409 => PlatformError::Conflict { operation, detail },
        _ => from_http(operation, status, headers, body, may_apply_on_failure),
    }
}

/// Builds the error for a GraphQL answer that carries `errors` (at HTTP 200 or 400).
pub(crate) fn from_graphql(
    operation: &'static str,
    body: &ErrorBody,
    is_mutation: bool,
) -> PlatformError {
    let detail = body.summary(None);
    let text = body.all_text().to_ascii_lowercase();
    let has_code = |c: &str| body.codes.iter().any(|x| x.eq_ignore_ascii_case(c));
    if is_capacity_message(&text) {
        PlatformError::Capacity { operation, detail }
    } else if has_code("UNAUTHENTICATED") || text.contains("unauthorized") {
        PlatformError::Unauthorized { operation, detail }
    } else if has_code("FORBIDDEN") || text.contains("forbidden") || text.contains("permission") {
        PlatformError::Forbidden { operation, detail }
    } else if has_code("NOT_FOUND") || text.contains("not found") || text.contains("does not exist")
    {
        PlatformError::NotFound { operation, detail }
    } else if has_code("RATE_LIMITED") || text.contains("too many requests") {
        PlatformError::RateLimited {
            operation,
            retry_after: None,
            detail,
        }
    } else if has_code("BAD_USER_INPUT")
        || has_code("GRAPHQL_VALIDATION_FAILED")
        || has_code("GRAPHQL_PARSE_FAILED")
        || text.contains("invalid")
        || text.contains("must be")
        || text.contains("unknown field")
    {
        PlatformError::InvalidInput {
            operation,
            field: guess_field(body).unwrap_or_else(|| "input".to_owned()),
            detail,
            problems: body.problems.clone(),
        }
    } else {
        // An unexplained GraphQL error: treat as transient, and on a mutation assume the
        // worst (it may have happened) so the caller looks before creating again.
        PlatformError::Transient {
            operation,
            status: None,
            detail,
            maybe_applied: is_mutation,
        }
    }
}

/// Picks a field name out of a validation message when one is plainly there: a JSON
/// pointer (`/size`), or a quoted identifier (`'name'`, `"size"`, `` `ttl` ``).
fn guess_field(body: &ErrorBody) -> Option<String> {
    let texts = body.problems.iter().chain(body.detail.iter());
    for t in texts {
        // `size: must be greater than ...`: the field leads the message.
        if let Some((head, _)) = t.split_once(':')
            && is_identifier(head.trim())
        {
            return Some(head.trim().to_owned());
        }
        for quote in ['\'', '"', '`'] {
            let mut parts = t.split(quote);
            parts.next();
            if let Some(candidate) = parts.next()
                && is_identifier(candidate)
            {
                return Some(candidate.to_owned());
            }
        }
        if let Some(idx) = t.find('/') {
            let candidate: String = t[idx + 1..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if is_identifier(&candidate) {
                return Some(candidate);
            }
        }
    }
    None
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
}

/// `Retry-After` as seconds or an HTTP date.
pub(crate) fn parse_retry_after(headers: &HeaderMap) -> Option<Duration> {
    let raw = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = raw.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = chrono::DateTime::parse_from_rfc2822(raw).ok()?;
    let delta = when.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

/// Keeps error texts to one readable size: a server that answers with a whole HTML page
/// should not flood logs and Kubernetes Events.
pub(crate) fn truncate(s: &str) -> String {
    const MAX: usize = 512;
    if s.len() <= MAX {
        return s.to_owned();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn http(status: u16, body: &str) -> PlatformError {
        from_http(
            "test.op",
            StatusCode::from_u16(status).unwrap(),
            &HeaderMap::new(),
            body.as_bytes(),
            false,
        )
    }

    #[test]
    fn spec_error_body_is_parsed_with_field() {
        let e = http(
            400,
            r#"{"title":"Bad Request","status":400,"detail":"invalid input","errors":["/size must be greater than the current size"]}"#,
        );
        match &e {
            PlatformError::InvalidInput {
                field,
                detail,
                problems,
                ..
            } => {
                assert_eq!(field, "size");
                assert!(detail.contains("invalid input"), "{detail}");
                assert_eq!(problems.len(), 1);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(e.class(), ErrorClass::InvalidInput);
    }

    #[test]
    fn leading_field_names_are_picked_up() {
        let e = http(
            400,
            r#"{"title":"Bad Request","status":400,"detail":"invalid request: size: must be greater than the current size of 100 GB","errors":["size: must be greater than the current size of 100 GB"]}"#,
        );
        match e {
            PlatformError::InvalidInput { field, .. } => assert_eq!(field, "size"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn other_shapes_are_tolerated() {
        assert!(
            http(404, r#"{"error":"pod not found"}"#)
                .to_string()
                .contains("pod not found")
        );
        assert!(
            http(404, r#"{"message":"nope"}"#)
                .to_string()
                .contains("nope")
        );
        assert!(
            http(404, r#"{"error":{"message":"deep"}}"#)
                .to_string()
                .contains("deep")
        );
        assert!(http(500, "<html>oops</html>").to_string().contains("oops"));
        assert!(http(502, "").to_string().contains("Bad Gateway"));
        assert!(http(400, "[1,2]").to_string().contains("Bad Request"));
    }

    #[test]
    fn statuses_map_to_classes() {
        assert_eq!(http(401, "{}").class(), ErrorClass::Unauthorized);
        assert_eq!(http(403, "{}").class(), ErrorClass::Forbidden);
        assert_eq!(http(404, "{}").class(), ErrorClass::NotFound);
        assert_eq!(http(429, "{}").class(), ErrorClass::RateLimited);
        assert_eq!(http(500, "{}").class(), ErrorClass::Transient);
        assert_eq!(http(503, "{}").class(), ErrorClass::Transient);
        assert_eq!(http(408, "{}").class(), ErrorClass::Transient);
        assert_eq!(http(422, "{}").class(), ErrorClass::InvalidInput);
    }

    #[test]
    fn capacity_texts_win_over_status() {
        let e = http(
            500,
            r#"{"errors":[{"message":"There are no longer any instances available with the requested specifications. Please refresh and try again."}]}"#,
        );
        assert_eq!(e.class(), ErrorClass::Capacity);
        let b = ErrorBody::parse(
            br#"{"errors":[{"message":"There are not enough free GPUs on the host machine to start this pod."}]}"#,
        );
        assert_eq!(
            from_graphql("graphql.podResume", &b, true).class(),
            ErrorClass::Capacity
        );
    }

    #[test]
    fn create_5xx_may_have_been_applied_but_4xx_not() {
        let h = HeaderMap::new();
        let e = from_http(
            "rest.createEndpoint",
            StatusCode::INTERNAL_SERVER_ERROR,
            &h,
            b"",
            true,
        );
        assert!(e.may_have_been_applied());
        assert!(e.to_string().contains("may have taken effect"));
        let e = from_http(
            "rest.createEndpoint",
            StatusCode::SERVICE_UNAVAILABLE,
            &h,
            b"",
            true,
        );
        assert!(
            !e.may_have_been_applied(),
            "503 means the server did not take it"
        );
        let e = from_http(
            "rest.createEndpoint",
            StatusCode::BAD_REQUEST,
            &h,
            b"",
            true,
        );
        assert!(!e.may_have_been_applied());
        let e = from_http(
            "jobs.status",
            StatusCode::INTERNAL_SERVER_ERROR,
            &h,
            b"",
            false,
        );
        assert!(!e.may_have_been_applied());
    }

    #[test]
    fn retry_after_seconds_and_date() {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("7"));
        let e = from_http("x", StatusCode::TOO_MANY_REQUESTS, &h, b"{}", false);
        assert_eq!(e.retry_after(), Some(Duration::from_secs(7)));
        assert!(e.to_string().contains("retry after 7.0s"), "{e}");
        let later = chrono::Utc::now() + chrono::Duration::seconds(30);
        h.insert(
            RETRY_AFTER,
            HeaderValue::from_str(&later.to_rfc2822()).unwrap(),
        );
        let d = parse_retry_after(&h).unwrap();
        assert!(
            d > Duration::from_secs(25) && d <= Duration::from_secs(30),
            "{d:?}"
        );
        h.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(parse_retry_after(&h), None);
    }

    fn problem(status: u16, body: &str, create: bool) -> PlatformError {
        from_problem(
            "POST /v2/pods",
            StatusCode::from_u16(status).unwrap(),
            &HeaderMap::new(),
            body.as_bytes(),
            create,
        )
    }

    #[test]
    fn v2_problems_map_to_classes() {
        let e = problem(
            422,
            r#"{"title":"Unprocessable Entity","status":422,"detail":"Request validation failed.","errors":["gpu.count: must be >= 1"]}"#,
            true,
        );
        assert_eq!(e.class(), ErrorClass::InvalidInput);
        assert!(!e.is_retryable() && !e.may_have_been_applied());
        match &e {
            PlatformError::InvalidInput {
                field, problems, ..
            } => {
                assert_eq!(field, "gpu.count");
                assert_eq!(problems, &["gpu.count: must be >= 1"]);
            }
            other => panic!("{other:?}"),
        }
        let rule = problem(
            400,
            r#"{"title":"Bad Request","status":400,"detail":"exactly one of gpu or cpu must be set"}"#,
            true,
        );
        assert_eq!(rule.class(), ErrorClass::InvalidInput);
        let capacity = problem(
            400,
            r#"{"title":"Bad Request","status":400,"detail":"There are no longer any instances available with the requested specifications. Please refresh and try again."}"#,
            true,
        );
        assert_eq!(capacity.class(), ErrorClass::Capacity);
        assert!(!capacity.may_have_been_applied());
        let broke = problem(
            402,
            r#"{"title":"Payment Required","status":402,"detail":"insufficient balance"}"#,
            true,
        );
        assert_eq!(broke.class(), ErrorClass::PaymentRequired);
        assert!(!broke.is_retryable());
        assert_eq!(broke.status(), Some(402));
        assert!(
            broke.to_string().contains("insufficient balance"),
            "{broke}"
        );
        let conflict = problem(
            409,
            r#"{"title":"Conflict","status":409,"detail":"action start is not valid for status RUNNING"}"#,
            false,
        );
        assert_eq!(conflict.class(), ErrorClass::Conflict);
        assert!(!conflict.is_retryable());
        assert_eq!(problem(403, "{}", false).class(), ErrorClass::Forbidden);
        assert_eq!(problem(404, "{}", false).class(), ErrorClass::NotFound);
        assert_eq!(problem(401, "{}", false).class(), ErrorClass::Unauthorized);
        let read = problem(
            500,
            r#"{"title":"Internal Server Error","status":500,"detail":"boom"}"#,
            false,
        );
        assert_eq!(read.class(), ErrorClass::Transient);
        assert!(read.is_retryable() && !read.may_have_been_applied());
        let create = problem(
            500,
            r#"{"title":"Internal Server Error","status":500,"detail":"boom"}"#,
            true,
        );
        assert!(create.may_have_been_applied());
    }

    #[test]
    fn v2_rate_limit_keeps_retry_after() {
        let mut h = HeaderMap::new();
        h.insert(RETRY_AFTER, HeaderValue::from_static("12"));
        let e = from_problem(
            "GET /v2/pods",
            StatusCode::TOO_MANY_REQUESTS,
            &h,
            br#"{"title":"Too Many Requests","status":429,"detail":"rate limit exceeded for the minute window"}"#,
            false,
        );
        assert_eq!(e.class(), ErrorClass::RateLimited);
        assert_eq!(e.retry_after(), Some(Duration::from_secs(12)));
    }

    #[test]
    fn graphql_errors_are_classified() {
        let cls = |body: &str| from_graphql("g", &ErrorBody::parse(body.as_bytes()), false).class();
        assert_eq!(
            cls(r#"{"errors":[{"message":"pod not found"}]}"#),
            ErrorClass::NotFound
        );
        assert_eq!(
            cls(r#"{"errors":[{"message":"x","extensions":{"code":"UNAUTHENTICATED"}}]}"#),
            ErrorClass::Unauthorized
        );
        assert_eq!(
            cls(r#"{"errors":[{"message":"Unknown field \"foo\" on type \"Pod\""}]}"#),
            ErrorClass::InvalidInput
        );
        assert_eq!(
            cls(r#"{"errors":[{"message":"boom"}]}"#),
            ErrorClass::Transient
        );
        let e = from_graphql(
            "g",
            &ErrorBody::parse(br#"{"errors":[{"message":"boom"}]}"#),
            true,
        );
        assert!(e.may_have_been_applied());
    }

    #[test]
    fn redaction_removes_the_secret() {
        let e = http(401, r#"{"detail":"bad key sk-123 given"}"#).redact("sk-123");
        assert!(!e.to_string().contains("sk-123"));
        assert!(e.to_string().contains("***"));
    }

    #[test]
    fn long_bodies_are_truncated() {
        let long = "x".repeat(10_000);
        let e = http(500, &long);
        assert!(e.to_string().len() < 700);
    }
}
