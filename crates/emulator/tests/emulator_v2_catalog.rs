//! Conformance of `/v2/catalog/...` with the platform's REST v2 document: GPU types with
//! prices, pools and availability read from the machines pods are placed on; CPU flavors;
//! data centers; public templates.

mod common;

use common::*;
use reqwest::Method;
use serde_json::{Value, json};

const RTX4090: &str = "NVIDIA GeForce RTX 4090";
const H100: &str = "NVIDIA H100 80GB HBM3";

fn path_of(id: &str) -> String {
    id.replace(' ', "%20")
}

async fn gpus(e: &Emu, query: &str) -> Resp {
    e.v2(Method::GET, &format!("/catalog/gpus{query}"), None)
        .await
}

fn find<'a>(list: &'a Value, key: &str, id: &str) -> &'a Value {
    list[key]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == id)
        .unwrap_or_else(|| panic!("{id} missing from {list}"))
}

#[tokio::test]
async fn gpu_types_carry_prices_pools_and_ceilings() {
    let e = start_default().await;
    let r = gpus(&e, "").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.headers.contains_key("ratelimit"));
    let g = find(&r.body, "gpus", RTX4090);
    assert_eq!(g["name"], "RTX 4090");
    assert_eq!(g["pool"], "ADA_24");
    assert_eq!(g["manufacturer"], "NVIDIA");
    assert_eq!(g["memory"], 24);
    assert_eq!(
        (g["secure"].as_bool(), g["community"].as_bool()),
        (Some(true), Some(true))
    );
    assert_eq!(
        g["price"],
        json!({"secure": 0.69, "community": 0.34, "serverless": 0.44})
    );
    assert_eq!(g["maxCount"], json!({"secure": 8, "community": 8}));
    // Availability is only there when asked for.
    assert!(g.get("availability").is_none() && g.get("dataCenters").is_none());
    let a100 = find(&r.body, "gpus", "NVIDIA A100 80GB PCIe");
    assert_eq!(a100["pool"], "AMPERE_80");
    // A ceiling per pod from the catalog, not the largest machine in stock (the A100's only
    // community machine holds 4).
    assert_eq!(a100["maxCount"], json!({"secure": 8, "community": 8}));

    let one = e
        .v2(
            Method::GET,
            &format!("/catalog/gpus/{}", path_of(H100)),
            None,
        )
        .await;
    assert_eq!(one.status, 200, "{}", one.body);
    assert_eq!(one.body["id"], H100);
    // Priced in both clouds though it has community machines nowhere.
    assert_eq!(one.body["maxCount"], json!({"secure": 8, "community": 8}));
    let r = e
        .v2(Method::GET, "/catalog/gpus/NVIDIA%20Imaginary", None)
        .await;
    assert_problem(&r, 404, "NVIDIA Imaginary");
}

#[tokio::test]
async fn availability_follows_the_machines_per_cloud_count_and_data_center() {
    let e = start_default().await;
    let r = gpus(&e, "?include=AVAILABILITY&product=POD").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let g = find(&r.body, "gpus", RTX4090);
    // 4 machines of 8 in EU-RO-1 and 2 in US-TX-3 (secure): 48 single-GPU pods.
    assert_eq!(g["availability"], "HIGH");
    let dcs: Vec<&str> = g["dataCenters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(dcs, ["EU-RO-1", "US-TX-3"]);
    assert_eq!(
        g["cudaVersions"],
        json!([
            {"version": "12.4", "available": true},
            {"version": "12.6", "available": true},
            {"version": "12.8", "available": true},
        ])
    );
    let h = find(&r.body, "gpus", H100);
    assert_eq!(h["availability"], "MEDIUM");
    let community = gpus(
        &e,
        &format!(
            "/{}?include=AVAILABILITY&product=POD&cloud=COMMUNITY",
            path_of(H100)
        ),
    )
    .await;
    assert_eq!(community.body["availability"], "NONE");
    assert!(community.body.get("dataCenters").is_none());
    let eight = gpus(
        &e,
        &format!(
            "/{}?include=AVAILABILITY&product=POD&count=8",
            path_of(H100)
        ),
    )
    .await;
    assert_eq!(eight.body["availability"], "LOW");

    // A pod placed over v2 takes the stock the catalog reports.
    let r = e
        .v2(
            Method::POST,
            "/pods",
            Some(json!({"name": "n", "image": "i", "gpu": {"id": H100, "count": 8}})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let after = gpus(
        &e,
        &format!("/{}?include=AVAILABILITY&product=POD", path_of(H100)),
    )
    .await;
    assert_eq!(after.body["availability"], "NONE");
    assert_eq!(after.body["cudaVersions"][0]["available"], false);

    // Stock set over the admin surface shows; a frozen view keeps showing the old figures.
    let admin = e.emu.admin();
    admin.set_stock(H100, Some(true), 4).await.unwrap();
    let low = gpus(
        &e,
        &format!("/{}?include=AVAILABILITY&product=POD", path_of(H100)),
    )
    .await;
    assert_eq!(low.body["availability"], "MEDIUM");
    admin.freeze_stock_view().await.unwrap();
    admin.set_stock(H100, Some(true), 0).await.unwrap();
    let frozen = gpus(
        &e,
        &format!("/{}?include=AVAILABILITY&product=POD", path_of(H100)),
    )
    .await;
    assert_eq!(frozen.body["availability"], "MEDIUM");
    // The ceiling is the catalog's: emptying the stock (which drops idle machines) leaves it.
    assert_eq!(
        frozen.body["maxCount"],
        json!({"secure": 8, "community": 8})
    );
    let r = e
        .v2(
            Method::POST,
            "/pods",
            Some(json!({"name": "n", "image": "i", "gpu": {"id": H100}})),
        )
        .await;
    assert_problem(&r, 400, "no longer any instances");
    admin.thaw_stock_view().await.unwrap();
    let live = gpus(
        &e,
        &format!("/{}?include=AVAILABILITY&product=POD", path_of(H100)),
    )
    .await;
    assert_eq!(live.body["availability"], "NONE");
    assert_eq!(live.body["maxCount"]["secure"], 8);
}

#[tokio::test]
async fn max_count_is_what_a_create_accepts_and_zero_where_not_offered() {
    let mut config = config();
    let mut fixtures = gpucloud_emulator::Fixtures::built_in();
    let h100 = fixtures
        .gpu_types
        .iter_mut()
        .find(|g| g.id == H100)
        .unwrap();
    h100.community_price = None;
    config.fixtures = Some(fixtures);
    let e = start(config).await;
    let one = gpus(&e, &format!("/{}", path_of(H100))).await;
    assert_eq!(one.status, 200, "{}", one.body);
    assert_eq!(one.body["community"], false);
    assert_eq!(one.body["maxCount"], json!({"secure": 8, "community": 0}));

    // One more than the ceiling is refused as a rule, the ceiling itself is placed.
    let create =
        |count: u32| json!({"name": "n", "image": "i", "gpu": {"id": H100, "count": count}});
    let r = e.v2(Method::POST, "/pods", Some(create(9))).await;
    assert_problem(&r, 400, "at most 8");
    let r = e.v2(Method::POST, "/pods", Some(create(8))).await;
    assert_eq!(r.status, 201, "{}", r.body);
    // Where it is not offered there is nothing to place on.
    let r = e
        .v2(
            Method::POST,
            "/pods",
            Some(json!({"name": "c", "image": "i", "cloud": "COMMUNITY", "gpu": {"id": H100}})),
        )
        .await;
    assert_problem(&r, 400, "no longer any instances");
}

#[tokio::test]
async fn country_and_cuda_filters_narrow_the_answer() {
    let e = start_default().await;
    let r = gpus(&e, "?include=AVAILABILITY&product=POD&countryCodes=RO").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let ids: Vec<&str> = r.body["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&RTX4090));
    assert!(!ids.contains(&H100), "{ids:?}");
    let g = find(&r.body, "gpus", RTX4090);
    assert!(
        g["dataCenters"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["id"] == "EU-RO-1")
    );
    // The single-type read still answers, with NONE and no data centers.
    let one = gpus(
        &e,
        &format!(
            "/{}?include=AVAILABILITY&product=POD&countryCodes=RO",
            path_of(H100)
        ),
    )
    .await;
    assert_eq!(one.status, 200);
    assert_eq!(one.body["availability"], "NONE");
    assert!(one.body.get("dataCenters").is_none());

    let l40s = "NVIDIA%20L40S";
    let exact = gpus(
        &e,
        &format!("/{l40s}?include=AVAILABILITY&product=POD&cudaVersions=12.4"),
    )
    .await;
    assert_eq!(exact.body["availability"], "NONE");
    let floor = gpus(
        &e,
        &format!("/{l40s}?include=AVAILABILITY&product=POD&minCudaVersion=12.9"),
    )
    .await;
    assert_eq!(
        floor.body["cudaVersions"],
        json!([{"version": "12.9", "available": true}])
    );
    let serverless = gpus(
        &e,
        &format!(
            "/{}?include=AVAILABILITY&product=SERVERLESS,CLUSTER",
            path_of(RTX4090)
        ),
    )
    .await;
    assert_eq!(serverless.body["availability"], "HIGH");
}

#[tokio::test]
async fn gpu_query_errors_are_documented_400s_and_422s() {
    let e = start_default().await;
    for (q, status, needle) in [
        ("?product=POD", 400, "product"),
        ("?include=AVAILABILITY", 400, "product"),
        ("?count=2", 400, "count"),
        ("?cloud=SECURE", 400, "cloud"),
        ("?countryCodes=FR", 400, "countryCodes"),
        ("?cudaVersions=12.8", 400, "cudaVersions"),
        ("?minCudaVersion=12", 400, "minCudaVersion"),
        (
            "?include=AVAILABILITY&product=POD&cudaVersions=12.8&minCudaVersion=12",
            400,
            "one or the other",
        ),
        ("?include=AVAILABILITY&product=POD&count=0", 422, "count"),
        ("?include=AVAILABILITY&product=POD&count=two", 422, "count"),
        (
            "?include=AVAILABILITY&product=POD&countryCodes=france",
            422,
            "countryCodes",
        ),
        (
            "?include=AVAILABILITY&product=POD&cudaVersions=12",
            422,
            "cudaVersions",
        ),
        (
            "?include=AVAILABILITY&product=POD&minCudaVersion=twelve",
            422,
            "minCudaVersion",
        ),
        ("?include=AVAILABILITY&product=MOON", 422, "product"),
        ("?include=EVERYTHING&product=POD", 422, "include"),
        ("?include=AVAILABILITY&product=POD&cloud=MOON", 422, "cloud"),
    ] {
        let r = gpus(&e, q).await;
        assert_problem(&r, status, needle);
    }
    let r = e.v2_as("nobody", Method::GET, "/catalog/gpus", None).await;
    assert_problem(&r, 401, "API key");
    // Read-only keys read the catalog.
    assert_eq!(
        e.v2_as(READ_KEY, Method::GET, "/catalog/gpus", None)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn cpu_flavors() {
    let e = start_default().await;
    let r = e.v2(Method::GET, "/catalog/cpus", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let c = find(&r.body, "cpus", "cpu3c");
    assert_eq!(c["vcpu"], json!({"min": 2, "max": 32}));
    assert_eq!(c["ramGbPerVcpu"], 2.0);
    assert_eq!(
        c["price"],
        json!({"securePerVcpu": 0.03, "serverlessPerVcpu": 0.04})
    );
    assert!(c.get("availability").is_none());
    let r = e
        .v2(
            Method::GET,
            "/catalog/cpus?include=AVAILABILITY&product=POD&vcpuCount=4",
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(find(&r.body, "cpus", "cpu3c")["availability"], "HIGH");
    let g = find(&r.body, "cpus", "cpu5g");
    assert_eq!(g["availability"], "NONE");
    assert!(g.get("dataCenters").is_none());
    let one = e
        .v2(
            Method::GET,
            "/catalog/cpus/cpu5c?include=AVAILABILITY&product=SERVERLESS",
            None,
        )
        .await;
    assert_eq!(
        one.body["dataCenters"],
        json!([{"id": "US-GA-1", "name": "Georgia", "availability": "HIGH"}])
    );
    for (q, status) in [
        ("?product=POD", 400),
        ("?vcpuCount=4", 400),
        ("?include=AVAILABILITY", 400),
        ("?include=AVAILABILITY&product=POD&vcpuCount=3", 400),
        ("?include=AVAILABILITY&product=POD&vcpuCount=1", 422),
        ("?include=AVAILABILITY&product=CLUSTER", 422),
    ] {
        let r = e.v2(Method::GET, &format!("/catalog/cpus{q}"), None).await;
        assert_eq!(r.status, status, "{q}: {}", r.body);
    }
    assert_problem(
        &e.v2(Method::GET, "/catalog/cpus/cpu9z", None).await,
        404,
        "cpu9z",
    );
}

#[tokio::test]
async fn data_centers_filter_and_expand() {
    let e = start_default().await;
    let r = e.v2(Method::GET, "/catalog/datacenters", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["dataCenters"].as_array().unwrap().len(), 5);
    let ro = find(&r.body, "dataCenters", "EU-RO-1");
    assert_eq!(ro["region"], "EUROPE");
    assert_eq!(ro["globalNetwork"], true);
    assert_eq!(
        ro["networkVolumeTypes"],
        json!(["STANDARD", "HIGH_PERFORMANCE"])
    );
    assert_eq!(ro["compliance"], json!(["GDPR", "ISO_IEC_27001"]));
    assert!(ro.get("gpuAvailability").is_none());
    let eu = e
        .v2(
            Method::GET,
            "/catalog/datacenters?regions=EUROPE&compliance=GDPR,RENEWABLE",
            None,
        )
        .await;
    let ids: Vec<&str> = eu.body["dataCenters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["EU-SE-1"]);
    let hp = e
        .v2(
            Method::GET,
            "/catalog/datacenters?networkVolumeTypes=STANDARD,HIGH_PERFORMANCE&globalNetwork=true",
            None,
        )
        .await;
    assert_eq!(hp.body["dataCenters"].as_array().unwrap().len(), 1);
    let r = e
        .v2(
            Method::GET,
            "/catalog/datacenters/US-GA-1?include=GPU_AVAILABILITY,CPU_AVAILABILITY",
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let gpus: Vec<&str> = r.body["gpuAvailability"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_str().unwrap())
        .collect();
    assert!(gpus.contains(&H100) && !gpus.contains(&RTX4090), "{gpus:?}");
    assert_eq!(r.body["cpuAvailability"][0]["id"], "cpu5c");
    let se = e
        .v2(
            Method::GET,
            "/catalog/datacenters/CA-MTL-1?include=CPU_AVAILABILITY",
            None,
        )
        .await;
    assert!(se.body.get("cpuAvailability").is_none(), "{}", se.body);
    assert_eq!(se.body["region"], "NORTH_AMERICA");
    for q in [
        "?regions=MOON",
        "?include=EVERYTHING",
        "?compliance=NONE",
        "?globalNetwork=maybe",
    ] {
        let r = e
            .v2(Method::GET, &format!("/catalog/datacenters{q}"), None)
            .await;
        assert_problem(&r, 422, "");
    }
    assert_problem(
        &e.v2(Method::GET, "/catalog/datacenters/XX-1", None).await,
        404,
        "XX-1",
    );
}

#[tokio::test]
async fn public_templates_by_source() {
    let e = start_default().await;
    let r = e.v2(Method::GET, "/catalog/templates", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let list = r.body["templates"].as_array().unwrap();
    assert!(list.iter().any(|t| t["serverless"] == true));
    assert!(list.iter().any(|t| t["category"] == "CPU"));
    let t = find(&r.body, "templates", "runpod-torch-v280");
    assert_eq!(t["public"], true);
    assert_eq!(t["registry"], Value::Null);
    assert_eq!(
        t["mounts"],
        json!({"persistent": {"size": 20, "path": "/workspace"}})
    );
    assert_eq!(t["allowedCudaVersions"], json!(["12.8"]));
    assert_eq!(t["startJupyter"], true);
    let verified = e
        .v2(Method::GET, "/catalog/templates?source=verified", None)
        .await;
    assert_eq!(verified.body["templates"].as_array().unwrap().len(), 1);
    assert_eq!(verified.body["templates"][0]["id"], "comfyui-verified");
    assert_problem(
        &e.v2(Method::GET, "/catalog/templates?source=mine", None)
            .await,
        422,
        "source",
    );
}

#[tokio::test]
async fn an_empty_include_is_refused_on_every_catalog_path_that_has_one() {
    let e = start_default().await;
    let dc = "EU-RO-1";
    let paths = [
        "/catalog/gpus".to_string(),
        format!("/catalog/gpus/{}", path_of(RTX4090)),
        "/catalog/cpus".to_string(),
        "/catalog/cpus/cpu3c".to_string(),
        "/catalog/datacenters".to_string(),
        format!("/catalog/datacenters/{dc}"),
    ];
    for path in &paths {
        // Without the parameter the path answers: the refusal is the empty value's.
        let plain = e.v2(Method::GET, path, None).await;
        assert_eq!(plain.status, 200, "{path}: {}", plain.body);
        let r = e.v2(Method::GET, &format!("{path}?include="), None).await;
        assert_problem(&r, 422, "include: must be");
        assert!(
            r.body.to_string().contains("(got \\\"\\\")"),
            "{path}: {}",
            r.body
        );
    }
    // The same rule for the other lists of enum values (an empty entry is none of them).
    for q in [
        "/catalog/datacenters?regions=",
        "/catalog/cpus?include=AVAILABILITY&product=",
    ] {
        assert_problem(&e.v2(Method::GET, q, None).await, 422, "must be");
    }
}
