//! The REST v2 client over real HTTP. The quota headers, 429s and error statuses are
//! checked against small axum servers in this file, whose quotas can be set per test; the
//! typed round trips of every resource run against the in-process emulator.

mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use gpucloud_platform::v2::{CreateContainerConfig, CreateGpuConfig, CreatePod, PodListQuery};
use gpucloud_platform::{ApiKey, ErrorClass};
use serde_json::json;

use common::*;

// ------------------------------------------------------------------------ fake servers

type Answer = Arc<dyn Fn(&str, &str, &HeaderMap) -> Response + Send + Sync>;

/// A server answering every request with `answer(method, path, headers)`.
async fn serve(
    answer: impl Fn(&str, &str, &HeaderMap) -> Response + Send + Sync + 'static,
) -> String {
    capture_logs();
    let answer: Answer = Arc::new(answer);
    let app = Router::new().fallback(move |req: Request| {
        let answer = answer.clone();
        async move {
            let method = req.method().as_str().to_owned();
            let path = req.uri().path().to_owned();
            answer(&method, &path, req.headers())
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    format!("http://{addr}")
}

fn problem(status: StatusCode, detail: &str) -> Response {
    let body =
        json!({"title": status.canonical_reason(), "status": status.as_u16(), "detail": detail});
    let mut r = (status, body.to_string()).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    r
}

fn pods_ok() -> Response {
    (StatusCode::OK, axum::Json(json!({"pods": []}))).into_response()
}

/// A fixed-window quota per API key, as the platform keeps it: `quota` calls per
/// `window`, published in `RateLimit`/`RateLimit-Policy` on every answer, 429 beyond.
struct Quota {
    quota: u64,
    window: Duration,
    started: Instant,
    /// Per key: (window index, calls in it).
    used: Mutex<HashMap<String, (u64, u64)>>,
    served: Mutex<u64>,
    refused: Mutex<u64>,
}

impl Quota {
    fn new(quota: u64, window: Duration) -> Arc<Self> {
        Arc::new(Self {
            quota,
            window,
            started: Instant::now(),
            used: Mutex::default(),
            served: Mutex::default(),
            refused: Mutex::default(),
        })
    }

    fn answer(&self, headers: &HeaderMap) -> Response {
        let key = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let elapsed = self.started.elapsed();
        let index = (elapsed.as_secs_f64() / self.window.as_secs_f64()).floor() as u64;
        let window_end = self.window.mul_f64(index as f64 + 1.0);
        // Whole seconds, rounded up as the platform must: never earlier than the reset.
        let t = (window_end - elapsed).as_secs_f64().ceil() as u64;
        let mut used = self.used.lock().unwrap();
        let entry = used.entry(key).or_insert((index, 0));
        if entry.0 != index {
            *entry = (index, 0);
        }
        let over = entry.1 >= self.quota;
        if !over {
            entry.1 += 1;
        }
        let remaining = self.quota - entry.1;
        drop(used);
        let mut r = if over {
            *self.refused.lock().unwrap() += 1;
            let mut r = problem(
                StatusCode::TOO_MANY_REQUESTS,
                "rate limit exceeded for the minute window",
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(t));
            r
        } else {
            *self.served.lock().unwrap() += 1;
            pods_ok()
        };
        let w = self.window.as_secs().max(1);
        r.headers_mut().insert(
            "ratelimit",
            HeaderValue::from_str(&format!(
                "\"minute\";r={remaining};t={t}, \"hour\";r=2800;t=1812"
            ))
            .unwrap(),
        );
        r.headers_mut().insert(
            "ratelimit-policy",
            HeaderValue::from_str(&format!(
                "\"minute\";q={};w={w}, \"hour\";q=3000;w=3600",
                self.quota
            ))
            .unwrap(),
        );
        r
    }
}

#[tokio::test]
async fn a_burst_over_the_published_quota_slows_down_and_earns_no_429() {
    let quota = Quota::new(4, Duration::from_secs(1));
    let q = quota.clone();
    let base = serve(move |_, _, h| q.answer(h)).await;
    let c = client_at(&base, |_| {});
    let started = Instant::now();
    let calls = (0..12).map(|_| {
        let v2 = c.v2();
        async move { v2.list_pods(&PodListQuery::default()).await }
    });
    for r in futures::future::join_all(calls).await {
        r.expect("every call of the burst succeeds");
    }
    assert_eq!(*quota.refused.lock().unwrap(), 0, "no call was refused");
    assert_eq!(*quota.served.lock().unwrap(), 12);
    // Twelve calls at four per window span at least three windows.
    assert!(
        started.elapsed() >= Duration::from_millis(1000),
        "{:?}",
        started.elapsed()
    );
    assert_no_key_logged();
}

#[tokio::test]
async fn the_quota_is_shared_by_clones_and_kept_per_key() {
    // A window far longer than a call may wait: a spent one is refused at once, unsent.
    let quota = Quota::new(3, Duration::from_secs(600));
    let q = quota.clone();
    let base = serve(move |_, _, h| q.answer(h)).await;
    let a = client_at(&base, |_| {});
    let a_clone = a.clone();
    let b = a.with_api_key(ApiKey::new(READ_ONLY_KEY).unwrap());
    for _ in 0..3 {
        a.v2().list_pods(&PodListQuery::default()).await.unwrap();
    }
    // Another key has its own quota.
    b.v2().list_pods(&PodListQuery::default()).await.unwrap();
    // A clone with the first key knows its window is spent.
    let e = expect_class(
        a_clone.v2().list_pods(&PodListQuery::default()).await,
        ErrorClass::RateLimited,
    );
    assert!(e.retry_after().unwrap() > Duration::from_secs(500), "{e}");
    assert_eq!(*quota.served.lock().unwrap(), 4);
    assert_eq!(
        *quota.refused.lock().unwrap(),
        0,
        "the platform never had to refuse"
    );
}

#[tokio::test]
async fn a_429_is_waited_out_for_its_retry_after() {
    let calls = Arc::new(Mutex::new(0u32));
    let n = calls.clone();
    let base = serve(move |_, _, _| {
        let mut n = n.lock().unwrap();
        *n += 1;
        if *n == 1 {
            let mut r = problem(
                StatusCode::TOO_MANY_REQUESTS,
                "rate limit exceeded for the minute window",
            );
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            r
        } else {
            pods_ok()
        }
    })
    .await;
    let c = client_at(&base, |_| {});
    let t = Instant::now();
    c.v2().list_pods(&PodListQuery::default()).await.unwrap();
    assert!(
        t.elapsed() >= Duration::from_millis(950),
        "{:?}",
        t.elapsed()
    );
    assert_eq!(*calls.lock().unwrap(), 2);
}

#[tokio::test]
async fn a_long_spent_window_is_not_waited_out_and_costs_no_call() {
    let calls = Arc::new(Mutex::new(0u32));
    let n = calls.clone();
    let base = serve(move |_, _, _| {
        *n.lock().unwrap() += 1;
        let mut r = pods_ok();
        r.headers_mut().insert(
            "ratelimit",
            HeaderValue::from_static("\"minute\";r=40;t=30, \"day\";r=0;t=40000"),
        );
        r
    })
    .await;
    let c = client_at(&base, |_| {});
    c.v2().list_pods(&PodListQuery::default()).await.unwrap();
    // Refused before any of the header's windows could have been waited out: the
    // shortest it names is 30 s, and the answer comes well within that however loaded the
    // machine; refused without being sent (the server's count below), with the day's
    // window as the wait.
    let answer = tokio::time::timeout(
        Duration::from_secs(20),
        c.v2().list_pods(&PodListQuery::default()),
    )
    .await
    .expect("the refused call waited");
    let e = expect_class(answer, ErrorClass::RateLimited);
    let wait = e.retry_after().unwrap();
    assert!(wait > Duration::from_secs(39_000), "{wait:?}");
    assert_eq!(*calls.lock().unwrap(), 1, "the refused call was not sent");
}

fn create_body() -> CreatePod {
    CreatePod {
        name: "p".into(),
        container: CreateContainerConfig {
            image: Some("img".into()),
            ..Default::default()
        },
        gpu: Some(CreateGpuConfig {
            id: "NVIDIA A40".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[tokio::test]
async fn statuses_map_and_only_what_may_be_repeated_is() {
    let calls: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let seen = calls.clone();
    let base = serve(move |method, path, _| {
        let route = format!("{method} {path}");
        let n = {
            let mut calls = seen.lock().unwrap();
            let n = calls.entry(route.clone()).or_default();
            *n += 1;
            *n
        };
        match route.as_str() {
            "GET /v2/pods" if n == 1 => problem(StatusCode::BAD_GATEWAY, "upstream"),
            "GET /v2/pods" => pods_ok(),
            "POST /v2/pods" => problem(StatusCode::INTERNAL_SERVER_ERROR, "boom"),
            "POST /v2/templates" => problem(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Request validation failed.",
            ),
            "POST /v2/network-volumes" => {
                problem(StatusCode::PAYMENT_REQUIRED, "insufficient balance")
            }
            "POST /v2/pods/p1/action" => problem(
                StatusCode::CONFLICT,
                "action start is not valid for status RUNNING",
            ),
            "PATCH /v2/pods/p1" => problem(
                StatusCode::BAD_REQUEST,
                "There are not enough free GPUs on the host machine to start this pod.",
            ),
            "GET /v2/pods/gone" => {
                problem(StatusCode::NOT_FOUND, "The requested Pod does not exist.")
            }
            _ => problem(StatusCode::FORBIDDEN, "access denied"),
        }
    })
    .await;
    let c = client_at(&base, |_| {});
    let v2 = c.v2();
    let count = |route: &str| calls.lock().unwrap().get(route).copied().unwrap_or(0);

    v2.list_pods(&PodListQuery::default()).await.unwrap();
    assert_eq!(count("GET /v2/pods"), 2, "a read is retried after a 5xx");

    let e = expect_class(v2.create_pod(&create_body()).await, ErrorClass::Transient);
    assert!(e.may_have_been_applied());
    assert_eq!(count("POST /v2/pods"), 1, "a create is never repeated");

    let e = expect_class(
        v2.create_template(&gpucloud_platform::v2::CreateTemplate {
            name: "t".into(),
            container: gpucloud_platform::v2::CreateContainerConfig {
                image: "i".into(),
                ..Default::default()
            },
            ..Default::default()
        })
        .await,
        ErrorClass::InvalidInput,
    );
    assert!(!e.may_have_been_applied());
    assert_eq!(count("POST /v2/templates"), 1);

    expect_class(
        v2.create_network_volume(&gpucloud_platform::v2::CreateNetworkVolume {
            name: "n".into(),
            size: 10,
            data_center: "EU-RO-1".into(),
            volume_type: None,
        })
        .await,
        ErrorClass::PaymentRequired,
    );
    expect_class(
        v2.pod_action("p1", gpucloud_platform::v2::PodAction::Start)
            .await,
        ErrorClass::Conflict,
    );
    assert_eq!(count("POST /v2/pods/p1/action"), 1);
    expect_class(
        v2.update_pod("p1", &Default::default()).await,
        ErrorClass::Capacity,
    );
    assert_eq!(
        count("PATCH /v2/pods/p1"),
        1,
        "a capacity refusal is not retried as is"
    );
    expect_class(v2.get_pod("gone").await, ErrorClass::NotFound);
    expect_class(v2.list_registries().await, ErrorClass::Forbidden);
    assert_no_key_logged();
}
