//! The REST v2 client's typed round trips of every resource, against the in-process
//! emulator over real HTTP (the quota, 429 and status checks against small servers are in
//! `client_v2.rs`).

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use gpucloud_emulator::EmulatorConfig;
use gpucloud_emulator::v2::limits::Quota as EmuQuota;
use gpucloud_platform::v2::{
    AvailabilityLevel, BillingBucketSize, BillingWindow, CpuQuery, CreateContainerConfig,
    CreateCpuConfig, CreateEndpoint, CreateEndpointGpuConfig, CreateGpuConfig, CreateNetworkVolume,
    CreatePod, CreateRegistry, CreateTemplate, DataCenterQuery, DataCenterRegion,
    EndpointGpuOptions, EndpointScaling, EndpointSettings, EndpointType, EndpointWorkers,
    FlashBoot, GpuQuery, LogQuery, Mounts, PersistentMount, PodAction, PodListQuery, PodStatus,
    Product, PublicTemplateSource, UpdateContainerConfig, UpdateEndpoint, UpdateNetworkVolume,
    UpdatePod, UpdateTemplate,
};
use gpucloud_platform::{ErrorClass, PlatformClient};

use common::*;

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
            options: EndpointGpuOptions {
                count: Some(1),
                ..Default::default()
            },
        }),
        cpu: None,
        workers: Some(EndpointWorkers {
            min: Some(2),
            max: Some(3),
            idle_timeout: Some(5),
        }),
        settings: EndpointSettings {
            timeout: Some(120_000),
            flashboot: Some(FlashBoot::Flashboot),
            ..Default::default()
        },
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
            &gpucloud_platform::JobRequest::new(serde_json::json!({"output": "hi"})),
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
