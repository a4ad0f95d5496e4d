//! The Endpoint: the shorthand, the durations, what the annotation keeps of them, and the
//! objects that cannot be converted.

use serde_json::{Value, json};

use super::{ANNOTATION, ConversionError, convert, kept, object, to_alpha, to_beta};

fn shorthand(extra: Value) -> Value {
    let mut spec = json!({"templateId": "t", "gpuTypeIds": ["A", "B"]});
    spec.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    spec
}

fn back(beta: Value) -> Value {
    convert(beta, "gpucloud.io/v1alpha1").unwrap()
}

#[test]
fn the_shorthand_is_the_gpu_block_and_comes_back_as_the_shorthand() {
    let beta = to_beta("Endpoint", shorthand(json!({})));
    assert_eq!(
        beta["spec"]["gpu"],
        json!({"typeIds": ["A", "B"], "count": 1})
    );
    assert_eq!(beta["spec"].get("gpuTypeIds"), None);
    assert_eq!(kept(&beta), Some(json!({"gpuShorthand": {}})));
    let alpha = back(beta);
    assert_eq!(alpha["spec"]["gpuTypeIds"], json!(["A", "B"]));
    assert_eq!(alpha["spec"].get("gpuCount"), None);
    assert_eq!(alpha["spec"].get("gpu"), None);
    assert_eq!(alpha["metadata"].get("annotations"), None);

    let beta = to_beta("Endpoint", shorthand(json!({"gpuCount": 2})));
    assert_eq!(beta["spec"]["gpu"]["count"], 2);
    assert_eq!(kept(&beta), Some(json!({"gpuShorthand": {"gpuCount": 2}})));
    assert_eq!(back(beta)["spec"]["gpuCount"], 2);
}

#[test]
fn the_shorthand_follows_edits_made_in_v1beta1() {
    let beta = to_beta("Endpoint", shorthand(json!({})));
    let annotations = beta["metadata"]["annotations"].clone();
    // A new count is said with the shorthand's gpuCount.
    let mut spec = beta["spec"].clone();
    spec["gpu"]["count"] = json!(4);
    let alpha = to_alpha("Endpoint", spec, Some(annotations.clone()));
    assert_eq!(alpha["spec"]["gpuCount"], 4);
    assert_eq!(alpha["spec"]["gpuTypeIds"], json!(["A", "B"]));
    // Pools cannot be said with the shorthand: the block it is.
    let mut spec = beta["spec"].clone();
    spec["gpu"] = json!({"pools": ["ADA_24"], "count": 1});
    let alpha = to_alpha("Endpoint", spec, Some(annotations));
    assert_eq!(
        alpha["spec"]["gpu"],
        json!({"pools": ["ADA_24"], "count": 1})
    );
    assert_eq!(alpha["spec"].get("gpuTypeIds"), None);
    assert_eq!(alpha["metadata"].get("annotations"), None);
}

#[test]
fn timeouts_are_durations_in_their_shortest_form() {
    let beta = to_beta(
        "Endpoint",
        shorthand(json!({"idleTimeoutSeconds": 5, "executionTimeoutMs": 600000})),
    );
    assert_eq!(beta["spec"]["idleTimeout"], "5s");
    assert_eq!(beta["spec"]["executionTimeout"], "10m");
    for (seconds, text) in [
        (90, "1m30s"),
        (3600, "1h"),
        (5400, "1h30m"),
        (3661, "1h1m1s"),
    ] {
        let beta = to_beta(
            "Endpoint",
            shorthand(json!({"idleTimeoutSeconds": seconds})),
        );
        assert_eq!(beta["spec"]["idleTimeout"], text);
        assert_eq!(back(beta)["spec"]["idleTimeoutSeconds"], seconds);
    }
    // v1alpha1's default is v1beta1's.
    let alpha = to_alpha(
        "Endpoint",
        json!({"templateId": "t", "gpu": {"typeIds": ["A"]}}),
        None,
    );
    assert_eq!(alpha["spec"]["idleTimeoutSeconds"], 5);
    assert_eq!(alpha["spec"].get("executionTimeoutMs"), None);
}

#[test]
fn milliseconds_that_are_not_whole_seconds_round_up_and_are_kept() {
    let beta = to_beta("Endpoint", shorthand(json!({"executionTimeoutMs": 5500})));
    assert_eq!(beta["spec"]["executionTimeout"], "6s");
    assert_eq!(
        kept(&beta),
        Some(json!({"gpuShorthand": {}, "executionTimeoutMs": 5500}))
    );
    let annotations = beta["metadata"]["annotations"].clone();
    assert_eq!(back(beta.clone())["spec"]["executionTimeoutMs"], 5500);
    // Edited in v1beta1 since: the new value, in milliseconds.
    let mut spec = beta["spec"].clone();
    spec["executionTimeout"] = json!("2m");
    let alpha = to_alpha("Endpoint", spec, Some(annotations));
    assert_eq!(alpha["spec"]["executionTimeoutMs"], 120000);
}

#[test]
fn a_duration_spelled_otherwise_keeps_its_spelling_on_the_way_back() {
    let spec = json!({"templateId": "t", "gpu": {"typeIds": ["A"]},
        "idleTimeout": "90s", "executionTimeout": "0h10m"});
    let alpha = to_alpha("Endpoint", spec.clone(), None);
    assert_eq!(alpha["spec"]["idleTimeoutSeconds"], 90);
    assert_eq!(alpha["spec"]["executionTimeoutMs"], 600000);
    assert_eq!(
        kept(&alpha),
        Some(json!({"idleTimeout": "90s", "executionTimeout": "0h10m"}))
    );
    let beta = convert(alpha.clone(), "gpucloud.io/v1beta1").unwrap();
    assert_eq!(beta["spec"]["idleTimeout"], "90s");
    assert_eq!(beta["spec"]["executionTimeout"], "0h10m");
    assert_eq!(beta["metadata"].get("annotations"), None);
    // Edited in v1alpha1 since: the shortest form of the new value.
    let mut edited = alpha;
    edited["spec"]["idleTimeoutSeconds"] = json!(120);
    let beta = convert(edited, "gpucloud.io/v1beta1").unwrap();
    assert_eq!(beta["spec"]["idleTimeout"], "2m");
    assert_eq!(beta["spec"]["executionTimeout"], "0h10m");
}

#[test]
fn what_cannot_be_said_in_the_other_version_is_refused_naming_the_field_and_rule() {
    let refused = |version: &str, spec: Value| {
        let to = if version == "v1alpha1" {
            "gpucloud.io/v1beta1"
        } else {
            "gpucloud.io/v1alpha1"
        };
        convert(object(version, "Endpoint", spec, None), to).unwrap_err()
    };
    let err = refused("v1alpha1", shorthand(json!({"gpu": {"typeIds": ["C"]}})));
    assert_eq!(
        err.to_string(),
        "spec.gpuTypeIds: set exactly one of gpuTypeIds (the shorthand of gpu.typeIds), gpu and cpu"
    );
    let err = refused(
        "v1alpha1",
        json!({"templateId": "t", "gpu": {"pools": ["P"]}, "gpuCount": 2}),
    );
    assert_eq!(
        err,
        ConversionError::Invalid {
            field: "spec.gpuCount".into(),
            rule: "gpuCount goes with gpuTypeIds; with gpu, set gpu.count".into()
        }
    );
    let err = refused("v1alpha1", shorthand(json!({"executionTimeoutMs": -1})));
    assert!(
        err.to_string()
            .starts_with("spec.executionTimeoutMs: must be"),
        "{err}"
    );
    for bad in ["5", "5x", "h", "1.5h", "-5s", ""] {
        let spec = json!({"templateId": "t", "gpu": {"typeIds": ["A"]}, "idleTimeout": bad});
        let err = refused("v1beta1", spec);
        assert!(
            err.to_string()
                .starts_with("spec.idleTimeout: idleTimeout must be a duration from 1s to 1h"),
            "{bad}: {err}"
        );
    }
    let spec = json!({"templateId": "t", "gpu": {"typeIds": ["A"]},
        "executionTimeout": "99999999999999999999s"});
    let err = refused("v1beta1", spec);
    assert!(
        err.to_string()
            .starts_with("spec.executionTimeout: executionTimeout must be"),
        "{err}"
    );
}

#[test]
fn the_annotation_is_consumed_even_when_nothing_in_it_applies() {
    let annotations = json!({ANNOTATION: "{\"executionTimeoutMs\": 5500}", "team": "a"});
    let spec = json!({"templateId": "t", "cpu": {"flavors": ["c"], "vcpuCount": 2}});
    let alpha = to_alpha("Endpoint", spec, Some(annotations));
    assert_eq!(alpha["metadata"]["annotations"], json!({"team": "a"}));
    assert_eq!(alpha["spec"].get("executionTimeoutMs"), None);
}
