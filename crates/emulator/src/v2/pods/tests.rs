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
    let req = DeployRequest {
        gpu_type_id: None,
        cpu: Some(CpuRequest {
            flavor_id: "cpu3c".into(),
            vcpus: 4,
        }),
        cloud: CloudChoice::Secure,
        ..gpu_req()
    };
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
    let env = env_object(&["A=1".into(), "B=x=y".into()]);
    assert_eq!(env, json!({"A": "1", "B": "x=y"}));
}
