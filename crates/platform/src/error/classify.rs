//! Which [`PlatformError`] an answer becomes: by HTTP status (REST v1, jobs, registry),
//! by problem+json status (REST v2), or by GraphQL error codes and texts, with the
//! platform's capacity wording winning over all of them.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};

use super::PlatformError;
use super::body::{ErrorBody, is_capacity_message};

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
    let when = jiff::fmt::rfc2822::parse(raw).ok()?.timestamp();
    let delta = when.duration_since(jiff::Timestamp::now());
    Some(Duration::try_from(delta).unwrap_or(Duration::ZERO))
}
