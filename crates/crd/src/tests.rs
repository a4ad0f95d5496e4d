//! The CRDs' schema and CEL rules, evaluated without an apiserver.

use kube::CustomResourceExt;
use kube::core::cel::Validator;
use serde_json::{Value, json};

use super::{Cluster, Endpoint, NetworkVolume, Pod, RegistryCredential, Template};

fn schema_of<K: CustomResourceExt>() -> Value {
    let crd = K::crd();
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .unwrap()
        .open_api_v3_schema
        .as_ref()
        .unwrap();
    serde_json::to_value(schema).unwrap()
}

fn object(kind: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "gpucloud.io/v1alpha1",
        "kind": kind,
        "metadata": {"name": "x", "namespace": "default"},
        "spec": spec,
    })
}

/// Runs the CEL rules of kind `K` and returns the messages of the rules that failed.
fn violations<K: CustomResourceExt>(kind: &str, spec: Value, old: Option<Value>) -> Vec<String> {
    let old = old.map(|old| object(kind, old));
    match Validator::new().validate(&schema_of::<K>(), &object(kind, spec), old.as_ref()) {
        Ok(()) => vec![],
        Err(errors) => errors.iter().map(|e| e.to_string()).collect(),
    }
}

fn volume(size: i32, dc: &str) -> Value {
    json!({"sizeGb": size, "dataCenterId": dc})
}

#[test]
fn network_volume_may_grow() {
    let errs = violations::<NetworkVolume>(
        "NetworkVolume",
        volume(20, "EU-RO-1"),
        Some(volume(10, "EU-RO-1")),
    );
    assert!(errs.is_empty(), "{errs:?}");
}

#[test]
fn network_volume_may_not_shrink() {
    let errs = violations::<NetworkVolume>(
        "NetworkVolume",
        volume(5, "EU-RO-1"),
        Some(volume(10, "EU-RO-1")),
    );
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("sizeGb may only grow"), "{errs:?}");
}

#[test]
fn network_volume_data_center_is_immutable() {
    let errs = violations::<NetworkVolume>(
        "NetworkVolume",
        volume(10, "US-TX-3"),
        Some(volume(10, "EU-RO-1")),
    );
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("dataCenterId is immutable"), "{errs:?}");
}

#[test]
fn network_volume_storage_class_is_immutable() {
    let typed = |t: &str| {
        let mut v = volume(10, "EU-RO-1");
        v["type"] = json!(t);
        v
    };
    let errs = violations::<NetworkVolume>(
        "NetworkVolume",
        typed("HIGH_PERFORMANCE"),
        Some(typed("STANDARD")),
    );
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("type is immutable"), "{errs:?}");
    let schema = schema_of::<NetworkVolume>();
    assert_eq!(
        schema["properties"]["spec"]["properties"]["type"]["enum"],
        json!(["STANDARD", "HIGH_PERFORMANCE"])
    );
}

#[test]
fn network_volume_defaults_to_orphan() {
    let nv: NetworkVolume =
        serde_json::from_value(object("NetworkVolume", volume(10, "EU-RO-1"))).unwrap();
    assert_eq!(nv.spec.deletion_policy, super::DeletionPolicy::Orphan);
    let schema = schema_of::<NetworkVolume>();
    assert_eq!(
        schema["properties"]["spec"]["properties"]["deletionPolicy"]["default"],
        "Orphan"
    );
}

fn endpoint(min: i32, max: i32) -> Value {
    json!({"templateId": "tpl", "gpu": {"typeIds": ["NVIDIA A40"]}, "workersMin": min, "workersMax": max})
}

#[test]
fn endpoint_worker_limits_are_ordered() {
    assert!(violations::<Endpoint>("Endpoint", endpoint(1, 3), None).is_empty());
    let errs = violations::<Endpoint>("Endpoint", endpoint(4, 3), None);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].contains("workersMin must not exceed workersMax"),
        "{errs:?}"
    );
}

#[test]
fn endpoint_takes_one_volume_source() {
    let mut spec = endpoint(0, 1);
    spec["networkVolumeRef"] = json!({"name": "data"});
    spec["networkVolumeId"] = json!("vol-1");
    let errs = violations::<Endpoint>("Endpoint", spec, None);
    assert!(errs.iter().any(|e| e.contains("not both")), "{errs:?}");
}

#[test]
fn endpoint_schema_bounds() {
    let schema = schema_of::<Endpoint>();
    let spec = &schema["properties"]["spec"]["properties"];
    assert_eq!(spec["idleTimeout"]["type"], "string");
    assert_eq!(spec["workersMax"]["maximum"].as_f64(), Some(1000.0));
    assert_eq!(spec["gpu"]["properties"]["typeIds"]["minItems"], 1);
    assert_eq!(
        spec["scalerType"]["enum"],
        json!(["QUEUE_DELAY", "REQUEST_COUNT"])
    );
}

/// The refusals of an Endpoint spec (and, for an update, of its change from `old`).
fn endpoint_refusals(spec: Value, old: Option<Value>) -> Vec<String> {
    violations::<Endpoint>("Endpoint", spec, old)
}

fn lb_endpoint() -> Value {
    json!({"templateId": "tpl", "type": "LoadBalancer", "gpu": {"pools": ["ADA_24"], "count": 1},
        "scalerType": "REQUEST_COUNT", "loadBalancer": {"port": 8000, "healthCheck": {"port": 8001, "path": "/ping"}}})
}

#[test]
fn endpoint_new_shapes_are_admitted() {
    assert!(endpoint_refusals(lb_endpoint(), None).is_empty());
    let cpu = json!({"templateId": "tpl", "cpu": {"flavors": ["cpu5c", "cpu3c"], "vcpuCount": 4}});
    assert!(endpoint_refusals(cpu, None).is_empty());
    let types = json!({"templateId": "tpl", "gpu": {"typeIds": ["NVIDIA A40"], "count": 2}});
    assert!(endpoint_refusals(types, None).is_empty());
    // A load balancer without scalerType: the adapter gives it REQUEST_COUNT.
    let mut lb = lb_endpoint();
    lb.as_object_mut().unwrap().remove("scalerType");
    assert!(endpoint_refusals(lb, None).is_empty());
}

#[test]
fn endpoint_takes_exactly_one_worker_shape() {
    let refused = |spec: Value, words: &str| {
        let errs = endpoint_refusals(spec, None);
        assert!(errs.iter().any(|e| e.contains(words)), "{words}: {errs:?}");
    };
    let one_of = "set exactly one of gpu and cpu";
    refused(json!({"templateId": "t"}), one_of);
    refused(
        json!({"templateId": "t", "gpu": {"pools": ["P"]}, "cpu": {"flavors": ["c"], "vcpuCount": 2}}),
        one_of,
    );
    refused(
        json!({"templateId": "t", "gpu": {"pools": ["P"], "typeIds": ["A"]}}),
        "gpu: set exactly one of pools and typeIds",
    );
    refused(
        json!({"templateId": "t", "gpu": {"typeIds": ["A"], "excludedTypes": ["B"]}}),
        "gpu.excludedTypes narrows pools",
    );
    refused(
        json!({"templateId": "t", "cpu": {"flavors": ["c"], "vcpuCount": 6}}),
        "cpu.vcpuCount must be a power of two",
    );
    refused(
        json!({"templateId": "t", "cpu": {"flavors": ["c", "c"], "vcpuCount": 2}}),
        "cpu.flavors must not repeat",
    );
}

#[test]
fn endpoint_load_balancer_rules() {
    let refused = |spec: Value, words: &str| {
        let errs = endpoint_refusals(spec, None);
        assert!(errs.iter().any(|e| e.contains(words)), "{words}: {errs:?}");
    };
    let mut queue_delay = lb_endpoint();
    queue_delay["scalerType"] = json!("QUEUE_DELAY");
    refused(queue_delay, "scalerType must be REQUEST_COUNT");
    let mut on_queue = lb_endpoint();
    on_queue["type"] = json!("Queue");
    refused(
        on_queue,
        "loadBalancer is only for an endpoint of type LoadBalancer",
    );
    let mut bad_path = lb_endpoint();
    bad_path["loadBalancer"]["healthCheck"]["path"] = json!("ping");
    refused(bad_path, "healthCheck.path must start with /");
}

#[test]
fn endpoint_type_and_compute_family_are_immutable() {
    let mut queue = lb_endpoint();
    queue["type"] = json!("Queue");
    queue.as_object_mut().unwrap().remove("loadBalancer");
    queue.as_object_mut().unwrap().remove("scalerType");
    let errs = endpoint_refusals(queue.clone(), Some(lb_endpoint()));
    assert!(
        errs.iter().any(|e| e.contains("type is immutable")),
        "{errs:?}"
    );
    let cpu =
        json!({"templateId": "tpl", "type": "Queue", "cpu": {"flavors": ["c"], "vcpuCount": 2}});
    let errs = endpoint_refusals(cpu, Some(queue.clone()));
    assert!(
        errs.iter().any(|e| e.contains("between GPU and CPU")),
        "{errs:?}"
    );
    // GPU pools to GPU types is no change of family.
    let types = json!({"templateId": "tpl", "type": "Queue", "gpu": {"typeIds": ["A"]}});
    assert!(endpoint_refusals(types, Some(queue)).is_empty());
}

fn pod_spec() -> Value {
    json!({"image": "ghcr.io/example/app:1", "gpu": {"typeIds": ["NVIDIA A40"], "count": 1}})
}

#[test]
fn pod_env_takes_value_or_secret() {
    let mut spec = pod_spec();
    spec["env"] = json!([{"name": "TOKEN", "value": "a", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]);
    let errs = violations::<Pod>("Pod", spec, None);
    assert!(
        errs.iter()
            .any(|e| e.contains("set value or valueFrom, not both")),
        "{errs:?}"
    );
}

#[test]
fn pod_ports_are_1_to_65535_over_http_or_tcp() {
    let with_ports = |ports: Value| {
        let mut spec = pod_spec();
        spec["ports"] = ports;
        violations::<Pod>("Pod", spec, None)
    };
    for ok in [
        json!([]),
        json!([
            "1/tcp",
            "22/tcp",
            "8888/http",
            "65535/tcp",
            "9999/http",
            "10000/tcp"
        ]),
        json!(["59999/http", "64999/tcp", "65499/tcp", "65529/http"]),
    ] {
        let errs = with_ports(ok.clone());
        assert!(errs.is_empty(), "{ok}: {errs:?}");
    }
    for refused in [
        "99999/tcp",
        "65536/tcp",
        "70000/http",
        "0/tcp",
        "00080/http",
        "8888/udp",
        "8888",
        "/http",
        "http/8888",
    ] {
        let errs = with_ports(json!(["8888/http", refused]));
        assert_eq!(errs.len(), 1, "{refused}: {errs:?}");
        assert!(
            errs[0].contains("ports: each entry must be <port>/<type> with a port from 1 to 65535")
                && errs[0].contains("http or tcp"),
            "{refused}: {errs:?}"
        );
    }
}

#[test]
fn pod_schema_rules() {
    let schema = schema_of::<Pod>();
    let spec = &schema["properties"]["spec"]["properties"];
    assert_eq!(
        spec["gpu"]["properties"]["count"]["minimum"].as_f64(),
        Some(1.0)
    );
    assert_eq!(spec["gpu"]["properties"]["typeIds"]["minItems"], 1);
    assert_eq!(spec["desiredState"]["enum"], json!(["Running", "Stopped"]));
    assert_eq!(
        spec["cloudType"]["enum"],
        json!(["ALL", "SECURE", "COMMUNITY"])
    );
    assert_eq!(spec["ports"]["items"]["pattern"], "^[0-9]{1,5}/(http|tcp)$");
    // Bounded, so that the apiserver's cost estimate of the ports rule stays small.
    assert_eq!(spec["ports"]["items"]["maxLength"], 10);
    assert_eq!(spec["ports"]["maxItems"], 32);
    assert_eq!(
        spec["env"]["items"]["properties"]["name"]["pattern"],
        "^[A-Za-z_][A-Za-z0-9_]*$"
    );
    assert_eq!(spec["env"]["x-kubernetes-list-type"], "map");
    assert_eq!(spec["env"]["x-kubernetes-list-map-keys"], json!(["name"]));
}

#[test]
fn conditions_are_a_list_map_keyed_by_type() {
    for schema in [
        schema_of::<Pod>(),
        schema_of::<Endpoint>(),
        schema_of::<NetworkVolume>(),
    ] {
        let conditions = &schema["properties"]["status"]["properties"]["conditions"];
        assert_eq!(conditions["x-kubernetes-list-type"], "map", "{conditions}");
        assert_eq!(conditions["x-kubernetes-list-map-keys"], json!(["type"]));
    }
}

#[test]
fn pod_guardrail_durations_and_threshold_are_checked_by_cel() {
    let with = |extra: Value| {
        let mut spec = pod_spec();
        spec.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        violations::<Pod>("Pod", spec, None)
    };
    let ok = with(json!({"maxRuntime": "1h30m",
        "idleStop": {"thresholdPercent": 5.5, "duration": "45m"}}));
    assert!(ok.is_empty(), "{ok:?}");
    let errs = with(json!({"maxRuntime": "0h"}));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].contains("longer than zero"), "{errs:?}");
    let errs = with(json!({"idleStop": {"thresholdPercent": 0, "duration": "0s"}}));
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(
        errs.iter()
            .any(|e| e.contains("thresholdPercent must be above 0")),
        "{errs:?}"
    );
}

#[test]
fn pod_schedule_schema_rules() {
    let schema = schema_of::<Pod>();
    let spec = &schema["properties"]["spec"]["properties"];
    let schedule = &spec["schedule"]["properties"];
    let window = &schedule["windows"]["items"]["properties"];
    assert_eq!(
        window["days"]["items"]["enum"],
        json!(["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"])
    );
    assert_eq!(window["from"]["pattern"], "^([01][0-9]|2[0-3]):[0-5][0-9]$");
    assert_eq!(
        window["to"]["pattern"],
        "^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$"
    );
    assert_eq!(schedule["windows"]["minItems"], 1);
    assert_eq!(schedule["timeZone"]["default"], "UTC");
    assert_eq!(spec["maxRuntime"]["pattern"], "^([0-9]+[hms])+$");
    let idle = &spec["idleStop"]["properties"];
    assert_eq!(idle["thresholdPercent"]["maximum"].as_f64(), Some(100.0));
    assert_eq!(idle["duration"]["pattern"], "^([0-9]+[hms])+$");
}

#[test]
fn endpoint_takes_exactly_one_template_source() {
    let mut both = endpoint(0, 1);
    both["templateRef"] = json!({"name": "worker"});
    let errs = violations::<Endpoint>("Endpoint", both, None);
    assert!(
        errs.iter()
            .any(|e| e.contains("set exactly one of templateId and templateRef")),
        "{errs:?}"
    );
    let mut neither = endpoint(0, 1);
    neither.as_object_mut().unwrap().remove("templateId");
    let errs = violations::<Endpoint>("Endpoint", neither.clone(), None);
    assert!(errs.iter().any(|e| e.contains("exactly one")), "{errs:?}");
    neither["templateRef"] = json!({"name": "worker"});
    assert!(violations::<Endpoint>("Endpoint", neither, None).is_empty());
}

#[test]
fn template_mount_path_needs_a_volume_and_ports_are_checked() {
    let ok = json!({"image": "img:1", "volumeGb": 10, "volumeMountPath": "/data", "ports": ["8000/http"]});
    assert!(violations::<Template>("Template", ok, None).is_empty());
    let errs = violations::<Template>(
        "Template",
        json!({"image": "img:1", "volumeMountPath": "/data"}),
        None,
    );
    assert!(
        errs.iter()
            .any(|e| e.contains("volumeMountPath needs volumeGb")),
        "{errs:?}"
    );
    let errs = violations::<Template>(
        "Template",
        json!({"image": "img:1", "ports": ["70000/http"]}),
        None,
    );
    assert!(
        errs.iter().any(|e| e.contains("ports: each entry")),
        "{errs:?}"
    );
}

#[test]
fn template_and_registry_credential_schema() {
    let schema = schema_of::<Template>();
    let spec = &schema["properties"]["spec"];
    assert_eq!(spec["required"], json!(["image"]));
    // An optional enum also admits null (the field left out).
    let categories: Vec<&Value> = spec["properties"]["category"]["enum"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| !v.is_null())
        .collect();
    assert_eq!(categories, [&json!("NVIDIA"), &json!("AMD"), &json!("CPU")]);
    let schema = schema_of::<RegistryCredential>();
    let spec = &schema["properties"]["spec"];
    assert_eq!(spec["required"], json!(["registry", "secretRef"]));
    let pattern = spec["properties"]["registry"]["pattern"].as_str().unwrap();
    let host = regex_lite_match(pattern);
    assert!(host("ghcr.io") && host("registry.example.com:5000"));
    assert!(!host("https://ghcr.io") && !host("ghcr.io/acme") && !host(""));
}

/// The registry pattern, checked by the same rule the apiserver applies (a CEL `matches`).
fn regex_lite_match(pattern: &str) -> impl Fn(&str) -> bool + '_ {
    move |value: &str| {
        let schema = json!({
            "type": "object",
            "properties": {"v": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": format!("self.v.matches('{pattern}')"), "message": "no"}],
        });
        Validator::new()
            .validate(&schema, &json!({"v": value}), None)
            .is_ok()
    }
}

fn cluster_spec() -> Value {
    json!({
        "type": "TRAINING",
        "image": "pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime",
        "gpu": {"typeIds": ["NVIDIA H100 80GB HBM3"], "count": 8},
        "nodeCount": 4,
    })
}

#[test]
fn cluster_needs_an_image_and_refuses_a_registry_credential() {
    assert!(violations::<Cluster>("Cluster", cluster_spec(), None).is_empty());
    let mut no_image = cluster_spec();
    no_image.as_object_mut().unwrap().remove("image");
    let errors = violations::<Cluster>("Cluster", no_image.clone(), None);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("set image or templateRef")),
        "{errors:?}"
    );
    no_image["templateRef"] = json!({"name": "trainer"});
    assert!(violations::<Cluster>("Cluster", no_image, None).is_empty());
    let mut private = cluster_spec();
    private["registryCredentialRef"] = json!({"name": "ghcr"});
    let errors = violations::<Cluster>("Cluster", private, None);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("registryCredentialRef: clusters cannot pull private images")),
        "{errors:?}"
    );
    let mut path_alone = cluster_spec();
    path_alone["volumeMountPath"] = json!("/ckpt");
    let errors = violations::<Cluster>("Cluster", path_alone, None);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("volumeMountPath needs networkVolumeRef")),
        "{errors:?}"
    );
}

#[test]
fn cluster_schema_bounds_the_shape_and_names_the_types() {
    let schema = schema_of::<Cluster>();
    let spec = &schema["properties"]["spec"]["properties"];
    assert_eq!(spec["nodeCount"]["minimum"].as_f64(), Some(2.0));
    assert_eq!(spec["nodeCount"]["maximum"].as_f64(), Some(250.0));
    assert_eq!(
        spec["gpu"]["properties"]["count"]["minimum"].as_f64(),
        Some(1.0)
    );
    assert_eq!(spec["gpu"]["properties"]["typeIds"]["minItems"], 1);
    assert_eq!(
        spec["type"]["enum"],
        json!(["TRAINING", "SLURM", "RAY", "APPLICATION"])
    );
    let required = schema["properties"]["spec"]["required"].clone();
    for field in ["type", "gpu", "nodeCount"] {
        assert!(
            required.as_array().unwrap().contains(&json!(field)),
            "{field}"
        );
    }
    assert_eq!(spec["budgetStopPolicy"]["enum"], json!(["Keep", "Delete"]));
}

/// The v1beta1 schemas.
mod beta;
/// CPU pods and global networking.
mod pod_cpu;
/// The CRDs as published, with both versions.
mod versions;
