//! Decoding and encoding of every v2 type against small samples shaped like the
//! document's examples, unknown fields and values included.

use serde_json::{Value, json};

use super::listing;
use super::*;

fn decode<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("decodes")
}

fn encode<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("encodes")
}

fn pod_sample() -> Value {
    json!({
        "id": "pod_abc123",
        "name": "trainer",
        "status": "RUNNING",
        "actions": ["stop", "restart", "terminate"],
        "image": "runpod/pytorch:2.4.0",
        "args": "",
        "disk": 50,
        "mounts": {
            "persistent": {"size": 20, "path": "/workspace"},
            "network": [{"volumeId": "vol_1", "path": "/data"}]
        },
        "ports": ["8888/http", "22/tcp"],
        "env": {"MODE": "train"},
        "registry": null,
        "gpu": {"id": "NVIDIA GeForce RTX 4090", "count": 2},
        "cloud": "SECURE",
        "dataCenterId": "EU-RO-1",
        "cudaVersion": "12.8",
        "ssh": {
            "proxy": {"host": "ssh.example", "port": 22, "username": "pod_abc123-64", "command": "ssh pod_abc123-64@ssh.example"},
            "direct": null
        },
        "template": null,
        "cost": 0.88,
        "locked": false,
        "runtime": {
            "uptime": 120,
            "gpus": [{"util": 40, "memoryUtil": 10}],
            "cpu": {"util": 5},
            "memory": {"util": 12},
            "ports": [{"private": 8888, "public": 443, "type": "http", "ip": null}]
        },
        "createdAt": "2026-03-13T20:00:00Z",
        "startedAt": "2026-03-13T20:01:00Z",
        "globalNetworking": {"enabled": false},
        "aFieldFromTheFuture": {"x": 1}
    })
}

#[test]
fn pods_decode_with_unknown_fields_and_values() {
    let pod: Pod = decode(pod_sample());
    assert_eq!(pod.status, PodStatus::Running);
    assert_eq!(
        pod.actions,
        [PodAction::Stop, PodAction::Restart, PodAction::Terminate]
    );
    assert_eq!(pod.gpu.as_ref().unwrap().count, Some(2));
    assert_eq!(pod.mounts.network.as_ref().unwrap()[0].volume_id, "vol_1");
    assert_eq!(pod.mounts.persistent.as_ref().unwrap().size, 20);
    assert_eq!(pod.container.env["MODE"], "train");
    assert_eq!(pod.cloud, Some(Cloud::Secure));
    let rt = pod.runtime.as_ref().unwrap();
    assert_eq!((rt.uptime, rt.gpus[0].memory_util), (120, 10));
    assert_eq!(rt.ports[0].public, Some(443));
    assert!(pod.ssh.as_ref().unwrap().direct.is_none());
    assert_eq!(pod.container.registry, None);

    let mut odd = pod_sample();
    odd["status"] = json!("HIBERNATING");
    odd["actions"] = json!(["fly"]);
    odd["runtime"] = Value::Null;
    odd.as_object_mut().unwrap().remove("gpu");
    odd["cpu"] = json!({"id": "cpu5c", "vcpuCount": 4, "memory": 16});
    let pod: Pod = decode(odd);
    assert_eq!(pod.status, PodStatus::Other("HIBERNATING".into()));
    assert_eq!(pod.actions, [PodAction::Other("fly".into())]);
    assert_eq!(pod.cpu.unwrap().memory, Some(16));
    assert!(pod.runtime.is_none());
    // An unknown value goes back out as it came.
    assert_eq!(encode(&PodStatus::Other("X".into())), json!("X"));

    let list: listing::Pods = decode(json!({"pods": [pod_sample()], "next": null}));
    assert_eq!(list.pods.len(), 1);
}

#[test]
fn pod_requests_send_only_what_is_set() {
    let create = CreatePod {
        name: "p".into(),
        container: CreateContainerConfig {
            image: Some("img".into()),
            ..Default::default()
        },
        gpu: Some(CreateGpuConfig {
            id: "NVIDIA A40".into(),
            count: Some(1),
            cuda: CudaVersions {
                allowed_cuda_versions: Some(vec!["12.8".into()]),
                ..Default::default()
            },
        }),
        mounts: Some(Mounts {
            network: Some(vec![NetworkMount {
                volume_id: "vol_1".into(),
                path: "/data".into(),
            }]),
            ..Default::default()
        }),
        cloud: Some(Cloud::Community),
        ..Default::default()
    };
    assert_eq!(
        encode(&create),
        json!({
            "name": "p",
            "image": "img",
            "cloud": "COMMUNITY",
            "gpu": {"id": "NVIDIA A40", "count": 1, "allowedCudaVersions": ["12.8"]},
            "mounts": {"network": [{"volumeId": "vol_1", "path": "/data"}]}
        })
    );
    let cpu = CreatePod {
        name: "c".into(),
        cpu: Some(CreateCpuConfig {
            id: "cpu5c".into(),
            vcpu_count: 2,
        }),
        template_id: Some("tpl_1".into()),
        ..Default::default()
    };
    assert_eq!(
        encode(&cpu),
        json!({"name": "c", "cpu": {"id": "cpu5c", "vcpuCount": 2}, "templateId": "tpl_1"})
    );

    assert_eq!(encode(&UpdatePod::default()), json!({}));
    let clear = UpdatePod {
        container: UpdateContainerConfig {
            registry: Some(None),
            ports: Some(vec![]),
            ..Default::default()
        },
        locked: Some(true),
        ..Default::default()
    };
    assert_eq!(
        encode(&clear),
        json!({"registry": null, "ports": [], "locked": true})
    );
    // Absent and null stay apart when read back (the CLI reads bodies from files).
    let back: UpdatePod = decode(json!({"registry": null}));
    assert_eq!(back.container.registry, Some(None));
    let back: UpdatePod = decode(json!({"name": "n"}));
    assert_eq!(back.container.registry, None);

    assert_eq!(
        encode(&PodActionRequest {
            action: PodAction::Terminate
        }),
        json!({"action": "terminate"})
    );
}

#[test]
fn log_lines_decode() {
    let l: LogLine =
        decode(json!({"source": "container", "line": "hi", "ts": "2026-01-01T00:00:00Z"}));
    assert_eq!(l.source, LogSource::Container);
    assert_eq!(l.id, None);
}

fn endpoint_sample() -> Value {
    json!({
        "id": "ep_abc123",
        "name": "my-inference",
        "type": "QUEUE",
        "requestUrls": {
            "run": "https://api.example/v2/ep_abc123/run",
            "runSync": "https://api.example/v2/ep_abc123/runsync",
            "status": "https://api.example/v2/ep_abc123/status",
            "stream": "https://api.example/v2/ep_abc123/stream",
            "cancel": "https://api.example/v2/ep_abc123/cancel",
            "retry": "https://api.example/v2/ep_abc123/retry",
            "purgeQueue": "https://api.example/v2/ep_abc123/purge-queue",
            "health": "https://api.example/v2/ep_abc123/health"
        },
        "gpu": {"pools": ["ADA_24"], "excludedTypes": [], "count": 1, "allowedCudaVersions": [], "minCudaVersion": null},
        "workers": {"min": 0, "max": 3, "idleTimeout": 5},
        "scaling": {"type": "QUEUE_DELAY", "queueDelay": 4.0},
        "dataCenterIds": ["US-TX-3"],
        "networkVolumes": ["vol_abc"],
        "timeout": 300000,
        "flashboot": "FLASHBOOT",
        "createdAt": "2026-03-13T20:00:00Z",
        "image": "me/worker:1",
        "env": {},
        "ports": [],
        "registry": null
    })
}

#[test]
fn endpoints_decode_and_encode() {
    let ep: Endpoint = decode(endpoint_sample());
    assert_eq!(ep.endpoint_type, Some(EndpointType::Queue));
    assert_eq!(
        ep.scaling,
        Some(EndpointScaling::QueueDelay { queue_delay: 4.0 })
    );
    assert_eq!(ep.workers.max, Some(3));
    assert_eq!(ep.gpu.as_ref().unwrap().pools, ["ADA_24"]);
    assert!(ep.request_urls.as_ref().unwrap().run_sync.is_some());
    assert_eq!(ep.flashboot, Some(FlashBoot::Flashboot));

    let mut lb = endpoint_sample();
    lb["type"] = json!("LOAD_BALANCER");
    lb["requestUrls"] = json!({"base": "https://x.example", "health": "https://x.example/ping"});
    lb["scaling"] = json!({"type": "REQUEST_COUNT", "requestCount": 10});
    lb["gpu"] = Value::Null;
    lb["cpu"] = json!([{"id": "cpu5c", "vcpuCount": 4, "memory": 8}]);
    let ep: Endpoint = decode(lb);
    assert_eq!(ep.endpoint_type, Some(EndpointType::LoadBalancer));
    assert_eq!(
        ep.scaling,
        Some(EndpointScaling::RequestCount { request_count: 10 })
    );
    assert_eq!(
        ep.request_urls.unwrap().base.as_deref(),
        Some("https://x.example")
    );
    assert!(ep.gpu.is_none());
    let mut future = endpoint_sample();
    future["scaling"] = json!({"type": "GPU_UTILISATION", "target": 80});
    let ep: Endpoint = decode(future);
    assert_eq!(ep.scaling, Some(EndpointScaling::Unknown));

    let create = CreateEndpoint {
        name: "e".into(),
        endpoint_type: EndpointType::Queue,
        scaling: EndpointScaling::RequestCount { request_count: 2 },
        gpu: Some(CreateEndpointGpuConfig {
            pools: vec!["ADA_24".into()],
            ..Default::default()
        }),
        cpu: None,
        workers: Some(EndpointWorkers {
            min: Some(0),
            max: Some(2),
            idle_timeout: None,
        }),
        settings: EndpointSettings::default(),
        container: CreateContainerConfig {
            image: Some("me/worker:1".into()),
            args: None,
            disk: None,
            env: None,
            ports: None,
            registry: None,
        },
    };
    assert_eq!(
        encode(&create),
        json!({
            "name": "e",
            "type": "QUEUE",
            "scaling": {"type": "REQUEST_COUNT", "requestCount": 2},
            "gpu": {"pools": ["ADA_24"]},
            "workers": {"min": 0, "max": 2},
            "image": "me/worker:1"
        })
    );
    let update = UpdateEndpoint {
        workers: Some(EndpointWorkers {
            max: Some(5),
            ..Default::default()
        }),
        gpu: Some(UpdateEndpointGpuConfig {
            pools: None,
            options: EndpointGpuOptions {
                cuda: CudaVersions {
                    min_cuda_version: Some(String::new()),
                    ..Default::default()
                },
                ..Default::default()
            },
        }),
        container: UpdateContainerConfig {
            registry: Some(None),
            ..Default::default()
        },
        ..Default::default()
    };
    assert_eq!(
        encode(&update),
        json!({"workers": {"max": 5}, "gpu": {"minCudaVersion": ""}, "registry": null})
    );
}

#[test]
fn workers_and_releases_decode() {
    let w: WorkerList = decode(json!({
        "workers": [
            {"id": "w1", "status": "RUNNING", "isStale": false, "version": 3, "gpuCount": 1,
             "image": "me/worker:1", "uptimeSeconds": 60, "gpuTypeId": "NVIDIA A40",
             "dataCenterId": "EU-RO-1", "startedAt": "2026-03-13T20:00:00Z"},
            {"id": "w2", "status": "MIGRATING", "isStale": true, "version": null, "gpuCount": 0,
             "image": null, "uptimeSeconds": null, "gpuTypeId": null, "dataCenterId": null, "startedAt": null}
        ],
        "summary": {"running": 1, "idle": 0, "initializing": 0, "throttled": 0, "unhealthy": 0, "total": 2},
        "endpointVersion": 3
    }));
    assert_eq!(w.workers[0].status, WorkerStatus::Running);
    assert_eq!(w.workers[1].status, WorkerStatus::Other("MIGRATING".into()));
    assert!(w.workers[1].is_stale);
    assert_eq!(w.summary.total, 2);
    assert_eq!(w.endpoint_version, Some(3));

    let r: ReleaseList = decode(json!({
        "endpointVersion": 4,
        "rollout": {"inProgress": true, "workersOnLatest": 1, "workersTotal": 2, "percentOnLatest": 50},
        "releases": [{
            "id": "rel_1", "version": 4, "source": "MANUAL", "buildId": null,
            "createdByUserId": "user_1", "workerCount": 1, "createdAt": "2026-03-13T20:00:00Z",
            "diff": [{"field": "template.imageName", "old": "a:1", "new": "a:2"},
                     {"field": "locations", "old": null, "new": ["EU"]}]
        }]
    }));
    assert!(r.rollout.in_progress);
    assert_eq!(r.releases[0].source, ReleaseSource::Manual);
    assert_eq!(r.releases[0].diff[1].old, Value::Null);
    assert_eq!(r.releases[0].diff[1].new, json!(["EU"]));
}

#[test]
fn templates_decode_and_encode() {
    let t: Template = decode(json!({
        "id": "tpl_abc", "name": "My PyTorch Template", "image": "runpod/pytorch:2.4.0",
        "args": "", "disk": 20, "mounts": {"persistent": {"size": 20, "path": "/workspace"}},
        "ports": ["8888/http"], "env": {"A": "1"}, "registry": null, "serverless": false,
        "public": false, "category": "NVIDIA", "startSsh": true, "startJupyter": false,
        "allowedCudaVersions": []
    }));
    assert_eq!(t.category, Some(TemplateCategory::Nvidia));
    assert!(t.start_ssh && !t.start_jupyter);
    assert_eq!(t.mounts.unwrap().persistent.unwrap().path, "/workspace");
    let list: listing::Templates = decode(json!({"templates": []}));
    assert!(list.templates.is_empty());

    let create = CreateTemplate {
        name: "t".into(),
        container: CreateContainerConfig {
            image: "img".into(),
            ..Default::default()
        },
        serverless: Some(true),
        ..Default::default()
    };
    assert_eq!(
        encode(&create),
        json!({"name": "t", "image": "img", "serverless": true})
    );
    let update = UpdateTemplate {
        allowed_cuda_versions: Some(vec![]),
        ..Default::default()
    };
    assert_eq!(encode(&update), json!({"allowedCudaVersions": []}));
    assert_eq!(PublicTemplateSource::Verified.as_str(), "verified");
}

/// Create and update bodies of a template are one generic struct in Rust: every field set,
/// the bytes sent (key order included) are the document's, and they read back the same.
#[test]
fn template_bodies_keep_their_bytes() {
    let mounts = TemplateMounts {
        persistent: Some(PersistentMount {
            size: 20,
            path: "/workspace".into(),
        }),
    };
    let create = CreateTemplate {
        name: "t".into(),
        container: CreateContainerConfig {
            image: "img".into(),
            args: Some("a".into()),
            disk: Some(5),
            env: Some([("K".to_string(), "V".to_string())].into()),
            ports: Some(vec!["22/tcp".into()]),
            registry: Some("r".into()),
        },
        mounts: Some(mounts.clone()),
        category: Some(TemplateCategory::Cpu),
        public: Some(false),
        serverless: Some(true),
        start_jupyter: Some(false),
        start_ssh: Some(true),
        allowed_cuda_versions: Some(vec!["12.4".into()]),
    };
    let text = serde_json::to_string(&create).unwrap();
    assert_eq!(
        text,
        r#"{"name":"t","image":"img","args":"a","disk":5,"env":{"K":"V"},"ports":["22/tcp"],"registry":"r","mounts":{"persistent":{"size":20,"path":"/workspace"}},"category":"CPU","public":false,"serverless":true,"startJupyter":false,"startSsh":true,"allowedCudaVersions":["12.4"]}"#
    );
    assert_eq!(
        serde_json::from_str::<CreateTemplate>(&text).unwrap(),
        create
    );
    assert!(serde_json::from_str::<CreateTemplate>(r#"{"image":"img"}"#).is_err());

    let update = UpdateTemplate {
        name: Some("t".into()),
        container: UpdateContainerConfig {
            registry: Some(None),
            ..Default::default()
        },
        mounts: Some(mounts),
        start_ssh: Some(false),
        ..Default::default()
    };
    let text = serde_json::to_string(&update).unwrap();
    assert_eq!(
        text,
        r#"{"name":"t","registry":null,"mounts":{"persistent":{"size":20,"path":"/workspace"}},"startSsh":false}"#
    );
    assert_eq!(
        serde_json::from_str::<UpdateTemplate>(&text).unwrap(),
        update
    );
    assert_eq!(
        serde_json::from_str::<UpdateTemplate>("{}").unwrap(),
        UpdateTemplate::default()
    );
}

/// One struct serves both container bodies: a `null` registry is "none" on a create but
/// "remove the credential" on an update, and an absent one is unset on both.
#[test]
fn a_null_registry_reads_per_body() {
    let create: CreateContainerConfig = decode(json!({"registry": null}));
    assert_eq!(create.registry, None);
    let update: UpdateContainerConfig = decode(json!({"registry": null}));
    assert_eq!(update.registry, Some(None));
    let update: UpdateContainerConfig = decode(json!({"registry": "r"}));
    assert_eq!(update.registry, Some(Some("r".into())));
    assert_eq!(decode::<UpdateContainerConfig>(json!({})).registry, None);
    assert_eq!(encode(&UpdateContainerConfig::default()), json!({}));
}

#[test]
fn volumes_and_registries_decode_and_encode() {
    let v: NetworkVolume = decode(json!({
        "id": "vol_abc123", "name": "data", "size": 100, "dataCenter": "EU-RO-1", "type": "HIGH_PERFORMANCE"
    }));
    assert_eq!(v.volume_type, Some(VolumeType::HighPerformance));
    let list: listing::NetworkVolumes = decode(json!({"networkVolumes": [
        {"id": "v", "name": "n", "size": 10, "dataCenter": "US-KS-2", "type": "ARCHIVE"}
    ]}));
    assert_eq!(
        list.network_volumes[0].volume_type,
        Some(VolumeType::Other("ARCHIVE".into()))
    );
    let create = CreateNetworkVolume {
        name: "n".into(),
        size: 10,
        data_center: "EU-RO-1".into(),
        volume_type: None,
    };
    assert_eq!(
        encode(&create),
        json!({"name": "n", "size": 10, "dataCenter": "EU-RO-1"})
    );
    assert_eq!(
        encode(&UpdateNetworkVolume {
            size: Some(20),
            ..Default::default()
        }),
        json!({"size": 20})
    );

    let r: listing::Registries =
        decode(json!({"registries": [{"id": "reg_1", "name": "docker-hub"}]}));
    assert_eq!(r.registries[0].name, "docker-hub");
    let create = CreateRegistry {
        name: "hub".into(),
        username: "user-secret-name".into(),
        password: "pw-secret-value".into(),
    };
    assert_eq!(
        encode(&create),
        json!({"name": "hub", "username": "user-secret-name", "password": "pw-secret-value"})
    );
    let shown = format!("{create:?}");
    assert!(
        !shown.contains("pw-secret-value") && !shown.contains("user-secret-name"),
        "{shown}"
    );
}

#[test]
fn catalog_decodes() {
    let g: listing::Gpus = decode(json!({"gpus": [{
        "id": "NVIDIA GeForce RTX 4090", "name": "RTX 4090", "pool": "ADA_24",
        "manufacturer": "NVIDIA", "memory": 24, "secure": true, "community": true,
        "price": {"secure": 0.44, "community": 0.31, "serverless": 1.1},
        "maxCount": {"secure": 8, "community": 4},
        "availability": "HIGH",
        "dataCenters": [{"id": "EU-RO-1", "name": "Romania", "availability": "LOW"}],
        "cudaVersions": [{"version": "12.8", "available": true}]
    }, {
        "id": "X", "name": "X", "pool": null, "manufacturer": "INTEL", "memory": 16,
        "secure": false, "community": true, "price": {"secure": 0, "community": 0.1},
        "maxCount": {"secure": 0, "community": 1}
    }]}));
    let a = &g.gpus[0];
    assert_eq!(a.availability, Some(AvailabilityLevel::High));
    assert_eq!(a.max_count.secure, 8);
    assert_eq!(a.price.serverless, Some(1.1));
    assert_eq!(
        a.data_centers.as_ref().unwrap()[0].availability,
        AvailabilityLevel::Low
    );
    assert!(a.cuda_versions.as_ref().unwrap()[0].available);
    assert_eq!(
        g.gpus[1].manufacturer,
        GpuManufacturer::Other("INTEL".into())
    );
    assert!(g.gpus[1].availability.is_none() && g.gpus[1].pool.is_none());

    let c: listing::Cpus = decode(json!({"cpus": [{
        "id": "cpu5c", "name": "Compute-Optimized", "group": "Gen 5",
        "vcpu": {"min": 2, "max": 32}, "ramGbPerVcpu": 2.5,
        "price": {"securePerVcpu": 0.04, "serverlessPerVcpu": 0.03}
    }]}));
    assert_eq!(c.cpus[0].vcpu.max, 32);
    assert_eq!(c.cpus[0].price.serverless_per_vcpu, 0.03);

    let d: listing::DataCenters = decode(json!({"dataCenters": [{
        "id": "EU-RO-1", "name": "Romania", "region": "EUROPE", "globalNetwork": true,
        "networkVolumeTypes": ["STANDARD"], "compliance": ["GDPR", "NEW_CERT"],
        "gpuAvailability": [{"id": "NVIDIA A40", "name": "A40", "availability": "MEDIUM"}]
    }]}));
    let dc = &d.data_centers[0];
    assert_eq!(dc.region, DataCenterRegion::Europe);
    assert_eq!(
        dc.compliance,
        [Compliance::Gdpr, Compliance::Other("NEW_CERT".into())]
    );
    assert_eq!(dc.network_volume_types, [VolumeType::Standard]);
    assert_eq!(
        dc.gpu_availability.as_ref().unwrap()[0].availability,
        AvailabilityLevel::Medium
    );
    assert!(dc.cpu_availability.is_none());
}

#[test]
fn billing_decodes() {
    let window = json!({"startTime": "2026-05-01T00:00:00Z", "endTime": "2026-05-02T00:00:00Z"});
    let agg: AggregateBilling = decode(json!({
        "records": [{
            "startTime": "2026-05-01T00:00:00Z", "endTime": "2026-05-02T00:00:00Z",
            "totalAmount": 3.5, "podGpuAmount": 2.0, "podCpuAmount": 0.5, "podDiskAmount": 0.1,
            "serverlessGpuAmount": 0.5, "serverlessCpuAmount": 0, "serverlessDiskAmount": 0,
            "serverlessFeeAmount": 0.1, "storageStandardAmount": 0.3,
            "storageHighPerformanceAmount": 0, "endpointAmount": 0, "clusterGpuAmount": 0,
            "clusterDiskAmount": 0, "clusterNetworkingAmount": 0
        }],
        "metadata": {
            "query": {"startTime": "2026-05-01T00:00:00Z", "endTime": "2026-05-02T00:00:00Z", "bucketSize": "day"},
            "recordCount": 1,
            "totals": {"totalAmount": 3.5, "podGpuAmount": 2.0}
        }
    }));
    assert_eq!(agg.records[0].amounts.pod_gpu_amount, 2.0);
    assert_eq!(agg.records[0].start_time, "2026-05-01T00:00:00Z");
    assert_eq!(agg.metadata.totals.total_amount, 3.5);
    assert_eq!(agg.metadata.query.bucket_size, Some(BillingBucketSize::Day));

    let mut q = window.clone();
    q["bucketSize"] = json!("hour");
    q["podId"] = json!("pod_1");
    let pods: PodBilling = decode(json!({
        "records": [{"startTime": "a", "endTime": "b", "podId": "pod_1",
                     "totalAmount": 1.0, "gpuAmount": 0.8, "cpuAmount": 0.1, "diskAmount": 0.1}],
        "metadata": {"query": q, "recordCount": 1, "uniquePodCount": 1,
                     "totals": {"totalAmount": 1.0, "gpuAmount": 0.8, "cpuAmount": 0.1, "diskAmount": 0.1}}
    }));
    assert_eq!(pods.records[0].pod_id, "pod_1");
    assert_eq!(pods.records[0].amounts.gpu_amount, 0.8);
    assert_eq!(pods.metadata.counts["uniquePodCount"], json!(1));
    assert_eq!(pods.metadata.query.pod_id.as_deref(), Some("pod_1"));

    let sls: ServerlessBilling = decode(json!({
        "records": [{"startTime": "a", "endTime": "b", "serverlessId": "ep_1",
                     "totalAmount": 1.0, "gpuAmount": 0.7, "cpuAmount": 0, "diskAmount": 0.1, "feeAmount": 0.2}],
        "metadata": {"query": window, "recordCount": 1, "uniqueServerlessCount": 1,
                     "totals": {"totalAmount": 1.0, "gpuAmount": 0.7, "cpuAmount": 0, "diskAmount": 0.1, "feeAmount": 0.2}}
    }));
    assert_eq!(sls.records[0].amounts.fee_amount, 0.2);

    let vols: NetworkVolumeBilling = decode(json!({
        "records": [{"startTime": "a", "endTime": "b", "networkVolumeId": "vol_1",
                     "totalAmount": 0.5, "standardAmount": 0.5, "highPerformanceAmount": 0}],
        "metadata": {"query": window, "recordCount": 1, "uniqueNetworkVolumeCount": 1,
                     "totals": {"totalAmount": 0.5, "standardAmount": 0.5, "highPerformanceAmount": 0}}
    }));
    assert_eq!(vols.records[0].network_volume_id, "vol_1");
    assert_eq!(vols.metadata.totals.standard_amount, 0.5);
}

#[test]
fn open_enums_parse_command_line_spellings() {
    assert_eq!("pod".parse::<Product>().unwrap(), Product::Pod);
    assert_eq!("Secure".parse::<Cloud>().unwrap(), Cloud::Secure);
    assert_eq!(
        "NEW".parse::<Product>().unwrap(),
        Product::Other("NEW".into())
    );
    assert_eq!(PodAction::Restart.to_string(), "restart");
}
