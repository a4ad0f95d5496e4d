//! The platform client against the emulator over real HTTP: every operation, every error
//! class the emulator's faults produce, retries, the create that must not be repeated, the
//! client-side rate limit, and the API key kept out of every log line.

#[path = "common/client.rs"]
mod common;

use std::time::{Duration, Instant};

use futures::StreamExt;
use gpucloud_operator::platform::{
    ApiKey, CloudType, DeployPodInput, EndpointCreate, EndpointUpdate, EnvVar, ErrorClass,
    JobPolicy, JobRequest, JobStatus, LowestPriceInput, NetworkVolumeCreate, NetworkVolumeUpdate,
    Operation, PlatformClient, PlatformError, PollOptions, ResumePodInput, RetryConfig,
    TemplateCreate,
};
use serde_json::json;

use common::*;

const EP: &str = "ep-demo0001";

fn poll() -> PollOptions {
    PollOptions {
        interval: Duration::from_millis(20),
        max_interval: Duration::from_millis(200),
        timeout: Some(Duration::from_secs(20)),
    }
}

fn expect_class<T: std::fmt::Debug>(
    r: Result<T, PlatformError>,
    class: ErrorClass,
) -> PlatformError {
    match r {
        Ok(v) => panic!("expected {class:?}, got Ok({v:?})"),
        Err(e) => {
            log_error(&e);
            assert_eq!(e.class(), class, "{e}");
            e
        }
    }
}

fn deploy_input(name: &str, gpu: &str) -> DeployPodInput {
    DeployPodInput {
        cloud_type: Some(CloudType::All),
        gpu_count: Some(1),
        volume_in_gb: Some(20),
        container_disk_in_gb: Some(10),
        gpu_type_id: Some(gpu.into()),
        name: Some(name.into()),
        image_name: Some("runpod/pytorch:2.4.0".into()),
        ports: Some("8888/http,22/tcp".into()),
        volume_mount_path: Some("/workspace".into()),
        env: Some(vec![EnvVar {
            key: "MODE".into(),
            value: "test".into(),
        }]),
        ..Default::default()
    }
}

// ----------------------------------------------------------------------------- job API

#[tokio::test]
async fn job_api_every_operation() {
    let env = start().await;
    let jobs = env.client.jobs();

    // run + wait_for_completion
    let h = jobs
        .run(EP, &JobRequest::new(json!({"output": {"answer": 42}})))
        .await
        .unwrap();
    assert_eq!(h.status, JobStatus::InQueue);
    let done = jobs.wait_for_completion(EP, &h.id, poll()).await.unwrap();
    assert_eq!(done.status, JobStatus::Completed);
    assert_eq!(done.output, Some(json!({"answer": 42})));
    assert!(done.execution_time.is_some());

    // status with ttl
    let s = jobs
        .status(EP, &h.id, Some(Duration::from_secs(60)))
        .await
        .unwrap();
    assert_eq!(s.status, JobStatus::Completed);

    // runsync with wait
    let mut req = JobRequest::new(json!({"prompt": "hi"}));
    req.policy = Some(JobPolicy {
        execution_timeout: Some(60_000),
        low_priority: None,
        ttl: Some(120_000),
    });
    let r = jobs
        .runsync(EP, &req, Some(Duration::from_secs(10)))
        .await
        .unwrap();
    assert_eq!(r.status, JobStatus::Completed);
    assert_eq!(r.output, Some(json!({"prompt": "hi"})));

    // stream: chunks in order, then the end
    let h = jobs
        .run(
            EP,
            &JobRequest::new(json!({"stream": ["a", "b", "c"], "output": "done"})),
        )
        .await
        .unwrap();
    let chunks: Vec<_> = jobs.stream(EP, &h.id, poll()).collect().await;
    let outputs: Vec<_> = chunks.into_iter().map(|c| c.unwrap().output).collect();
    assert_eq!(outputs, vec![json!("a"), json!("b"), json!("c")]);

    // cancel a long job
    let h = jobs
        .run(EP, &JobRequest::new(json!({"sleep_ms": 600_000})))
        .await
        .unwrap();
    let c = jobs.cancel(EP, &h.id).await.unwrap();
    assert_eq!(c.status, JobStatus::Cancelled);

    // retry a failed job
    let h = jobs
        .run(EP, &JobRequest::new(json!({"fail": "boom"})))
        .await
        .unwrap();
    let failed = jobs.wait_for_completion(EP, &h.id, poll()).await.unwrap();
    assert_eq!(failed.status, JobStatus::Failed);
    let again = jobs.retry(EP, &h.id).await.unwrap();
    assert_eq!(again.id, h.id);
    assert_eq!(again.status, JobStatus::InQueue);

    // health and purge-queue
    let health = jobs.health(EP).await.unwrap();
    assert!(health.jobs.completed >= 2, "{health:?}");
    let purged = jobs.purge_queue(EP).await.unwrap();
    assert!(purged.removed >= 0);
    assert_eq!(purged.status.to_lowercase(), purged.status);

    // unknown job: not found
    expect_class(
        jobs.status(EP, "no-such-job", None).await,
        ErrorClass::NotFound,
    );
    expect_class(jobs.health("ep-unknown").await, ErrorClass::NotFound);

    assert_no_key_logged();
    env.shutdown().await;
}

#[tokio::test]
async fn bad_input_is_refused_before_any_request() {
    let env = start().await;
    let admin = env.admin();
    admin.clear_calls().await.unwrap();
    let jobs = env.client.jobs();
    let e = expect_class(
        jobs.run(EP, &JobRequest::new(json!([1, 2]))).await,
        ErrorClass::InvalidInput,
    );
    assert!(matches!(&e, PlatformError::InvalidInput { field, .. } if field == "input"));
    let e = expect_class(
        jobs.run("bad/id", &JobRequest::new(json!({}))).await,
        ErrorClass::InvalidInput,
    );
    assert!(matches!(&e, PlatformError::InvalidInput { field, .. } if field == "endpointId"));
    let e = expect_class(
        jobs.runsync(
            EP,
            &JobRequest::new(json!({})),
            Some(Duration::from_millis(10)),
        )
        .await,
        ErrorClass::InvalidInput,
    );
    assert!(matches!(&e, PlatformError::InvalidInput { field, .. } if field == "wait"));
    let big = JobRequest::new(json!({"blob": "x".repeat(11 * 1024 * 1024)}));
    expect_class(jobs.run(EP, &big).await, ErrorClass::InvalidInput);
    let e = expect_class(
        env.client
            .rest()
            .update_network_volume(
                "nv-demo0001",
                &NetworkVolumeUpdate {
                    name: None,
                    size: Some(5000),
                },
            )
            .await,
        ErrorClass::InvalidInput,
    );
    assert!(matches!(&e, PlatformError::InvalidInput { field, .. } if field == "size"));
    let mut bad = deploy_input("p", "NVIDIA A40");
    bad.gpu_count = Some(0);
    expect_class(
        env.client.graphql().deploy_pod(&bad).await,
        ErrorClass::InvalidInput,
    );
    let calls = admin.calls().await.unwrap();
    let api_calls: u64 = calls
        .iter()
        .filter(|(k, _)| !k.contains("_emulator"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(
        api_calls, 0,
        "no request may leave for bad input: {calls:?}"
    );
    assert_no_key_logged();
    env.shutdown().await;
}

// ------------------------------------------------------------------------------- REST

#[tokio::test]
async fn rest_endpoints_volumes_templates() {
    let env = start().await;
    let rest = env.client.rest();

    // endpoints
    assert!(
        rest.list_endpoints()
            .await
            .unwrap()
            .iter()
            .any(|e| e.id == EP)
    );
    let created = rest
        .create_endpoint(&EndpointCreate {
            name: "client-test".into(),
            template_id: "tmpl-worker-base".into(),
            gpu_type_ids: vec!["NVIDIA A40".into(), "NVIDIA GeForce RTX 4090".into()],
            workers_min: 0,
            workers_max: 2,
            idle_timeout: 30,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(created.name, "client-test");
    assert_eq!(created.gpu_type_ids[0], "NVIDIA A40");
    let got = rest.get_endpoint(&created.id).await.unwrap();
    assert_eq!(got.workers_max, Some(2));
    let updated = rest
        .update_endpoint(
            &created.id,
            &EndpointUpdate {
                workers_max: Some(4),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(updated.workers_max, Some(4));
    rest.delete_endpoint(&created.id).await.unwrap();
    expect_class(rest.get_endpoint(&created.id).await, ErrorClass::NotFound);
    // A platform-side validation failure names the field.
    let e = expect_class(
        rest.update_endpoint(
            EP,
            &EndpointUpdate {
                template_id: Some("nope".into()),
                ..Default::default()
            },
        )
        .await,
        ErrorClass::InvalidInput,
    );
    assert!(
        matches!(&e, PlatformError::InvalidInput { field, .. } if field == "templateId"),
        "{e:?}"
    );

    // network volumes
    assert!(
        rest.list_network_volumes()
            .await
            .unwrap()
            .iter()
            .any(|v| v.id == "nv-demo0001")
    );
    let v = rest
        .create_network_volume(&NetworkVolumeCreate {
            name: "scratch".into(),
            size: 10,
            data_center_id: "EU-RO-1".into(),
        })
        .await
        .unwrap();
    assert_eq!(v.size, 10);
    let grown = rest
        .update_network_volume(
            &v.id,
            &NetworkVolumeUpdate {
                name: Some("scratch2".into()),
                size: Some(20),
            },
        )
        .await
        .unwrap();
    assert_eq!((grown.name.as_str(), grown.size), ("scratch2", 20));
    let grown = rest
        .update_network_volume_via_post(
            &v.id,
            &NetworkVolumeUpdate {
                name: None,
                size: Some(30),
            },
        )
        .await
        .unwrap();
    assert_eq!(grown.size, 30);
    assert_eq!(rest.get_network_volume(&v.id).await.unwrap().size, 30);
    let e = expect_class(
        rest.update_network_volume(
            &v.id,
            &NetworkVolumeUpdate {
                name: None,
                size: Some(25),
            },
        )
        .await,
        ErrorClass::InvalidInput,
    );
    assert!(
        matches!(&e, PlatformError::InvalidInput { field, .. } if field == "size"),
        "{e:?}"
    );
    rest.delete_network_volume(&v.id).await.unwrap();
    expect_class(rest.get_network_volume(&v.id).await, ErrorClass::NotFound);

    // templates
    assert!(
        rest.list_templates()
            .await
            .unwrap()
            .iter()
            .any(|t| t.id == "tmpl-pytorch")
    );
    let t = rest
        .create_template(&TemplateCreate {
            name: "client-tpl".into(),
            image_name: "busybox:1".into(),
            is_serverless: Some(true),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(rest.get_template(&t.id).await.unwrap().name, "client-tpl");
    rest.delete_template(&t.id).await.unwrap();
    expect_class(rest.get_template(&t.id).await, ErrorClass::NotFound);

    assert_no_key_logged();
    env.shutdown().await;
}

// --------------------------------------------------------------------------- registry

#[tokio::test]
async fn registry_delegations_and_forbidden() {
    let env = start().await;
    let ds = env.client.registry().list_delegations().await.unwrap();
    assert_eq!(ds[0].id, "dlg-0001");
    assert!(ds[0].created_at_parsed().is_some());
    let other = env
        .client
        .with_api_key(ApiKey::new(NO_REGISTRY_KEY).unwrap());
    expect_class(
        other.registry().list_delegations().await,
        ErrorClass::Forbidden,
    );
    assert_no_key_logged();
    env.shutdown().await;
}

// ---------------------------------------------------------------------------- GraphQL

#[tokio::test]
async fn graphql_pod_lifecycle_and_gpu_types() {
    let env = start().await;
    let gql = env.client.graphql();

    let types = gql
        .gpu_types(
            None,
            &LowestPriceInput {
                gpu_count: Some(1),
                secure_cloud: None,
            },
        )
        .await
        .unwrap();
    let a40 = types
        .iter()
        .find(|t| t.id == "NVIDIA A40")
        .expect("A40 listed");
    assert_eq!(a40.memory_in_gb, 48);
    let lp = a40.lowest_price.as_ref().expect("lowestPrice");
    assert!(lp.uninterruptable_price.is_some());
    assert!(lp.stock_status.is_some());
    let one = gql
        .gpu_types(Some("NVIDIA A40"), &LowestPriceInput::default())
        .await
        .unwrap();
    assert_eq!(one.len(), 1);

    let deployed = gql
        .deploy_pod(&deploy_input("client-pod", "NVIDIA A40"))
        .await
        .unwrap();
    assert!(!deployed.id.is_empty());
    assert!(deployed.env.iter().any(|e| e == "MODE=test"));
    assert!(!deployed.machine.as_ref().unwrap().pod_host_id.is_empty());

    let pod = gql.pod(&deployed.id).await.unwrap();
    assert_eq!(pod.name, "client-pod");
    assert_eq!(pod.desired_status, "RUNNING");
    assert_eq!(pod.env_value("MODE"), Some("test"));
    // The runtime appears once the pod has booted.
    let started = Instant::now();
    loop {
        let pods = gql.my_pods().await.unwrap();
        let p = pods
            .iter()
            .find(|p| p.id == deployed.id)
            .expect("listed by myself.pods");
        if let Some(rt) = &p.runtime {
            assert!(!rt.ports.is_empty());
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "runtime never appeared"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let stopped = gql.stop_pod(&deployed.id).await.unwrap();
    assert_eq!(stopped.desired_status, "EXITED");
    let resumed = gql
        .resume_pod(&ResumePodInput {
            pod_id: deployed.id.clone(),
            gpu_count: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(resumed.desired_status, "RUNNING");
    assert!(gql.terminate_pod(&deployed.id).await.unwrap());
    expect_class(gql.pod(&deployed.id).await, ErrorClass::NotFound);
    expect_class(gql.stop_pod(&deployed.id).await, ErrorClass::NotFound);

    assert_no_key_logged();
    env.shutdown().await;
}

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
