//! The one error type of the client. The error shapes the platform answers with are read
//! in [`body`]; which [`PlatformError`] an answer becomes is decided in `classify`.
//!
//! Callers act on [`PlatformError::class`]: fix the input, fix the key, look elsewhere,
//! wait, try another GPU type, or retry later. Messages carry the operation and the
//! platform's own explanation, never the API key or a URL that could hold it.

mod body;
mod classify;
#[cfg(test)]
mod tests;

use std::time::Duration;

pub(crate) use body::truncate;
pub use body::{ErrorBody, is_capacity_message, is_host_full_message};
pub(crate) use classify::{from_graphql, from_http, from_problem, parse_retry_after};

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

/// Matches `$value` (a [`PlatformError`], by value, `&` or `&mut`) against every variant,
/// binds the field all of them have (`operation` or `detail`) as `$field`, and evaluates
/// `$body`. The variant list lives here once: a function could not serve both the `&self`
/// and the `&mut self` bindings, and a match per use would repeat every variant.
macro_rules! in_every_variant {
    ($value:expr, $field:ident => $body:expr) => {
        match $value {
            PlatformError::InvalidInput { $field, .. }
            | PlatformError::Unauthorized { $field, .. }
            | PlatformError::Forbidden { $field, .. }
            | PlatformError::NotFound { $field, .. }
            | PlatformError::RateLimited { $field, .. }
            | PlatformError::Capacity { $field, .. }
            | PlatformError::Transient { $field, .. }
            | PlatformError::Decode { $field, .. }
            | PlatformError::Conflict { $field, .. }
            | PlatformError::PaymentRequired { $field, .. } => $body,
        }
    };
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
        in_every_variant!(self, operation => operation)
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

    /// Whether the platform refused to start a stopped pod because the machine it is tied
    /// to has no free GPU (a resume's own capacity answer).
    pub fn is_host_full(&self) -> bool {
        is_host_full_message(&self.to_string())
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
        if let Self::InvalidInput {
            field, problems, ..
        } = &mut self
        {
            scrub(field);
            problems.iter_mut().for_each(scrub);
        }
        in_every_variant!(&mut self, detail => scrub(detail));
        self
    }

    /// Sets the operation (validation helpers do not know it).
    pub(crate) fn in_operation(mut self, op: &'static str) -> Self {
        in_every_variant!(&mut self, operation => *operation = op);
        self
    }
}
