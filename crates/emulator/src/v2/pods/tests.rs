//! Unit tests of the REST v2 pods: status, the view of a pod, body checks, deploy requests and the log history.

use super::*;
use crate::fixtures::Fixtures;
use crate::pods::Cloud;

fn cloud() -> Cloud {
    let f = Fixtures::built_in();
    Cloud::new(
        f.gpu_types,
        f.data_centers.into_iter().map(|d| d.id).collect(),
    )
    .with_cpu_types(f.cpu_types)
}

fn gpu_req() -> DeployRequest {
    DeployRequest {
        name: Some("p".into()),
        image_name: Some("img".into()),
        gpu_type_id: Some("NVIDIA GeForce RTX 4090".into()),
        gpu_count: Some(1),
        ports: Some("22/tcp".into()),
        ..DeployRequest::default()
    }
}

/// A CPU pod of 4 vCPUs of `cpu3c` in the secure cloud.
fn cpu_req() -> DeployRequest {
    DeployRequest {
        gpu_type_id: None,
        cpu: Some(CpuRequest {
            flavor_id: "cpu3c".into(),
            vcpus: 4,
        }),
        cloud: CloudChoice::Secure,
        ..gpu_req()
    }
}

#[test]
fn status_moves_through_the_boot() {
    let mut c = cloud();
    let id = c.deploy(gpu_req(), 1_000).unwrap().id.clone();
    let p = c.pod(&id).unwrap().clone();
    assert_eq!(status_of(&p, 1_000, 5_000), PodStatus::Provisioning);
    assert_eq!(status_of(&p, 3_600, 5_000), PodStatus::Starting);
    assert_eq!(status_of(&p, 6_000, 5_000), PodStatus::Running);
    c.stop(&id, 7_000).unwrap();
    assert_eq!(
        status_of(c.pod(&id).unwrap(), 7_000, 5_000),
        PodStatus::Exited
    );
    c.resume(&id, None, 8_000).unwrap();
    // A later start never shows PROVISIONING again.
    assert_eq!(
        status_of(c.pod(&id).unwrap(), 8_000, 5_000),
        PodStatus::Starting
    );
}

#[test]
fn actions_follow_the_document() {
    assert_eq!(
        PodStatus::Running.actions(false),
        ["stop", "restart", "terminate"]
    );
    assert_eq!(PodStatus::Exited.actions(false), ["start", "terminate"]);
    assert_eq!(
        PodStatus::Provisioning.actions(false),
        ["stop", "terminate"]
    );
    assert!(!PodStatus::Running.actions(true).contains(&"stop"));
}

#[test]
fn cpu_pods_take_vcpus_and_give_them_back() {
    let mut c = cloud();
    let req = cpu_req();
    let free = |c: &Cloud| -> u32 {
        c.machines()
            .iter()
            .filter(|m| m.cpu_flavor.as_deref() == Some("cpu3c"))
            .map(|m| m.free)
            .sum()
    };
    let before = free(&c);
    let id = c.deploy(req, 0).unwrap().id.clone();
    assert_eq!(free(&c), before - 4);
    let p = c.pod(&id).unwrap();
    assert_eq!((p.gpu_count, p.memory_in_gb), (0, 8.0));
    assert!((p.cost_per_hr - 0.12).abs() < 1e-9);
    c.stop(&id, 1).unwrap();
    assert_eq!(free(&c), before);
    c.terminate(&id, 2).unwrap();
    assert_eq!(free(&c), before);
}

#[test]
fn history_grows_with_uptime_and_is_capped() {
    let mut c = cloud();
    let id = c.deploy(gpu_req(), 0).unwrap().id.clone();
    let p = c.pod(&id).unwrap();
    let early = pod_history(p, 1_000, 5_000);
    assert!(early.iter().all(|l| l.source == LogSource::System));
    let later = pod_history(p, 5_000 + 10 * 60_000, 5_000);
    assert_eq!(
        later
            .iter()
            .filter(|l| l.line.starts_with("heartbeat"))
            .count(),
        10
    );
    let long = pod_history(p, 5_000 + 100_000 * 60_000, 5_000);
    assert!(long.len() <= MAX_LOG_LINES + 10);
    assert!(long.windows(2).all(|w| w[0].at <= w[1].at));
}

#[test]
fn env_renders_as_an_object() {
    let pairs: [String; 3] = ["B=x=y".into(), "A=1".into(), "A=2".into()];
    let env = serde_json::to_string(&EnvView(&pairs)).unwrap();
    assert_eq!(env, r#"{"A":"2","B":"x=y"}"#);
}

/// Pod answers were built as `serde_json::Value`s, whose maps sort their keys; the view
/// writes its fields in that order, so every answer keeps its bytes (it matched the old
/// builder byte for byte for these pods and instants when it replaced it).
#[test]
fn a_pod_view_writes_its_keys_in_sorted_order_in_every_state() {
    let app = crate::state::Emulator::new(crate::EmulatorConfig::default()).unwrap();
    {
        let mut w = app.world.lock();
        let reqs = [
            DeployRequest {
                ports: Some("22/tcp,8888/http".into()),
                env: vec![("B".into(), "x=y".into()), ("A".into(), "1".into())],
                ..gpu_req()
            },
            cpu_req(),
            DeployRequest {
                volume_in_gb: Some(20),
                volume_mount_path: Some("/data".into()),
                ..gpu_req()
            },
            DeployRequest {
                network_volume_id: Some("nv-demo0001".into()),
                network_volume_dc: Some("EU-RO-1".into()),
                ..gpu_req()
            },
            DeployRequest {
                cloud: CloudChoice::Community,
                gpu_count: Some(2),
                ..gpu_req()
            },
        ];
        let ids: Vec<String> = reqs
            .into_iter()
            .map(|r| w.cloud.deploy(r, 100).unwrap().id.clone())
            .collect();
        w.cloud.pod_mut(&ids[0]).unwrap().global_networking = true;
        w.cloud.pod_mut(&ids[0]).unwrap().registry = Some("r1".into());
        w.cloud.pod_mut(&ids[1]).unwrap().locked = true;
        w.cloud.pod_mut(&ids[2]).unwrap().gpu_util_percent = Some(55.4);
        w.cloud.stop(&ids[3], 200).unwrap();
        let spec = crate::world::clusters::ClusterSpec {
            name: "c".into(),
            kind: crate::world::clusters::ClusterKind::Ray,
            pod_count: 2,
            member: DeployRequest {
                image_name: Some("img".into()),
                gpu_type_id: Some("NVIDIA GeForce RTX 4090".into()),
                gpu_count: Some(1),
                ports: Some("22/tcp".into()),
                ..DeployRequest::default()
            },
        };
        w.create_cluster(spec, 100).unwrap();
    }
    let w = app.world.lock();
    let mut n = 0;
    for now in [
        0, 100, 1_000, 2_700, 5_099, 5_100, 5_101, 90_000, 10_000_000,
    ] {
        for p in w.cloud.shared_pods() {
            let snapshot = PodSnapshot::take(&w, p);
            let written = serde_json::to_string(&snapshot.view(&app, now)).unwrap();
            let sorted = serde_json::to_value(snapshot.view(&app, now)).unwrap();
            assert_eq!(written, sorted.to_string());
            assert_eq!(sorted, pod_json(&app, &w, p, now));
            n += 1;
        }
    }
    // Five pods and a cluster of two, at nine instants.
    assert_eq!(n, 63);
    drop(w);
    let listing = pods_listing_with(&app, true);
    assert_eq!(listing.to_json(), serde_json::to_vec(&listing).unwrap());
}

#[test]
fn a_failing_start_stays_starting_and_repeats_its_line() {
    use crate::start_failure::{REPEAT_MS, StartFailure};
    let mut c = cloud();
    c.fail_image("img", StartFailure::CudaTooOld, 0, 5_000);
    let id = c.deploy(gpu_req(), 1_000).unwrap().id.clone();
    let p = c.pod(&id).unwrap().clone();
    assert_eq!(status_of(&p, 1_000, 5_000), PodStatus::Provisioning);
    assert_eq!(status_of(&p, 3_600, 5_000), PodStatus::Starting);
    assert_eq!(status_of(&p, 3_600_000, 5_000), PodStatus::Starting);
    let host_cuda = p.cuda_version.clone().unwrap();
    let wanted = StartFailure::CudaTooOld.log_line("img", Some(&host_cuda));
    assert!(wanted.contains(&format!(
        "cuda>={}",
        crate::start_failure::cuda_needed_above(&host_cuda)
    )));
    // First attempt where the pull would end (1_000 + 2_500), then every 20 s.
    let at_60s = pod_history(&p, 60_000, 5_000);
    let failures: Vec<u64> = at_60s
        .iter()
        .filter(|l| l.line == wanted)
        .map(|l| l.at)
        .collect();
    assert_eq!(failures, [3_500, 3_500 + REPEAT_MS, 3_500 + 2 * REPEAT_MS]);
    assert!(at_60s.iter().all(|l| l.source == LogSource::System));
    assert!(at_60s[0].line.contains("scheduled") && at_60s[1].line.contains("pulling"));
    assert!(!at_60s.iter().any(|l| l.line == "container started"));
}

/// The document does not restrict CPU pods to the SECURE cloud: a COMMUNITY CPU pod is a
/// valid create, refused only as any pod is where the cloud has no room for it (the
/// emulator's CPU machines are all in the secure cloud).
#[test]
fn a_community_cpu_pod_is_placed_or_refused_for_capacity() {
    let world = World::from_fixtures(&Fixtures::built_in()).unwrap();
    let body = |cloud: &str| -> CreatePodBody {
        parse_body(
            json!({"name": "c", "image": "i", "cpu": {"id": "cpu3c", "vcpuCount": 4}, "cloud": cloud})
                .to_string()
                .as_bytes(),
        )
        .unwrap()
    };
    let community = deploy_request(&world, &body("COMMUNITY")).unwrap();
    assert_eq!(community.cloud, CloudChoice::Community);
    let mut c = cloud();
    let refused = placement_problem(c.deploy(community, 100).unwrap_err());
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(
        refused
            .detail
            .starts_with("There are no longer any instances available"),
        "{refused:?}"
    );
    let secure = deploy_request(&world, &body("SECURE")).unwrap();
    assert!(c.deploy(secure, 100).is_ok());
}

/// The document bounds `disk` and `mounts.persistent.size` only from below: a pod asking for
/// more than v1's limits (and more than 32 bits hold) is placed and keeps both as sent.
#[test]
fn sizes_above_v1s_limits_are_kept_as_sent() {
    let world = World::from_fixtures(&Fixtures::built_in()).unwrap();
    let big = i64::MAX;
    let body: CreatePodBody = parse_body(
        json!({"name": "p", "image": "i", "gpu": {"id": "NVIDIA GeForce RTX 4090"}, "disk": big,
            "mounts": {"persistent": {"size": 1_i64 << 40, "path": "/d"}}})
        .to_string()
        .as_bytes(),
    )
    .unwrap();
    let req = deploy_request(&world, &body).unwrap();
    assert_eq!(
        (req.container_disk_in_gb, req.volume_in_gb),
        (Some(big), Some(1 << 40))
    );
    let mut c = cloud();
    let id = c.deploy(req, 100).unwrap().id.clone();
    let p = c.pod(&id).unwrap();
    assert_eq!(
        (p.container_disk_in_gb, p.volume_in_gb),
        (big as u64, 1 << 40)
    );
}
