//! Conformance of the job API's runtime (spec: Stream, Workers, Events, Limits), row by
//! row, over real HTTP: stream chunks, worker scaling, webhooks and the dynamic rate limits.

mod common;

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode as AxStatus;
use common::*;
use parking_lot::Mutex;
use reqwest::Method;
use serde_json::{Value, json};

// ---- Stream chunks

#[tokio::test]
async fn stream_yields_each_element_in_order_then_nothing() {
    let e = fast(100.0).await;
    let ep = e.endpoint(json!({})).await;
    let id = e
        .run(
            &ep,
            json!({"input": {"stream": ["a", {"b": 1}, 3], "sleep_ms": 3000}}),
        )
        .await;
    let mut seen = Vec::new();
    let start = std::time::Instant::now();
    loop {
        let r = e.job(Method::GET, &ep, &format!("stream/{id}"), None).await;
        assert_eq!(r.status, 200);
        for chunk in r.body["stream"].as_array().unwrap() {
            seen.push(chunk["output"].clone());
        }
        if r.body["status"] == "COMPLETED" {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(seen, vec![json!("a"), json!({"b": 1}), json!(3)]);
    let r = e.job(Method::GET, &ep, &format!("stream/{id}"), None).await;
    assert_eq!(r.body["stream"], json!([]));
}

#[tokio::test]
async fn large_output_is_split_into_chunks_of_at_most_1_mb() {
    let e = start_default().await;
    let ep = e.endpoint(json!({})).await;
    let big = "y".repeat(2 * MIB + 100);
    let id = e
        .run(&ep, json!({"input": {"stream": [big.clone()]}}))
        .await;
    e.wait_final(&ep, &id).await;
    let r = e.job(Method::GET, &ep, &format!("stream/{id}"), None).await;
    let chunks = r.body["stream"].as_array().unwrap();
    assert!(chunks.len() >= 3, "{} chunks", chunks.len());
    let mut joined = String::new();
    for c in chunks {
        assert!(serde_json::to_vec(c).unwrap().len() <= MIB + 16);
        joined.push_str(c["output"].as_str().unwrap());
    }
    assert_eq!(joined, big);
}

// ---- Workers

#[tokio::test]
async fn workers_scale_with_the_queue_up_to_max_and_retire_after_idle_timeout() {
    let e = start_default().await;
    let ep = e.endpoint(json!({"workersMax": 2, "idleTimeout": 5})).await;
    let ids: Vec<String> = futures::future::join_all(
        (0..4).map(|_| e.run(&ep, json!({"input": {"sleep_ms": 2_000}}))),
    )
    .await;
    e.wait_status(&ep, &ids[0], |b| b["status"] == "IN_PROGRESS")
        .await;
    let h = e.health(&ep).await;
    assert_eq!(h["workers"]["running"], 2, "{h}");
    assert_eq!(h["jobs"]["inQueue"], 2, "{h}");
    for _ in 0..4 {
        e.advance(2_000).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for id in &ids {
        assert_eq!(e.wait_final(&ep, id).await["status"], "COMPLETED");
    }
    assert_eq!(e.health(&ep).await["workers"]["idle"], 2);
    e.advance(5_000).await;
    let start = std::time::Instant::now();
    while e.health(&ep).await["workers"]["idle"] != 0 {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "idle workers never retired"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn low_priority_jobs_do_not_trigger_scaling() {
    let e = start_default().await;
    let ep = e.endpoint(json!({"workersMin": 0, "workersMax": 2})).await;
    let low = e
        .run(&ep, json!({"input": {}, "policy": {"lowPriority": true}}))
        .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(e.status(&ep, &low).await.body["status"], "IN_QUEUE");
    let h = e.health(&ep).await;
    assert_eq!(
        (
            h["workers"]["idle"].as_u64(),
            h["workers"]["running"].as_u64()
        ),
        (Some(0), Some(0))
    );
    // A normal job starts a worker, which then also serves the low-priority one.
    let normal = e.run(&ep, json!({"input": {}})).await;
    assert_eq!(e.wait_final(&ep, &normal).await["status"], "COMPLETED");
    assert_eq!(e.wait_final(&ep, &low).await["status"], "COMPLETED");
}

#[tokio::test]
async fn workers_min_keeps_workers_up() {
    let e = start_default().await;
    let ep = e.endpoint(json!({"workersMin": 2, "workersMax": 3})).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    e.advance(3_600_000).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(e.health(&ep).await["workers"]["idle"], 2);
}

// ---- Events: webhook

async fn hook_server(answers: Vec<u16>) -> (String, Arc<Mutex<Vec<Value>>>) {
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let answers = Arc::new(Mutex::new(answers.into_iter()));
    let seen2 = seen.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
            let seen = seen2.clone();
            let answers = answers.clone();
            async move {
                seen.lock().push(body);
                AxStatus::from_u16(answers.lock().next().unwrap_or(200)).unwrap()
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

#[tokio::test]
async fn webhook_posts_the_status_body_once_on_200() {
    let e = start_default().await;
    let ep = e.endpoint(json!({})).await;
    let (url, seen) = hook_server(vec![200, 200, 200]).await;
    let id = e
        .run(&ep, json!({"input": {"output": "done"}, "webhook": url}))
        .await;
    let status = e.wait_final(&ep, &id).await;
    let start = std::time::Instant::now();
    while seen.lock().is_empty() {
        assert!(start.elapsed() < Duration::from_secs(5));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // A minute on, any retry of the first would be due; the sign that its turn has passed
    // is the webhook of a second job, made after, delivered.
    e.advance(60_000).await;
    let later = e
        .run(&ep, json!({"input": {"output": "later"}, "webhook": url}))
        .await;
    e.wait_final(&ep, &later).await;
    while !seen.lock().iter().any(|body| body["id"] == later.as_str()) {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{:?}",
            seen.lock()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let first: Vec<Value> = seen
        .lock()
        .iter()
        .filter(|body| body["id"] == id.as_str())
        .cloned()
        .collect();
    assert_eq!(first, vec![status]);
}

#[tokio::test]
async fn webhook_retries_twice_10_seconds_apart() {
    let e = fast(100.0).await;
    let ep = e.endpoint(json!({})).await;
    let (url, seen) = hook_server(vec![500, 503, 500, 200]).await;
    let id = e
        .run(&ep, json!({"input": {"fail": "x"}, "webhook": url}))
        .await;
    e.wait_final(&ep, &id).await;
    // 2 retries 10 s (emulated) apart; then nothing more, once the emulated clock is three
    // spacings past the last try, where a fourth would have come after one.
    let start = std::time::Instant::now();
    while seen.lock().len() < 3 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{:?}",
            seen.lock()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let last_try = e.emu.now_ms();
    while e.emu.now_ms() < last_try + 3 * 10_000 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the emulated clock stood still"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(seen.lock().len(), 3);
    let state = e.emu.admin().state().await.unwrap();
    let attempts: Vec<&Value> = state["webhookAttempts"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    assert_eq!(attempts.len(), 3);
    let at: Vec<u64> = attempts.iter().map(|a| a["at"].as_u64().unwrap()).collect();
    assert!(at[1] - at[0] >= 10_000 && at[2] - at[1] >= 10_000, "{at:?}");
    assert!(at[1] - at[0] < 15_000, "{at:?}");
    assert_eq!(seen.lock()[0]["status"], "FAILED");
}

// ---- Limits: rate limits with the dynamic rule

#[tokio::test]
async fn rate_limit_purge_queue_two_per_10_seconds() {
    let e = start_default().await;
    let ep = e.endpoint(json!({})).await;
    for _ in 0..2 {
        assert_eq!(
            e.job(Method::POST, &ep, "purge-queue", None).await.status,
            200
        );
    }
    let r = e.job(Method::POST, &ep, "purge-queue", None).await;
    r.assert_error(429, "10 seconds");
    assert!(r.headers.get("retry-after").is_some());
    // Per endpoint: another endpoint is not affected.
    let other = e.endpoint(json!({})).await;
    assert_eq!(
        e.job(Method::POST, &other, "purge-queue", None)
            .await
            .status,
        200
    );
    e.advance(10_000).await;
    assert_eq!(
        e.job(Method::POST, &ep, "purge-queue", None).await.status,
        200
    );
}

#[tokio::test]
async fn rate_limit_requests_and_the_dynamic_rule() {
    let e = start(gpucloud_emulator::EmulatorConfig {
        requests_per_worker: 10,
        ..config()
    })
    .await;
    let ep = e.endpoint(json!({})).await;
    for _ in 0..10 {
        assert_eq!(e.job(Method::GET, &ep, "requests", None).await.status, 200);
    }
    e.job(Method::GET, &ep, "requests", None)
        .await
        .assert_error(429, "/requests");
    // 3 running workers x 10 requests per worker = 30 > the base of 10.
    let busy = e.endpoint(json!({"workersMin": 3, "workersMax": 3})).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    for i in 0..30 {
        let r = e.job(Method::GET, &busy, "requests", None).await;
        assert_eq!(r.status, 200, "call {i}: {}", r.body);
    }
    e.job(Method::GET, &busy, "requests", None)
        .await
        .assert_error(429, "30");
}

#[tokio::test]
async fn rate_limit_cancel_100_per_10_seconds_per_key() {
    let e = start_default().await;
    let ep = e.endpoint(json!({"workersMax": 0})).await;
    for _ in 0..100 {
        let r = e.job(Method::POST, &ep, "cancel/none", None).await;
        assert_eq!(r.status, 404);
    }
    e.job(Method::POST, &ep, "cancel/none", None)
        .await
        .assert_error(429, "/cancel");
}

#[tokio::test]
async fn openai_and_requests_exist_and_count() {
    let e = start_default().await;
    let ep = e.endpoint(json!({})).await;
    let r = e
        .post(
            &ep,
            "openai/v1/chat/completions",
            json!({"output": {"choices": []}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body, json!({"choices": []}));
    let r = e.job(Method::GET, &ep, "requests", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["requests"].as_array().unwrap().len(), 1);
    let calls = e.emu.admin().calls().await.unwrap();
    assert_eq!(calls["POST /v2/{endpoint_id}/openai/{*path}"], 1);
    assert_eq!(calls["GET /v2/{endpoint_id}/requests"], 1);
}

// ---- Authentication

#[tokio::test]
async fn job_api_auth_401_403() {
    let e = start_default().await;
    let ep = e.endpoint(json!({})).await;
    let url = e.job_url(&ep, "run");
    let body = Some(json!({"input": {}}));
    e.call(Method::POST, &url, None, body.clone())
        .await
        .assert_error(401, "API key");
    e.call(Method::POST, &url, Some("wrong"), body.clone())
        .await
        .assert_error(401, "API key");
    e.call(Method::POST, &url, Some("Bearer wrong"), body.clone())
        .await
        .assert_error(401, "API key");
    assert_eq!(
        e.call(
            Method::POST,
            &url,
            Some(&format!("Bearer {KEY}")),
            body.clone()
        )
        .await
        .status,
        200
    );
    assert_eq!(
        e.call(Method::POST, &url, Some(KEY), body.clone())
            .await
            .status,
        200
    );
    // A read-only key may read but not write, job submission included.
    for (method, op) in [
        (Method::POST, "run"),
        (Method::POST, "runsync"),
        (Method::POST, "cancel/x"),
        (Method::POST, "retry/x"),
        (Method::POST, "purge-queue"),
        (Method::POST, "openai/v1/x"),
    ] {
        let r = e
            .call(method, &e.job_url(&ep, op), Some(READ_KEY), body.clone())
            .await;
        r.assert_error(403, "read-only");
    }
    assert_eq!(
        e.call(Method::GET, &e.job_url(&ep, "health"), Some(READ_KEY), None)
            .await
            .status,
        200
    );
    assert_eq!(
        e.health(&ep).await["jobs"]["inQueue"].as_u64().unwrap()
            + e.health(&ep).await["jobs"]["completed"].as_u64().unwrap()
            + e.health(&ep).await["jobs"]["inProgress"].as_u64().unwrap(),
        2
    );
}
