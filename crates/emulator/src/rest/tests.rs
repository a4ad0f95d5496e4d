//! Unit tests of the REST v1 handlers: defaults, the rules of endpoint, volume and template
//! bodies (naming the field), and updates merged before they are checked.

use super::*;
use crate::fixtures::Fixtures;
use serde_json::json;

fn world() -> World {
    World::from_fixtures(&Fixtures::built_in()).unwrap()
}

fn map(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn create_body() -> Value {
    json!({"name": "e", "templateId": "tmpl-worker-base", "gpuTypeIds": ["NVIDIA A40"], "workersMin": 0, "workersMax": 2, "idleTimeout": 30})
}

#[test]
fn endpoint_defaults() {
    let e = endpoint_from_body(
        &map(json!({"name": "e", "templateId": "tmpl-worker-base", "gpuTypeIds": ["NVIDIA A40"]})),
        None,
        &world(),
    )
    .unwrap();
    assert_eq!((e.idle_timeout, e.scaler_value, e.workers_max), (5, 4, 3));
    assert_eq!(e.scaler_type, ScalerType::QueueDelay);
    assert_eq!(e.execution_timeout_ms, 600_000);
    let e = endpoint_from_body(&map(create_body()), None, &world()).unwrap();
    assert_eq!((e.workers_max, e.idle_timeout), (2, 30));
}

#[test]
fn endpoint_rules_name_the_field() {
    let w = world();
    let cases = [
        (
            json!({"workersMin": 3, "workersMax": 1}),
            "workersMin: must not be greater than workersMax",
        ),
        (
            json!({"templateId": "nope"}),
            "templateId: unknown template",
        ),
        (
            json!({"gpuTypeIds": ["NVIDIA GTX 9999"]}),
            "gpuTypeIds: unknown GPU type",
        ),
        (
            json!({"gpuTypeIds": []}),
            "gpuTypeIds: must name at least one",
        ),
        (
            json!({"idleTimeout": 0}),
            "idleTimeout: must be between 1 and 3600",
        ),
        (
            json!({"idleTimeout": 3601}),
            "idleTimeout: must be between 1 and 3600",
        ),
        (
            json!({"scalerType": "FAST"}),
            "scalerType: must be QUEUE_DELAY or REQUEST_COUNT",
        ),
        (
            json!({"networkVolumeId": "nv-x"}),
            "networkVolumeId: unknown network volume",
        ),
        (json!({"colour": "red"}), "colour: unexpected property"),
        (
            json!({"workersMax": "many"}),
            "workersMax: must be an integer",
        ),
    ];
    for (patch, expected) in cases {
        let mut body = create_body();
        for (k, v) in patch.as_object().unwrap() {
            body[k] = v.clone();
        }
        let err = endpoint_from_body(&map(body), None, &w).unwrap_err();
        assert!(
            err.errors.iter().any(|e| e.starts_with(expected)),
            "{expected}: {:?}",
            err.errors
        );
    }
    let err = endpoint_from_body(&map(json!({})), None, &w).unwrap_err();
    assert_eq!(
        err.errors,
        vec![
            "name: required",
            "templateId: required",
            "gpuTypeIds: required"
        ]
    );
}

#[test]
fn endpoint_update_merges_then_checks() {
    let w = world();
    let e = endpoint_from_body(&map(create_body()), None, &w).unwrap();
    let err = endpoint_from_body(&map(json!({"workersMin": 5})), Some(&e), &w).unwrap_err();
    assert!(err.errors[0].starts_with("workersMin"));
    let u = endpoint_from_body(
        &map(json!({"workersMax": 9, "workersMin": 5})),
        Some(&e),
        &w,
    )
    .unwrap();
    assert_eq!(
        (u.id.as_str(), u.workers_min, u.name.as_str()),
        (e.id.as_str(), 5, "e")
    );
}

#[test]
fn volume_update_rules() {
    let v = NetworkVolume {
        id: "v".into(),
        name: "n".into(),
        size: 100,
        data_center_id: "EU-RO-1".into(),
        volume_type: VolumeType::Standard,
    };
    assert_eq!(
        volume_update(&map(json!({"size": 200})), &v).unwrap().size,
        200
    );
    assert_eq!(
        volume_update(&map(json!({"name": "m"})), &v).unwrap().name,
        "m"
    );
    for (body, rule) in [
        (
            json!({"size": 100}),
            "size: must be greater than the current size",
        ),
        (
            json!({"size": 50}),
            "size: must be greater than the current size",
        ),
        (json!({"size": 4001}), "size: must be between 0 and 4000"),
        (json!({"size": -1}), "size: must be between 0 and 4000"),
        (json!({"name": 3}), "name: must be a string"),
        (
            json!({"dataCenterId": "US-TX-3"}),
            "dataCenterId: unexpected property",
        ),
    ] {
        let err = volume_update(&map(body), &v).unwrap_err();
        assert_eq!(err.status.as_u16(), 400);
        assert!(err.errors[0].starts_with(rule), "{:?}", err.errors);
    }
}

#[test]
fn volume_and_template_creates() {
    let w = world();
    let v = volume_from_create(
        &map(json!({"name": "a", "size": 10, "dataCenterId": "US-TX-3"})),
        &w,
    )
    .unwrap();
    assert_eq!(v.size, 10);
    assert!(
        volume_from_create(
            &map(json!({"name": "a", "size": 10, "dataCenterId": "MARS-1"})),
            &w
        )
        .is_err()
    );
    assert!(
        volume_from_create(
            &map(json!({"name": "a", "size": 0, "dataCenterId": "US-TX-3"})),
            &w
        )
        .is_err()
    );
    let t = template_from_create(
        &map(json!({"name": "t", "imageName": "img", "ports": ["80/http"], "env": {"A": "1"}})),
        &w,
    )
    .unwrap();
    assert_eq!(t.env["A"], "1");
    assert!(
        template_from_create(&map(json!({"name": "pytorch-2.4", "imageName": "img"})), &w).is_err()
    );
    assert!(
        template_from_create(
            &map(json!({"name": "x", "imageName": "img", "ports": ["eighty"]})),
            &w
        )
        .is_err()
    );
}
