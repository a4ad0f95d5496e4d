//! The platform client against the emulator's faults over real HTTP: every error class
//! they produce, retries, the create that must not be repeated, the client-side rate
//! limit, time limits, and the API key kept out of every log line.

mod common;

use std::time::{Duration, Instant};

use futures::StreamExt;
use gpucloud_platform::{
    ApiKey, EndpointCreate, ErrorClass, JobRequest, NetworkVolumeCreate, Operation, PlatformClient,
    ResumePodInput, RetryConfig, TemplateCreate,
};
use serde_json::json;

use common::*;

const EP: &str = "ep-demo0001";

#[tokio::test]
async fn capacity_errors_are_recognised() {
    let env = start().await;
    let gql = env.client.graphql();
    let admin = env.admin();

    // Deploy with no stock: the platform's "no longer any instances available".
    admin
        .set_stock("NVIDIA H100 80GB HBM3", None, 0)
        .await
        .unwrap();
    let e = expect_class(
        gql.deploy_pod(&deploy_input("no-stock", "NVIDIA H100 80GB HBM3"))
            .await,
        ErrorClass::Capacity,
    );
    assert!(!e.may_have_been_applied());
    assert!(!e.is_retryable() || e.class() == ErrorClass::Capacity);

    // Resume on a host whose GPUs went to others: "not enough free GPUs on the host".
    admin.set_stock("NVIDIA L40S", None, 1).await.unwrap();
    let p = gql
        .deploy_pod(&deploy_input("host-bound", "NVIDIA L40S"))
        .await
        .unwrap();
    gql.stop_pod(&p.id).await.unwrap();
    let taker = gql.deploy_pod(&deploy_input("taker", "NVIDIA L40S")).await;
    if taker.is_ok() {
        let e = expect_class(
            gql.resume_pod(&ResumePodInput {
                pod_id: p.id.clone(),
                ..Default::default()
            })
            .await,
            ErrorClass::Capacity,
        );
        assert!(e.to_string().contains("not enough free GPUs"), "{e}");
    }
    assert_no_key_logged();
    env.shutdown().await;
}

// ------------------------------------------------------------------ auth error classes

#[tokio::test]
async fn unauthorized_and_forbidden_on_every_surface() {
    let env = start().await;
    let wrong = env.client.with_api_key(ApiKey::new(WRONG_KEY).unwrap());
    expect_class(
        wrong.jobs().run(EP, &JobRequest::new(json!({}))).await,
        ErrorClass::Unauthorized,
    );
    expect_class(wrong.jobs().health(EP).await, ErrorClass::Unauthorized);
    expect_class(
        wrong.rest().list_endpoints().await,
        ErrorClass::Unauthorized,
    );
    expect_class(
        wrong.registry().list_delegations().await,
        ErrorClass::Unauthorized,
    );
    expect_class(wrong.graphql().my_pods().await, ErrorClass::Unauthorized);

    let ro = env.client.with_api_key(ApiKey::new(READ_ONLY_KEY).unwrap());
    // Reads work with a read-only key, writes are forbidden.
    ro.rest().list_network_volumes().await.unwrap();
    ro.graphql().my_pods().await.unwrap();
    expect_class(
        ro.rest()
            .create_network_volume(&NetworkVolumeCreate {
                name: "x".into(),
                size: 1,
                data_center_id: "EU-RO-1".into(),
            })
            .await,
        ErrorClass::Forbidden,
    );
    expect_class(
        ro.graphql()
            .deploy_pod(&deploy_input("ro", "NVIDIA A40"))
            .await,
        ErrorClass::Forbidden,
    );
    expect_class(
        ro.jobs().run(EP, &JobRequest::new(json!({}))).await,
        ErrorClass::Forbidden,
    );
    assert_no_key_logged();
    env.shutdown().await;
}

// ------------------------------------------------------------------- injected faults

#[tokio::test]
async fn reads_are_retried_through_three_503s() {
    let env = start().await;
    let admin = env.admin();
    let route = "GET /v1/networkvolumes";
    admin.clear_calls().await.unwrap();
    admin.set_error_rate(route, 1.0, 503).await.unwrap();
    // The emulator injects "every call fails"; lift the fault once three calls have failed,
    // while the client is backing off before its fourth attempt.
    let watcher = {
        let admin = env.admin();
        tokio::spawn(async move {
            loop {
                if admin.call_count(route).await.unwrap() >= 3 {
                    admin.clear_faults().await.unwrap();
                    return;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
    };
    let mut cfg = client_config(&env.emu, FULL_KEY);
    // Backoff long enough for the watcher to act between the third and fourth attempts.
    cfg.retry = RetryConfig {
        min_delay: Duration::from_millis(100),
        ..fast_retry()
    };
    let client = PlatformClient::new(cfg).unwrap();
    let vols = client
        .rest()
        .list_network_volumes()
        .await
        .expect("succeeds after retries");
    assert!(!vols.is_empty());
    watcher.await.unwrap();
    assert_eq!(admin.call_count(route).await.unwrap(), 4);
    assert_eq!(
        client
            .metrics()
            .calls(Operation::RestListNetworkVolumes, "503"),
        3
    );
    assert_eq!(
        client
            .metrics()
            .calls(Operation::RestListNetworkVolumes, "200"),
        1
    );
    assert_eq!(
        client.metrics().retries(Operation::RestListNetworkVolumes),
        3
    );
    assert_no_key_logged();
    env.shutdown().await;
}

#[tokio::test]
async fn persistent_5xx_is_transient_after_bounded_retries() {
    let env = start().await;
    let admin = env.admin();
    admin.clear_calls().await.unwrap();
    admin
        .set_error_rate("GET /v2/{endpoint_id}/health", 1.0, 500)
        .await
        .unwrap();
    let e = expect_class(env.client.jobs().health(EP).await, ErrorClass::Transient);
    assert!(!e.may_have_been_applied(), "a read changes nothing");
    assert_eq!(
        admin
            .call_count("GET /v2/{endpoint_id}/health")
            .await
            .unwrap(),
        6
    );
    // GraphQL faults come back the same way.
    admin
        .set_error_rate("graphql:myself", 1.0, 502)
        .await
        .unwrap();
    expect_class(env.client.graphql().my_pods().await, ErrorClass::Transient);
    assert_no_key_logged();
    env.shutdown().await;
}

#[tokio::test]
async fn creates_answered_500_are_not_retried() {
    let env = start().await;
    let admin = env.admin();
    admin.clear_calls().await.unwrap();

    // REST endpoint create
    admin
        .fail_next_creates_on("POST /v1/endpoints", 1)
        .await
        .unwrap();
    let input = EndpointCreate {
        name: "crash-safe".into(),
        template_id: "tmpl-worker-base".into(),
        gpu_type_ids: vec!["NVIDIA A40".into()],
        workers_min: 0,
        workers_max: 1,
        idle_timeout: 5,
        ..Default::default()
    };
    let e = expect_class(
        env.client.rest().create_endpoint(&input).await,
        ErrorClass::Transient,
    );
    assert!(
        e.may_have_been_applied(),
        "a 500 on a create may hide a success"
    );
    assert_eq!(
        admin.call_count("POST /v1/endpoints").await.unwrap(),
        1,
        "never retried"
    );
    // The object exists: the caller finds it by name instead of creating it again.
    let found = env.client.rest().list_endpoints().await.unwrap();
    assert_eq!(found.iter().filter(|e| e.name == "crash-safe").count(), 1);

    // GraphQL deploy
    admin
        .fail_next_creates_on("graphql:podFindAndDeployOnDemand", 1)
        .await
        .unwrap();
    let e = expect_class(
        env.client
            .graphql()
            .deploy_pod(&deploy_input("crash-pod", "NVIDIA GeForce RTX 4090"))
            .await,
        ErrorClass::Transient,
    );
    assert!(e.may_have_been_applied());
    assert_eq!(
        admin
            .call_count("graphql:podFindAndDeployOnDemand")
            .await
            .unwrap(),
        1
    );
    let pods = env.client.graphql().my_pods().await.unwrap();
    assert_eq!(pods.iter().filter(|p| p.name == "crash-pod").count(), 1);

    // Volume create
    admin
        .fail_next_creates_on("POST /v1/networkvolumes", 1)
        .await
        .unwrap();
    let e = expect_class(
        env.client
            .rest()
            .create_network_volume(&NetworkVolumeCreate {
                name: "crash-vol".into(),
                size: 5,
                data_center_id: "EU-RO-1".into(),
            })
            .await,
        ErrorClass::Transient,
    );
    assert!(e.may_have_been_applied());
    assert_eq!(
        admin.call_count("POST /v1/networkvolumes").await.unwrap(),
        1
    );

    // A definite rejection is not "may have been applied".
    let mut bad = input.clone();
    bad.template_id = "no-such-template".into();
    let e = expect_class(
        env.client.rest().create_endpoint(&bad).await,
        ErrorClass::InvalidInput,
    );
    assert!(!e.may_have_been_applied());
    assert_no_key_logged();
    env.shutdown().await;
}

#[tokio::test]
async fn rate_limited_with_retry_after_and_retried_when_safe() {
    let env = start().await;
    let admin = env.admin();

    // Without retries the caller sees the class and the platform's Retry-After.
    let mut cfg = client_config(&env.emu, FULL_KEY);
    cfg.retry = RetryConfig::none();
    let no_retry = PlatformClient::new(cfg).unwrap();
    admin.burst_429(Some("GET /v1/endpoints"), 1).await.unwrap();
    let e = expect_class(
        no_retry.rest().list_endpoints().await,
        ErrorClass::RateLimited,
    );
    assert!(e.retry_after().is_some(), "{e:?}");

    // With retries, a 429 burst is waited out, honouring Retry-After.
    admin.burst_429(Some("GET /v1/endpoints"), 2).await.unwrap();
    let started = Instant::now();
    env.client.rest().list_endpoints().await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(1900),
        "{:?}",
        started.elapsed()
    );

    // A 429 on a create is retried too: the platform refused it before doing anything.
    admin.clear_calls().await.unwrap();
    admin
        .burst_429(Some("POST /v2/{endpoint_id}/run"), 1)
        .await
        .unwrap();
    env.client
        .jobs()
        .run(EP, &JobRequest::new(json!({})))
        .await
        .unwrap();
    assert_eq!(
        admin
            .call_count("POST /v2/{endpoint_id}/run")
            .await
            .unwrap(),
        2
    );
    assert_no_key_logged();
    env.shutdown().await;
}

// ------------------------------------------------------------------------ rate limit

#[tokio::test]
async fn burst_of_2000_runs_gets_no_429() {
    let env = start().await;
    let admin = env.admin();
    admin.clear_calls().await.unwrap();
    // No retries: a single 429 would surface as an error.
    let mut cfg = client_config(&env.emu, FULL_KEY);
    cfg.retry = RetryConfig::none();
    let client = PlatformClient::new(cfg).unwrap();
    let started = Instant::now();
    let results: Vec<_> = futures::stream::iter(0..2000)
        .map(|i| {
            let jobs = client.jobs();
            async move {
                jobs.run(EP, &JobRequest::new(json!({"i": i, "sleep_ms": 0})))
                    .await
            }
        })
        .buffer_unordered(2000)
        .collect()
        .await;
    let elapsed = started.elapsed();
    let errors: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    assert!(
        errors.is_empty(),
        "{} errors, first: {:?}",
        errors.len(),
        errors.first()
    );
    assert_eq!(client.metrics().calls(Operation::JobRun, "429"), 0);
    assert_eq!(client.metrics().calls(Operation::JobRun, "200"), 2000);
    assert_eq!(
        admin
            .call_count("POST /v2/{endpoint_id}/run")
            .await
            .unwrap(),
        2000
    );
    tracing::info!(
        elapsed_ms = elapsed.as_millis() as u64,
        "2000 /run calls through the client"
    );
    eprintln!("2000 /run calls through the client in {elapsed:?}");
    assert_no_key_logged();
    env.shutdown().await;
}

#[tokio::test]
async fn injected_latency_beyond_the_timeout() {
    let env = start_with(emulator_config(), |cfg| {
        cfg.timeouts.request = Duration::from_millis(150);
        cfg.retry.max_retries = 2;
    })
    .await;
    let admin = env.admin();
    admin.clear_calls().await.unwrap();
    admin.add_latency("GET /v1/templates", 400).await.unwrap();
    admin.add_latency("POST /v1/templates", 400).await.unwrap();
    let e = expect_class(
        env.client.rest().list_templates().await,
        ErrorClass::Transient,
    );
    assert!(e.to_string().contains("timeout"), "{e}");
    assert_eq!(
        admin.call_count("GET /v1/templates").await.unwrap(),
        3,
        "reads retried"
    );
    let e = expect_class(
        env.client
            .rest()
            .create_template(&TemplateCreate {
                name: "slow".into(),
                image_name: "busybox:1".into(),
                ..Default::default()
            })
            .await,
        ErrorClass::Transient,
    );
    assert!(
        e.may_have_been_applied(),
        "a create that timed out may have happened"
    );
    assert_eq!(
        admin.call_count("POST /v1/templates").await.unwrap(),
        1,
        "never retried"
    );
    assert_eq!(
        env.client
            .metrics()
            .calls(Operation::RestCreateTemplate, "timeout"),
        1
    );
    assert_no_key_logged();
    env.shutdown().await;
}
