//! Unit tests of the REST v2 GPU catalog: availability per cloud, count and data center,
//! CUDA filters, the maximum count, and the query rules.

use super::*;
use crate::fixtures::Fixtures;
use crate::pods::{DeployRequest, PodError, cuda_parts};

fn world() -> World {
    World::from_fixtures(&Fixtures::built_in()).unwrap()
}

fn scope(products: &[Product], count: u32, secure: bool) -> GpuScope {
    GpuScope {
        products: products.to_vec(),
        count,
        secure,
        data_centers: None,
        cuda: CudaFilter::Any,
    }
}

const H100: &str = "NVIDIA H100 80GB HBM3";

/// `gpu`'s availability in `w` for `count` GPUs of `products` in one cloud.
fn availability(
    w: &World,
    gpu: &GpuTypeFixture,
    products: &[Product],
    count: u32,
    secure: bool,
) -> Value {
    gpu_availability(
        &w.cloud,
        &w.data_centers,
        gpu,
        &scope(products, count, secure),
    )
}

/// A pod of `count` H100s, the rest left to the cloud.
fn h100_pod(count: i32) -> DeployRequest {
    DeployRequest {
        name: Some("p".into()),
        image_name: Some("i".into()),
        gpu_type_id: Some(H100.into()),
        gpu_count: Some(count),
        ..DeployRequest::default()
    }
}

#[test]
fn levels() {
    assert_eq!(level(0), "NONE");
    assert_eq!(level(3), "LOW");
    assert_eq!(level(15), "MEDIUM");
    assert_eq!(level(16), "HIGH");
}

#[test]
fn availability_per_cloud_count_and_data_center() {
    let w = world();
    let h100 = w.cloud.gpu_type(H100).unwrap().clone();
    // One secure machine of 8 in US-GA-1.
    let a = availability(&w, &h100, &[Product::Pod], 1, true);
    assert_eq!(a["availability"], "MEDIUM");
    assert_eq!(a["dataCenters"][0]["id"], "US-GA-1");
    let eight = availability(&w, &h100, &[Product::Pod], 8, true);
    assert_eq!(eight["availability"], "LOW");
    let community = availability(&w, &h100, &[Product::Pod], 1, false);
    assert_eq!(community["availability"], "NONE");
    assert!(community.get("dataCenters").is_none());
    assert!(community.get("cudaVersions").is_none());
    assert_eq!(
        a["cudaVersions"][0],
        json!({"version": "12.4", "available": true})
    );
}

#[test]
fn cuda_filters_and_frozen_view() {
    let mut w = world();
    let l40s = w.cloud.gpu_type("NVIDIA L40S").unwrap().clone();
    let mut s = scope(&[Product::Pod], 1, true);
    s.cuda = CudaFilter::Exact(vec!["12.4".into()]);
    assert_eq!(
        gpu_availability(&w.cloud, &w.data_centers, &l40s, &s)["availability"],
        "NONE"
    );
    s.cuda = CudaFilter::AtLeast("12".into());
    let a = gpu_availability(&w.cloud, &w.data_centers, &l40s, &s);
    assert_eq!(a["availability"], "MEDIUM");
    assert_eq!(a["cudaVersions"].as_array().unwrap().len(), 2);
    s.cuda = CudaFilter::AtLeast("12.9".into());
    assert_eq!(
        gpu_availability(&w.cloud, &w.data_centers, &l40s, &s)["cudaVersions"],
        json!([{"version": "12.9", "available": true}])
    );

    let h100 = w.cloud.gpu_type(H100).unwrap().clone();
    w.cloud.freeze_stock_view();
    w.cloud.set_stock(H100, None, None, 0).unwrap();
    let shown = availability(&w, &h100, &[Product::Pod], 1, true);
    assert_ne!(shown["availability"], "NONE");
    w.cloud.thaw_stock_view();
    let live = availability(&w, &h100, &[Product::Pod], 1, true);
    assert_eq!(live["availability"], "NONE");
}

#[test]
fn max_count_is_the_catalogs_ceiling_not_todays_stock() {
    let mut w = world();
    assert_eq!(
        gpu_json(w.cloud.gpu_type(H100).unwrap())["maxCount"],
        json!({"secure": 8, "community": 8})
    );
    // The A100's only community machine holds 4; a pod may still ask for 8.
    let a100 = w.cloud.gpu_type("NVIDIA A100 80GB PCIe").unwrap();
    assert_eq!(max_count(a100, false), 8);

    w.cloud.freeze_stock_view();
    w.cloud.set_stock(H100, None, None, 0).unwrap();
    let h100 = w.cloud.gpu_type(H100).unwrap().clone();
    let shown = availability(&w, &h100, &[Product::Pod], 1, true);
    assert_ne!(shown["availability"], "NONE");
    assert_eq!(
        gpu_json(&h100)["maxCount"],
        json!({"secure": 8, "community": 8})
    );

    let mut secure_only = h100;
    secure_only.community_price = None;
    assert_eq!(
        gpu_json(&secure_only)["maxCount"],
        json!({"secure": 8, "community": 0})
    );
}

#[test]
fn max_count_matches_the_count_a_deploy_accepts() {
    let mut w = world();
    let h100 = w.cloud.gpu_type(H100).unwrap().clone();
    let ceiling = max_count(&h100, true);
    let req = |count: u32| h100_pod(count as i32);
    assert!(matches!(
        w.cloud.deploy(req(ceiling + 1), 0),
        Err(PodError::Invalid {
            field: "gpuCount",
            ..
        })
    ));
    assert_eq!(w.cloud.deploy(req(ceiling), 0).unwrap().gpu_count, ceiling);
}

#[test]
fn cluster_nodes_are_machines_and_serverless_needs_a_pool() {
    let mut w = world();
    let h100 = w.cloud.gpu_type(H100).unwrap().clone();
    // The one H100 machine (8 GPUs) is one node of up to 8 GPUs, however many pods fit it.
    let cluster = availability(&w, &h100, &[Product::Cluster], 2, true);
    assert_eq!(cluster["availability"], "LOW");
    let pods = availability(&w, &h100, &[Product::Pod], 2, true);
    assert_eq!(pods["availability"], "MEDIUM");
    // With 7 of its GPUs taken, the machine is no node of 2 GPUs any more.
    w.cloud.deploy(h100_pod(7), 0).unwrap();
    let cluster = availability(&w, &h100, &[Product::Cluster], 2, true);
    assert_eq!(cluster["availability"], "NONE");
    let both = availability(&w, &h100, &[Product::Cluster, Product::Pod], 1, true);
    assert_eq!(both["availability"], "LOW");
    let mut unpooled = h100.clone();
    unpooled.pool = None;
    let sls = availability(&w, &unpooled, &[Product::Serverless], 1, true);
    assert_eq!(sls["availability"], "NONE");
}

#[test]
fn query_rules() {
    let w = world();
    let q = |s: &str| -> V2Result<Option<GpuScope>> {
        let q: GpuQuery = super::super::parse_query(Some(s))?;
        gpu_scope(&w, &q)
    };
    assert!(q("").unwrap().is_none());
    // Each refused query and the status it is refused with.
    for (query, status) in [
        ("product=POD", 400),
        ("include=AVAILABILITY", 400),
        ("count=2", 400),
        (
            "include=AVAILABILITY&product=POD&cudaVersions=12.8&minCudaVersion=12",
            400,
        ),
        ("include=AVAILABILITY&product=POD&count=0", 422),
        ("include=AVAILABILITY&product=POD&countryCodes=fr", 422),
        ("include=AVAILABILITY&product=POD&cudaVersions=12", 422),
        ("include=AVAILABILITY&product=MOON", 422),
    ] {
        assert_eq!(q(query).unwrap_err().status.as_u16(), status, "{query}");
    }
    let s = q("include=AVAILABILITY&product=POD,SERVERLESS&count=2&cloud=COMMUNITY&countryCodes=RO&minCudaVersion=12")
        .unwrap()
        .unwrap();
    assert_eq!(s.count, 2);
    assert!(!s.secure);
    assert_eq!(s.data_centers, Some(vec!["EU-RO-1".to_string()]));
    assert_eq!(s.cuda, CudaFilter::AtLeast("12".into()));
}

#[test]
fn data_centers_show_what_they_host() {
    let w = world();
    let ro = w.data_centers.iter().find(|d| d.id == "EU-RO-1").unwrap();
    let plain = data_center_json(&w, ro, &[]);
    assert_eq!(plain["region"], "EUROPE");
    assert!(plain.get("gpuAvailability").is_none());
    let full = data_center_json(
        &w,
        ro,
        &[
            DataCenterInclude::GpuAvailability,
            DataCenterInclude::CpuAvailability,
        ],
    );
    let gpus = full["gpuAvailability"].as_array().unwrap();
    assert!(gpus.iter().any(|g| g["id"] == "NVIDIA GeForce RTX 4090"));
    assert!(!gpus.iter().any(|g| g["id"] == H100));
    assert_eq!(full["cpuAvailability"][0]["id"], "cpu3c");
}

#[test]
fn cuda_parts_compare_numerically() {
    assert!(cuda_parts("12.11") > cuda_parts("12.2"));
    assert!(cuda_at_least("12.8", "12"));
    assert!(!cuda_at_least("11.8", "12"));
}
