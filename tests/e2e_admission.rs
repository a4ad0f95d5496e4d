//! The apiserver's admission of the operator's kinds with the committed CRDs: what the
//! schema and its CEL rules refuse never reaches the operator. Needs `KUBECONFIG` pointing
//! at the control plane, hence `#[ignore]` for a bare `cargo test`; `scripts/test.sh`
//! runs it with `--include-ignored`.

mod common;

use gpucloud_crd::Pod;
use kube::Api;
use kube::api::PostParams;
use serde_json::json;

use common::operator::install_crds;
use common::{TestNamespace, kube_client, merged};

fn pod(name: &str, ports: &[&str]) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "gpucloud.io/v1beta1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "image": "ghcr.io/example/app:1",
            "gpu": {"typeIds": ["NVIDIA A40"]},
            "ports": ports,
        }
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn pod_ports_outside_1_to_65535_or_http_tcp_are_refused() {
    let client = kube_client().await;
    install_crds(&client).await;
    let ns = TestNamespace::create(&client, "admission").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());

    pods.create(
        &PostParams::default(),
        &pod("fine", &["1/tcp", "8888/http", "65535/tcp"]),
    )
    .await
    .expect("ports 1..65535 over http or tcp are admitted");

    for (name, port) in [
        ("above-range", "99999/tcp"),
        ("just-above", "65536/http"),
        ("zero", "0/tcp"),
        ("udp", "8888/udp"),
    ] {
        let message =
            common::assert_refused(&pods, port, &pod(name, &["22/tcp", port]), "spec.ports").await;
        if port.ends_with("/tcp") || port.ends_with("/http") {
            assert!(
                message.contains("a port from 1 to 65535"),
                "{port}: the rule must be said: {message}"
            );
        }
        assert!(
            pods.get_opt(name).await.unwrap().is_none(),
            "{port} was stored"
        );
    }
    ns.delete_and_wait(&client).await;
}

/// The guardrail fields' shapes are refused by the apiserver, naming the field: days,
/// `HH:MM`, time zone shape, durations, threshold range. (A well-shaped but unknown time
/// zone is the operator's to report, in a condition: see `e2e_guardrails`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn pod_guardrail_fields_are_checked_at_admission() {
    use kube::api::{ApiResource, DynamicObject};
    let client = kube_client().await;
    install_crds(&client).await;
    let ns = TestNamespace::create(&client, "admission-guardrails").await;
    let resource = ApiResource::erase::<Pod>(&());
    let pods: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns.name(), &resource);
    let object = |name: &str, extra: serde_json::Value| -> DynamicObject {
        let spec = merged(
            json!({"image": "ghcr.io/example/app:1", "gpu": {"typeIds": ["NVIDIA A40"]}}),
            extra,
        );
        serde_json::from_value(json!({
            "apiVersion": "gpucloud.io/v1beta1", "kind": "Pod",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap()
    };
    let window = |days: serde_json::Value, from: &str, to: &str| json!({"schedule": {"timeZone": "Europe/Paris", "windows": [{"days": days, "from": from, "to": to}]}});
    pods.create(
        &PostParams::default(),
        &object(
            "fine",
            json!({"maxRuntime": "8h", "idleStop": {"thresholdPercent": 5, "duration": "30m"},
                "schedule": {"timeZone": "America/New_York", "windows": [
                    {"days": ["Mon", "Fri"], "from": "22:00", "to": "06:00"},
                    {"from": "00:00", "to": "24:00", "days": ["Sat"]}]}}),
        ),
    )
    .await
    .expect("well-formed guardrails are admitted");
    for (name, extra, field) in [
        (
            "day",
            window(json!(["Funday"]), "08:00", "18:00"),
            "spec.schedule.windows[0].days[0]",
        ),
        (
            "from",
            window(json!([]), "8:00", "18:00"),
            "spec.schedule.windows[0].from",
        ),
        (
            "to",
            window(json!([]), "08:00", "24:30"),
            "spec.schedule.windows[0].to",
        ),
        (
            "zone",
            json!({"schedule": {"timeZone": "Europe Paris", "windows": [{"from": "08:00", "to": "18:00"}]}}),
            "spec.schedule.timeZone",
        ),
        (
            "nowindow",
            json!({"schedule": {"windows": []}}),
            "spec.schedule.windows",
        ),
        (
            "runtime",
            json!({"maxRuntime": "8 hours"}),
            "spec.maxRuntime",
        ),
        (
            "zeroruntime",
            json!({"maxRuntime": "0m"}),
            "spec.maxRuntime",
        ),
        (
            "threshold",
            json!({"idleStop": {"thresholdPercent": 120, "duration": "30m"}}),
            "spec.idleStop.thresholdPercent",
        ),
        (
            "idleduration",
            json!({"idleStop": {"thresholdPercent": 5, "duration": "30"}}),
            "spec.idleStop.duration",
        ),
    ] {
        common::assert_refused(&pods, name, &object(name, extra), field).await;
    }
    ns.delete_and_wait(&client).await;
}

/// A Pod is a GPU pod or a CPU pod, never both nor neither; a CPU pod's size is a power of
/// two and it takes none of the GPU-only fields. Each refusal names its field.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn pod_gpu_or_cpu_and_cpu_only_fields_are_checked_at_admission() {
    use kube::api::{ApiResource, DynamicObject};
    let client = kube_client().await;
    install_crds(&client).await;
    let ns = TestNamespace::create(&client, "admission-cpu").await;
    let resource = ApiResource::erase::<Pod>(&());
    let pods: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns.name(), &resource);
    let object = |name: &str, spec: serde_json::Value| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "gpucloud.io/v1beta1", "kind": "Pod",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap()
    };
    let cpu = json!({"flavors": ["cpu3c"], "vcpuCount": 4});
    let cpu_pod =
        |extra: serde_json::Value| merged(json!({"image": "ubuntu:24.04", "cpu": cpu}), extra);
    pods.create(&PostParams::default(), &object("fine", cpu_pod(json!({}))))
        .await
        .expect("a CPU pod is admitted");
    pods.create(
        &PostParams::default(),
        &object(
            "global",
            json!({"image": "img:1", "gpu": {"typeIds": ["NVIDIA A40"]}, "globalNetworking": true}),
        ),
    )
    .await
    .expect("a GPU pod on the global network is admitted");
    for (name, spec, field, rule) in [
        (
            "both",
            cpu_pod(json!({"gpu": {"typeIds": ["NVIDIA A40"]}})),
            "spec",
            "exactly one of gpu and cpu",
        ),
        (
            "neither",
            json!({"image": "ubuntu:24.04"}),
            "spec",
            "exactly one of gpu and cpu",
        ),
        (
            "idlestop",
            cpu_pod(json!({"idleStop": {"thresholdPercent": 5, "duration": "30m"}})),
            "spec.idleStop",
            "a CPU pod (cpu) takes no idleStop",
        ),
        (
            "volume",
            cpu_pod(json!({"volumeGb": 20})),
            "spec.volumeGb",
            "no pod volume",
        ),
        (
            "vcpus",
            json!({"image": "ubuntu:24.04", "cpu": {"flavors": ["cpu3c"], "vcpuCount": 6}}),
            "spec.cpu.vcpuCount",
            "power of two",
        ),
        (
            "community",
            cpu_pod(json!({"cloudType": "COMMUNITY"})),
            "spec.cloudType",
            "secure cloud only",
        ),
        (
            "cuda",
            cpu_pod(json!({"allowedCudaVersions": ["12.4"]})),
            "spec.allowedCudaVersions",
            "for GPU pods",
        ),
        (
            "cpuglobal",
            cpu_pod(json!({"globalNetworking": true})),
            "spec.globalNetworking",
            "needs an NVIDIA GPU",
        ),
        (
            "minvcpu",
            cpu_pod(json!({"minVcpuCount": 8})),
            "spec.minVcpuCount",
            "takes its size from cpu.vcpuCount",
        ),
    ] {
        let message = common::assert_refused(&pods, name, &object(name, spec), field).await;
        assert!(
            message.contains(rule),
            "{name}: the rule must be said: {message}"
        );
        assert!(pods.get_opt(name).await.unwrap().is_none(), "{name}");
    }
    ns.delete_and_wait(&client).await;
}

/// The Endpoint's worker shapes and load-balancer settings are refused by the apiserver,
/// naming the field and the rule: one of `gpu` and `cpu`, pools or type ids, a load
/// balancer on request-count scaling only, and a type that cannot change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn endpoint_shapes_are_checked_at_admission() {
    use gpucloud_crd::Endpoint;
    use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
    let client = kube_client().await;
    install_crds(&client).await;
    let ns = TestNamespace::create(&client, "admission-endpoint").await;
    let resource = ApiResource::erase::<Endpoint>(&());
    let endpoints: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns.name(), &resource);
    let object = |name: &str, spec: serde_json::Value| -> DynamicObject {
        let base = merged(json!({"templateId": "tmpl-worker-base"}), spec);
        serde_json::from_value(json!({
            "apiVersion": "gpucloud.io/v1beta1", "kind": "Endpoint",
            "metadata": {"name": name}, "spec": base,
        }))
        .unwrap()
    };
    let lb = json!({"type": "LoadBalancer", "gpu": {"pools": ["ADA_24"]},
        "loadBalancer": {"port": 8000, "healthCheck": {"port": 8001, "path": "/ping"}}});
    for (name, spec) in [
        (
            "types",
            json!({"gpu": {"typeIds": ["NVIDIA A40"], "count": 2}}),
        ),
        ("lb", lb.clone()),
        (
            "cpu",
            json!({"cpu": {"flavors": ["cpu3c"], "vcpuCount": 4}}),
        ),
    ] {
        endpoints
            .create(&PostParams::default(), &object(name, spec))
            .await
            .unwrap_or_else(|e| panic!("{name} is admitted: {e}"));
    }
    let with = |extra: serde_json::Value| merged(lb.clone(), extra);
    for (name, spec, field, rule) in [
        ("none", json!({}), "spec", "set exactly one of gpu and cpu"),
        (
            "gpu-and-cpu",
            json!({"gpu": {"pools": ["ADA_24"]}, "cpu": {"flavors": ["cpu3c"], "vcpuCount": 2}}),
            "spec",
            "set exactly one of gpu and cpu",
        ),
        (
            "pools-and-types",
            json!({"gpu": {"pools": ["ADA_24"], "typeIds": ["NVIDIA A40"]}}),
            "spec.gpu",
            "set exactly one of pools and typeIds",
        ),
        (
            "excluded",
            json!({"gpu": {"typeIds": ["NVIDIA A40"], "excludedTypes": ["NVIDIA L4"]}}),
            "spec.gpu.excludedTypes",
            "narrows pools",
        ),
        (
            "vcpu",
            json!({"cpu": {"flavors": ["cpu3c"], "vcpuCount": 6}}),
            "spec.cpu.vcpuCount",
            "power of two",
        ),
        (
            "queue-delay",
            with(json!({"scalerType": "QUEUE_DELAY"})),
            "spec.scalerType",
            "scalerType must be REQUEST_COUNT",
        ),
        (
            "lb-on-queue",
            with(json!({"type": "Queue"})),
            "spec.loadBalancer",
            "only for an endpoint of type LoadBalancer",
        ),
        (
            "path",
            with(json!({"loadBalancer": {"healthCheck": {"path": "ping"}}})),
            "spec.loadBalancer.healthCheck.path",
            "must start with /",
        ),
        (
            "port",
            with(json!({"loadBalancer": {"port": 70000}})),
            "spec.loadBalancer.port",
            "65535",
        ),
        (
            "type",
            with(json!({"type": "Balancer"})),
            "spec.type",
            "Queue",
        ),
    ] {
        let message = common::assert_refused(&endpoints, name, &object(name, spec), field).await;
        assert!(
            message.contains(rule),
            "{name}: the rule must be said: {message}"
        );
    }
    // The type and the compute family are set once.
    for (name, patch, field, rule) in [
        (
            "lb",
            json!({"spec": {"type": "Queue", "loadBalancer": null}}),
            "spec.type",
            "type is immutable",
        ),
        (
            "cpu",
            json!({"spec": {"cpu": null, "gpu": {"typeIds": ["NVIDIA A40"]}}}),
            "spec.cpu",
            "cannot move between GPU and CPU",
        ),
    ] {
        let err = endpoints
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .expect_err(name);
        let kube::Error::Api(status) = err else {
            panic!("{name}: want a 422, got {err}");
        };
        assert_eq!(status.code, 422, "{name}: {status:?}");
        assert!(
            status.message.contains(field) && status.message.contains(rule),
            "{name}: {field} and the rule must be said: {}",
            status.message
        );
    }
    ns.delete_and_wait(&client).await;
}
