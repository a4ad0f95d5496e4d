//! What the REST v2 serverless suites share: a valid GPU endpoint body, the fields a create
//! requires, and create, get and patch calls that assert their status.
#![allow(dead_code)]

use reqwest::Method;
use serde_json::{Value, json};

use super::v2::*;
use super::*;

pub const REQUIRED: [&str; 9] = [
    "id",
    "name",
    "workers",
    "scaling",
    "dataCenterIds",
    "networkVolumes",
    "timeout",
    "flashboot",
    "createdAt",
];

pub fn gpu_body(extra: Value) -> Value {
    let mut body = json!({
        "name": "gen",
        "type": "QUEUE",
        "image": "me/worker:1",
        "gpu": {"pools": ["ADA_24"], "count": 1},
        "scaling": {"type": "QUEUE_DELAY", "queueDelay": 4},
        "workers": {"min": 0, "max": 3, "idleTimeout": 5},
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

pub async fn create(e: &Emu, body: Value) -> Value {
    let r = v2::v2(e, Method::POST, "/serverless", Some(body)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    rate_headers(&r);
    for field in REQUIRED {
        assert!(r.body.get(field).is_some(), "{field}: {}", r.body);
    }
    r.body
}

pub async fn get(e: &Emu, path: &str) -> Value {
    let r = v2::v2(e, Method::GET, path, None).await;
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    rate_headers(&r);
    r.body
}

pub async fn patch(e: &Emu, id: &str, body: Value) -> Value {
    let r = v2::v2(e, Method::PATCH, &format!("/serverless/{id}"), Some(body)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}
