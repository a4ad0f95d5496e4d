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
fn template_start_flags_left_to_the_platform_are_written_out_as_true_and_kept_unset() {
    let beta = to_beta("Template", json!({"image": "x", "args": "serve"}));
    assert_eq!(beta["spec"]["startSsh"], true);
    assert_eq!(beta["spec"]["startJupyter"], true);
    assert_eq!(beta["spec"]["args"], "serve");
    assert_eq!(
        kept(&beta),
        Some(json!({"unset": ["startSsh", "startJupyter"]}))
    );
    let alpha = super::convert(beta.clone(), "gpucloud.io/v1alpha1").unwrap();
    assert_eq!(alpha["spec"].get("startSsh"), None);
    assert_eq!(alpha["spec"].get("startJupyter"), None);
    assert_eq!(
        alpha["metadata"].get("annotations"),
        None,
        "consumed: {alpha}"
    );

    // Only the one left unset is kept.
    let beta = to_beta("Template", json!({"image": "x", "startSsh": false}));
    assert_eq!(beta["spec"]["startSsh"], false);
    assert_eq!(kept(&beta), Some(json!({"unset": ["startJupyter"]})));

    // Set to false in v1beta1 since: the user's word, not unset any more.
    let mut edited = beta["spec"].clone();
    edited["startJupyter"] = json!(false);
    let annotations = beta["metadata"]["annotations"].clone();
    let alpha = to_alpha("Template", edited, Some(annotations));
    assert_eq!(alpha["spec"]["startJupyter"], false);
    assert_eq!(alpha["spec"]["startSsh"], false);
}

#[test]
fn template_start_flags_unset_in_v1beta1_are_false_in_v1alpha1() {
    let alpha = to_alpha("Template", json!({"image": "x"}), None);
    assert_eq!(alpha["spec"]["startSsh"], false);
    assert_eq!(alpha["spec"]["startJupyter"], false);
}
