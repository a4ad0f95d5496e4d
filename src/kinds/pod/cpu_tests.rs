//! Unit tests of the Pod's CPU pods, global networking and price as billed:
//! the desired pod, the fields a live pod cannot take, status, and the billed price of a
//! pod found again after a create, without a network.

use super::*;
use gpucloud_crd::PodSpec;
use kube::api::ObjectMeta;
use serde_json::json;

const UID: &str = "1234abcd-0000-0000-0000-000000000000";

fn obj(spec: serde_json::Value) -> Pod {
    let spec: PodSpec = serde_json::from_value(spec).unwrap();
    let mut p = Pod::new("batch", spec);
    p.metadata = ObjectMeta {
        name: Some("batch".into()),
        namespace: Some("team".into()),
        uid: Some(UID.into()),
        ..Default::default()
    };
    p
}

fn cpu_pod(cap: Option<f64>) -> Pod {
    let mut cpu = json!({"flavors": ["cpu5g", "cpu3c"], "vcpuCount": 4});
    if let Some(cap) = cap {
        cpu["maxPricePerHour"] = json!(cap);
    }
    obj(json!({"image": "ubuntu:24.04", "cpu": cpu}))
}

fn gpu_pod(extra: serde_json::Value) -> Pod {
    let mut spec = json!({"image": "ubuntu:24.04", "gpu": {"typeIds": ["A"], "count": 2, "maxPricePerHour": 0.5}});
    spec.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    obj(spec)
}

/// A CPU pod as REST v2 lists it (through `from_v2`): a flavor, vCPUs, no GPU.
fn remote_cpu(extra: serde_json::Value) -> RemotePod {
    let mut v = json!({
        "id": "pod-9", "name": "team-batch-1234abcd", "imageName": "ubuntu:24.04",
        "env": [format!("{TAG_ENV}={UID}")], "machine": {"dataCenterId": "EU-RO-1", "secureCloud": true},
        "desiredStatus": "RUNNING", "vcpuCount": 4.0, "memoryInGb": 8.0, "cpuFlavorId": "cpu3c",
        "containerDiskInGb": 20, "volumeInGb": 0, "ports": "", "costPerHr": 0.12,
        "runtime": {"uptimeInSeconds": 5, "ports": [], "gpus": []}
    });
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::from_value(v).unwrap()
}

#[test]
fn a_cpu_pod_asks_for_no_gpu_and_caps_the_whole_pod() {
    let d = desired_of(&cpu_pod(Some(0.2)), vec![], None);
    assert_eq!(
        d.cpu,
        Some(DesiredCpu {
            flavors: vec!["cpu5g".into(), "cpu3c".into()],
            vcpu_count: 4
        })
    );
    assert!(d.gpu_types.is_empty());
    assert_eq!(d.request.gpu_count, 0);
    assert_eq!(d.price_cap(), Some(0.2));
    // A GPU pod's cap is per GPU.
    let g = desired_of(&gpu_pod(json!({"globalNetworking": true})), vec![], None);
    assert_eq!(g.price_cap(), Some(1.0));
    assert!(g.request.global_networking);
    assert_eq!(desired_of(&cpu_pod(None), vec![], None).price_cap(), None);
}

#[test]
fn a_cpu_pod_in_line_with_its_spec_is_up_to_date_and_a_change_of_size_or_kind_replaces_it() {
    let d = desired_of(&cpu_pod(None), vec![], None);
    assert_eq!(plan_pod(&d, &remote_cpu(json!({}))), Plan::UpToDate);
    assert_eq!(
        immutable_changes(&d, &remote_cpu(json!({"vcpuCount": 8.0}))),
        ["cpu.vcpuCount"]
    );
    assert_eq!(
        immutable_changes(&d, &remote_cpu(json!({"cpuFlavorId": "cpu9x"}))),
        ["cpu.flavors"]
    );
    // The spec turned from CPU to GPU: the CPU pod cannot take it.
    let g = desired_of(&gpu_pod(json!({})), vec![], None);
    assert!(immutable_changes(&g, &remote_cpu(json!({}))).contains(&"gpu"));
    // Global networking switched on: a new pod (the create is what asks for it).
    let mut with_global = d.clone();
    with_global.request.global_networking = true;
    assert_eq!(
        immutable_changes(&with_global, &remote_cpu(json!({}))),
        ["globalNetworking"]
    );
}

#[test]
fn status_shows_the_flavor_the_vcpus_and_the_global_address() {
    let remote = remote_cpu(
        json!({"globalNetworking": {"ip": "10.65.0.7", "internalDns": "pod-9.runpod.internal"}}),
    );
    let s = status_of(PodStatus::default(), DesiredState::Running, &remote);
    assert_eq!(s.cpu_flavor_id.as_deref(), Some("cpu3c"));
    assert_eq!(s.vcpu_count, Some(4));
    assert_eq!(s.gpu_type_id, None);
    let g = s.global_networking.unwrap();
    assert_eq!(g.internal_dns.as_deref(), Some("pod-9.runpod.internal"));
    assert_eq!(g.ip.as_deref(), Some("10.65.0.7"));
    assert_eq!(s.phase, Some(PodPhase::Running));
    match readiness_of(DesiredState::Running, &remote) {
        Readiness::Ready { message } => assert!(message.contains("cpu3c"), "{message}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_pod_found_after_a_create_billed_above_the_cap_is_replaced_once_known_it_is_not() {
    let o = cpu_pod(Some(0.15));
    let d = desired_of(&o, vec![], None);
    let billed = remote_cpu(json!({"costPerHr": 0.18}));
    match decide::billed_after_create(&o, &d, &billed) {
        Some(Plan::Replace { reason }) => {
            assert!(reason.contains("$0.180/h"), "{reason}");
            assert!(reason.contains("$0.150/h"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // Within the cap, or without one: nothing.
    assert!(decide::billed_after_create(&o, &d, &remote_cpu(json!({}))).is_none());
    let uncapped = desired_of(&cpu_pod(None), vec![], None);
    assert!(decide::billed_after_create(&o, &uncapped, &billed).is_none());
    // The pod status already records was checked when it was created.
    let mut known = o.clone();
    let mut status = PodStatus::default();
    status.common.id = Some("pod-9".into());
    known.status = Some(status);
    assert!(decide::billed_after_create(&known, &d, &billed).is_none());
    // A pod adopted by external-id (no tag) ran at its price before: left alone.
    let adopted = remote_cpu(json!({"costPerHr": 0.18, "env": []}));
    assert!(decide::billed_after_create(&o, &d, &adopted).is_none());
    // A GPU pod's cap is per GPU: 2 GPUs at $0.5 allow $1.0/h.
    let g = gpu_pod(json!({}));
    let gd = desired_of(&g, vec![], None);
    let gpu_remote = |cost: f64| -> RemotePod {
        serde_json::from_value(json!({"id": "pod-3", "desiredStatus": "RUNNING",
            "costPerHr": cost, "env": [format!("{TAG_ENV}={UID}")]}))
        .unwrap()
    };
    assert!(decide::billed_after_create(&g, &gd, &gpu_remote(0.9)).is_none());
    assert!(decide::billed_after_create(&g, &gd, &gpu_remote(1.2)).is_some());
}

#[test]
fn the_seed_backend_is_told_which_field_it_cannot_deploy() {
    assert_eq!(decide::unsupported_field(&cpu_pod(None).spec), Some("cpu"));
    assert_eq!(
        decide::unsupported_field(&gpu_pod(json!({"globalNetworking": true})).spec),
        Some("globalNetworking")
    );
    assert_eq!(decide::unsupported_field(&gpu_pod(json!({})).spec), None);
}
