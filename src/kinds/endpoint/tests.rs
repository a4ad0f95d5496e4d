//! Unit tests of the Endpoint adapter: desired state, plans, cost admission, readiness and status, without a network.

use super::*;
use gpucloud_platform::domain::{
    CpuWorkers, GpuPools, GpuSelection, LoadBalancerPorts, LoadBalancerUrls, Scaler,
    ServerlessPrices,
};

fn record() -> ServerlessEndpoint {
    ServerlessEndpoint {
        id: "ep-1".into(),
        name: "team-web-1234abcd".into(),
        template_id: Some("tmpl-a".into()),
        routing: Some(Routing::Queue),
        gpus: GpuSelection::Ordered(vec!["NVIDIA A40".into()]),
        pools: None,
        cpu: None,
        load_balancer_urls: None,
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
        routing: Routing::Queue,
        gpu_type_ids: vec!["NVIDIA A40".into()],
        gpu_pools: None,
        cpu: None,
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

/// The status `adapter` reports for `obj` with `remote` listed.
fn status_of(adapter: &EndpointAdapter, obj: &Endpoint, remote: &RemoteEndpoint) -> EndpointStatus {
    let state = EndpointState::default();
    adapter
        .report(obj, Some(remote), Seen::default(), &state)
        .status
}

#[test]
fn status_reports_the_cost_of_the_minimum_workers() {
    let adapter = EndpointAdapter::default();
    let spec: gpucloud_crd::endpoint::EndpointSpec = serde_json::from_value(
        serde_json::json!({"templateId": "t", "gpu": {"typeIds": ["NVIDIA A40"]}}),
    )
    .unwrap();
    let mut obj = Endpoint::new("web", spec);
    let mut remote = RemoteEndpoint::listed(record());
    remote.min_workers_cost = Some(0.96);
    let s = status_of(&adapter, &obj, &remote);
    assert_eq!(s.min_workers_cost_per_hour, Some(0.96));
    // Not known this pass (the catalog unread): the last figure stays.
    obj.status = Some(s);
    remote.min_workers_cost = None;
    let s = status_of(&adapter, &obj, &remote);
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

fn spec_of(json: serde_json::Value) -> Endpoint {
    let spec: gpucloud_crd::endpoint::EndpointSpec = serde_json::from_value(json).unwrap();
    let mut obj = Endpoint::new("web", spec);
    obj.metadata.namespace = Some("team".into());
    obj
}

#[test]
fn the_shorthand_and_the_gpu_form_ask_for_the_same_endpoint() {
    let short = spec_of(serde_json::json!({"name": "e", "templateId": "t",
        "gpu": {"typeIds": ["NVIDIA A40"], "count": 2}}));
    let long = spec_of(serde_json::json!({"name": "e", "templateId": "t",
        "gpu": {"typeIds": ["NVIDIA A40"], "count": 2}}));
    let d = desired_of(&short, "t".into(), None, None);
    assert_eq!(d, desired_of(&long, "t".into(), None, None));
    assert_eq!(d.gpu_count, 2);
    assert_eq!(d.routing, Routing::Queue);
    assert_eq!(d.scaler, Scaler::QueueDelay(4));
    // Without gpuCount, one GPU per worker.
    let one = spec_of(serde_json::json!({"templateId": "t", "gpu": {"typeIds": ["A"]}}));
    assert_eq!(desired_of(&one, "t".into(), None, None).gpu_count, 1);
}

#[test]
fn a_load_balancer_takes_its_ports_and_request_count_scaling() {
    let obj = spec_of(
        serde_json::json!({"templateId": "t", "type": "LoadBalancer",
        "gpu": {"pools": ["ADA_24"], "excludedTypes": ["NVIDIA L4"]}, "scalerValue": 3,
        "loadBalancer": {"port": 8000, "healthCheck": {"port": 8001, "path": "/healthz"}}}),
    );
    let d = desired_of(&obj, "t".into(), None, None);
    assert_eq!(
        d.routing,
        Routing::LoadBalancer(LoadBalancerPorts {
            port: 8000,
            health_port: 8001,
            health_path: "/healthz".into()
        })
    );
    assert_eq!(d.scaler, Scaler::RequestCount(3));
    assert_eq!(
        d.gpu_pools,
        Some(GpuPools {
            pools: vec!["ADA_24".into()],
            excluded_types: vec!["NVIDIA L4".into()]
        })
    );
    assert!(d.gpu_type_ids.is_empty());
    // No loadBalancer block: the platform's defaults, sent as they are.
    let bare = spec_of(
        serde_json::json!({"templateId": "t", "type": "LoadBalancer",
        "gpu": {"typeIds": ["A"]}}),
    );
    assert_eq!(
        desired_of(&bare, "t".into(), None, None).routing,
        Routing::LoadBalancer(LoadBalancerPorts::default())
    );
    assert_eq!(
        gpucloud_platform::domain::seed_unsupported(&d),
        Some("spec.type")
    );
}

#[test]
fn cpu_workers_count_no_gpus() {
    let obj = spec_of(serde_json::json!({"templateId": "t",
        "cpu": {"flavors": ["cpu5c", "cpu3c"], "vcpuCount": 4}}));
    let d = desired_of(&obj, "t".into(), None, None);
    let cpu = CpuWorkers {
        flavors: vec!["cpu5c".into(), "cpu3c".into()],
        vcpu_count: 4,
    };
    assert_eq!(d.cpu, Some(cpu.clone()));
    assert_eq!(
        gpucloud_platform::domain::seed_unsupported(&d),
        Some("spec.cpu")
    );
    // Read back with no GPU count: up to date, no gpuCount sent.
    let r = ServerlessEndpoint {
        gpus: GpuSelection::Unordered(Default::default()),
        gpu_count: None,
        cpu: Some(cpu),
        ..record()
    };
    let d = EndpointSpec {
        name: r.name.clone(),
        template_id: "tmpl-a".into(),
        gpu_type_ids: vec![],
        ..d
    };
    assert_eq!(plan_endpoint(&d, &r), Plan::UpToDate);
    let r2 = ServerlessEndpoint {
        cpu: Some(CpuWorkers {
            flavors: vec!["cpu5c".into()],
            vcpu_count: 4,
        }),
        ..r
    };
    match plan_endpoint(&d, &r2) {
        Plan::Update(c) => assert_eq!(c[0].fields(), vec!["cpu"]),
        other => panic!("{other:?}"),
    }
}

fn lb_record() -> ServerlessEndpoint {
    ServerlessEndpoint {
        routing: Some(Routing::LoadBalancer(LoadBalancerPorts::default())),
        load_balancer_urls: Some(LoadBalancerUrls {
            base: "http://h/lb/ep-1".into(),
            health: "http://h/lb/ep-1/ping".into(),
        }),
        job_api_url: String::new(),
        ..record()
    }
}

#[test]
fn a_port_change_is_sent_with_the_template_so_neither_env_is_lost() {
    let d = EndpointSpec {
        routing: Routing::LoadBalancer(LoadBalancerPorts {
            port: 8000,
            ..Default::default()
        }),
        ..desired()
    };
    match plan_endpoint(&d, &lb_record()) {
        Plan::Update(c) => {
            assert_eq!(c[0].fields(), vec!["templateId", "loadBalancer"]);
            assert_eq!(c[0].load_balancer.as_ref().unwrap().port, 8000);
        }
        other => panic!("{other:?}"),
    }
    let same = EndpointSpec {
        routing: Routing::LoadBalancer(LoadBalancerPorts::default()),
        ..desired()
    };
    assert_eq!(plan_endpoint(&same, &lb_record()), Plan::UpToDate);
}

#[test]
fn pools_are_compared_as_sent() {
    let pools = GpuPools {
        pools: vec!["ADA_24".into(), "AMPERE_48".into()],
        excluded_types: vec![],
    };
    let d = EndpointSpec {
        gpu_type_ids: vec![],
        gpu_pools: Some(pools.clone()),
        ..desired()
    };
    let r = ServerlessEndpoint {
        gpus: GpuSelection::Unordered(["NVIDIA L4".to_string()].into()),
        pools: Some(GpuPools {
            pools: vec!["AMPERE_48".into(), "ADA_24".into()],
            excluded_types: vec![],
        }),
        ..record()
    };
    assert_eq!(plan_endpoint(&d, &r), Plan::UpToDate);
    let narrowed = ServerlessEndpoint {
        pools: Some(GpuPools {
            pools: vec!["ADA_24".into()],
            excluded_types: vec![],
        }),
        ..r
    };
    match plan_endpoint(&d, &narrowed) {
        Plan::Update(c) => assert_eq!(c[0].gpu_pools, Some(pools)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_connection_config_map_carries_the_url_of_either_type() {
    let queue = connection_data(&record());
    assert_eq!(queue["url"], "http://127.0.0.1:9/v2/ep-1/");
    assert_eq!(queue["type"], "Queue");
    assert_eq!(queue["id"], "ep-1");
    assert!(!queue.contains_key("healthUrl"));
    let lb = connection_data(&lb_record());
    assert_eq!(lb["url"], "http://h/lb/ep-1");
    assert_eq!(lb["healthUrl"], "http://h/lb/ep-1/ping");
    assert_eq!(lb["type"], "LoadBalancer");
}

fn states(running: i64, idle: i64, initializing: i64, unhealthy: i64) -> WorkerStates {
    WorkerStates {
        running,
        idle,
        initializing,
        throttled: 0,
        unhealthy,
        total: running + idle + initializing + unhealthy,
    }
}

#[test]
fn a_load_balancer_is_ready_once_its_minimum_workers_serve() {
    let mut remote = RemoteEndpoint::listed(ServerlessEndpoint {
        workers_min: Some(2),
        ..lb_record()
    });
    // Not read yet: the pass goes on to read them.
    assert!(matches!(readiness_of(&remote), Readiness::Ready { .. }));
    remote.worker_states = Some(states(1, 0, 1, 1));
    match readiness_of(&remote) {
        Readiness::Progressing { reason, message } => {
            assert_eq!(reason, "WorkersStarting");
            assert!(message.contains("1 of the 2 minimum workers"), "{message}");
            assert!(message.contains("1 unhealthy"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    remote.worker_states = Some(states(1, 1, 0, 1));
    assert!(matches!(readiness_of(&remote), Readiness::Ready { .. }));
    // No minimum: Ready with no worker at all.
    remote.record.workers_min = Some(0);
    remote.worker_states = Some(states(0, 0, 0, 0));
    assert!(matches!(readiness_of(&remote), Readiness::Ready { .. }));
}

#[test]
fn every_serving_worker_is_counted_not_only_the_minimum() {
    let mut remote = RemoteEndpoint::listed(ServerlessEndpoint {
        workers_min: Some(1),
        ..lb_record()
    });
    remote.worker_cost = Some(0.5);
    assert_eq!(workers_cost(&remote), None, "workers not read yet");
    remote.worker_states = Some(states(2, 1, 1, 0));
    assert_eq!(workers_cost(&remote), Some(1.5));
    // Fewer up than the minimum: the minimum is what the platform keeps and bills.
    remote.worker_states = Some(states(0, 0, 1, 0));
    assert_eq!(workers_cost(&remote), Some(0.5));
    let adapter = EndpointAdapter::default();
    let obj = spec_of(
        serde_json::json!({"templateId": "t", "type": "LoadBalancer", "gpu": {"typeIds": ["A"]}}),
    );
    remote.worker_states = Some(states(3, 0, 0, 0));
    let s = status_of(&adapter, &obj, &remote);
    assert_eq!(s.workers_cost_per_hour, Some(1.5));
    assert_eq!(s.url.as_deref(), Some("http://h/lb/ep-1"));
    assert_eq!(s.health_url.as_deref(), Some("http://h/lb/ep-1/ping"));
    assert_eq!(
        s.endpoint_type,
        Some(gpucloud_crd::EndpointType::LoadBalancer)
    );
    assert_eq!(s.workers.as_deref(), Some("3/3"));
    assert_eq!(s.worker_states.map(|w| w.running), Some(3));
}
