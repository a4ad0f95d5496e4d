//! The conversions' field mappings, the annotation, and the errors.

use serde_json::{Value, json};

use super::{ANNOTATION, ConversionError, convert};

mod endpoint;
mod examples;
mod generate;
mod mappings;
mod properties;

/// `spec` as an object of `kind` in `version`, named `x` in `default`, with `annotations`.
fn object(version: &str, kind: &str, spec: Value, annotations: Option<Value>) -> Value {
    let mut metadata = json!({"name": "x", "namespace": "default", "uid": "1b4e28ba-2fa1"});
    if let Some(annotations) = annotations {
        metadata["annotations"] = annotations;
    }
    json!({"apiVersion": format!("gpucloud.io/{version}"), "kind": kind, "metadata": metadata, "spec": spec})
}

fn to_beta(kind: &str, spec: Value) -> Value {
    convert(object("v1alpha1", kind, spec, None), "gpucloud.io/v1beta1").unwrap()
}

fn to_alpha(kind: &str, spec: Value, annotations: Option<Value>) -> Value {
    convert(
        object("v1beta1", kind, spec, annotations),
        "gpucloud.io/v1alpha1",
    )
    .unwrap()
}

/// What the conversion annotation of `object` holds, when it has one.
fn kept(object: &Value) -> Option<Value> {
    let text = object["metadata"]["annotations"][ANNOTATION].as_str()?;
    Some(serde_json::from_str(text).unwrap())
}

#[test]
fn an_object_in_the_version_asked_for_comes_back_as_it_is() {
    let pod = object("v1beta1", "Pod", json!({"image": "x", "unknown": 1}), None);
    assert_eq!(convert(pod.clone(), "gpucloud.io/v1beta1").unwrap(), pod);
}

#[test]
fn unknown_versions_and_kinds_are_refused_by_name() {
    let pod = object("v1alpha1", "Pod", json!({"image": "x"}), None);
    let err = convert(pod.clone(), "gpucloud.io/v2").unwrap_err();
    assert_eq!(
        err,
        ConversionError::UnknownVersion("gpucloud.io/v2".into())
    );
    let mut other_group = pod.clone();
    other_group["apiVersion"] = json!("example.com/v1alpha1");
    assert!(matches!(
        convert(other_group, "gpucloud.io/v1beta1"),
        Err(ConversionError::UnknownVersion(v)) if v == "example.com/v1alpha1"
    ));
    let widget = object("v1alpha1", "Widget", json!({}), None);
    let err = convert(widget, "gpucloud.io/v1beta1").unwrap_err();
    assert_eq!(
        err.to_string(),
        "kind \"Widget\": not a kind of gpucloud.io"
    );
}

#[test]
fn an_unreadable_object_names_its_field() {
    let pod = object(
        "v1alpha1",
        "Pod",
        json!({"image": "x", "volumeGb": "ten"}),
        None,
    );
    let err = convert(pod, "gpucloud.io/v1beta1").unwrap_err();
    let ConversionError::Unreadable { field, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(field, "spec.volumeGb");
    let no_image = object("v1beta1", "Template", json!({}), None);
    let err = convert(no_image, "gpucloud.io/v1alpha1").unwrap_err();
    assert!(err.to_string().contains("image"), "{err}");
}

#[test]
fn kinds_with_nothing_to_keep_write_no_annotation() {
    let cases = [
        (
            "Pod",
            json!({"image": "x", "dockerArgs": "serve", "gpu": {"types": ["A"]}}),
        ),
        (
            "NetworkVolume",
            json!({"sizeGb": 10, "dataCenterId": "EU-RO-1"}),
        ),
        (
            "RegistryCredential",
            json!({"secretRef": {"name": "s"}, "registry": "ghcr.io"}),
        ),
        ("Budget", json!({"maxCostPerHour": 1.5})),
        (
            "Cluster",
            json!({"type": "TRAINING", "image": "x",
            "compute": {"gpuTypes": ["A"], "gpuCountPerPod": 2, "podCount": 3}}),
        ),
        (
            "Template",
            json!({"image": "x", "startSsh": false, "startJupyter": true}),
        ),
        (
            "Endpoint",
            json!({"templateId": "t", "gpu": {"typeIds": ["A"]},
            "idleTimeoutSeconds": 90, "executionTimeoutMs": 600000}),
        ),
    ];
    for (kind, spec) in cases {
        let beta = to_beta(kind, spec);
        assert_eq!(beta["metadata"].get("annotations"), None, "{kind}: {beta}");
        let alpha = convert(beta, "gpucloud.io/v1alpha1").unwrap();
        assert_eq!(
            alpha["metadata"].get("annotations"),
            None,
            "{kind}: {alpha}"
        );
    }
}

#[test]
fn other_annotations_and_the_status_are_left_alone() {
    let mut pod = object(
        "v1alpha1",
        "Pod",
        json!({"image": "x"}),
        Some(json!({"team": "a", "gpucloud.io/external-id": "p1"})),
    );
    pod["status"] = json!({"observedGeneration": 3, "phase": "Running", "gpuTypeId": "A"});
    let beta = convert(pod.clone(), "gpucloud.io/v1beta1").unwrap();
    assert_eq!(beta["metadata"], pod["metadata"]);
    assert_eq!(beta["status"], pod["status"]);
    assert_eq!(beta["apiVersion"], "gpucloud.io/v1beta1");
    assert_eq!(beta["kind"], "Pod");
}

#[test]
fn an_annotation_that_is_not_the_conversions_json_is_dropped_not_refused() {
    let annotations = json!({ANNOTATION: "not json", "team": "a"});
    let alpha = to_alpha(
        "Endpoint",
        json!({"templateId": "t", "gpu": {"typeIds": ["A"]}, "idleTimeout": "1m"}),
        Some(annotations),
    );
    assert_eq!(alpha["metadata"]["annotations"], json!({"team": "a"}));
    assert_eq!(alpha["spec"]["idleTimeoutSeconds"], 60);
}
