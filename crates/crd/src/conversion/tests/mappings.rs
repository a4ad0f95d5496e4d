//! Each field `v1beta1` names or shapes otherwise, both ways: Pod, Cluster, Template.

use serde_json::json;

use super::{kept, to_alpha, to_beta};

#[test]
fn pod_docker_args_is_args_and_gpu_types_is_type_ids() {
    let beta = to_beta(
        "Pod",
        json!({"image": "x", "dockerArgs": "sleep infinity", "ports": ["22/tcp"],
            "env": [{"name": "A", "value": "1"}],
            "gpu": {"types": ["A", "B"], "count": 2, "maxPricePerHour": 1.5}}),
    );
    let spec = &beta["spec"];
    assert_eq!(spec["args"], "sleep infinity");
    assert_eq!(spec.get("dockerArgs"), None);
    assert_eq!(spec["ports"], json!(["22/tcp"]));
    assert_eq!(spec["env"], json!([{"name": "A", "value": "1"}]));
    assert_eq!(
        spec["gpu"],
        json!({"typeIds": ["A", "B"], "count": 2, "maxPricePerHour": 1.5})
    );
    let alpha = to_alpha("Pod", spec.clone(), None);
    assert_eq!(alpha["spec"]["dockerArgs"], "sleep infinity");
    assert_eq!(alpha["spec"].get("args"), None);
    assert_eq!(
        alpha["spec"]["gpu"],
        json!({"types": ["A", "B"], "count": 2, "maxPricePerHour": 1.5})
    );
}

#[test]
fn cluster_compute_is_the_gpu_block_and_node_count() {
    let beta = to_beta(
        "Cluster",
        json!({"type": "SLURM", "image": "x", "args": "run", "startSsh": true,
            "compute": {"gpuTypes": ["H100", "A100"], "gpuCountPerPod": 8, "podCount": 4}}),
    );
    let spec = &beta["spec"];
    assert_eq!(
        spec["gpu"],
        json!({"typeIds": ["H100", "A100"], "count": 8})
    );
    assert_eq!(spec["nodeCount"], 4);
    assert_eq!(spec.get("compute"), None);
    assert_eq!(
        (&spec["args"], &spec["startSsh"]),
        (&json!("run"), &json!(true))
    );
    let alpha = to_alpha("Cluster", spec.clone(), None);
    assert_eq!(
        alpha["spec"]["compute"],
        json!({"gpuTypes": ["H100", "A100"], "gpuCountPerPod": 8, "podCount": 4})
    );
    // v1beta1's count defaults to 1, which v1alpha1 then says.
    let alpha = to_alpha(
        "Cluster",
        json!({"type": "RAY", "image": "x", "gpu": {"typeIds": ["A"]}, "nodeCount": 2}),
        None,
    );
    assert_eq!(alpha["spec"]["compute"]["gpuCountPerPod"], 1);
}

#[test]
fn template_container_fields_move_and_start_flags_stay_as_written() {
    let beta = to_beta(
        "Template",
        json!({"image": "x", "args": "serve", "ports": ["8888/http"], "startSsh": false}),
    );
    assert_eq!(beta["spec"]["args"], "serve");
    assert_eq!(beta["spec"]["ports"], json!(["8888/http"]));
    assert_eq!(beta["spec"]["startSsh"], false);
    assert_eq!(beta["spec"].get("startJupyter"), None, "unset stays unset");
    assert_eq!(kept(&beta), None);
    let alpha = to_alpha("Template", beta["spec"].clone(), None);
    assert_eq!(alpha["spec"]["args"], "serve");
    assert_eq!(alpha["spec"].get("startJupyter"), None);
}
