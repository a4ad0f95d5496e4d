//! The platform client against the emulator over real HTTP: every operation of every
//! surface, and bad input refused before any request (the faults: `client_faults.rs`).

mod common;

use std::time::{Duration, Instant};

use futures::StreamExt;
use gpucloud_platform::{
    ApiKey, EndpointCreate, EndpointUpdate, ErrorClass, JobPolicy, JobRequest, JobStatus,
    LowestPriceInput, NetworkVolumeCreate, NetworkVolumeUpdate, PlatformError, PollOptions,
    ResumePodInput, TemplateCreate,
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
