//! The v1beta1 schemas: one bound and one rule for the same field on every kind, the
//! durations, and the GPU block.

use serde_json::{Value, json};

use super::{schema_of, violations};
use crate::{Cluster, Endpoint, Pod, Template};

fn spec_properties<K: kube::CustomResourceExt>() -> Value {
    schema_of::<K>()["properties"]["spec"]["properties"].clone()
}

fn endpoint(extra: Value) -> Value {
    let mut spec = json!({"templateId": "tpl", "gpu": {"typeIds": ["NVIDIA A40"]}});
    spec.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    spec
}

fn endpoint_refusals(extra: Value) -> Vec<String> {
    violations::<Endpoint>("Endpoint", endpoint(extra), None)
}

#[test]
fn the_gpu_block_is_the_same_on_every_kind() {
    let pod = spec_properties::<Pod>()["gpu"].clone();
    let endpoint = spec_properties::<Endpoint>()["gpu"].clone();
    let cluster = spec_properties::<Cluster>()["gpu"].clone();
    for (kind, gpu) in [
        ("Pod", &pod),
        ("Endpoint", &endpoint),
        ("Cluster", &cluster),
    ] {
        let count = &gpu["properties"]["count"];
        assert_eq!(count["minimum"].as_f64(), Some(1.0), "{kind}");
        assert_eq!(count["maximum"].as_f64(), Some(16.0), "{kind}");
        assert_eq!(count["default"], 1, "{kind}");
        assert_eq!(
            gpu["properties"]["typeIds"], pod["properties"]["typeIds"],
            "{kind}"
        );
    }
    // A Pod and a Cluster say their GPUs by type ids only; an Endpoint may name pools.
    assert_eq!(pod["required"], json!(["typeIds"]));
    assert_eq!(cluster["required"], json!(["typeIds"]));
    assert_eq!(endpoint.get("required"), None);
}

#[test]
fn the_container_fields_have_one_bound_on_every_kind() {
    let (pod, template, cluster) = (
        spec_properties::<Pod>(),
        spec_properties::<Template>(),
        spec_properties::<Cluster>(),
    );
    for (kind, spec) in [
        ("Pod", &pod),
        ("Template", &template),
        ("Cluster", &cluster),
    ] {
        let disk = &spec["containerDiskGb"];
        assert_eq!(
            (disk["minimum"].as_f64(), disk["maximum"].as_f64()),
            (Some(1.0), Some(10000.0)),
            "{kind}"
        );
        assert_eq!(spec["volumeMountPath"]["pattern"], "^/.*", "{kind}");
        assert_eq!(spec["volumeMountPath"]["maxLength"], 255, "{kind}");
        assert_eq!(spec["args"]["maxLength"], 4096, "{kind}");
        assert_eq!(spec["ports"], pod["ports"], "{kind}");
        assert_eq!(spec["env"], pod["env"], "{kind}");
        assert!(spec.get("dockerArgs").is_none(), "{kind}");
    }
    for (kind, spec) in [("Pod", &pod), ("Template", &template)] {
        let volume = &spec["volumeGb"];
        assert_eq!(
            (volume["minimum"].as_f64(), volume["maximum"].as_f64()),
            (Some(0.0), Some(10000.0)),
            "{kind}"
        );
        let cuda = &spec["allowedCudaVersions"];
        assert_eq!(cuda["items"]["pattern"], r"^[0-9]+\.[0-9]+$", "{kind}");
        assert_eq!(cuda["maxItems"], 32, "{kind}");
    }
    // Unset is the platform's default for each: true for a template, false for a cluster.
    for field in ["startSsh", "startJupyter"] {
        assert_eq!(template[field].get("default"), None, "{field}");
    }
    assert_eq!(cluster["startSsh"]["default"], false);
}

#[test]
fn endpoint_durations_are_checked_by_cel() {
    assert!(endpoint_refusals(json!({})).is_empty());
    for ok in [
        json!({"idleTimeout": "1s"}),
        json!({"idleTimeout": "1h"}),
        json!({"idleTimeout": "1m30s"}),
        json!({"executionTimeout": "5s"}),
        json!({"executionTimeout": "168h"}),
        json!({"executionTimeout": "10m"}),
    ] {
        let errs = endpoint_refusals(ok.clone());
        assert!(errs.is_empty(), "{ok}: {errs:?}");
    }
    for (refused, words) in [
        (
            json!({"idleTimeout": "0s"}),
            "idleTimeout must be a duration from 1s to 1h",
        ),
        (
            json!({"idleTimeout": "1h1s"}),
            "idleTimeout must be a duration from 1s to 1h",
        ),
        (
            json!({"executionTimeout": "4s"}),
            "executionTimeout must be a duration from 5s to 168h",
        ),
        (
            json!({"executionTimeout": "169h"}),
            "executionTimeout must be a duration from 5s to 168h",
        ),
    ] {
        let errs = endpoint_refusals(refused.clone());
        assert_eq!(errs.len(), 1, "{refused}: {errs:?}");
        assert!(errs[0].contains(words), "{refused}: {errs:?}");
    }
    let spec = spec_properties::<Endpoint>();
    assert_eq!(spec["idleTimeout"]["default"], "5s");
    assert_eq!(spec["idleTimeout"]["pattern"], "^([0-9]+[hms])+$");
    assert_eq!(spec["executionTimeout"]["pattern"], "^([0-9]+[hms])+$");
}

#[test]
fn endpoint_takes_one_gpu_block_or_cpu() {
    let refused = |spec: Value, words: &str| {
        let errs = violations::<Endpoint>("Endpoint", spec.clone(), None);
        assert!(errs.iter().any(|e| e.contains(words)), "{spec}: {errs:?}");
    };
    let one_of = "set exactly one of gpu and cpu";
    refused(json!({"templateId": "t"}), one_of);
    refused(
        json!({"templateId": "t", "gpu": {"typeIds": ["A"]}, "cpu": {"flavors": ["c"], "vcpuCount": 2}}),
        one_of,
    );
    refused(
        json!({"templateId": "t", "gpu": {"typeIds": ["A"], "pools": ["P"]}}),
        "gpu: set exactly one of pools and typeIds",
    );
    let pools =
        json!({"templateId": "t", "gpu": {"pools": ["P"], "excludedTypes": ["A"], "count": 16}});
    assert!(violations::<Endpoint>("Endpoint", pools, None).is_empty());
}

#[test]
fn cluster_counts_nodes_in_node_count() {
    let spec = spec_properties::<Cluster>();
    assert_eq!(spec["nodeCount"]["minimum"].as_f64(), Some(2.0));
    assert_eq!(spec["nodeCount"]["maximum"].as_f64(), Some(250.0));
    let required = schema_of::<Cluster>()["properties"]["spec"]["required"].clone();
    assert_eq!(required, json!(["gpu", "nodeCount", "type"]));
    let cluster = json!({"type": "TRAINING", "image": "x", "gpu": {"typeIds": ["A"], "count": 8}, "nodeCount": 4});
    assert!(violations::<Cluster>("Cluster", cluster, None).is_empty());
}

#[test]
fn pod_rules_are_those_of_v1alpha1() {
    let gpu = json!({"image": "x", "gpu": {"typeIds": ["A"]}});
    assert!(violations::<Pod>("Pod", gpu, None).is_empty());
    let both =
        json!({"image": "x", "gpu": {"typeIds": ["A"]}, "cpu": {"flavors": ["c"], "vcpuCount": 4}});
    let errs = violations::<Pod>("Pod", both, None);
    assert!(
        errs.iter()
            .any(|e| e.contains("set exactly one of gpu and cpu")),
        "{errs:?}"
    );
    let cpu_volume =
        json!({"image": "x", "cpu": {"flavors": ["c"], "vcpuCount": 4}, "volumeGb": 10});
    let errs = violations::<Pod>("Pod", cpu_volume, None);
    assert!(
        errs.iter().any(|e| e.contains("volumeGb: a CPU pod")),
        "{errs:?}"
    );
    let bad_ports = json!({"image": "x", "gpu": {"typeIds": ["A"]}, "ports": ["70000/tcp"]});
    let errs = violations::<Pod>("Pod", bad_ports, None);
    assert!(
        errs.iter().any(|e| e.contains("ports: each entry")),
        "{errs:?}"
    );
}
