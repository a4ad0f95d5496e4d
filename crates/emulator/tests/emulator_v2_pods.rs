//! Conformance of `/v2/pods` with the platform's REST v2 document, and the one-world rule:
//! a pod is the same pod over REST v2 and GraphQL.

mod common;

use common::*;
use gpucloud_emulator::EmulatorConfig;
use gpucloud_emulator::v2::limits::Quota;
use reqwest::Method;
use serde_json::{Value, json};

const RTX4090: &str = "NVIDIA GeForce RTX 4090";
const H100: &str = "NVIDIA H100 80GB HBM3";
const NO_CAPACITY: &str = "There are no longer any instances available with the requested specifications. Please refresh and try again.";
const HOST_FULL: &str = "There are not enough free GPUs on the host machine to start this pod";

fn gpu_pod(gpu: &str, count: u32) -> Value {
    json!({
        "name": "trainer",
        "image": "runpod/pytorch:2.8",
        "gpu": {"id": gpu, "count": count},
        "ports": ["8888/http", "22/tcp"],
        "env": {"MODEL": "llama"},
        "mounts": {"persistent": {"size": 20, "path": "/workspace"}},
        "disk": 30,
    })
}

async fn create(e: &Emu, body: Value) -> Value {
    let r = e.v2(Method::POST, "/pods", Some(body)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    r.body
}

async fn get_pod(e: &Emu, id: &str) -> Resp {
    e.v2(Method::GET, &format!("/pods/{id}"), None).await
}

async fn act(e: &Emu, id: &str, action: &str) -> Resp {
    e.v2(
        Method::POST,
        &format!("/pods/{id}/action"),
        Some(json!({ "action": action })),
    )
    .await
}

async fn gql_pods(e: &Emu) -> Vec<Value> {
    let r = e
        .gql(
            "{ myself { pods { id name desiredStatus gpuCount imageName } } }",
            json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["data"]["myself"]["pods"].as_array().unwrap().clone()
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect()
}

/// Refused requests change nothing: the account still has no pod.
async fn assert_no_pods(e: &Emu) {
    let pods = e.v2(Method::GET, "/pods", None).await.body["pods"].clone();
    assert_eq!(pods, json!([]), "a refused request created a pod");
}

#[tokio::test]
async fn a_created_pod_boots_through_the_documented_statuses() {
    let e = start_default().await;
    let p = create(&e, gpu_pod(RTX4090, 1)).await;
    let id = p["id"].as_str().unwrap().to_string();
    assert_eq!(p["status"], "PROVISIONING");
    assert_eq!(strs(&p["actions"]), ["stop", "terminate"]);
    assert_eq!(p["gpu"], json!({"id": RTX4090, "count": 1}));
    assert!(p.get("cpu").is_none());
    assert_eq!(p["cloud"], "SECURE");
    assert!(["EU-RO-1", "US-TX-3"].contains(&p["dataCenterId"].as_str().unwrap()));
    assert_eq!(p["runtime"], Value::Null);
    assert_eq!(p["startedAt"], Value::Null);
    assert_eq!(p["template"], Value::Null);
    assert_eq!(p["registry"], Value::Null);
    assert_eq!(p["env"], json!({"MODEL": "llama"}));
    assert_eq!(strs(&p["ports"]), ["8888/http", "22/tcp"]);
    assert_eq!(
        p["mounts"],
        json!({"persistent": {"size": 20, "path": "/workspace"}})
    );
    assert_eq!(p["disk"], 30);
    assert_eq!(p["cost"], 0.69);
    assert_eq!(p["locked"], false);
    assert_eq!(p["globalNetworking"], json!({"enabled": false}));
    assert!(
        p["ssh"]["proxy"]["command"]
            .as_str()
            .unwrap()
            .starts_with("ssh ")
    );
    assert_eq!(p["ssh"]["direct"], Value::Null);
    assert!(p["createdAt"].as_str().unwrap().ends_with('Z'));

    e.advance(3_000).await;
    assert_eq!(get_pod(&e, &id).await.body["status"], "STARTING");
    e.advance(2_500).await;
    let r = get_pod(&e, &id).await;
    assert_eq!(r.status, 200);
    let p = r.body;
    assert_eq!(p["status"], "RUNNING");
    assert_eq!(strs(&p["actions"]), ["stop", "restart", "terminate"]);
    assert_eq!(p["runtime"]["ports"].as_array().unwrap().len(), 2);
    assert_eq!(p["runtime"]["gpus"].as_array().unwrap().len(), 1);
    assert!(p["runtime"]["uptime"].is_u64());
    assert!(p["startedAt"].is_string());
    let direct = &p["ssh"]["direct"];
    assert_eq!(direct["username"], "root");
    assert!(direct["port"].as_u64().unwrap() >= 10_000);

    let list = e.v2(Method::GET, "/pods", None).await;
    assert_eq!(list.status, 200);
    assert!(list.headers.contains_key("ratelimit"));
    assert!(list.headers.contains_key("ratelimit-policy"));
    let ids: Vec<&str> = list.body["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [id.as_str()]);
}

#[tokio::test]
async fn one_world_with_graphql() {
    let e = start_default().await;
    // Made over v2, seen by GraphQL.
    let v2_pod = create(&e, gpu_pod(RTX4090, 2)).await;
    let v2_id = v2_pod["id"].as_str().unwrap();
    let seen = gql_pods(&e).await;
    let g = seen
        .iter()
        .find(|p| p["id"] == v2_id)
        .expect("listed by GraphQL");
    assert_eq!(g["gpuCount"], 2);
    assert_eq!(g["desiredStatus"], "RUNNING");

    // Deployed by GraphQL, listed and stopped over v2, seen stopped by GraphQL.
    let r = e
        .gql(
            r#"mutation($i: PodFindAndDeployOnDemandInput!) { podFindAndDeployOnDemand(input: $i) { id } }"#,
            json!({"i": {"gpuTypeId": "NVIDIA A40", "gpuCount": 1, "cloudType": "SECURE", "name": "gql", "imageName": "img:1"}}),
        )
        .await;
    let gql_id = r.body["data"]["podFindAndDeployOnDemand"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let list = e.v2(Method::GET, "/pods", None).await;
    let listed = list.body["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == gql_id.as_str())
        .expect("listed over v2")
        .clone();
    assert_eq!(listed["gpu"], json!({"id": "NVIDIA A40", "count": 1}));
    assert_eq!(listed["name"], "gql");
    e.advance(5_000).await;
    let stopped = act(&e, &gql_id, "stop").await;
    assert_eq!(stopped.status, 200, "{}", stopped.body);
    assert_eq!(stopped.body["status"], "EXITED");
    assert_eq!(stopped.body["cost"], 0.0);
    assert_eq!(stopped.body["runtime"], Value::Null);
    assert_eq!(strs(&stopped.body["actions"]), ["start", "terminate"]);
    let seen = gql_pods(&e).await;
    let g = seen.iter().find(|p| p["id"] == gql_id.as_str()).unwrap();
    assert_eq!(g["desiredStatus"], "EXITED");

    // podStop over GraphQL shows EXITED over v2.
    let r = e
        .gql(
            r#"mutation($id: String!) { podStop(input: {podId: $id}) { id desiredStatus } }"#,
            json!({"id": v2_id}),
        )
        .await;
    assert_eq!(
        r.body["data"]["podStop"]["desiredStatus"], "EXITED",
        "{}",
        r.body
    );
    assert_eq!(get_pod(&e, v2_id).await.body["status"], "EXITED");

    // Terminated over v2: gone from GraphQL too.
    assert_eq!(act(&e, v2_id, "terminate").await.status, 204);
    assert!(gql_pods(&e).await.iter().all(|p| p["id"] != v2_id));
}

#[tokio::test]
async fn actions_that_make_no_sense_are_409_and_terminate_is_204() {
    let e = start_default().await;
    let id = create(&e, gpu_pod(RTX4090, 1)).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    // PROVISIONING: no restart, no start.
    let r = act(&e, &id, "restart").await;
    assert_problem(&r, 409, "PROVISIONING");
    assert_problem(&act(&e, &id, "start").await, 409, "start");
    e.advance(5_000).await;
    let r = act(&e, &id, "restart").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["status"], "STARTING");
    e.advance(5_000).await;
    assert_eq!(act(&e, &id, "stop").await.body["status"], "EXITED");
    assert_problem(&act(&e, &id, "stop").await, 409, "EXITED");
    assert_problem(&act(&e, &id, "restart").await, 409, "EXITED");
    let r = act(&e, &id, "start").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["status"], "STARTING");
    let r = act(&e, &id, "terminate").await;
    assert_eq!(r.status, 204);
    assert_problem(&get_pod(&e, &id).await, 404, &id);
    assert_problem(&act(&e, &id, "stop").await, 404, &id);
    assert_problem(
        &e.v2(Method::DELETE, &format!("/pods/{id}"), None).await,
        404,
        &id,
    );
    let r = act(&e, "nope", "dance").await;
    assert_problem(&r, 422, "action");

    let other = create(&e, gpu_pod(RTX4090, 1)).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        e.v2(Method::DELETE, &format!("/pods/{other}"), None)
            .await
            .status,
        204
    );
    assert_eq!(get_pod(&e, &other).await.status, 404);
}

#[tokio::test]
async fn no_stock_on_the_one_gpu_type_is_a_400_with_the_platform_text() {
    let e = start_default().await;
    e.emu.admin().set_stock(H100, None, 0).await.unwrap();
    let r = e.v2(Method::POST, "/pods", Some(gpu_pod(H100, 1))).await;
    assert_problem(&r, 400, NO_CAPACITY);
    assert_eq!(r.body["detail"], NO_CAPACITY);
    // The 4090 has only community machines in EU-SE-1 once the secure ones are gone:
    // a SECURE create must not fall back to them, nor to another type.
    e.emu
        .admin()
        .set_stock(RTX4090, Some(true), 0)
        .await
        .unwrap();
    let r = e.v2(Method::POST, "/pods", Some(gpu_pod(RTX4090, 1))).await;
    assert_problem(&r, 400, NO_CAPACITY);
    let mut community = gpu_pod(RTX4090, 1);
    community["cloud"] = json!("COMMUNITY");
    let p = create(&e, community).await;
    assert_eq!(p["cloud"], "COMMUNITY");
    assert_eq!(p["dataCenterId"], "EU-SE-1");
    assert_eq!(p["cost"], 0.34);
    assert_eq!(
        e.v2(Method::GET, "/pods", None).await.body["pods"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // Stock added over the admin surface is placed on.
    e.emu.admin().set_stock(H100, Some(true), 2).await.unwrap();
    create(&e, gpu_pod(H100, 2)).await;
    assert_problem(
        &e.v2(Method::POST, "/pods", Some(gpu_pod(H100, 1))).await,
        400,
        NO_CAPACITY,
    );
}

#[tokio::test]
async fn starting_a_pod_whose_host_is_full_answers_host_full() {
    let e = start_default().await;
    e.emu.admin().set_stock(H100, Some(true), 8).await.unwrap();
    let id = create(&e, gpu_pod(H100, 8)).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    e.advance(5_000).await;
    assert_eq!(act(&e, &id, "stop").await.status, 200);
    create(&e, gpu_pod(H100, 4)).await;
    let r = act(&e, &id, "start").await;
    assert_problem(&r, 400, HOST_FULL);
    assert_eq!(get_pod(&e, &id).await.body["status"], "EXITED");
}

#[tokio::test]
async fn bodies_that_do_not_match_the_document_are_422_naming_the_field() {
    let e = start_default().await;
    let cases = [
        (
            json!({"image": "i", "gpu": {"id": RTX4090}}),
            "name: required",
        ),
        (
            json!({"name": "", "image": "i", "gpu": {"id": RTX4090}}),
            "name:",
        ),
        (
            json!({"name": "n", "gpu": {"id": RTX4090}}),
            "image: required",
        ),
        (
            json!({"name": "n", "image": "i", "gpu": {"id": RTX4090, "count": 0}}),
            "gpu.count",
        ),
        (
            json!({"name": "n", "image": "i", "gpu": {"id": RTX4090, "count": "two"}}),
            "gpu.count",
        ),
        (
            json!({"name": "n", "image": "i", "gpu": {"id": RTX4090}, "bogus": 1}),
            "bogus: unexpected property",
        ),
        (
            json!({"name": "n", "image": "i", "gpu": {"id": RTX4090}, "disk": null}),
            "disk",
        ),
        (
            json!({"name": "n", "image": "i", "gpu": {"id": RTX4090}, "cloud": "MOON"}),
            "cloud",
        ),
        (
            json!({"name": "n", "image": "i", "cpu": {"id": "cpu3c", "vcpuCount": 1}}),
            "cpu.vcpuCount",
        ),
        (
            json!({"name": "n", "image": "i", "gpu": {"id": RTX4090, "allowedCudaVersions": ["12"]}}),
            "gpu.allowedCudaVersions[0]",
        ),
        (
            json!({"name": "n", "image": "i", "gpu": {"id": RTX4090}, "mounts": {"persistent": {"size": 5, "path": "/w"}}}),
            "mounts.persistent.size",
        ),
        (
            json!({"name": "n", "image": "i", "gpu": {"id": RTX4090}, "mounts": {"persistent": {"size": 20}}}),
            "mounts.persistent.path: required",
        ),
        (
            json!({"name": "n", "image": "i", "gpu": {"id": RTX4090}, "env": {"A": 1}}),
            "env.A",
        ),
    ];
    for (body, needle) in cases {
        let r = e.v2(Method::POST, "/pods", Some(body.clone())).await;
        assert_problem(&r, 422, needle);
    }
    let r = e
        .raw(
            Method::POST,
            &format!("{}/v2/pods", e.emu.base_url()),
            &format!("Bearer {KEY}"),
            b"{nope".to_vec(),
        )
        .await;
    assert_problem(&r, 422, "body: must be valid JSON");
    assert_no_pods(&e).await;
}

#[tokio::test]
async fn rule_violations_are_400_and_unknown_references_404() {
    let e = start_default().await;
    let base = |extra: Value| {
        let mut b = json!({"name": "n", "image": "i"});
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    let cases = [
        (base(json!({})), 400, "gpu, cpu"),
        (
            base(json!({"gpu": {"id": RTX4090}, "cpu": {"id": "cpu3c", "vcpuCount": 2}})),
            400,
            "gpu, cpu",
        ),
        (
            base(json!({"gpu": {"id": "NVIDIA Imaginary"}})),
            400,
            "gpu.id",
        ),
        (
            base(json!({"gpu": {"id": RTX4090, "count": 9}})),
            400,
            "gpu.count",
        ),
        (
            base(json!({"gpu": {"id": RTX4090}, "dataCenterIds": ["XX-1"]})),
            400,
            "dataCenterIds",
        ),
        (
            base(json!({"gpu": {"id": RTX4090}, "ports": ["eighty"]})),
            400,
            "ports",
        ),
        (
            base(
                json!({"gpu": {"id": RTX4090, "allowedCudaVersions": ["12.8"], "minCudaVersion": "12.4"}}),
            ),
            400,
            "minCudaVersion",
        ),
        (
            base(
                json!({"gpu": {"id": RTX4090}, "mounts": {"persistent": {"size": 20, "path": "/w"}, "network": [{"volumeId": "nv-demo0001", "path": "/n"}]}}),
            ),
            400,
            "mutually exclusive",
        ),
        (
            base(
                json!({"cpu": {"id": "cpu3c", "vcpuCount": 2}, "mounts": {"persistent": {"size": 20, "path": "/w"}}}),
            ),
            400,
            "mounts.persistent",
        ),
        (
            // No rule keeps CPU pods out of COMMUNITY (the document states none): the
            // emulator's CPU machines are all secure, so there is no room for it.
            base(json!({"cpu": {"id": "cpu3c", "vcpuCount": 2}, "cloud": "COMMUNITY"})),
            400,
            NO_CAPACITY,
        ),
        (
            base(json!({"cpu": {"id": "cpu9z", "vcpuCount": 2}})),
            400,
            "cpu.id",
        ),
        (
            base(json!({"cpu": {"id": "cpu3c", "vcpuCount": 64}})),
            400,
            "cpu.vcpuCount",
        ),
        (
            base(json!({"cpu": {"id": "cpu3c", "vcpuCount": 6}})),
            400,
            "power of two",
        ),
        (
            base(
                json!({"gpu": {"id": RTX4090}, "mounts": {"network": [{"volumeId": "nv-demo0001", "path": "/n"}]}, "dataCenterIds": ["US-TX-3"]}),
            ),
            400,
            "EU-RO-1",
        ),
        (
            base(
                json!({"gpu": {"id": RTX4090}, "mounts": {"network": [{"volumeId": "nv-nope", "path": "/n"}]}}),
            ),
            404,
            "nv-nope",
        ),
        (
            json!({"name": "n", "templateId": "tmpl-nope", "gpu": {"id": RTX4090}}),
            404,
            "tmpl-nope",
        ),
        (
            json!({"name": "n", "templateId": "tmpl-worker-base", "gpu": {"id": RTX4090}}),
            422,
            "serverless",
        ),
    ];
    for (body, status, needle) in cases {
        let r = e.v2(Method::POST, "/pods", Some(body.clone())).await;
        assert_problem(&r, status, needle);
    }
    assert_no_pods(&e).await;
}

#[tokio::test]
async fn cpu_pods_network_volumes_and_templates() {
    let e = start_default().await;
    let cpu = create(
        &e,
        json!({"name": "c", "image": "python:3.12", "cpu": {"id": "cpu3c", "vcpuCount": 4}}),
    )
    .await;
    assert_eq!(
        cpu["cpu"],
        json!({"id": "cpu3c", "vcpuCount": 4, "memory": 8})
    );
    assert!(cpu.get("gpu").is_none());
    assert_eq!(cpu["cudaVersion"], Value::Null);
    assert_eq!(cpu["cost"], 0.12);
    assert_eq!(cpu["mounts"], json!({}));

    // A network volume pins the pod to its data center.
    let nv = create(
        &e,
        json!({"name": "v", "image": "i", "gpu": {"id": RTX4090},
        "mounts": {"network": [{"volumeId": "nv-demo0001", "path": "/data"}]}}),
    )
    .await;
    assert_eq!(nv["dataCenterId"], "EU-RO-1");
    assert_eq!(
        nv["mounts"],
        json!({"network": [{"volumeId": "nv-demo0001", "path": "/data"}]})
    );

    // The account's template fills what the body leaves out; the pod keeps no link.
    let t = create(
        &e,
        json!({"name": "t", "templateId": "tmpl-pytorch", "gpu": {"id": RTX4090}}),
    )
    .await;
    assert!(
        t["image"]
            .as_str()
            .unwrap()
            .starts_with("runpod/pytorch:2.4.0")
    );
    assert_eq!(strs(&t["ports"]), ["8888/http", "22/tcp"]);
    assert_eq!(t["mounts"]["persistent"]["size"], 50);
    assert_eq!(t["disk"], 20);
    assert_eq!(t["template"], Value::Null);
    // A public template, with body fields winning and env merged.
    let p = create(
        &e,
        json!({"name": "p", "templateId": "runpod-torch-v280", "gpu": {"id": RTX4090},
        "disk": 60, "env": {"X": "1"}}),
    )
    .await;
    assert_eq!(
        p["image"],
        "runpod/pytorch:1.0.2-cu1281-torch280-ubuntu2404"
    );
    assert_eq!(p["disk"], 60);
    assert_eq!(p["env"]["X"], "1");
    assert!(p["env"]["JUPYTER_PASSWORD"].is_string());
    assert_eq!(p["cudaVersion"], "12.8");

    // The CUDA floor picks a machine that offers it.
    let l40s = create(
        &e,
        json!({"name": "l", "image": "i", "gpu": {"id": "NVIDIA L40S", "minCudaVersion": "12.9"}}),
    )
    .await;
    assert_eq!(l40s["cudaVersion"], "12.9");
    let r = e
        .v2(
            Method::POST,
            "/pods",
            Some(json!({"name": "l", "image": "i",
        "gpu": {"id": "NVIDIA L40S", "allowedCudaVersions": ["12.4"]}})),
        )
        .await;
    assert_problem(&r, 400, NO_CAPACITY);

    // CPU pods show in GraphQL as pods without GPUs.
    let seen = gql_pods(&e).await;
    let g = seen.iter().find(|g| g["id"] == cpu["id"]).unwrap();
    assert_eq!(g["gpuCount"], 0);
}

#[tokio::test]
async fn patch_changes_settings_and_keeps_the_mount_rules() {
    let e = start_default().await;
    let id = create(&e, gpu_pod(RTX4090, 1)).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/pods/{id}");
    let r = e
        .v2(Method::PATCH, &path, Some(json!({"name": "renamed", "env": {"B": "2"}, "ports": ["22/tcp"],
            "mounts": {"persistent": {"size": 40, "path": "/data"}}, "registry": "reg-1", "locked": true})))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["name"], "renamed");
    assert_eq!(r.body["env"], json!({"B": "2"}));
    assert_eq!(strs(&r.body["ports"]), ["22/tcp"]);
    assert_eq!(
        r.body["mounts"],
        json!({"persistent": {"size": 40, "path": "/data"}})
    );
    assert_eq!(r.body["registry"], "reg-1");
    assert_eq!(r.body["locked"], true);
    assert!(!strs(&r.body["actions"]).contains(&"stop"));
    e.advance(5_000).await;
    assert_problem(&act(&e, &id, "stop").await, 409, "locked");
    let r = e
        .v2(
            Method::PATCH,
            &path,
            Some(json!({"locked": false, "registry": null})),
        )
        .await;
    assert_eq!(r.body["registry"], Value::Null);
    assert_eq!(act(&e, &id, "stop").await.status, 200);
    // GraphQL sees the rename.
    let g = gql_pods(&e).await;
    assert_eq!(g[0]["name"], "renamed");

    for (body, status, needle) in [
        (
            json!({"mounts": {"network": [{"volumeId": "nv-demo0001", "path": "/n"}]}}),
            400,
            "fixed at create",
        ),
        (json!({"mounts": {"network": []}}), 400, "clearing"),
        (json!({"name": ""}), 422, "name"),
        (json!({"disk": 0}), 422, "disk"),
        (json!({"colour": "red"}), 422, "colour"),
        (json!({"templateId": "tmpl-nope"}), 404, "tmpl-nope"),
    ] {
        let r = e.v2(Method::PATCH, &path, Some(body)).await;
        assert_problem(&r, status, needle);
    }
    assert_problem(
        &e.v2(Method::PATCH, "/pods/nope", Some(json!({"name": "x"})))
            .await,
        404,
        "nope",
    );
}

#[tokio::test]
async fn auth_scopes_and_problem_shapes() {
    let e = start_default().await;
    let url = format!("{}/v2/pods", e.emu.base_url());
    let r = e.call(Method::GET, &url, None, None).await;
    assert_problem(&r, 401, "bearer");
    assert!(!r.headers.contains_key("ratelimit"));
    let r = e.call(Method::GET, &url, Some("Bearer wrong"), None).await;
    assert_problem(&r, 401, "API key");
    assert!(!r.body.to_string().contains("wrong"));
    let r = e.v2_as(READ_KEY, Method::GET, "/pods", None).await;
    assert_eq!(r.status, 200);
    let r = e
        .v2_as(READ_KEY, Method::POST, "/pods", Some(gpu_pod(RTX4090, 1)))
        .await;
    assert_problem(&r, 403, "read");
    assert!(r.headers.contains_key("ratelimit"));
    let r = e.v2_as(READ_KEY, Method::DELETE, "/pods/x", None).await;
    assert_eq!(r.status, 403);
    let r = e.v2(Method::PUT, "/pods", None).await;
    assert_problem(&r, 405, "PUT");
    let allow = r.headers["allow"].to_str().unwrap();
    assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
    // The job API under /v2 still works beside the REST routes.
    let r = e.job(Method::GET, "ep-demo0001", "health", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
}

#[tokio::test]
async fn create_500_call_counts_and_rate_limits() {
    let e = start(EmulatorConfig {
        v2_quota: Quota {
            minute: 3,
            hour: 100,
            day: 1000,
        },
        ..config()
    })
    .await;
    let admin = e.emu.admin();
    admin
        .fail_next_creates_on("POST /v2/pods", 1)
        .await
        .unwrap();
    let r = e.v2(Method::POST, "/pods", Some(gpu_pod(RTX4090, 1))).await;
    assert_problem(&r, 500, "internal");
    let list = e.v2(Method::GET, "/pods", None).await;
    assert_eq!(
        list.body["pods"].as_array().unwrap().len(),
        1,
        "the pod exists"
    );
    let id = list.body["pods"][0]["id"].as_str().unwrap().to_string();
    get_pod(&e, &id).await;
    assert_eq!(admin.call_count("POST /v2/pods").await.unwrap(), 1);
    assert_eq!(admin.call_count("GET /v2/pods/{id}").await.unwrap(), 1);

    // Three calls to the pods group this minute: the fourth is refused and not served.
    let r = e.v2(Method::GET, "/pods", None).await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert_problem(&r, 429, "rate limit");
    let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry));
    let remaining = r.headers["ratelimit"].to_str().unwrap();
    assert!(remaining.starts_with("\"minute\";r=0;t="), "{remaining}");
    assert!(remaining.contains("\"hour\";r=97;"), "{remaining}");
    assert_eq!(
        r.headers["ratelimit-policy"].to_str().unwrap(),
        "\"minute\";q=3;w=60, \"hour\";q=100;w=3600, \"day\";q=1000;w=86400"
    );
    // Another group has its own window; the minute passes on the emulator clock.
    assert_eq!(
        e.v2(Method::GET, "/catalog/datacenters", None).await.status,
        200
    );
    e.advance(60_000).await;
    assert_eq!(e.v2(Method::GET, "/pods", None).await.status, 200);
    // Injected faults on v2 routes answer problem+json too.
    admin
        .set_error_rate("GET /v2/pods/{id}", 1.0, 503)
        .await
        .unwrap();
    let r = get_pod(&e, &id).await;
    assert_problem(&r, 503, "injected");
}

#[tokio::test]
async fn logs_stream_the_pod_history_as_server_sent_events() {
    let e = start_default().await;
    let id = create(&e, gpu_pod(RTX4090, 1)).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    e.advance(5_000 + 3 * 60_000).await;
    let url = format!("{}/v2/pods/{id}/logs", e.emu.base_url());
    let fetch = |query: &'static str| {
        let url = format!("{url}{query}");
        let http = e.http.clone();
        async move {
            let r = http.get(&url).bearer_auth(KEY).send().await.unwrap();
            let status = r.status().as_u16();
            let ctype = r
                .headers()
                .get("content-type")
                .map(|v| v.to_str().unwrap().to_string());
            (status, ctype, r.text().await.unwrap())
        }
    };
    let events = |text: &str| -> Vec<Value> {
        text.split("\n\n")
            .filter(|e| !e.trim().is_empty())
            .map(|e| {
                let mut lines = e.lines();
                let id = lines
                    .next()
                    .unwrap()
                    .strip_prefix("id: ")
                    .unwrap()
                    .to_string();
                let data: Value =
                    serde_json::from_str(lines.next().unwrap().strip_prefix("data: ").unwrap())
                        .unwrap();
                assert_eq!(data["ts"], id.as_str());
                data
            })
            .collect()
    };
    let (status, ctype, text) = fetch("").await;
    assert_eq!(status, 200);
    assert_eq!(ctype.as_deref(), Some("text/event-stream"));
    let all = events(&text);
    assert!(all.iter().any(|d| d["source"] == "system"));
    assert_eq!(
        all.iter()
            .filter(|d| d["line"].as_str().unwrap().starts_with("heartbeat"))
            .count(),
        3
    );
    let (_, _, text) = fetch("?source=system").await;
    assert!(events(&text).iter().all(|d| d["source"] == "system"));
    let (_, _, text) = fetch("?tail=1").await;
    assert_eq!(events(&text).len(), 1);
    assert_eq!(fetch("?tail=6000").await.0, 422);
    assert_eq!(fetch("?source=kernel").await.0, 422);
    assert_eq!(fetch("?since=yesterday").await.0, 422);
    let r = e.v2(Method::GET, "/pods/nope/logs", None).await;
    assert_problem(&r, 404, "nope");
}
