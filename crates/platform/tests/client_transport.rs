//! Transport behaviours the emulator cannot produce on demand, each against a tiny local
//! axum server: auth per surface, undecodable answers, timeouts on creates and reads,
//! refused connections, redirects, a server echoing the key, long Retry-After.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use gpucloud_platform::{
    DeployPodInput, EndpointCreate, ErrorClass, JobRequest, PlatformError, RetryConfig,
};
use serde_json::json;

use common::*;

#[derive(Clone, Debug)]
struct Seen {
    path: String,
    query: Option<String>,
    authorization: Option<String>,
}

type Log = Arc<Mutex<Vec<Seen>>>;
type Handler = Arc<dyn Fn(&str) -> Response + Send + Sync>;

/// A server that records every request and answers with `answer(path)`.
async fn serve(answer: impl Fn(&str) -> Response + Send + Sync + 'static) -> (String, Log) {
    capture_logs();
    let log: Log = Arc::default();
    let handler: Handler = Arc::new(answer);
    let state = (log.clone(), handler);
    let app = Router::new().fallback(
        |State((log, handler)): State<(Log, Handler)>, headers: HeaderMap, req: Request| async move {
            let path = req.uri().path().to_owned();
            log.lock().unwrap().push(Seen {
                path: path.clone(),
                query: req.uri().query().map(str::to_owned),
                authorization: headers
                    .get(header::AUTHORIZATION)
                    .map(|v| v.to_str().unwrap().to_owned()),
            });
            handler(&path)
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app.with_state(state)).await.unwrap();
    });
    (format!("http://{addr}"), log)
}

fn json_response(status: StatusCode, body: serde_json::Value) -> Response {
    (status, axum::Json(body)).into_response()
}

fn expect_class<T: std::fmt::Debug>(
    r: Result<T, PlatformError>,
    class: ErrorClass,
) -> PlatformError {
    let e = r.expect_err("an error");
    log_error(&e);
    assert_eq!(e.class(), class, "{e}");
    e
}

#[tokio::test]
async fn auth_travels_as_the_spec_says_per_surface() {
    let (base, log) = serve(|path| match path {
        "/v1/networkvolumes" => json_response(StatusCode::OK, json!([])),
        "/v2/registries/delegations" => json_response(StatusCode::OK, json!({"delegations": []})),
        "/v2/ep1/health" => json_response(StatusCode::OK, json!({})),
        "/graphql" => json_response(StatusCode::OK, json!({"data": {"myself": {"pods": []}}})),
        _ => StatusCode::NOT_FOUND.into_response(),
    })
    .await;
    let c = client_at(&base, |_| {});
    c.rest().list_network_volumes().await.unwrap();
    c.registry().list_delegations().await.unwrap();
    c.jobs().health("ep1").await.unwrap();
    c.graphql().my_pods().await.unwrap();
    let seen = log.lock().unwrap().clone();
    let bearer = format!("Bearer {FULL_KEY}");
    let by_path = |p: &str| seen.iter().find(|s| s.path == p).cloned().unwrap();
    assert_eq!(
        by_path("/v1/networkvolumes").authorization.as_deref(),
        Some(bearer.as_str())
    );
    assert_eq!(
        by_path("/v2/registries/delegations")
            .authorization
            .as_deref(),
        Some(bearer.as_str())
    );
    assert_eq!(
        by_path("/v2/ep1/health").authorization.as_deref(),
        Some(bearer.as_str())
    );
    let gql = by_path("/graphql");
    assert_eq!(
        gql.authorization, None,
        "GraphQL takes the key as a query parameter"
    );
    assert_eq!(
        gql.query.as_deref(),
        Some(format!("api_key={FULL_KEY}").as_str())
    );
    assert_no_key_logged();
}

#[tokio::test]
async fn undecodable_answers_name_the_operation() {
    let (base, _) = serve(|path| match path {
        "/v2/ep1/run" => json_response(StatusCode::OK, json!({"id": 5})),
        "/v1/endpoints" => (StatusCode::OK, "<html>not json</html>").into_response(),
        "/graphql" => json_response(StatusCode::OK, json!({"data": {"myself": {"pods": 3}}})),
        _ => StatusCode::NOT_FOUND.into_response(),
    })
    .await;
    let c = client_at(&base, |_| {});
    let e = expect_class(
        c.jobs().run("ep1", &JobRequest::new(json!({}))).await,
        ErrorClass::Decode,
    );
    assert!(e.to_string().contains("jobs.run"), "{e}");
    let e = expect_class(c.rest().list_endpoints().await, ErrorClass::Decode);
    assert!(e.to_string().contains("rest.list_endpoints"), "{e}");
    let e = expect_class(c.graphql().my_pods().await, ErrorClass::Decode);
    assert!(e.to_string().contains("graphql.myself.pods"), "{e}");
    assert_no_key_logged();
}

#[tokio::test]
async fn timeouts_retry_reads_but_flag_creates() {
    let (base, log) = serve(|_| {
        // Answers only after the client has given up.
        std::thread::sleep(Duration::from_millis(400));
        json_response(StatusCode::OK, json!([]))
    })
    .await;
    let c = client_at(&base, |cfg| {
        cfg.timeouts.request = Duration::from_millis(100);
        cfg.retry.max_retries = 2;
    });
    let create = EndpointCreate {
        name: "e".into(),
        template_id: "t".into(),
        gpu_type_ids: vec!["g".into()],
        workers_min: 0,
        workers_max: 1,
        idle_timeout: 5,
        ..Default::default()
    };
    let e = expect_class(
        c.rest().create_endpoint(&create).await,
        ErrorClass::Transient,
    );
    assert!(
        e.may_have_been_applied(),
        "a create that timed out may have happened: {e}"
    );
    assert_eq!(
        log.lock().unwrap().len(),
        1,
        "creates are never retried blindly"
    );
    log.lock().unwrap().clear();
    let e = expect_class(c.rest().list_endpoints().await, ErrorClass::Transient);
    assert!(!e.may_have_been_applied());
    assert!(e.to_string().contains("timeout"), "{e}");
    assert_eq!(log.lock().unwrap().len(), 3, "reads are retried");
    assert_no_key_logged();
}

#[tokio::test]
async fn refused_connection_is_transient_and_certainly_not_applied() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    capture_logs();
    let c = client_at(&base, |cfg| cfg.retry.max_retries = 1);
    let input = DeployPodInput {
        name: Some("p".into()),
        image_name: Some("i".into()),
        gpu_type_id: Some("g".into()),
        ..Default::default()
    };
    let e = expect_class(c.graphql().deploy_pod(&input).await, ErrorClass::Transient);
    assert!(!e.may_have_been_applied(), "nothing was sent: {e}");
    assert!(e.to_string().contains("connect"), "{e}");
    assert!(
        !e.to_string().contains("api_key"),
        "no URL with the key in errors: {e}"
    );
    assert_no_key_logged();
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let (elsewhere, elsewhere_log) =
        serve(|_| json_response(StatusCode::OK, json!({"data": {"myself": {"pods": []}}}))).await;
    let target = format!("{elsewhere}/graphql");
    let (base, _) = serve(move |_| {
        (
            StatusCode::TEMPORARY_REDIRECT,
            [(header::LOCATION, target.clone())],
        )
            .into_response()
    })
    .await;
    let c = client_at(&base, |_| {});
    let e = c
        .graphql()
        .my_pods()
        .await
        .expect_err("a redirect is an error");
    log_error(&e);
    assert!(
        elsewhere_log.lock().unwrap().is_empty(),
        "the key must not follow a redirect"
    );
    assert_no_key_logged();
}

#[tokio::test]
async fn graphql_error_shapes() {
    let (base, _) = serve(|_| {
        json_response(
            StatusCode::OK,
            json!({"data": {"podFindAndDeployOnDemand": null}, "errors": [{"message":
                "There are no longer any instances available with enough disk space."}]}),
        )
    })
    .await;
    let input = DeployPodInput {
        name: Some("p".into()),
        image_name: Some("i".into()),
        gpu_type_id: Some("g".into()),
        ..Default::default()
    };
    let c = client_at(&base, |_| {});
    expect_class(c.graphql().deploy_pod(&input).await, ErrorClass::Capacity);

    let (base, _) = serve(|_| {
        json_response(
            StatusCode::OK,
            json!({"data": {"podFindAndDeployOnDemand": null}}),
        )
    })
    .await;
    let c = client_at(&base, |_| {});
    let e = expect_class(c.graphql().deploy_pod(&input).await, ErrorClass::Transient);
    assert!(
        e.may_have_been_applied(),
        "no pod and no error: it may exist"
    );
    assert_no_key_logged();
}

#[tokio::test]
async fn a_server_echoing_the_key_is_redacted() {
    let (base, _) = serve(|_| {
        json_response(
            StatusCode::UNAUTHORIZED,
            json!({"title": "Unauthorized", "status": 401,
                   "detail": format!("key {FULL_KEY} is not valid")}),
        )
    })
    .await;
    let c = client_at(&base, |_| {});
    let e = expect_class(c.rest().list_endpoints().await, ErrorClass::Unauthorized);
    assert!(e.to_string().contains("***"), "{e}");
    assert_no_key_logged();
}

#[tokio::test]
async fn a_long_retry_after_goes_back_to_the_caller() {
    let (base, log) = serve(|_| {
        (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "120")],
            axum::Json(json!({"title": "Too Many Requests", "status": 429,
                "detail": "limit of 60 requests per minute exceeded"})),
        )
            .into_response()
    })
    .await;
    let c = client_at(&base, |cfg| {
        cfg.retry = RetryConfig {
            max_retries: 5,
            ..fast_retry()
        }
    });
    let started = Instant::now();
    let e = expect_class(
        c.registry().list_delegations().await,
        ErrorClass::RateLimited,
    );
    assert_eq!(e.retry_after(), Some(Duration::from_secs(120)));
    assert!(e.to_string().contains("per minute"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "not waited out in the call"
    );
    assert_eq!(log.lock().unwrap().len(), 1);
    assert_no_key_logged();
}

/// A listing is decoded while it arrives: a connection that breaks partway through is a
/// transport failure, read again, and never taken for a bad answer; text that is not the
/// listing is a decode failure naming the operation.
#[tokio::test]
async fn a_listing_cut_off_mid_answer_is_read_again_and_bad_text_is_named() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let cut_offs = Arc::new(AtomicUsize::new(0));
    let (base, log) = serve({
        let cut_offs = cut_offs.clone();
        move |path| match path {
            "/v2/network-volumes" if cut_offs.fetch_add(1, Ordering::SeqCst) < 2 => {
                let head = bytes::Bytes::from_static(br#"{"networkVolumes": [{"id": "v1", "#);
                let chunks = futures::stream::iter([Ok(head), Err(std::io::Error::other("cut"))]);
                Response::new(axum::body::Body::from_stream(chunks))
            }
            "/v2/network-volumes" => json_response(
                StatusCode::OK,
                json!({"networkVolumes": [
                    {"id": "v1", "name": "a", "size": 10, "dataCenter": "EU-RO-1"}
                ]}),
            ),
            "/v2/serverless" => (StatusCode::OK, r#"{"serverless": [1, "#).into_response(),
            _ => StatusCode::NOT_FOUND.into_response(),
        }
    })
    .await;
    let c = client_at(&base, |_| {});
    let listed = c.v2().list_network_volumes().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, "v1");
    let asked = |p: &str| log.lock().unwrap().iter().filter(|s| s.path == p).count();
    assert_eq!(
        asked("/v2/network-volumes"),
        3,
        "two cut off, the third whole"
    );

    let e = expect_class(c.v2().list_endpoints().await, ErrorClass::Decode);
    assert!(e.to_string().contains("GET /v2/serverless"), "{e}");
    assert_eq!(
        asked("/v2/serverless"),
        1,
        "bad text is not asked for again"
    );
    assert_no_key_logged();
}
