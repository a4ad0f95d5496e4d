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

/// The document leaves a cluster's image optional and names no default: a create without
/// one is placed, and its members have no image.
#[test]
fn a_create_without_an_image_is_placed_with_members_that_have_none() {
    let mut w = world();
    let mut b = body(json!({}));
    b.as_object_mut().unwrap().remove("image");
    let spec = spec_of(&w, &b).unwrap();
    assert_eq!(spec.member.image_name, None);
    let members: Vec<String> = w.create_cluster(spec, 0).unwrap().member_ids.clone();
    assert_eq!(members.len(), 2);
    for id in &members {
        assert_eq!(w.cloud.pod(id).unwrap().image_name, "");
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

/// The listing as it was built under the world's lock: one `Value` for the whole answer.
fn listed_in_one_value(app: &App) -> Vec<u8> {
    let now = app.clock.now();
    let world = app.world.lock();
    let clusters: Vec<Value> = world
        .clusters
        .values()
        .map(|c| cluster_json(app, &world, c, now))
        .collect();
    serde_json::to_vec(&json!({ "clusters": clusters })).unwrap()
}

#[tokio::test]
async fn the_listing_keeps_its_bytes_and_its_snapshots_their_moment() {
    // A clock that all but stands still: the two ways of listing see the same instant.
    let app = crate::state::Emulator::new(crate::EmulatorConfig {
        time_scale: 1e-9,
        ..crate::EmulatorConfig::default()
    })
    .unwrap();
    for name in ["a", "b"] {
        let mut world = app.world.lock();
        let spec = spec_of(&world, &body(json!({"name": name}))).unwrap();
        world.create_cluster(spec, app.clock.now()).unwrap();
    }
    let provisioning = clusters_listing(&app);
    assert_eq!(provisioning, listed_in_one_value(&app));
    let v: Value = serde_json::from_slice(&provisioning).unwrap();
    assert_eq!(v["clusters"].as_array().map(Vec::len), Some(2));
    assert!(v["clusters"][0]["network"].is_null(), "{v}");

    // Running: the primary's SSH address and the overlay appear.
    app.clock.advance(60_000);
    let running = clusters_listing(&app);
    assert_eq!(running, listed_in_one_value(&app));
    let v: Value = serde_json::from_slice(&running).unwrap();
    for c in v["clusters"].as_array().unwrap() {
        assert_eq!(c["pods"]["byStatus"]["RUNNING"], 2, "{c}");
        assert!(c["primary"]["sshEndpoint"].is_string(), "{c}");
        assert!(c["network"]["vxlanId"].is_u64(), "{c}");
    }

    // A snapshot keeps its moment; the next listing shows the rename.
    let taken = snapshots(&app.world.lock());
    let id = taken[0].cluster.id.clone();
    app.world.lock().clusters.get_mut(&id).unwrap().name = "renamed".into();
    assert_ne!(taken[0].cluster.name, "renamed");
    let v: Value = serde_json::from_slice(&clusters_listing(&app)).unwrap();
    assert_eq!(v["clusters"][0]["name"], "renamed");
    assert_eq!(clusters_listing(&app), listed_in_one_value(&app));
}

/// A cluster's answer as it was built before [`snapshot_view`]: a `serde_json::Value`.
fn built_as_a_value(app: &App, s: &ClusterSnapshot, now: crate::clock::Millis) -> Value {
    use crate::v2::pods::{PodStatus, status_of};
    use crate::world::clusters::{OVERLAY_CIDR, VXLAN_PORT};
    let c = &s.cluster;
    let members = &s.members;
    let statuses: Vec<PodStatus> = members
        .iter()
        .map(|p| status_of(p, now, app.config.pod_boot_ms))
        .collect();
    let mut by_status: std::collections::BTreeMap<&str, u32> = Default::default();
    for s in &statuses {
        *by_status.entry(s.as_str()).or_default() += 1;
    }
    let mut out = json!({
        "id": c.id,
        "name": c.name,
        "type": c.kind,
        "compute": {
            "gpuTypeId": c.gpu_type_id,
            "gpuCountPerPod": c.gpu_count_per_pod,
            "podCount": c.pod_count,
        },
        "dataCenterId": c.data_center_id,
        "pods": {"total": members.len(), "byStatus": by_status},
        "createdAt": crate::v2::timestamp(&app.clock, c.created_at),
    });
    if let (Some(primary), Some(&status)) = (members.first(), statuses.first()) {
        let mut p = json!({"podId": primary.id, "status": status.as_str()});
        if status == PodStatus::Running
            && let Some((host, port)) = &s.primary_ssh
        {
            p["sshEndpoint"] = json!(format!("{host}:{port}"));
        }
        out["primary"] = p;
        if status != PodStatus::Provisioning {
            out["network"] = json!({
                "cidr": OVERLAY_CIDR,
                "vxlanId": c.vxlan_id,
                "vxlanPort": VXLAN_PORT,
            });
        }
    }
    out
}

#[test]
fn a_cluster_view_writes_what_the_json_value_wrote() {
    use crate::pods::DesiredStatus;
    use std::sync::Arc;
    let app = crate::state::Emulator::new(crate::EmulatorConfig {
        pod_boot_ms: 10_000,
        ..crate::EmulatorConfig::default()
    })
    .unwrap();
    let snapshot = {
        let mut world = app.world.lock();
        let spec = spec_of(&world, &body(json!({"name": "q\"uoted\\ \u{e9}"}))).unwrap();
        let id = world.create_cluster(spec, 1_000).unwrap().id.clone();
        let c = world.clusters.get(&id).unwrap().clone();
        ClusterSnapshot::take(&world, &c)
    };
    assert_eq!(snapshot.members.len(), 2);
    assert!(snapshot.primary_ssh.is_some());
    // Every status of the primary, a member in another status, with and without the SSH
    // address, and no members at all.
    let with = |edit: &dyn Fn(&mut crate::pods::Pod), rank: usize, ssh: bool| {
        let mut s = snapshot.clone();
        let mut p = (*s.members[rank]).clone();
        edit(&mut p);
        s.members[rank] = Arc::new(p);
        if !ssh {
            s.primary_ssh = None;
        }
        s
    };
    let exited = |p: &mut crate::pods::Pod| p.desired = DesiredStatus::Exited;
    let unchanged = |_: &mut crate::pods::Pod| {};
    let cases = [
        snapshot.clone(),
        with(&exited, 0, true),
        with(&exited, 1, true),
        with(&unchanged, 0, false),
        ClusterSnapshot {
            members: Vec::new(),
            ..snapshot.clone()
        },
    ];
    let mut seen = std::collections::BTreeSet::new();
    // Provisioning, starting, running.
    for now in [1_000, 8_000, 60_000] {
        for s in &cases {
            let old = serde_json::to_string(&built_as_a_value(&app, s, now)).unwrap();
            let new = serde_json::to_string(&snapshot_view(&app, s, now)).unwrap();
            assert_eq!(new, old, "at {now}");
            let v: Value = serde_json::from_str(&new).unwrap();
            seen.insert(format!(
                "{}/{}/{}",
                v["primary"]["status"],
                v["primary"].get("sshEndpoint").is_some(),
                v.get("network").is_some()
            ));
        }
    }
    // Each way the answer can differ was written: no primary, and each status with and
    // without the SSH address and the overlay where they apply.
    for shape in [
        "null/false/false",
        "\"PROVISIONING\"/false/false",
        "\"STARTING\"/false/true",
        "\"RUNNING\"/true/true",
        "\"RUNNING\"/false/true",
        "\"EXITED\"/false/true",
    ] {
        assert!(seen.contains(shape), "{shape} not among {seen:?}");
    }
}

#[test]
fn a_clusters_members_by_id_are_those_found_among_all_pods() {
    let mut world = world();
    for (name, pods) in [("a", 2), ("b", 3), ("c", 2)] {
        let spec = spec_of(
            &world,
            &body(json!({"name": name, "compute": {"gpuTypeId": RTX4090, "gpuCountPerPod": 1, "podCount": pods}})),
        )
        .unwrap();
        world.create_cluster(spec, 0).unwrap();
    }
    let ids =
        |s: &ClusterSnapshot| -> Vec<String> { s.members.iter().map(|p| p.id.clone()).collect() };
    // The members as they were found: every pod of the cluster, in creation order, by rank.
    let scanned = |c: &crate::world::clusters::Cluster| -> Vec<String> {
        let mut members: Vec<&crate::pods::Pod> = world
            .cloud
            .pods()
            .filter(|p| p.cluster.as_ref().is_some_and(|m| m.cluster_id == c.id))
            .collect();
        members.sort_by_key(|p| p.cluster.as_ref().map(|m| m.rank));
        members.iter().map(|p| p.id.clone()).collect()
    };
    let listed = snapshots(&world);
    assert_eq!(listed.len(), 3);
    for (listed, c) in listed.iter().zip(world.clusters.values()) {
        let taken = ClusterSnapshot::take(&world, c);
        assert_eq!(ids(&taken), scanned(c), "{}", c.name);
        assert_eq!(ids(listed), scanned(c), "{}", c.name);
        assert_eq!(ids(&taken).len(), c.pod_count as usize);
        let ranks: Vec<u32> = taken
            .members
            .iter()
            .map(|p| p.cluster.as_ref().unwrap().rank)
            .collect();
        assert_eq!(ranks, (0..c.pod_count).collect::<Vec<_>>());
        assert_eq!(taken.primary_ssh, listed.primary_ssh);
        assert!(taken.primary_ssh.is_some());
    }
}
