//! The REST v2 client over real HTTP. The quota headers, 429s and error statuses are
//! checked against small axum servers in this file, whose quotas can be set per test; the
//! typed round trips of every resource run against the in-process emulator.

#[path = "common/client.rs"]
mod common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use gpucloud_operator::platform::v2::{
    CreateContainerConfig, CreateGpuConfig, CreatePod, PodListQuery,
};
use gpucloud_operator::platform::{
    ApiKey, BaseUrls, ErrorClass, PlatformClient, PlatformConfig, PlatformError,
};
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

fn client(base: &str, tweak: impl FnOnce(&mut PlatformConfig)) -> PlatformClient {
    let mut cfg = PlatformConfig::new(
        BaseUrls::single_host(base).unwrap(),
        ApiKey::new(FULL_KEY).unwrap(),
    );
    cfg.retry = fast_retry();
    tweak(&mut cfg);
    PlatformClient::new(cfg).unwrap()
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

fn expect_class<T: std::fmt::Debug>(
    r: Result<T, PlatformError>,
    class: ErrorClass,
) -> PlatformError {
    let e = r.expect_err("an error");
    log_error(&e);
    assert_eq!(e.class(), class, "{e}");
    e
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
    let c = client(&base, |_| {});
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
    let a = client(&base, |_| {});
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
    let c = client(&base, |_| {});
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
    let c = client(&base, |_| {});
    c.v2().list_pods(&PodListQuery::default()).await.unwrap();
    let t = Instant::now();
    let e = expect_class(
        c.v2().list_pods(&PodListQuery::default()).await,
        ErrorClass::RateLimited,
    );
    assert!(t.elapsed() < Duration::from_millis(500));
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
    let c = client(&base, |_| {});
    let v2 = c.v2();
    let count = |route: &str| calls.lock().unwrap().get(route).copied().unwrap_or(0);

    v2.list_pods(&PodListQuery::default()).await.unwrap();
    assert_eq!(count("GET /v2/pods"), 2, "a read is retried after a 5xx");

    let e = expect_class(v2.create_pod(&create_body()).await, ErrorClass::Transient);
    assert!(e.may_have_been_applied());
    assert_eq!(count("POST /v2/pods"), 1, "a create is never repeated");

    let e = expect_class(
        v2.create_template(&gpucloud_operator::platform::v2::CreateTemplate {
            name: "t".into(),
            container: gpucloud_operator::platform::v2::CreateContainerConfig {
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
        v2.create_network_volume(&gpucloud_operator::platform::v2::CreateNetworkVolume {
            name: "n".into(),
            size: 10,
            data_center: "EU-RO-1".into(),
            volume_type: None,
        })
        .await,
        ErrorClass::PaymentRequired,
    );
    expect_class(
        v2.pod_action("p1", gpucloud_operator::platform::v2::PodAction::Start)
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

// ------------------------------------------------------------------------ the emulator

mod emulated {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use futures::StreamExt;
    use gpucloud_operator::emulator::EmulatorConfig;
    use gpucloud_operator::emulator::v2::limits::Quota as EmuQuota;
    use gpucloud_operator::platform::v2::{
        AvailabilityLevel, BillingBucketSize, BillingWindow, CpuQuery, CreateContainerConfig,
        CreateCpuConfig, CreateEndpoint, CreateEndpointGpuConfig, CreateGpuConfig,
        CreateNetworkVolume, CreatePod, CreateRegistry, CreateTemplate, DataCenterQuery,
        DataCenterRegion, EndpointScaling, EndpointType, EndpointWorkers, FlashBoot, GpuQuery,
        LogQuery, Mounts, PersistentMount, PodAction, PodListQuery, PodStatus, Product,
        PublicTemplateSource, UpdateContainerConfig, UpdateEndpoint, UpdateNetworkVolume,
        UpdatePod, UpdateTemplate,
    };
    use gpucloud_operator::platform::{ErrorClass, PlatformClient};

    use super::common::*;
    use super::expect_class;

    const RTX4090: &str = "NVIDIA GeForce RTX 4090";

    fn gpu_pod(name: &str) -> CreatePod {
        CreatePod {
            name: name.into(),
            container: CreateContainerConfig {
                image: Some("runpod/pytorch:2.8".into()),
                ports: Some(vec!["8888/http".into(), "22/tcp".into()]),
                env: Some(BTreeMap::from([("MODEL".to_owned(), "llama".to_owned())])),
                disk: Some(30),
                ..Default::default()
            },
            gpu: Some(CreateGpuConfig {
                id: RTX4090.into(),
                count: Some(1),
                ..Default::default()
            }),
            mounts: Some(Mounts {
                persistent: Some(PersistentMount {
                    size: 20,
                    path: "/workspace".into(),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    async fn calls(env: &Env, route: &str) -> u64 {
        env.admin().call_count(route).await.unwrap()
    }

    #[tokio::test]
    async fn pods_round_trip() {
        let env = start().await;
        let v2 = env.client.v2();
        let pod = v2.create_pod(&gpu_pod("trainer")).await.unwrap();
        assert_eq!(pod.status, PodStatus::Provisioning);
        assert_eq!(pod.actions, [PodAction::Stop, PodAction::Terminate]);
        assert_eq!(pod.gpu.as_ref().unwrap().id, RTX4090);
        assert_eq!(pod.container.env["MODEL"], "llama");
        assert_eq!(pod.mounts.persistent.as_ref().unwrap().path, "/workspace");

        let listed = v2.list_pods(&PodListQuery::default()).await.unwrap();
        assert!(listed.iter().any(|p| p.id == pod.id && p.name == "trainer"));
        env.admin().advance_clock(10_000).await.unwrap();
        let running = v2.get_pod(&pod.id).await.unwrap();
        assert_eq!(running.status, PodStatus::Running);
        assert!(running.actions.contains(&PodAction::Restart));

        let renamed = v2
            .update_pod(
                &pod.id,
                &UpdatePod {
                    name: Some("renamed".into()),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(renamed.name, "renamed");

        let lines: Vec<_> = v2
            .pod_logs(
                &pod.id,
                &LogQuery {
                    tail: Some(3),
                    ..Default::default()
                },
            )
            .await
            .unwrap()
            .collect()
            .await;
        assert!(!lines.is_empty() && lines.len() <= 3, "{lines:?}");
        for l in &lines {
            let l = l.as_ref().unwrap();
            assert!(!l.line.is_empty() && l.id.is_some(), "{l:?}");
        }

        let stopped = v2.pod_action(&pod.id, PodAction::Stop).await.unwrap();
        assert_eq!(stopped.unwrap().status, PodStatus::Exited);
        // Stopping twice is a conflict with the pod's state, answered once.
        expect_class(
            v2.pod_action(&pod.id, PodAction::Stop).await,
            ErrorClass::Conflict,
        );
        let started = v2.pod_action(&pod.id, PodAction::Start).await.unwrap();
        assert!(started.is_some());
        assert_eq!(
            v2.pod_action(&pod.id, PodAction::Terminate).await.unwrap(),
            None
        );
        expect_class(v2.get_pod(&pod.id).await, ErrorClass::NotFound);

        let cpu = v2
            .create_pod(&CreatePod {
                name: "cpu".into(),
                container: CreateContainerConfig {
                    image: Some("ubuntu".into()),
                    ..Default::default()
                },
                cpu: Some(CreateCpuConfig {
                    id: "cpu3c".into(),
                    vcpu_count: 2,
                }),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(cpu.cpu.as_ref().unwrap().id, "cpu3c");
        v2.delete_pod(&cpu.id).await.unwrap();
        expect_class(v2.get_pod(&cpu.id).await, ErrorClass::NotFound);
        assert_no_key_logged();
        env.shutdown().await;
    }

    #[tokio::test]
    async fn serverless_round_trip() {
        let env = start().await;
        let v2 = env.client.v2();
        let create = CreateEndpoint {
            name: "gen".into(),
            endpoint_type: EndpointType::Queue,
            scaling: EndpointScaling::QueueDelay { queue_delay: 4.0 },
            gpu: Some(CreateEndpointGpuConfig {
                pools: vec!["ADA_24".into()],
                count: Some(1),
                ..Default::default()
            }),
            cpu: None,
            workers: Some(EndpointWorkers {
                min: Some(2),
                max: Some(3),
                idle_timeout: Some(5),
            }),
            data_center_ids: None,
            network_volumes: None,
            timeout: Some(120_000),
            flashboot: Some(FlashBoot::Flashboot),
            template_id: None,
            container: CreateContainerConfig {
                image: Some("me/worker:1".into()),
                args: None,
                disk: None,
                env: Some(BTreeMap::from([("MODEL".to_owned(), "tiny".to_owned())])),
                ports: None,
                registry: None,
            },
        };
        let ep = v2.create_endpoint(&create).await.unwrap();
        assert_eq!(ep.endpoint_type, Some(EndpointType::Queue));
        assert_eq!(ep.workers.max, Some(3));
        assert_eq!(ep.flashboot, Some(FlashBoot::Flashboot));
        let urls = ep.request_urls.as_ref().unwrap();
        assert!(
            urls.run
                .as_deref()
                .unwrap()
                .ends_with(&format!("/v2/{}/run", ep.id))
        );

        // The job API serves it at the URL the endpoint names.
        let job = env
            .client
            .jobs()
            .runsync(
                &ep.id,
                &gpucloud_operator::platform::JobRequest::new(serde_json::json!({"output": "hi"})),
                None,
            )
            .await
            .unwrap();
        assert_eq!(job.output, Some(serde_json::json!("hi")));

        assert!(
            v2.list_endpoints()
                .await
                .unwrap()
                .iter()
                .any(|e| e.id == ep.id)
        );
        assert_eq!(v2.get_endpoint(&ep.id).await.unwrap().name, "gen");
        let updated = v2
            .update_endpoint(
                &ep.id,
                &UpdateEndpoint {
                    container: UpdateContainerConfig {
                        image: Some("me/worker:2".into()),
                        ..Default::default()
                    },
                    workers: Some(EndpointWorkers {
                        max: Some(5),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(updated.workers.max, Some(5));
        assert_eq!(updated.container.image.as_deref(), Some("me/worker:2"));

        let workers = v2.endpoint_workers(&ep.id).await.unwrap();
        assert_eq!(workers.summary.total as usize, workers.workers.len());
        let releases = v2.endpoint_releases(&ep.id).await.unwrap();
        assert!(!releases.releases.is_empty());
        assert!(
            releases
                .releases
                .iter()
                .any(|r| r.diff.iter().any(|d| d.field.contains("image"))),
            "{releases:?}"
        );

        v2.delete_endpoint(&ep.id).await.unwrap();
        expect_class(v2.get_endpoint(&ep.id).await, ErrorClass::NotFound);
        env.shutdown().await;
    }

    #[tokio::test]
    async fn templates_volumes_and_registries_round_trip() {
        let env = start().await;
        let v2 = env.client.v2();

        let t = v2
            .create_template(&CreateTemplate {
                name: "mine".into(),
                container: CreateContainerConfig {
                    image: "me/img:1".into(),
                    ports: Some(vec!["8888/http".into()]),
                    ..Default::default()
                },
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(t.container.image, "me/img:1");
        assert!(
            v2.list_templates()
                .await
                .unwrap()
                .iter()
                .any(|x| x.id == t.id)
        );
        let t2 = v2
            .update_template(
                &t.id,
                &UpdateTemplate {
                    name: Some("renamed".into()),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(t2.name, "renamed");
        assert_eq!(v2.get_template(&t.id).await.unwrap().name, "renamed");
        // A public template reads through the same route.
        assert!(v2.get_template("runpod-torch-v280").await.unwrap().public);
        v2.delete_template(&t.id).await.unwrap();
        expect_class(v2.get_template(&t.id).await, ErrorClass::NotFound);

        let vol = v2
            .create_network_volume(&CreateNetworkVolume {
                name: "data".into(),
                size: 50,
                data_center: "EU-RO-1".into(),
                volume_type: None,
            })
            .await
            .unwrap();
        assert_eq!((vol.size, vol.data_center.as_str()), (50, "EU-RO-1"));
        assert!(vol.volume_type.is_some());
        assert!(
            v2.list_network_volumes()
                .await
                .unwrap()
                .iter()
                .any(|v| v.id == vol.id)
        );
        let grown = v2
            .update_network_volume(
                &vol.id,
                &UpdateNetworkVolume {
                    size: Some(60),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(grown.size, 60);
        // Shrinking is a rule violation (400), not retried.
        expect_class(
            v2.update_network_volume(
                &vol.id,
                &UpdateNetworkVolume {
                    size: Some(20),
                    ..Default::default()
                },
            )
            .await,
            ErrorClass::InvalidInput,
        );
        assert_eq!(v2.get_network_volume(&vol.id).await.unwrap().size, 60);
        v2.delete_network_volume(&vol.id).await.unwrap();
        expect_class(v2.get_network_volume(&vol.id).await, ErrorClass::NotFound);

        let reg = v2
            .create_registry(&CreateRegistry {
                name: "hub".into(),
                username: "someone".into(),
                password: "pw-never-shown".into(),
            })
            .await
            .unwrap();
        assert_eq!(reg.name, "hub");
        assert!(
            v2.list_registries()
                .await
                .unwrap()
                .iter()
                .any(|r| r.id == reg.id)
        );
        assert_eq!(v2.get_registry(&reg.id).await.unwrap().name, "hub");
        v2.delete_registry(&reg.id).await.unwrap();
        expect_class(v2.get_registry(&reg.id).await, ErrorClass::NotFound);
        assert!(!captured().contains("pw-never-shown"));
        env.shutdown().await;
    }

    #[tokio::test]
    async fn catalog_and_billing_round_trip() {
        let env = start().await;
        let v2 = env.client.v2();
        let gpus = v2
            .list_gpu_types(&GpuQuery {
                availability: true,
                products: vec![Product::Pod],
                count: Some(1),
                ..Default::default()
            })
            .await
            .unwrap();
        let rtx = gpus
            .iter()
            .find(|g| g.id == RTX4090)
            .expect("RTX 4090 listed");
        assert!(rtx.availability.is_some() && rtx.data_centers.is_some());
        assert_eq!(rtx.pool.as_deref(), Some("ADA_24"));
        let plain = v2.list_gpu_types(&GpuQuery::default()).await.unwrap();
        assert!(plain.iter().all(|g| g.availability.is_none()));
        // An id with spaces travels encoded in the path.
        let one = v2
            .get_gpu_type(RTX4090, &GpuQuery::default())
            .await
            .unwrap();
        assert_eq!(one.id, RTX4090);
        expect_class(
            v2.get_gpu_type("NVIDIA Imaginary", &GpuQuery::default())
                .await,
            ErrorClass::NotFound,
        );
        // A filter the document only allows with availability is a 400 rule violation.
        expect_class(
            v2.list_gpu_types(&GpuQuery {
                products: vec![Product::Pod],
                ..Default::default()
            })
            .await,
            ErrorClass::InvalidInput,
        );

        let cpus = v2.list_cpu_types(&CpuQuery::default()).await.unwrap();
        assert!(cpus.iter().any(|c| c.id == "cpu3c" && c.vcpu.min == 2));
        let cpu = v2
            .get_cpu_type("cpu5c", &CpuQuery::default())
            .await
            .unwrap();
        assert_eq!(cpu.id, "cpu5c");

        let europe = v2
            .list_data_centers(&DataCenterQuery {
                regions: vec![DataCenterRegion::Europe],
                gpu_availability: true,
                ..Default::default()
            })
            .await
            .unwrap();
        assert!(!europe.is_empty());
        assert!(europe.iter().all(|d| d.region == DataCenterRegion::Europe));
        assert!(europe.iter().any(|d| d.id == "EU-RO-1"));
        assert!(
            europe
                .iter()
                .flat_map(|d| d.gpu_availability.iter().flatten())
                .any(|a| a.availability != AvailabilityLevel::None)
        );
        let dc = v2
            .get_data_center("EU-RO-1", &DataCenterQuery::default())
            .await
            .unwrap();
        assert_eq!(dc.id, "EU-RO-1");

        let official = v2.list_public_templates(None).await.unwrap();
        assert!(official.iter().any(|t| t.id == "runpod-torch-v280"));
        let verified = v2
            .list_public_templates(Some(PublicTemplateSource::Verified))
            .await
            .unwrap();
        assert!(verified.iter().any(|t| t.id == "comfyui-verified"));

        let pod = v2.create_pod(&gpu_pod("billed")).await.unwrap();
        env.admin().advance_clock(2 * 3_600_000).await.unwrap();
        let window = BillingWindow {
            bucket_size: Some(BillingBucketSize::Hour),
            last_n: Some(5),
            ..Default::default()
        };
        let pods = v2.pod_billing(&window, Some(&pod.id)).await.unwrap();
        assert!(!pods.records.is_empty());
        assert!(pods.records.iter().all(|r| r.pod_id == pod.id));
        assert!(pods.metadata.totals.total_amount > 0.0);
        assert_eq!(pods.metadata.query.pod_id.as_deref(), Some(pod.id.as_str()));
        let all = v2.billing(&window).await.unwrap();
        assert!(all.metadata.totals.total_amount >= pods.metadata.totals.total_amount);
        assert_eq!(
            all.metadata.query.bucket_size,
            Some(BillingBucketSize::Hour)
        );
        v2.serverless_billing(&window, None).await.unwrap();
        v2.network_volume_billing(&window, None).await.unwrap();
        env.shutdown().await;
    }

    #[tokio::test]
    async fn what_is_retried_and_what_is_not() {
        let env = start().await;
        let v2 = env.client.v2();

        // 422: the contract is broken; one call, never repeated.
        let mut bad = gpu_pod("bad");
        bad.container.disk = Some(0);
        let e = expect_class(v2.create_pod(&bad).await, ErrorClass::InvalidInput);
        assert!(!e.may_have_been_applied());
        assert_eq!(calls(&env, "POST /v2/pods").await, 1);

        // A create the platform carried out but answered 500: one call, flagged.
        env.admin()
            .fail_next_creates_on("POST /v2/pods", 1)
            .await
            .unwrap();
        let e = expect_class(
            v2.create_pod(&gpu_pod("landed")).await,
            ErrorClass::Transient,
        );
        assert!(e.may_have_been_applied(), "{e}");
        assert_eq!(
            calls(&env, "POST /v2/pods").await,
            2,
            "the create was not repeated"
        );
        let pods = v2.list_pods(&PodListQuery::default()).await.unwrap();
        assert_eq!(pods.iter().filter(|p| p.name == "landed").count(), 1);

        // A read failing with 5xx is retried, up to the configured number of times.
        env.admin()
            .set_error_rate("GET /v2/pods/{id}", 1.0, 503)
            .await
            .unwrap();
        let id = &pods.iter().find(|p| p.name == "landed").unwrap().id;
        let e = expect_class(v2.get_pod(id).await, ErrorClass::Transient);
        assert!(!e.may_have_been_applied());
        assert_eq!(
            calls(&env, "GET /v2/pods/{id}").await,
            1 + fast_retry().max_retries as u64
        );
        env.admin().clear_faults().await.unwrap();
        assert_eq!(v2.get_pod(id).await.unwrap().name, "landed");

        // A 429 burst is waited out.
        env.admin()
            .burst_429(Some("GET /v2/pods"), 1)
            .await
            .unwrap();
        v2.list_pods(&PodListQuery::default()).await.unwrap();
        assert_no_key_logged();
        env.shutdown().await;
    }

    #[tokio::test]
    async fn a_burst_over_the_emulator_quota_earns_no_429() {
        // A fast clock makes the emulator's minute one real second.
        let config = EmulatorConfig {
            time_scale: 60.0,
            v2_quota: EmuQuota {
                minute: 4,
                hour: 1_000,
                day: 10_000,
            },
            ..emulator_config()
        };
        let env = start_with(config, |_| {}).await;
        let client: PlatformClient = env.client.clone();
        let burst = (0..10).map(|_| {
            let v2 = client.v2();
            async move { v2.list_pods(&PodListQuery::default()).await }
        });
        let started = std::time::Instant::now();
        for r in futures::future::join_all(burst).await {
            r.expect("every call of the burst succeeds");
        }
        // The emulator counts every request, refused ones too: ten calls, ten requests,
        // so none was answered 429 (it would have been repeated).
        let counts = env.admin().calls().await.unwrap();
        assert_eq!(counts.get("GET /v2/pods").copied(), Some(10), "{counts:?}");
        // Ten calls at four per window span at least three windows.
        assert!(started.elapsed() >= Duration::from_millis(900));
        env.shutdown().await;
    }
}
