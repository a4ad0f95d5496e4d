//! Helpers of the REST v2 conformance tests for serverless, templates, network volumes and
//! registries: calls with a key, and checks of the problem+json answer and the rate-limit
//! headers every authenticated answer carries.

#![allow(dead_code)]

use reqwest::Method;
use serde_json::Value;

use super::{Emu, KEY, READ_KEY, Resp};

/// `/v2{path}` with the full-access key.
pub async fn v2(e: &Emu, method: Method, path: &str, body: Option<Value>) -> Resp {
    v2_as(e, Some(KEY), method, path, body).await
}

/// `/v2{path}` with `key` as the bearer token (none: no `Authorization` header).
pub async fn v2_as(
    e: &Emu,
    key: Option<&str>,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Resp {
    let url = format!("{}/v2{path}", e.emu.base_url());
    let auth = key.map(|k| format!("Bearer {k}"));
    e.call(method, &url, auth.as_deref(), body).await
}

/// The read-only key's call.
pub async fn v2_read(e: &Emu, method: Method, path: &str, body: Option<Value>) -> Resp {
    v2_as(e, Some(READ_KEY), method, path, body).await
}

/// A problem+json answer with `status` whose detail or errors mention `needle`.
pub fn problem(r: &Resp, status: u16, needle: &str) {
    r.assert_error(status, needle);
    let ct = r
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert_eq!(
        ct, "application/problem+json",
        "status {status}: {}",
        r.body
    );
}

/// A 422 naming `field` in `errors`.
pub fn unprocessable(r: &Resp, field: &str) {
    problem(r, 422, field);
    let errors = r.body["errors"].as_array().cloned().unwrap_or_default();
    assert!(
        errors
            .iter()
            .filter_map(Value::as_str)
            .any(|e| e.starts_with(&format!("{field}:"))),
        "no error names {field}: {}",
        r.body
    );
}

/// `RateLimit` and `RateLimit-Policy` with the minute, hour and day windows.
pub fn rate_headers(r: &Resp) {
    let h = |n: &str| {
        r.headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let (limit, policy) = (h("ratelimit"), h("ratelimit-policy"));
    for window in ["minute", "hour", "day"] {
        assert!(
            limit.contains(&format!("\"{window}\";r=")),
            "RateLimit: {limit:?}"
        );
        assert!(
            policy.contains(&format!("\"{window}\";q=")),
            "RateLimit-Policy: {policy:?}"
        );
    }
}

/// Every operation of a route group answers 401 without a key and with a wrong one.
pub async fn unauthenticated(e: &Emu, calls: &[(Method, &str)]) {
    for (method, path) in calls {
        for key in [None, Some("wrong-key")] {
            let r = v2_as(e, key, method.clone(), path, None).await;
            problem(&r, 401, "");
            assert!(
                !r.body.to_string().contains("wrong-key"),
                "the key is echoed: {}",
                r.body
            );
        }
    }
}

/// Writes with the read-only key answer 403 and change nothing.
pub async fn read_only_refused(e: &Emu, calls: &[(Method, &str, Option<Value>)]) {
    for (method, path, body) in calls {
        let r = v2_read(e, method.clone(), path, body.clone()).await;
        problem(&r, 403, "read");
        rate_headers(&r);
    }
}
