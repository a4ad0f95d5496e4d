//! Unit tests of the REST v2 cluster bodies: what the schema refuses (422), what the catalog
//! refuses (400), and the member deploy a valid create becomes.

use super::*;
use crate::fixtures::Fixtures;
use crate::v2::request::parse_body;
use crate::world::clusters::{ClusterKind, ClusterSpec};

const RTX4090: &str = "NVIDIA GeForce RTX 4090";

fn world() -> World {
    World::from_fixtures(&Fixtures::built_in()).unwrap()
}

fn body(extra: Value) -> Value {
    let mut b = json!({
        "name": "trainers",
        "type": "SLURM",
        "compute": {"gpuTypeId": RTX4090, "gpuCountPerPod": 2, "podCount": 2},
        "image": "runpod/pytorch:2.8",
        "ports": ["22/tcp"],
    });
    for (k, v) in extra.as_object().unwrap() {
        b[k] = v.clone();
    }
    b
}

/// The create's answer short of placement: `Ok` with the spec, or the status and errors.
fn spec_of(w: &World, b: &Value) -> Result<ClusterSpec, (u16, String)> {
    let refused = |p: Problem| (p.status.as_u16(), format!("{} {:?}", p.detail, p.errors));
    let parsed: CreateClusterBody = parse_body(b.to_string().as_bytes()).map_err(refused)?;
    check_create(&parsed).map_err(refused)?;
    cluster_spec(w, parsed).map_err(refused)
}

#[test]
fn a_valid_create_is_the_members_pod_deploy() {
    let w = world();
    let s = spec_of(
        &w,
        &body(json!({"dataCenterIds": ["US-TX-3"], "startJupyter": true, "env": {"A": "1"}})),
    )
    .unwrap();
    assert_eq!((s.kind, s.pod_count), (ClusterKind::Slurm, 2));
    assert_eq!(s.member.gpu_type_id.as_deref(), Some(RTX4090));
    assert_eq!(s.member.gpu_count, Some(2));
    assert_eq!(s.member.data_center_ids, ["US-TX-3"]);
    assert_eq!(s.member.image_name.as_deref(), Some("runpod/pytorch:2.8"));
    assert!(s.member.env.iter().any(|(k, v)| k == "A" && v == "1"));
    assert!(s.member.env.iter().any(|(k, _)| k == "JUPYTER_PASSWORD"));
}

#[test]
fn the_schema_is_refused_with_422_naming_the_field() {
    let w = world();
    let compute = |count: u32, pods: u32| json!({"compute": {"gpuTypeId": RTX4090, "gpuCountPerPod": count, "podCount": pods}});
    for (extra, field) in [
        (compute(2, 1), "compute.podCount"),
        (compute(2, 251), "compute.podCount"),
        (compute(0, 2), "compute.gpuCountPerPod"),
        (json!({"registry": "reg-1"}), "registry"),
        (json!({"templateId": "tmpl-pytorch"}), "templateId"),
        (json!({"type": "BATCH"}), "type"),
        (json!({"name": ""}), "name"),
        (json!({"disk": 0}), "disk"),
        (
            json!({"compute": {"gpuTypeId": RTX4090, "gpuCountPerPod": 1, "podCount": 2, "cloud": "SECURE"}}),
            "compute.cloud",
        ),
    ] {
        let (status, errors) = spec_of(&w, &body(extra.clone())).unwrap_err();
        assert_eq!(status, 422, "{extra}: {errors}");
        assert!(errors.contains(field), "{extra}: {errors}");
    }
}

#[test]
fn the_catalogs_rules_are_refused_with_400() {
    let w = world();
    for (extra, field) in [
        (
            json!({"compute": {"gpuTypeId": RTX4090, "gpuCountPerPod": 9, "podCount": 2}}),
            "compute.gpuCountPerPod",
        ),
        (
            json!({"compute": {"gpuTypeId": "NVIDIA B9000", "gpuCountPerPod": 1, "podCount": 2}}),
            "compute.gpuTypeId",
        ),
        (json!({"dataCenterIds": ["MARS-1"]}), "dataCenterIds"),
        (json!({"image": " "}), "image"),
        (json!({"ports": ["eighty"]}), "ports"),
        (
            json!({"mounts": {"network": [{"volumeId": "nv-nope", "path": "/data"}]}}),
            "nv-nope",
        ),
        (
            json!({"dataCenterIds": ["US-TX-3"], "mounts": {"network": [{"volumeId": "nv-demo0001", "path": "/data"}]}}),
            "dataCenterIds",
        ),
    ] {
        let (status, errors) = spec_of(&w, &body(extra.clone())).unwrap_err();
        assert_eq!(status, 400, "{extra}: {errors}");
        assert!(errors.contains(field), "{extra}: {errors}");
    }
}

#[test]
fn an_update_is_a_rename_and_nothing_else() {
    let rename = |b: &str| parse_body::<UpdateClusterBody>(b.as_bytes()).and_then(check_update);
    assert_eq!(rename(r#"{"name":"new"}"#).unwrap(), "new");
    for b in [
        r#"{}"#,
        r#"{"name":""}"#,
        r#"{"name":null}"#,
        r#"{"name":"n","image":"x"}"#,
        r#"{"compute":{"podCount":3}}"#,
    ] {
        assert_eq!(
            rename(b).unwrap_err().status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{b}"
        );
    }
}
