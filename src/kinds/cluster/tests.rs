//! Unit tests of the Cluster adapter: placement, plans, readiness, the `maxRuntime` hold,
//! status and the ConfigMap, without a network.

use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::json;

use super::config_map;
use super::decide::*;
use super::*;
use gpucloud_crd::ClusterSpec;
use gpucloud_crd::cluster::ClusterPhase;
use gpucloud_crd::guardrails::GuardrailStatus;
use gpucloud_platform::domain::ClusterNode;

fn obj(spec: serde_json::Value) -> Cluster {
    let mut base = json!({
        "type": "TRAINING",
        "image": "trainer:1",
        "gpu": {"typeIds": ["H100", "A100"], "count": 8}, "nodeCount": 2,
        "env": [{"name": "EPOCHS", "value": "3"}],
    });
    base.as_object_mut()
        .unwrap()
        .extend(spec.as_object().unwrap().clone());
    let spec: ClusterSpec = serde_json::from_value(base).unwrap();
    let mut c = Cluster::new("train", spec);
    c.metadata = crate::kinds::shared::fixtures::applied("train");
    c.metadata.generation = Some(1);
    c
}

fn desired(c: &Cluster) -> DesiredCluster {
    let env = vec![("EPOCHS".to_string(), "3".to_string())];
    DesiredCluster {
        account: AccountId::any(),
        request: ClusterRequest {
            name: remote_name(c, None),
            cluster_type: c.spec.cluster_type.as_str().into(),
            gpu_type_id: String::new(),
            gpu_count_per_pod: c.spec.gpu.count as u32,
            pod_count: c.spec.node_count as u32,
            data_center_id: None,
            container: container_of(c, env, None, None),
            volume_mount_path: DEFAULT_MOUNT_PATH.into(),
            start_ssh: false,
        },
        gpu_types: c.spec.gpu.type_ids.clone(),
        data_center_ids: c.spec.data_center_ids.clone(),
        max_price_per_hour: c.spec.max_price_per_hour,
        update_strategy: c.spec.update_strategy,
        budget_stop: None,
    }
}

fn offer(gpu: &str, dc: &str, price: f64, in_stock: bool) -> ClusterOffer {
    ClusterOffer {
        gpu_type_id: gpu.into(),
        data_center_id: dc.into(),
        max_gpus_per_machine: 8,
        price_per_hour: Some(price),
        in_stock,
    }
}

fn node(rank: u32, status: &str) -> ClusterNode {
    ClusterNode {
        id: format!("pod-{rank}"),
        rank: Some(rank),
        role: None,
        address: Some(format!("10.65.0.{}", rank + 2)),
        status: status.into(),
        cost_per_hour: if status == "RUNNING" { 20.0 } else { 0.0 },
    }
}

/// The remote cluster `c` would make, with `statuses` for its nodes.
fn remote(c: &Cluster, statuses: &[&str]) -> RemoteCluster {
    let d = desired(c);
    RemoteCluster {
        id: "cl-1".into(),
        name: d.request.name.clone(),
        cluster_type: "TRAINING".into(),
        gpu_type_id: "H100".into(),
        gpu_count_per_pod: 8,
        pod_count: 2,
        data_center_id: Some("US-TX-3".into()),
        cidr: Some("10.65.0.0/16".into()),
        primary_pod_id: Some("pod-0".into()),
        ssh_endpoint: None,
        template_id: None,
        created_at: "2026-11-26T00:00:00Z".into(),
        members: statuses
            .iter()
            .enumerate()
            .map(|(i, s)| node(i as u32, s))
            .collect(),
        container: Some(d.request.container.clone()),
    }
}

#[test]
fn placement_follows_the_priority_list_and_says_why_each_offer_was_left_out() {
    let c = obj(json!({"maxPricePerHour": 50.0}));
    let offers = vec![
        offer("A100", "EU-RO-1", 30.0, true),
        offer("H100", "US-TX-3", 60.0, true),
        offer("H100", "US-KS-2", 40.0, false),
        offer("H100", "EU-SE-1", 45.0, true),
    ];
    let (chosen, refused) = candidates(&desired(&c), &offers);
    let at: Vec<String> = chosen.iter().map(Candidate::describe).collect();
    assert_eq!(at, ["H100 in EU-SE-1", "A100 in EU-RO-1"]);
    assert_eq!(refused.len(), 2);
    assert!(
        refused[0].reason.contains("above maxPricePerHour 50"),
        "{refused:?}"
    );
    assert_eq!(refused[1].candidate, "H100 in US-KS-2");
    assert!(refused[1].reason.contains("no stock"), "{refused:?}");
}

#[test]
fn placement_refuses_unknown_types_nodes_larger_than_a_machine_and_other_data_centers() {
    let c = obj(json!({
        "gpu": {"typeIds": ["B200", "H100", "A100"], "count": 8}, "nodeCount": 2,
        "dataCenterIds": ["EU-RO-1"],
    }));
    let mut small = offer("H100", "EU-RO-1", 10.0, true);
    small.max_gpus_per_machine = 4;
    let offers = vec![small, offer("A100", "US-TX-3", 10.0, true)];
    let (chosen, refused) = candidates(&desired(&c), &offers);
    assert!(chosen.is_empty());
    let reasons: Vec<String> = refused
        .iter()
        .map(|r| format!("{}: {}", r.candidate, r.reason))
        .collect();
    assert!(
        reasons[0].starts_with("B200: not a GPU type"),
        "{reasons:?}"
    );
    assert!(
        reasons[1].contains("above its 4 GPUs per machine"),
        "{reasons:?}"
    );
    assert!(reasons[2].contains("not offered in EU-RO-1"), "{reasons:?}");
    assert_eq!(nothing_fits(&refused).reason, "NoCapacity");
}

#[test]
fn only_price_refusals_say_price_above_cap() {
    let c = obj(json!({"maxPricePerHour": 1.0}));
    let offers = vec![offer("H100", "US-TX-3", 60.0, true)];
    let (chosen, refused) = candidates(&desired(&c), &offers);
    assert!(chosen.is_empty());
    let failure = nothing_fits(&refused);
    assert_eq!(failure.reason, "PriceAboveCap");
    assert!(
        failure.stalls && !failure.is_permanent(),
        "stalled, and retried"
    );
    assert!(
        failure.message.contains("H100 in US-TX-3"),
        "{}",
        failure.message
    );
}

#[test]
fn the_members_carry_the_tag_and_the_spec_wins_over_the_template() {
    let c = obj(json!({"ports": ["22/tcp"]}));
    let template = NodeContainer {
        image: "base:1".into(),
        args: Some("--serve".into()),
        disk_gb: Some(50),
        ports: vec!["8888/http".into()],
        env: vec![
            ("EPOCHS".into(), "9".into()),
            ("HF_HOME".into(), "/h".into()),
        ],
        network_volume_id: None,
    };
    let env = vec![("EPOCHS".to_string(), "3".to_string())];
    let node = container_of(&c, env, Some(template), Some("vol-1".into()));
    assert_eq!(node.image, "trainer:1");
    assert_eq!(node.args.as_deref(), Some("--serve"));
    assert_eq!(node.disk_gb, Some(50));
    assert_eq!(node.ports, ["22/tcp"]);
    assert_eq!(
        node.env,
        [
            ("EPOCHS".into(), "3".into()),
            (
                TAG_ENV.into(),
                "1b4e28ba-2fa1-11d2-883f-0016d3cca427".into()
            ),
            ("HF_HOME".into(), "/h".into()),
        ]
    );
    assert_eq!(node.network_volume_id.as_deref(), Some("vol-1"));
}

#[test]
fn a_rename_is_made_in_place_and_a_shape_change_replaces_or_blocks() {
    let c = obj(json!({}));
    let live = remote(&c, &["RUNNING", "RUNNING"]);
    assert_eq!(plan_cluster(&desired(&c), &live, None), Plan::UpToDate);

    let renamed = obj(json!({"name": "big-run"}));
    assert_eq!(
        plan_cluster(&desired(&renamed), &live, None),
        Plan::Update(vec![ClusterChange::Rename("big-run".into())])
    );

    let bigger = obj(json!({
        "gpu": {"typeIds": ["H100"], "count": 8}, "nodeCount": 4,
        "image": "trainer:2",
    }));
    match plan_cluster(&desired(&bigger), &live, None) {
        Plan::Replace { reason } => {
            assert!(
                reason.contains("spec.compute.podCount, spec.image"),
                "{reason}"
            )
        }
        other => panic!("want Replace, got {other:?}"),
    }
    let never = obj(json!({
        "gpu": {"typeIds": ["H100"], "count": 8}, "nodeCount": 4,
        "updateStrategy": "Never",
    }));
    assert!(matches!(
        plan_cluster(&desired(&never), &live, None),
        Plan::Blocked(f) if f.reason == "ImmutableFieldChanged" && f.message.contains("spec.compute.podCount")
    ));
    // A fallback type in the list is no change.
    let mut on_a100 = live.clone();
    on_a100.gpu_type_id = "A100".into();
    assert_eq!(plan_cluster(&desired(&c), &on_a100, None), Plan::UpToDate);
}

#[test]
fn the_operators_tag_is_no_env_change() {
    let c = obj(json!({}));
    let mut live = remote(&c, &["RUNNING", "RUNNING"]);
    if let Some(node) = live.container.as_mut() {
        node.env.retain(|(k, _)| k != TAG_ENV);
    }
    assert_eq!(plan_cluster(&desired(&c), &live, None), Plan::UpToDate);
}

#[test]
fn ready_once_every_node_runs() {
    let c = obj(json!({}));
    assert!(matches!(
        readiness_of(&remote(&c, &["RUNNING", "PROVISIONING"])),
        Readiness::Progressing { message, .. } if message.starts_with("1/2 nodes")
    ));
    assert!(matches!(
        readiness_of(&remote(&c, &["RUNNING", "RUNNING"])),
        Readiness::Ready { .. }
    ));
    // Fewer members listed than the shape asks for is not Ready.
    assert!(matches!(
        readiness_of(&remote(&c, &["RUNNING"])),
        Readiness::Progressing { .. }
    ));
}

#[test]
fn max_runtime_holds_the_cluster_deleted_until_the_spec_is_edited() {
    let limit = Some(Duration::from_secs(3600));
    let start: Timestamp = "2026-11-26T00:00:00Z".parse().unwrap();
    let early = start + SignedDuration::from_mins(30);
    let late = start + SignedDuration::from_mins(61);
    let running = runtime_decision(limit, None, Some(1), Some(start), early);
    assert_eq!(running.hold, None);
    assert_eq!(running.due_in, Some(Duration::from_secs(1800)));

    let spent = runtime_decision(limit, None, Some(1), Some(start), late);
    let hold = spent.hold.expect("held at the limit");
    assert!(
        hold.message.contains("maxRuntime 3600s"),
        "{}",
        hold.message
    );

    // Deleted, no start any more: the hold stands at the same generation...
    let previous = GuardrailStatus {
        hold: Some(hold.clone()),
        ..GuardrailStatus::default()
    };
    let held = runtime_decision(limit, Some(&previous), Some(1), None, late);
    assert_eq!(held.hold, Some(hold));
    // ...and an edit of the spec lets it be created again.
    let edited = runtime_decision(limit, Some(&previous), Some(2), None, late);
    assert_eq!(edited, RuntimeDecision::default());
}

#[test]
fn a_held_cluster_is_replaced_with_the_holds_reason() {
    let c = obj(json!({}));
    let hold = runtime_decision(
        Some(Duration::from_secs(60)),
        None,
        Some(1),
        Some("2026-11-26T00:00:00Z".parse().unwrap()),
        "2026-11-26T01:00:00Z".parse().unwrap(),
    )
    .hold
    .unwrap();
    let live = remote(&c, &["RUNNING", "RUNNING"]);
    assert!(matches!(
        plan_cluster(&desired(&c), &live, Some(&hold)),
        Plan::Remove { reason: decide::DELETED_BY_MAX_RUNTIME, message } if message.contains("maxRuntime")
    ));
}

#[test]
fn status_reports_every_node_the_cost_and_the_configmap() {
    let c = obj(json!({}));
    let live = remote(&c, &["RUNNING", "RUNNING"]);
    let refused = vec![PlacementRefusal {
        candidate: "H100 in EU-RO-1".into(),
        reason: "no room for every node".into(),
    }];
    let s = status_of(&c, Some(&live), &refused, Seen::default(), None);
    assert_eq!(s.phase, Some(ClusterPhase::Running));
    assert_eq!(s.nodes.as_deref(), Some("2/2"));
    assert_eq!(s.cost_per_hour, Some(40.0));
    assert_eq!(s.primary_address.as_deref(), Some("10.65.0.2"));
    assert_eq!(s.members[0].role, "primary");
    assert_eq!(s.members[1].role, "worker");
    assert_eq!(s.config_map.as_deref(), Some("train-cluster"));
    assert_eq!(s.refusals, refused);
    assert!(s.started_at.is_some());

    let mut with_status = c.clone();
    with_status.status = Some(s.clone());
    let later = status_of(&with_status, Some(&live), &[], Seen::default(), None);
    assert_eq!(later.refusals, refused, "kept until another create");

    let provisioning = remote(&c, &["RUNNING", "PROVISIONING"]);
    let s = status_of(&c, Some(&provisioning), &[], Seen::default(), None);
    assert_eq!(s.phase, Some(ClusterPhase::Provisioning));
    assert_eq!(s.config_map, None);
}

#[test]
fn the_configmap_has_what_torchrun_and_mpi_read() {
    let c = obj(json!({}));
    let data = config_map::data_of(&remote(&c, &["RUNNING", "RUNNING"])).unwrap();
    assert_eq!(data["MASTER_ADDR"], "10.65.0.2");
    assert_eq!(data["NNODES"], "2");
    assert_eq!(data["NPROC_PER_NODE"], "8");
    assert_eq!(data["WORLD_SIZE"], "16");
    assert_eq!(data["NODE_ADDRS"], "10.65.0.2 10.65.0.3");
    assert_eq!(data["hostfile"], "10.65.0.2 slots=8\n10.65.0.3 slots=8\n");
    assert_eq!(data["CLUSTER_ID"], "cl-1");
    let mut unaddressed = remote(&c, &["RUNNING", "PROVISIONING"]);
    unaddressed.members[1].address = None;
    assert_eq!(config_map::data_of(&unaddressed), None);
}

#[tokio::test]
async fn claims_by_tag_survive_a_rename_and_by_name_before_members_are_listed() {
    let c = obj(json!({}));
    let kube = crate::kinds::shared::fixtures::idle_kube_client();
    let adapter = ClusterAdapter::new(kube, Duration::from_secs(30), Clock::default());
    let mut live = ClusterView::listed(remote(&c, &["RUNNING", "RUNNING"]));
    live.cluster.name = "renamed-by-hand".into();
    assert!(adapter.claims(&c, &live));
    live.cluster.container = None;
    assert!(!adapter.claims(&c, &live));
    live.cluster.name = remote_name(&c, None);
    assert!(adapter.claims(&c, &live));
    let mut other = obj(json!({}));
    other.metadata.uid = Some("99999999-0000-0000-0000-000000000000".into());
    let theirs = ClusterView::listed(remote(&other, &["RUNNING", "RUNNING"]));
    assert!(!adapter.claims(&c, &theirs));
}

#[test]
fn a_create_that_placed_nothing_reports_what_it_refused() {
    let c = obj(json!({}));
    let refused = vec![PlacementRefusal {
        candidate: "H100 in US-TX-3".into(),
        reason: "no room for every node".into(),
    }];
    let s = status_of(&c, None, &refused, Seen::default(), None);
    assert_eq!(s.phase, Some(ClusterPhase::Pending));
    assert_eq!(s.refusals, refused);
    let failure = nothing_fits(&refused).with_notes(super::refusal_notes(&refused));
    assert_eq!(failure.notes.len(), 1);
    assert_eq!(failure.notes[0].reason, "PlacementRefused");
    assert_eq!(
        failure.notes[0].message,
        "H100 in US-TX-3: no room for every node"
    );
}
