//! Unit tests of the Endpoint adapter: desired state, plans, cost admission, readiness and status, without a network.

use super::*;
use gpucloud_platform::domain::GpuSelection;

fn record() -> ServerlessEndpoint {
    ServerlessEndpoint {
        id: "ep-1".into(),
        name: "team-web-1234abcd".into(),
        template_id: Some("tmpl-a".into()),
        gpus: GpuSelection::Ordered(vec!["NVIDIA A40".into()]),
        gpu_count: Some(1),
        workers_min: Some(0),
        workers_max: Some(3),
        idle_timeout_s: Some(5),
        scaler: Some(Scaler::QueueDelay(4)),
        execution_timeout_ms: Some(600_000),
        flashboot: Some(false),
        network_volume_id: None,
        job_api_url: "http://127.0.0.1:9/v2/ep-1/".into(),
    }
}

fn desired() -> DesiredEndpoint {
    EndpointSpec {
        name: "team-web-1234abcd".into(),
        template_id: "tmpl-a".into(),
        gpu_type_ids: vec!["NVIDIA A40".into()],
        gpu_count: 1,
        workers_min: 0,
        workers_max: 3,
        idle_timeout_s: 5,
        scaler: Scaler::QueueDelay(4),
        execution_timeout_ms: None,
        flashboot: false,
        network_volume_id: None,
    }
}

#[test]
fn only_a_create_or_a_raise_of_the_minimum_workers_asks_for_room() {
    use CostAdmission::{Proceed, Reserve};
    let cases = [
        // (cost before: None for a create, cost after, decision)
        (None, 0.96, Reserve(0.96)),
        (None, 0.0, Proceed),
        (Some(0.96), 1.92, Reserve(1.92)),
        (Some(0.96), 0.96, Proceed),
        (Some(1.92), 0.96, Proceed),
        (Some(0.96), 0.0, Proceed),
    ];
    for (before, after, want) in cases {
        assert_eq!(cost_admission(before, after), want, "{before:?} -> {after}");
    }
    let raise = |c: EndpointChange| moves_cost(&c);
    assert!(raise(EndpointChange {
        workers_min: Some(2),
        ..Default::default()
    }));
    assert!(raise(EndpointChange {
        gpu_count: Some(2),
        ..Default::default()
    }));
    assert!(raise(EndpointChange {
        gpu_type_ids: Some(vec!["NVIDIA L40S".into()]),
        ..Default::default()
    }));
    assert!(!raise(EndpointChange {
        workers_max: Some(9),
        flashboot: Some(true),
        ..Default::default()
    }));
}

#[test]
fn the_cost_shape_follows_the_record_and_a_change() {
    let prices = ServerlessPrices::new([
        ("NVIDIA A40".to_string(), 0.48),
        ("NVIDIA L40S".to_string(), 0.95),
    ]);
    let r = ServerlessEndpoint {
        workers_min: Some(2),
        ..record()
    };
    assert_eq!(CostShape::of_record(&r).cost(&prices), Ok(0.96));
    let change = EndpointChange {
        gpu_count: Some(2),
        gpu_type_ids: Some(vec!["NVIDIA A40".into(), "NVIDIA L40S".into()]),
        ..Default::default()
    };
    let after = CostShape::after(&r, &change);
    assert!((after.cost(&prices).unwrap() - 3.8).abs() < 1e-9);
    let d = EndpointSpec {
        workers_min: 3,
        ..desired()
    };
    assert!((CostShape::of_desired(&d).cost(&prices).unwrap() - 1.44).abs() < 1e-9);
    assert!(CostShape::of_record(&record()).is_free());
}

#[test]
fn status_reports_the_cost_of_the_minimum_workers() {
    let adapter = EndpointAdapter::default();
    let spec: gpucloud_crd::endpoint::EndpointSpec = serde_json::from_value(
        serde_json::json!({"templateId": "t", "gpuTypeIds": ["NVIDIA A40"]}),
    )
    .unwrap();
    let mut obj = Endpoint::new("web", spec);
    let mut remote = RemoteEndpoint::listed(record());
    remote.min_workers_cost = Some(0.96);
    let s = adapter.status(&obj, Some(&remote), Seen::default());
    assert_eq!(s.min_workers_cost_per_hour, Some(0.96));
    // Not known this pass (the catalog unread): the last figure stays.
    obj.status = Some(s);
    remote.min_workers_cost = None;
    let s = adapter.status(&obj, Some(&remote), Seen::default());
    assert_eq!(s.min_workers_cost_per_hour, Some(0.96));
}

#[test]
fn equal_endpoint_is_up_to_date() {
    assert_eq!(plan_endpoint(&desired(), &record()), Plan::UpToDate);
}

#[test]
fn only_changed_fields_are_sent() {
    let d = EndpointSpec {
        workers_max: 5,
        flashboot: true,
        ..desired()
    };
    assert_eq!(
        plan_endpoint(&d, &record()),
        Plan::Update(vec![EndpointChange {
            workers_max: Some(5),
            flashboot: Some(true),
            ..Default::default()
        }])
    );
}

#[test]
fn gpu_priority_order_matters_where_the_backend_keeps_it() {
    let d = EndpointSpec {
        gpu_type_ids: vec!["NVIDIA A40".into(), "NVIDIA L40S".into()],
        ..desired()
    };
    assert!(matches!(plan_endpoint(&d, &record()), Plan::Update(_)));
    let reordered = ServerlessEndpoint {
        gpus: GpuSelection::Ordered(vec!["NVIDIA L40S".into(), "NVIDIA A40".into()]),
        ..record()
    };
    assert!(matches!(plan_endpoint(&d, &reordered), Plan::Update(_)));
    let pooled = ServerlessEndpoint {
        gpus: GpuSelection::Unordered(["NVIDIA L40S".to_string(), "NVIDIA A40".to_string()].into()),
        ..record()
    };
    assert_eq!(plan_endpoint(&d, &pooled), Plan::UpToDate);
}

#[test]
fn a_rollout_under_way_is_not_ready() {
    let mut remote = RemoteEndpoint::listed(record());
    assert!(matches!(readiness_of(&remote), Readiness::Ready { .. }));
    remote.rollout = Some(Rollout {
        in_progress: true,
        workers_on_latest: 1,
        workers_total: 3,
    });
    match readiness_of(&remote) {
        Readiness::Progressing { reason, message } => {
            assert_eq!(reason, "RollingOut");
            assert!(message.contains("1 of 3"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    remote.rollout = Some(Rollout {
        in_progress: false,
        workers_on_latest: 3,
        workers_total: 3,
    });
    assert!(matches!(readiness_of(&remote), Readiness::Ready { .. }));
}
