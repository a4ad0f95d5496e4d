//! The Pod's CPU and global networking rules: exactly one of `gpu` and `cpu`,
//! a power-of-two size, and no GPU-only field on a CPU pod, each refusal naming its field.

use serde_json::{Value, json};

use super::{pod_spec, schema_of, violations};
use crate::Pod;

fn cpu_spec() -> Value {
    json!({"image": "ubuntu:24.04", "cpu": {"flavors": ["cpu5g", "cpu3c"], "vcpuCount": 4}})
}

fn refusals(spec: Value) -> Vec<String> {
    violations::<Pod>("Pod", spec, None)
}

#[test]
fn a_cpu_pod_and_a_gpu_pod_pass() {
    assert!(refusals(cpu_spec()).is_empty());
    let mut global = pod_spec();
    global["globalNetworking"] = json!(true);
    assert!(refusals(global).is_empty());
}

#[test]
fn exactly_one_of_gpu_and_cpu() {
    let mut both = cpu_spec();
    both["gpu"] = json!({"typeIds": ["NVIDIA A40"]});
    let neither = json!({"image": "ubuntu:24.04"});
    for spec in [both, neither] {
        let errs = refusals(spec.clone());
        assert_eq!(errs.len(), 1, "{spec}: {errs:?}");
        assert!(
            errs[0].contains("set exactly one of gpu and cpu"),
            "{errs:?}"
        );
    }
}

#[test]
fn gpu_only_fields_are_refused_on_a_cpu_pod_naming_the_field() {
    let cases = [
        (
            "idleStop",
            json!({"thresholdPercent": 5.0, "duration": "30m"}),
            "idleStop watches GPU utilisation",
        ),
        ("volumeGb", json!(20), "volumeGb: a CPU pod"),
        (
            "allowedCudaVersions",
            json!(["12.4"]),
            "allowedCudaVersions is for GPU pods",
        ),
        ("cloudType", json!("COMMUNITY"), "cloudType COMMUNITY"),
        (
            "globalNetworking",
            json!(true),
            "globalNetworking needs an NVIDIA GPU",
        ),
        ("minVcpuCount", json!(8), "a CPU pod (cpu) takes its size"),
        ("minMemoryGb", json!(16), "a CPU pod (cpu) takes its size"),
    ];
    for (field, value, message) in cases {
        let mut spec = cpu_spec();
        spec[field] = value.clone();
        let errs = refusals(spec);
        assert_eq!(errs.len(), 1, "{field}: {errs:?}");
        assert!(errs[0].contains(message), "{field}: {errs:?}");
        // The same field on a GPU pod is fine.
        let mut spec = pod_spec();
        spec[field] = value;
        assert!(refusals(spec).is_empty(), "{field} on a GPU pod");
    }
    // What a CPU pod may set: no volume, the secure cloud, no CUDA list.
    let mut spec = cpu_spec();
    spec["volumeGb"] = json!(0);
    spec["cloudType"] = json!("SECURE");
    spec["allowedCudaVersions"] = json!([]);
    spec["globalNetworking"] = json!(false);
    assert!(refusals(spec).is_empty());
}

#[test]
fn the_vcpu_count_is_a_power_of_two() {
    for ok in [2, 4, 8, 64, 512] {
        let mut spec = cpu_spec();
        spec["cpu"]["vcpuCount"] = json!(ok);
        assert!(refusals(spec).is_empty(), "{ok}");
    }
    for refused in [3, 6, 12, 100] {
        let mut spec = cpu_spec();
        spec["cpu"]["vcpuCount"] = json!(refused);
        let errs = refusals(spec);
        assert_eq!(errs.len(), 1, "{refused}: {errs:?}");
        assert!(
            errs[0].contains("cpu.vcpuCount must be a power of two"),
            "{errs:?}"
        );
    }
    let schema = schema_of::<Pod>();
    let cpu = &schema["properties"]["spec"]["properties"]["cpu"];
    assert_eq!(
        cpu["properties"]["vcpuCount"]["minimum"].as_f64(),
        Some(2.0)
    );
    assert_eq!(
        cpu["properties"]["vcpuCount"]["maximum"].as_f64(),
        Some(512.0)
    );
    assert_eq!(cpu["properties"]["flavors"]["minItems"], 1);
    assert_eq!(cpu["required"], json!(["flavors", "vcpuCount"]));
}
