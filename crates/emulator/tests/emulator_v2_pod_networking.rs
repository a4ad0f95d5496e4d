//! `globalNetworking` on `/v2/pods` as the document gives it: `enabled`, `ip` and
//! `internalDns` = `<podId>.runpod.internal`; only NVIDIA GPU pods, only in data centers whose
//! catalog entry says `globalNetwork: true`; a PATCH takes effect at the next start.

mod common;

use common::*;
use gpucloud_emulator::Fixtures;
use reqwest::Method;
use serde_json::{Value, json};

const RTX4090: &str = "NVIDIA GeForce RTX 4090";
/// Stocked only in US-GA-1, whose catalog entry has no global network.
const RTX3090: &str = "NVIDIA GeForce RTX 3090";
const NO_CAPACITY: &str = "There are no longer any instances available with the requested specifications. Please refresh and try again.";

fn gpu_pod(gpu: &str, extra: Value) -> Value {
    let mut body = json!({"name": "p", "image": "i", "gpu": {"id": gpu}});
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    body
}

async fn post(e: &Emu, body: Value) -> Resp {
    e.v2(Method::POST, "/pods", Some(body)).await
}

/// The data centers the catalog says offer global networking.
async fn global_data_centers(e: &Emu) -> Vec<String> {
    let r = e
        .v2(Method::GET, "/catalog/datacenters?globalNetwork=true", None)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["dataCenters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect()
}

fn assert_enabled(p: &Value) {
    let id = p["id"].as_str().unwrap();
    let g = &p["globalNetworking"];
    assert_eq!(g["enabled"], true, "{p}");
    assert_eq!(g["internalDns"], format!("{id}.runpod.internal"), "{p}");
    let ip = g["ip"].as_str().unwrap();
    assert!(ip.parse::<std::net::Ipv4Addr>().is_ok(), "{p}");
}

#[tokio::test]
async fn a_global_pod_lands_only_where_the_catalog_offers_the_global_network() {
    let e = start_default().await;
    let global = global_data_centers(&e).await;
    assert!(!global.is_empty() && !global.contains(&"US-GA-1".to_string()));
    // No data center named: any that offers it.
    let r = post(&e, gpu_pod(RTX4090, json!({"globalNetworking": true}))).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_enabled(&r.body);
    assert!(global.contains(&r.body["dataCenterId"].as_str().unwrap().to_string()));
    // Named ones narrow to those that offer it, in the caller's order.
    let body = gpu_pod(
        RTX4090,
        json!({"globalNetworking": true, "dataCenterIds": ["EU-SE-1", "US-TX-3"]}),
    );
    let r = post(&e, body).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["dataCenterId"], "US-TX-3");
    // Without global networking the same type lands where it likes, and shows it off.
    let r = post(&e, gpu_pod(RTX3090, json!({"cloud": "COMMUNITY"}))).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["globalNetworking"], json!({"enabled": false}));
    assert_eq!(r.body["dataCenterId"], "US-GA-1");
    // With it, stock only in an ineligible data center is no capacity.
    let body = gpu_pod(
        RTX3090,
        json!({"cloud": "COMMUNITY", "globalNetworking": true}),
    );
    assert_problem(&post(&e, body).await, 400, NO_CAPACITY);
}

#[tokio::test]
async fn requests_that_cannot_get_the_global_network_are_400_naming_it() {
    let e = start_default().await;
    let cases = [
        gpu_pod(
            RTX4090,
            json!({"globalNetworking": true, "dataCenterIds": ["EU-SE-1", "US-GA-1"]}),
        ),
        json!({"name": "c", "image": "i", "cpu": {"id": "cpu3c", "vcpuCount": 2},
               "globalNetworking": true}),
    ];
    for body in cases {
        let r = post(&e, body.clone()).await;
        assert_problem(&r, 400, "globalNetworking");
    }
    let pods = e.v2(Method::GET, "/pods", None).await.body["pods"].clone();
    assert_eq!(pods, json!([]), "a refused create made a pod");
}

#[tokio::test]
async fn another_gpu_maker_is_refused() {
    let mut fixtures = Fixtures::built_in();
    let mut amd = fixtures.gpu_types[0].clone();
    amd.id = "AMD Instinct MI300X".into();
    amd.display_name = "MI300X".into();
    amd.manufacturer = "AMD".into();
    amd.pool = None;
    fixtures.gpu_types.push(amd);
    let e = start(gpucloud_emulator::EmulatorConfig {
        fixtures: Some(fixtures),
        ..config()
    })
    .await;
    let r = post(
        &e,
        gpu_pod("AMD Instinct MI300X", json!({"globalNetworking": true})),
    )
    .await;
    assert_problem(&r, 400, "NVIDIA");
    let r = post(&e, gpu_pod("AMD Instinct MI300X", json!({}))).await;
    assert_eq!(r.status, 201, "{}", r.body);
}

#[tokio::test]
async fn a_patch_takes_effect_at_the_next_start() {
    let e = start_default().await;
    let r = post(&e, gpu_pod(RTX4090, json!({"dataCenterIds": ["US-TX-3"]}))).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_string();
    e.advance(5_000).await;
    let path = format!("/pods/{id}");
    let r = e
        .v2(
            Method::PATCH,
            &path,
            Some(json!({"globalNetworking": true})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["globalNetworking"], json!({"enabled": false}));
    let r = e
        .v2(
            Method::POST,
            &format!("/pods/{id}/action"),
            Some(json!({"action": "restart"})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_enabled(&r.body);
    // Off again: still on until the next start.
    let r = e
        .v2(
            Method::PATCH,
            &path,
            Some(json!({"globalNetworking": false})),
        )
        .await;
    assert_enabled(&r.body);
    e.advance(5_000).await;
    for action in ["stop", "start"] {
        let r = e
            .v2(
                Method::POST,
                &format!("/pods/{id}/action"),
                Some(json!({ "action": action })),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let r = e.v2(Method::GET, &path, None).await;
    assert_eq!(r.body["globalNetworking"], json!({"enabled": false}));
    // A pod in a data center without the global network cannot be switched on.
    let r = post(&e, gpu_pod(RTX3090, json!({"cloud": "COMMUNITY"}))).await;
    let other = r.body["id"].as_str().unwrap().to_string();
    let r = e
        .v2(
            Method::PATCH,
            &format!("/pods/{other}"),
            Some(json!({"globalNetworking": true})),
        )
        .await;
    assert_problem(&r, 400, "globalNetworking");
}
