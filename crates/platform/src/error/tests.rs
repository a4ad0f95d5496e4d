//! The error shapes of every surface, and the class each becomes.

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue, RETRY_AFTER};

use super::*;

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
    let later = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(30);
    let printer = jiff::fmt::rfc2822::DateTimePrinter::new();
    h.insert(
        RETRY_AFTER,
        HeaderValue::from_str(&printer.timestamp_to_rfc9110_string(&later).unwrap()).unwrap(),
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

#[test]
fn the_host_full_answer_is_told_from_other_capacity_answers() {
    let full = PlatformError::invalid_input(
        "start",
        "There are not enough free GPUs on the host machine to start this pod",
    );
    assert!(full.is_host_full());
    let sold_out = PlatformError::invalid_input(
        "gpu",
        "There are no longer any instances available with the requested specifications.",
    );
    assert!(!sold_out.is_host_full());
}
