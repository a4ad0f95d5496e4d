//! Jobs: states, the submission body and its policy, and the `/status` body.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

use crate::clock::Millis;
use crate::error::ApiError;
use crate::validate::{Fields, check, parse_object};

pub const MIB: usize = 1024 * 1024;
/// Largest `/run` body.
pub const RUN_PAYLOAD_LIMIT: usize = 10 * MIB;
/// Largest `/runsync` body.
pub const RUNSYNC_PAYLOAD_LIMIT: usize = 20 * MIB;

pub const SECOND: u64 = 1_000;
pub const MINUTE: u64 = 60 * SECOND;
pub const DAY: u64 = 24 * 60 * MINUTE;

pub const EXECUTION_TIMEOUT_MIN: u64 = 5 * SECOND;
pub const EXECUTION_TIMEOUT_MAX: u64 = 7 * DAY;
pub const TTL_MIN: u64 = 10 * SECOND;
pub const TTL_MAX: u64 = 7 * DAY;
pub const TTL_DEFAULT: u64 = DAY;
pub const WAIT_MIN: u64 = 1_000;
pub const WAIT_MAX: u64 = 300_000;
pub const WAIT_DEFAULT: u64 = 90_000;
/// Results of `/run` jobs are kept this long after they finish.
pub const ASYNC_RETENTION: u64 = 30 * MINUTE;
/// Results of `/runsync` jobs are kept at least this long, and up to `wait` (≤ 5 min).
pub const SYNC_RETENTION: u64 = MINUTE;

/// Retention of a sync job's result: 1 minute, up to 5 minutes with a larger `wait`.
pub fn sync_retention(wait_ms: u64) -> u64 {
    wait_ms.clamp(SYNC_RETENTION, 5 * MINUTE)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobStatus {
    InQueue,
    InProgress,
    Completed,
    Failed,
    Cancelled,
    TimedOut,
}

impl JobStatus {
    pub fn is_final(self) -> bool {
        !matches!(self, Self::InQueue | Self::InProgress)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::InQueue => "IN_QUEUE",
            Self::InProgress => "IN_PROGRESS",
            Self::Completed => "COMPLETED",
            Self::Failed => "FAILED",
            Self::Cancelled => "CANCELLED",
            Self::TimedOut => "TIMED_OUT",
        }
    }
}

/// A validated `/run` or `/runsync` body.
#[derive(Debug, Clone)]
pub struct Submission {
    pub input: Value,
    pub webhook: Option<String>,
    pub execution_timeout_ms: Option<u64>,
    pub low_priority: bool,
    pub ttl_ms: u64,
}

/// Validates a submission body against the spec's tables. `limit` is the operation's payload
/// limit; `op` names the operation in messages.
pub fn parse_submission(body: &[u8], limit: usize, op: &str) -> Result<Submission, ApiError> {
    if body.len() > limit {
        return Err(ApiError {
            errors: vec![format!("body: at most {} MB for {op}", limit / MIB)],
            ..ApiError::new(
                axum::http::StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "the {op} payload is {} bytes; the limit is {} MB",
                    body.len(),
                    limit / MIB
                ),
            )
        });
    }
    let map = parse_object(body, false)?;
    parse_submission_map(&map)
}

fn parse_submission_map(map: &Map<String, Value>) -> Result<Submission, ApiError> {
    let mut f = Fields::new(map);
    let input = match f.opt_value("input") {
        Some(Value::Object(_)) => map["input"].clone(),
        Some(_) => {
            f.fail("input", "must be an object");
            Value::Null
        }
        None => {
            f.fail("input", "required");
            Value::Null
        }
    };
    let webhook = f.opt_string("webhook");
    if let Some(url) = &webhook {
        match url::Url::parse(url) {
            Ok(u) if u.scheme() == "http" || u.scheme() == "https" => {}
            _ => f.fail("webhook", "must be an http or https URL"),
        }
    }
    let mut execution_timeout_ms = None;
    let mut low_priority = false;
    let mut ttl_ms = TTL_DEFAULT;
    if let Some(policy) = f.opt_object("policy") {
        let mut p = Fields::nested(policy, "policy");
        execution_timeout_ms = p
            .opt_int(
                "executionTimeout",
                EXECUTION_TIMEOUT_MIN as i64,
                EXECUTION_TIMEOUT_MAX as i64,
            )
            .map(|v| v as u64);
        low_priority = p.opt_bool("lowPriority").unwrap_or(false);
        if let Some(ttl) = p.opt_int("ttl", TTL_MIN as i64, TTL_MAX as i64) {
            ttl_ms = ttl as u64;
        }
        let errors = p.finish();
        f.absorb(errors);
    }
    if let Some(s3) = f.opt_object("s3Config") {
        let mut s = Fields::nested(s3, "s3Config");
        s.opt_string("accessId");
        s.opt_string("accessSecret");
        s.opt_string("bucketName");
        if let Some(url) = s.opt_string("endpointUrl")
            && url::Url::parse(&url).is_err()
        {
            s.fail("endpointUrl", "must be a URL");
        }
        let errors = s.finish();
        f.absorb(errors);
    }
    check(f.finish())?;
    Ok(Submission {
        input,
        webhook,
        execution_timeout_ms,
        low_priority,
        ttl_ms,
    })
}

/// A job and everything the emulator tracks about it.
#[derive(Debug)]
pub struct Job {
    pub id: String,
    pub input: Arc<Value>,
    pub webhook: Option<String>,
    pub policy_execution_timeout_ms: Option<u64>,
    pub low_priority: bool,
    pub ttl_ms: u64,
    pub submitted_at: Millis,
    pub started_at: Option<Millis>,
    pub finished_at: Option<Millis>,
    pub status: JobStatus,
    pub output: Option<Value>,
    pub error: Option<String>,
    /// Stream chunks produced but not yet read from `/stream`.
    pub chunks: std::collections::VecDeque<Value>,
    /// How long the result is kept after the job finishes.
    pub retention_ms: u64,
    /// Bumped on retry, so a worker still holding the previous attempt lets go.
    pub attempt: u32,
    /// Wakes the worker running this job (cancel, TTL change).
    pub wake: Arc<Notify>,
    /// Wakes `/runsync` callers when the job reaches a final state.
    pub done: Arc<Notify>,
}

impl Job {
    pub fn new(id: String, sub: Submission, now: Millis, retention_ms: u64) -> Self {
        Self {
            id,
            input: Arc::new(sub.input),
            webhook: sub.webhook,
            policy_execution_timeout_ms: sub.execution_timeout_ms,
            low_priority: sub.low_priority,
            ttl_ms: sub.ttl_ms,
            submitted_at: now,
            started_at: None,
            finished_at: None,
            status: JobStatus::InQueue,
            output: None,
            error: None,
            chunks: Default::default(),
            retention_ms,
            attempt: 0,
            wake: Arc::new(Notify::new()),
            done: Arc::new(Notify::new()),
        }
    }

    /// When the TTL deletes the job (queue time counts against it).
    pub fn ttl_deadline(&self) -> Millis {
        self.submitted_at.saturating_add(self.ttl_ms)
    }

    /// When the result stops being retrievable, for finished jobs.
    pub fn retention_deadline(&self) -> Option<Millis> {
        self.finished_at
            .map(|f| f.saturating_add(self.retention_ms))
    }

    /// Whether the job is gone (TTL or retention) at `now`.
    pub fn expired(&self, now: Millis) -> bool {
        now >= self.ttl_deadline() || self.retention_deadline().is_some_and(|d| now >= d)
    }

    /// The `/status` body (also the webhook payload and the `/runsync` answer).
    pub fn status_body(&self) -> Value {
        let mut body = json!({ "id": self.id, "status": self.status.as_str() });
        let obj = body.as_object_mut().expect("object");
        if let Some(started) = self.started_at {
            obj.insert(
                "delayTime".into(),
                json!(started.saturating_sub(self.submitted_at)),
            );
            if let Some(finished) = self.finished_at {
                obj.insert(
                    "executionTime".into(),
                    json!(finished.saturating_sub(started)),
                );
            }
        }
        if let Some(output) = &self.output {
            obj.insert("output".into(), output.clone());
        }
        if let Some(error) = &self.error {
            obj.insert("error".into(), json!(error));
        }
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: Value) -> Result<Submission, ApiError> {
        parse_submission(v.to_string().as_bytes(), RUN_PAYLOAD_LIMIT, "/run")
    }

    #[test]
    fn defaults() {
        let s = parse(json!({"input": {"a": 1}})).unwrap();
        assert_eq!(s.ttl_ms, 86_400_000);
        assert_eq!(s.execution_timeout_ms, None);
        assert!(!s.low_priority);
    }

    #[test]
    fn policy_bounds_in_spec_units() {
        for (policy, field) in [
            (
                json!({"executionTimeout": 4_999}),
                "policy.executionTimeout",
            ),
            (
                json!({"executionTimeout": 604_800_001u64}),
                "policy.executionTimeout",
            ),
            (json!({"ttl": 9_999}), "policy.ttl"),
            (json!({"ttl": 604_800_001u64}), "policy.ttl"),
            (json!({"lowPriority": "yes"}), "policy.lowPriority"),
            (json!({"bogus": 1}), "policy.bogus"),
        ] {
            let err = parse(json!({"input": {}, "policy": policy})).unwrap_err();
            assert_eq!(err.status.as_u16(), 400);
            assert!(err.errors[0].starts_with(field), "{:?}", err.errors);
        }
        let ok = parse(json!({"input": {}, "policy": {"executionTimeout": 5000, "ttl": 10000, "lowPriority": true}})).unwrap();
        assert_eq!(ok.execution_timeout_ms, Some(5000));
        assert_eq!(ok.ttl_ms, 10_000);
        assert!(ok.low_priority);
    }

    #[test]
    fn input_is_required_and_an_object() {
        assert_eq!(
            parse(json!({})).unwrap_err().errors,
            vec!["input: required"]
        );
        assert_eq!(
            parse(json!({"input": 3})).unwrap_err().errors,
            vec!["input: must be an object"]
        );
        assert!(parse(json!({"input": {}, "webhook": "not a url"})).is_err());
        assert!(parse(json!({"input": {}, "extra": 1})).is_err());
    }

    #[test]
    fn payload_limits() {
        let big = vec![b' '; RUN_PAYLOAD_LIMIT + 1];
        let err = parse_submission(&big, RUN_PAYLOAD_LIMIT, "/run").unwrap_err();
        assert_eq!(err.status.as_u16(), 413);
    }

    #[test]
    fn sync_retention_rule() {
        assert_eq!(sync_retention(1_000), 60_000);
        assert_eq!(sync_retention(90_000), 90_000);
        assert_eq!(sync_retention(300_000), 300_000);
    }

    #[test]
    fn status_body_shapes() {
        let sub = parse(json!({"input": {"x": 1}})).unwrap();
        let mut job = Job::new("j".into(), sub, 100, ASYNC_RETENTION);
        assert_eq!(job.status_body(), json!({"id": "j", "status": "IN_QUEUE"}));
        job.started_at = Some(150);
        job.finished_at = Some(400);
        job.status = JobStatus::Completed;
        job.output = Some(json!({"x": 1}));
        assert_eq!(
            job.status_body(),
            json!({"id": "j", "status": "COMPLETED", "delayTime": 50, "executionTime": 250, "output": {"x": 1}})
        );
        assert!(!job.expired(400 + ASYNC_RETENTION - 1));
        assert!(job.expired(400 + ASYNC_RETENTION));
        assert!(job.expired(100 + DAY));
    }
}
