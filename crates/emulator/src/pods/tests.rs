//! Unit tests of the emulator's pods: placement on machines, capacity errors, stop and resume on the host, stock, prices and ports.

use super::*;
use crate::fixtures::Fixtures;

fn cloud() -> Cloud {
    let f = Fixtures::built_in();
    Cloud::new(
        f.gpu_types,
        f.data_centers.into_iter().map(|d| d.id).collect(),
    )
}

fn req(gpu: &str, count: i32) -> DeployRequest {
    DeployRequest {
        name: Some("p".into()),
        image_name: Some("img".into()),
        gpu_type_id: Some(gpu.into()),
        gpu_count: Some(count),
        ports: Some("8888/http,22/tcp".into()),
        ..DeployRequest::default()
    }
}

const H100: &str = "NVIDIA H100 80GB HBM3";

#[test]
fn deploy_takes_stock_and_stop_gives_it_back() {
    let mut c = cloud();
    let before = c.free_gpus(H100, None);
    let id = c.deploy(req(H100, 2), 0).unwrap().id.clone();
    assert_eq!(c.free_gpus(H100, None), before - 2);
    assert_eq!(c.pod(&id).unwrap().port_map.len(), 2);
    c.stop(&id, 1).unwrap();
    assert_eq!(c.pod(&id).unwrap().desired, DesiredStatus::Exited);
    assert_eq!(c.free_gpus(H100, None), before);
    c.resume(&id, None, 2).unwrap();
    assert_eq!(c.free_gpus(H100, None), before - 2);
    c.terminate(&id, 3).unwrap();
    assert_eq!(c.free_gpus(H100, None), before);
    assert_eq!(c.terminate(&id, 4), Err(PodError::NotFound(id)));
}

#[test]
fn no_stock_gives_the_platform_text() {
    let mut c = cloud();
    c.set_stock(H100, None, None, 0).unwrap();
    let err = c.deploy(req(H100, 1), 0).unwrap_err();
    assert_eq!(err.to_string(), NO_CAPACITY);
}

#[test]
fn resume_fails_when_the_host_is_taken() {
    let mut c = cloud();
    c.set_stock(H100, Some(true), None, 8).unwrap();
    c.set_stock(H100, Some(false), None, 0).unwrap();
    let a = c.deploy(req(H100, 8), 0).unwrap().id.clone();
    c.stop(&a, 1).unwrap();
    let _b = c.deploy(req(H100, 4), 2).unwrap();
    assert_eq!(c.resume(&a, None, 3).unwrap_err().to_string(), HOST_FULL);
    // Nothing changed for the stopped pod.
    assert_eq!(c.pod(&a).unwrap().desired, DesiredStatus::Exited);
}

#[test]
fn a_frozen_stock_view_shows_stock_the_machines_no_longer_have() {
    let mut c = cloud();
    let g = c.gpu_type(H100).unwrap().clone();
    c.freeze_stock_view();
    c.set_stock(H100, None, None, 0).unwrap();
    let shown = c.lowest_price(&g, 1, Some(true), None);
    assert_ne!(shown.stock_status, "None");
    assert_eq!(c.deploy(req(H100, 1), 0).unwrap_err(), PodError::NoCapacity);
    c.thaw_stock_view();
    assert_eq!(c.lowest_price(&g, 1, Some(true), None).stock_status, "None");
}

#[test]
fn validation_names_fields() {
    let mut c = cloud();
    let err = c.deploy(req(H100, 99), 0).unwrap_err();
    assert!(err.to_string().starts_with("gpuCount:"));
    let err = c.deploy(req("nope", 1), 0).unwrap_err();
    assert!(err.to_string().starts_with("gpuTypeId:"));
    let mut r = req(H100, 1);
    r.ports = Some("abc".into());
    assert!(
        c.deploy(r, 0)
            .unwrap_err()
            .to_string()
            .starts_with("ports:")
    );
    assert_eq!(c.pod_count(), 0);
}

#[test]
fn cloud_choice_and_prices() {
    let mut c = cloud();
    let g = c.gpu_type(H100).unwrap().clone();
    let p = c.lowest_price(&g, 1, Some(true), None);
    assert_eq!(p.uninterruptable_price, Some(2.99));
    assert_eq!(p.available_gpu_counts, (1..=8).collect::<Vec<_>>());
    // H100 has only secure machines: community deploys fail.
    let mut r = req(H100, 1);
    r.cloud = CloudChoice::Community;
    assert_eq!(c.deploy(r, 0).unwrap_err(), PodError::NoCapacity);
    let none = c.lowest_price(&g, 1, Some(false), None);
    assert_eq!(none.stock_status, "None");
    assert!(none.available_gpu_counts.is_empty());
}

#[test]
fn stock_words() {
    assert_eq!(stock_status(0), "None");
    assert_eq!(stock_status(2), "Low");
    assert_eq!(stock_status(8), "Medium");
    assert_eq!(stock_status(100), "High");
}

#[test]
fn set_machines_shapes_one_data_center_and_cloud() {
    const RTX4090: &str = "NVIDIA GeForce RTX 4090";
    let mut c = cloud();
    let busy = c.deploy(req(RTX4090, 2), 0).unwrap().machine_id.clone();
    let dc = c.machine(&busy).unwrap().data_center_id.clone();
    let other_dcs_before: Vec<String> = c
        .machines()
        .iter()
        .filter(|m| m.gpu_type_id == RTX4090 && m.data_center_id != dc)
        .map(|m| m.id.clone())
        .collect();
    c.set_machines(RTX4090, &dc, true, 3, 4).unwrap();
    let here: Vec<&Machine> = c
        .machines()
        .iter()
        .filter(|m| m.gpu_type_id == RTX4090 && m.data_center_id == dc && m.secure)
        .collect();
    // The pod's host stays with nothing free; three fresh machines of 4 join it.
    assert_eq!(here.len(), 4);
    assert_eq!(c.machine(&busy).unwrap().free, 0);
    let fresh: Vec<(u32, u32)> = here
        .iter()
        .filter(|m| m.id != busy)
        .map(|m| (m.total, m.free))
        .collect();
    assert_eq!(fresh, [(4, 4); 3]);
    let other_dcs_after: Vec<String> = c
        .machines()
        .iter()
        .filter(|m| m.gpu_type_id == RTX4090 && m.data_center_id != dc)
        .map(|m| m.id.clone())
        .collect();
    assert_eq!(other_dcs_after, other_dcs_before);
    assert!(c.set_machines(RTX4090, "MARS-1", true, 1, 8).is_err());
    assert!(c.set_machines(RTX4090, &dc, true, 1, 0).is_err());
}

#[test]
fn a_filled_host_refuses_the_start_until_it_is_freed() {
    let mut c = cloud();
    let a = c.deploy(req(H100, 2), 0).unwrap().id.clone();
    c.stop(&a, 1).unwrap();
    let host = c.pod(&a).unwrap().machine_id.clone();
    let free_before = c.machine(&host).unwrap().free;
    c.fill_host(&a).unwrap();
    assert_eq!(c.machine(&host).unwrap().free, 0);
    assert_eq!(c.resume(&a, None, 2).unwrap_err().to_string(), HOST_FULL);
    // A new pod is not placed on the filled host either.
    assert_eq!(c.deploy(req(H100, 1), 3).unwrap_err(), PodError::NoCapacity);
    c.free_host(&a).unwrap();
    assert_eq!(c.machine(&host).unwrap().free, free_before);
    c.resume(&a, None, 4).unwrap();
    assert_eq!(c.pod(&a).unwrap().desired, DesiredStatus::Running);
    assert_eq!(c.fill_host("nope"), Err(PodError::NotFound("nope".into())));
}

#[test]
fn a_markup_prices_new_pods_not_the_catalog_nor_older_pods() {
    let mut c = cloud();
    let before = c.deploy(req(H100, 1), 0).unwrap().id.clone();
    c.set_price_markup(H100, 1.5).unwrap();
    let after = c.deploy(req(H100, 2), 1).unwrap().id.clone();
    assert_eq!(c.pod(&before).unwrap().cost_per_hr, 2.99);
    assert_eq!(c.pod(&after).unwrap().cost_per_hr, 8.97);
    let g = c.gpu_type(H100).unwrap().clone();
    assert_eq!(
        c.lowest_price(&g, 1, Some(true), None)
            .uninterruptable_price,
        Some(2.99)
    );
    // Billing reads the marked-up rate.
    let billed = c
        .pod_usage()
        .iter()
        .find(|i| i.pod_id == after)
        .unwrap()
        .cost_per_hr;
    assert_eq!(billed, 8.97);
    // A stop and a start keep the price the pod was created at.
    c.stop(&after, 2).unwrap();
    c.resume(&after, None, 3).unwrap();
    assert_eq!(c.pod(&after).unwrap().cost_per_hr, 8.97);
    assert!(c.set_price_markup("nope", 2.0).is_err());
    assert!(c.set_price_markup(H100, 0.0).is_err());
}

#[test]
fn start_rules_mark_the_pods_that_start_after_them() {
    use crate::start_failure::StartFailure;
    let mut c = cloud();
    let running = c.deploy(req(H100, 1), 0).unwrap().id.clone();
    // Still booting at 1_000 with a 5_000 boot: the rule reaches it; at 10_000 it would not.
    c.fail_image("img", StartFailure::ImageNotFound, 1_000, 5_000);
    assert_eq!(
        c.pod(&running).unwrap().start_failure,
        Some(StartFailure::ImageNotFound)
    );
    let mut other = req(H100, 1);
    other.image_name = Some("img:2".into());
    let fine = c.deploy(other, 2_000).unwrap().id.clone();
    assert_eq!(c.pod(&fine).unwrap().start_failure, None);
    c.fail_image("img:2", StartFailure::CudaTooOld, 60_000, 5_000);
    assert_eq!(c.pod(&fine).unwrap().start_failure, None, "already running");
    // Its next start fails; a stop clears it.
    c.restart(&fine, 61_000).unwrap();
    assert_eq!(
        c.pod(&fine).unwrap().start_failure,
        Some(StartFailure::CudaTooOld)
    );
    c.stop(&fine, 62_000).unwrap();
    assert_eq!(c.pod(&fine).unwrap().start_failure, None);
    // A refused registry credential: the registry is set after the deploy, then re-armed.
    let mut r = req(H100, 1);
    r.image_name = Some("private".into());
    let private = c.deploy(r, 70_000).unwrap().id.clone();
    c.fail_registry_login("reg-1", 70_000, 5_000);
    c.pod_mut(&private).unwrap().registry = Some("reg-1".into());
    c.rearm_start(&private);
    assert_eq!(
        c.pod(&private).unwrap().start_failure,
        Some(StartFailure::RegistryAuthRefused)
    );
}

#[test]
fn cpu_stock_is_set_per_flavor_and_data_center() {
    let f = Fixtures::built_in();
    let mut c = cloud().with_cpu_types(f.cpu_types);
    let free = |c: &Cloud, dc: &str| -> u32 {
        c.machines()
            .iter()
            .filter(|m| m.cpu_flavor.as_deref() == Some("cpu3c") && m.data_center_id == dc)
            .map(|m| m.free)
            .sum()
    };
    let tx_before = free(&c, "US-TX-3");
    c.set_cpu_stock("cpu3c", "EU-RO-1", 40).unwrap();
    assert_eq!(free(&c, "EU-RO-1"), 40);
    assert_eq!(free(&c, "US-TX-3"), tx_before);
    c.set_cpu_stock("cpu3c", "US-TX-3", 0).unwrap();
    let cpu_req = |vcpus: u32, dc: &str| DeployRequest {
        cpu: Some(CpuRequest {
            flavor_id: "cpu3c".into(),
            vcpus,
        }),
        data_center_ids: vec![dc.into()],
        gpu_type_id: None,
        ..req(H100, 1)
    };
    assert_eq!(
        c.deploy(cpu_req(2, "US-TX-3"), 0).unwrap_err(),
        PodError::NoCapacity
    );
    c.deploy(cpu_req(32, "EU-RO-1"), 0).unwrap();
    assert_eq!(free(&c, "EU-RO-1"), 8);
    assert_eq!(
        c.deploy(cpu_req(16, "EU-RO-1"), 0).unwrap_err(),
        PodError::NoCapacity
    );
    assert!(c.set_cpu_stock("nope", "EU-RO-1", 1).is_err());
    assert!(c.set_cpu_stock("cpu3c", "MARS-1", 1).is_err());
}
