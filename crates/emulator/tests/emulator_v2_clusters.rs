//! Conformance of `/v2/clusters` and `/v2/billing/clusters` with the platform's REST v2
//! document: answers checked against its schemas, its 422/400/404/409 answers, placement by
//! whole machines in one data center, member pods that are real pods of the one world, and
//! what deleting a cluster gives back.

mod common;

use common::schema::assert_schema;
use common::*;
use gpucloud_emulator::EmulatorConfig;
use gpucloud_emulator::v2::limits::Quota;
use reqwest::Method;
use serde_json::{Value, json};

const RTX4090: &str = "NVIDIA GeForce RTX 4090";
const H100: &str = "NVIDIA H100 80GB HBM3";
const NO_CAPACITY: &str = "There are no longer any instances available with the requested specifications. Please refresh and try again.";
const HOUR: u64 = 3_600_000;

fn cluster_body(kind: &str, gpu: &str, per_pod: u32, pods: u32) -> Value {
    json!({
        "name": "trainers",
        "type": kind,
        "compute": {"gpuTypeId": gpu, "gpuCountPerPod": per_pod, "podCount": pods},
        "image": "runpod/pytorch:2.8",
        "ports": ["8888/http", "22/tcp"],
        "env": {"MODEL": "llama"},
        "disk": 30,
    })
}

/// `POST /v2/clusters`, whatever it answers.
async fn post(e: &Emu, body: Value) -> Resp {
    e.v2(Method::POST, "/clusters", Some(body)).await
}

async fn create(e: &Emu, body: Value) -> Value {
    let r = post(e, body).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_schema("Cluster", &r.body);
    r.body
}

async fn get_ok(e: &Emu, path: &str, schema: &str) -> Value {
    let r = e.v2(Method::GET, path, None).await;
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    assert_schema(schema, &r.body);
    r.body
}

async fn members(e: &Emu, id: &str) -> Vec<Value> {
    let b = get_ok(e, &format!("/clusters/{id}/pods"), "ListPodsResponse").await;
    b["pods"].as_array().unwrap().clone()
}

async fn pod_ids(e: &Emu, query: &str) -> Vec<String> {
    let b = get_ok(e, &format!("/pods{query}"), "ListPodsResponse").await;
    b["pods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect()
}

fn id_of(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// The catalog's availability of `gpu` for `product` nodes or pods of `count` GPUs.
async fn availability(e: &Emu, gpu: &str, product: &str, count: u32) -> String {
    let path = format!(
        "/catalog/gpus/{}?include=AVAILABILITY&product={product}&count={count}",
        gpu.replace(' ', "%20")
    );
    let b = get_ok(e, &path, "GpuType").await;
    b["availability"].as_str().unwrap().to_string()
}

async fn cluster_count(e: &Emu) -> usize {
    let b = get_ok(e, "/clusters", "ListClustersResponse").await;
    b["clusters"].as_array().unwrap().len()
}

#[tokio::test]
async fn a_created_cluster_matches_the_document_and_its_members_boot() {
    let e = start_default().await;
    let mut body = cluster_body("SLURM", RTX4090, 2, 2);
    body["mounts"] = json!({"network": [{"volumeId": "nv-demo0001", "path": "/data"}]});
    let c = create(&e, body).await;
    let id = id_of(&c);
    assert_eq!(c["name"], "trainers");
    assert_eq!(c["type"], "SLURM");
    assert_eq!(
        c["compute"],
        json!({"gpuTypeId": RTX4090, "gpuCountPerPod": 2, "podCount": 2})
    );
    // The network volume pins the cluster to its data center.
    assert_eq!(c["dataCenterId"], "EU-RO-1");
    assert_eq!(
        c["pods"],
        json!({"total": 2, "byStatus": {"PROVISIONING": 2}})
    );
    assert_eq!(c["primary"]["status"], "PROVISIONING");
    assert!(c["primary"].get("sshEndpoint").is_none());
    assert!(c.get("network").is_none(), "no overlay before provisioning");
    assert!(c["createdAt"].as_str().unwrap().ends_with('Z'));

    let pods = members(&e, &id).await;
    assert_eq!(pods.len(), 2);
    assert_eq!(c["primary"]["podId"], pods[0]["id"]);
    for (rank, (p, role)) in pods
        .iter()
        .zip(["SLURM_CONTROLLER", "SLURM_COMPUTE"])
        .enumerate()
    {
        assert_eq!(
            p["cluster"],
            json!({"id": id, "rank": rank, "role": role, "ip": format!("10.65.0.{}", rank + 2)})
        );
        assert_eq!(p["name"], format!("trainers-{rank}"));
        assert_eq!(p["gpu"], json!({"id": RTX4090, "count": 2}));
        assert_eq!(p["cost"], 1.38, "the price of a pod of 2 RTX 4090s");
        assert_eq!(p["dataCenterId"], "EU-RO-1");
        assert_eq!(p["image"], "runpod/pytorch:2.8");
        assert_eq!(p["env"], json!({"MODEL": "llama"}));
        assert_eq!(p["disk"], 30);
        assert_eq!(
            p["mounts"],
            json!({"network": [{"volumeId": "nv-demo0001", "path": "/data"}]})
        );
    }
    assert_ne!(pods[0]["ssh"], Value::Null);

    e.advance(3_000).await;
    let c = get_ok(&e, &format!("/clusters/{id}"), "Cluster").await;
    assert_eq!(c["pods"]["byStatus"], json!({"STARTING": 2}));
    assert_eq!(
        c["network"],
        json!({"cidr": "10.65.0.0/16", "vxlanId": c["network"]["vxlanId"], "vxlanPort": 4789})
    );
    assert!(c["network"]["vxlanId"].is_u64());
    assert!(c["primary"].get("sshEndpoint").is_none());

    e.advance(2_500).await;
    let c = get_ok(&e, &format!("/clusters/{id}"), "Cluster").await;
    assert_eq!(c["pods"], json!({"total": 2, "byStatus": {"RUNNING": 2}}));
    assert_eq!(c["primary"]["status"], "RUNNING");
    let primary = &members(&e, &id).await[0];
    assert_eq!(primary["status"], "RUNNING");
    let direct = &primary["ssh"]["direct"];
    assert_eq!(
        c["primary"]["sshEndpoint"],
        format!("{}:{}", direct["host"].as_str().unwrap(), direct["port"])
    );

    let listed = get_ok(&e, "/clusters", "ListClustersResponse").await;
    assert_eq!(listed["clusters"], json!([c]));
    let state = e.emu.admin().state().await.unwrap();
    assert_eq!(state["clusters"][0]["id"], id);

    // The volume is in use by the members.
    let r = e
        .v2(Method::DELETE, "/network-volumes/nv-demo0001", None)
        .await;
    assert_problem(&r, 400, "nv-demo0001");
    e.emu.shutdown().await;
}

#[tokio::test]
async fn ray_members_have_roles_and_training_members_none() {
    let e = start_default().await;
    let ray = create(&e, cluster_body("RAY", RTX4090, 1, 3)).await;
    let roles: Vec<Value> = members(&e, &id_of(&ray))
        .await
        .iter()
        .map(|p| p["cluster"]["role"].clone())
        .collect();
    assert_eq!(
        roles,
        [json!("RAY_HEAD"), json!("RAY_WORKER"), json!("RAY_WORKER")]
    );
    let training = create(&e, cluster_body("TRAINING", RTX4090, 1, 2)).await;
    for p in members(&e, &id_of(&training)).await {
        assert!(p["cluster"].get("role").is_none(), "{}", p["cluster"]);
        assert!(p["cluster"]["rank"].is_u64());
    }
    e.emu.shutdown().await;
}

#[tokio::test]
async fn members_are_listed_only_with_include_cluster_pods_and_never_by_graphql() {
    let e = start_default().await;
    let r = e
        .v2(
            Method::POST,
            "/pods",
            Some(json!({"name": "solo", "image": "i", "gpu": {"id": RTX4090, "count": 1}})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let solo = id_of(&r.body);
    let c = create(&e, cluster_body("APPLICATION", RTX4090, 1, 2)).await;
    let member_ids: Vec<String> = members(&e, &id_of(&c)).await.iter().map(id_of).collect();

    assert_eq!(pod_ids(&e, "").await, std::slice::from_ref(&solo));
    assert_eq!(
        pod_ids(&e, "?includeClusterPods=false").await,
        std::slice::from_ref(&solo)
    );
    let all = pod_ids(&e, "?includeClusterPods=true").await;
    assert_eq!(all.len(), 3);
    assert!(all.contains(&solo) && member_ids.iter().all(|m| all.contains(m)));
    let b = get_ok(&e, "/pods?includeClusterPods=true", "ListPodsResponse").await;
    for p in b["pods"].as_array().unwrap() {
        assert_eq!(p.get("cluster").is_some(), p["id"] != solo.as_str(), "{p}");
    }

    let r = e.gql("{ myself { pods { id } } }", json!({})).await;
    assert_eq!(r.body["data"]["myself"]["pods"], json!([{"id": solo}]));
    let r = e
        .gql(
            "query($id: String!) { pod(input: {podId: $id}) { id } }",
            json!({"id": member_ids[0]}),
        )
        .await;
    assert_eq!(r.body["data"]["pod"], Value::Null, "{}", r.body);
    assert!(
        r.body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("not found")
    );
    let r = e
        .gql(
            "mutation($id: String!) { podTerminate(input: {podId: $id}) }",
            json!({"id": member_ids[0]}),
        )
        .await;
    assert!(r.body["errors"].is_array(), "{}", r.body);
    assert_eq!(members(&e, &id_of(&c)).await.len(), 2);
    e.emu.shutdown().await;
}

#[tokio::test]
async fn member_pods_cannot_be_changed_through_the_pod_endpoints() {
    let e = start_default().await;
    let c = create(&e, cluster_body("TRAINING", RTX4090, 1, 2)).await;
    let member = id_of(&members(&e, &id_of(&c)).await[1]);
    let path = format!("/pods/{member}");
    let r = get_ok(&e, &path, "Pod").await;
    assert_eq!(r["cluster"]["id"], c["id"]);
    let r = e
        .v2(Method::PATCH, &path, Some(json!({"name": "mine"})))
        .await;
    assert_problem(&r, 409, "belongs to cluster");
    let r = e.v2(Method::DELETE, &path, None).await;
    assert_problem(&r, 409, "belongs to cluster");
    for action in ["stop", "terminate", "restart"] {
        let r = e
            .v2(
                Method::POST,
                &format!("{path}/action"),
                Some(json!({"action": action})),
            )
            .await;
        assert_problem(&r, 409, "belongs to cluster");
    }
    let pods = members(&e, &id_of(&c)).await;
    assert_eq!(pods.len(), 2);
    assert_eq!(pods[1]["name"], "trainers-1");
    assert_eq!(pods[1]["status"], "PROVISIONING");
    e.emu.shutdown().await;
}

#[tokio::test]
async fn schema_violations_are_422_and_rule_violations_400() {
    let e = start_default().await;
    let max = get_ok(
        &e,
        &format!("/catalog/gpus/{}", RTX4090.replace(' ', "%20")),
        "GpuType",
    )
    .await["maxCount"]["secure"]
        .as_u64()
        .unwrap() as u32;
    let with = |extra: Value| {
        let mut b = cluster_body("TRAINING", RTX4090, 1, 2);
        for (k, v) in extra.as_object().unwrap() {
            b[k] = v.clone();
        }
        b
    };
    for (body, status, needle) in [
        (
            cluster_body("TRAINING", RTX4090, 1, 1),
            422,
            "compute.podCount",
        ),
        (
            cluster_body("TRAINING", RTX4090, 1, 251),
            422,
            "compute.podCount",
        ),
        (
            cluster_body("TRAINING", RTX4090, 0, 2),
            422,
            "compute.gpuCountPerPod",
        ),
        (with(json!({"registry": "reg-1"})), 422, "registry"),
        (with(json!({"type": "BATCH"})), 422, "type"),
        (
            with(json!({"compute": {"gpuTypeId": RTX4090, "podCount": 2}})),
            422,
            "gpuCountPerPod",
        ),
        (
            json!({"name": "n", "type": "RAY", "image": "i"}),
            422,
            "compute",
        ),
        (
            cluster_body("TRAINING", RTX4090, max + 1, 2),
            400,
            "compute.gpuCountPerPod",
        ),
        (
            cluster_body("TRAINING", "NVIDIA B9000", 1, 2),
            400,
            "compute.gpuTypeId",
        ),
        (
            with(json!({"dataCenterIds": ["MARS-1"]})),
            400,
            "dataCenterIds",
        ),
        (
            with(json!({"mounts": {"network": [{"volumeId": "nv-nope", "path": "/d"}]}})),
            400,
            "nv-nope",
        ),
    ] {
        let r = e.v2(Method::POST, "/clusters", Some(body.clone())).await;
        assert_problem(&r, status, needle);
        assert_schema("ErrorResponse", &r.body);
    }
    assert_eq!(cluster_count(&e).await, 0);
    assert_eq!(pod_ids(&e, "?includeClusterPods=true").await.len(), 0);
    for (method, path) in [
        (Method::GET, "/clusters/nope"),
        (Method::DELETE, "/clusters/nope"),
        (Method::GET, "/clusters/nope/pods"),
    ] {
        assert_problem(
            &e.v2(method, path, None).await,
            404,
            "cluster nope not found",
        );
    }
    let r = e
        .v2(Method::PATCH, "/clusters/nope", Some(json!({"name": "x"})))
        .await;
    assert_problem(&r, 404, "cluster nope not found");
    let r = e
        .v2_as(
            READ_KEY,
            Method::POST,
            "/clusters",
            Some(cluster_body("RAY", RTX4090, 1, 2)),
        )
        .await;
    assert_problem(&r, 403, "read");
    e.emu.shutdown().await;
}

#[tokio::test]
async fn a_cluster_needs_enough_whole_machines_in_one_data_center() {
    let e = start_default().await;
    let admin = e.emu.admin();
    // The pod create's capacity answer, for comparison.
    admin.set_stock(H100, None, 0).await.unwrap();
    let r = e
        .v2(
            Method::POST,
            "/pods",
            Some(json!({"name": "p", "image": "i", "gpu": {"id": H100, "count": 8}})),
        )
        .await;
    assert_problem(&r, 400, NO_CAPACITY);
    let no_capacity = r.body["detail"].clone();

    // Three machines of 8 free for four nodes.
    admin.set_machines(H100, "US-GA-1", 3, 8).await.unwrap();
    let r = post(&e, cluster_body("TRAINING", H100, 8, 4)).await;
    assert_problem(&r, 400, NO_CAPACITY);
    assert_eq!(r.body["detail"], no_capacity);
    // Four machines, but with fewer GPUs free than a node needs.
    admin.set_machines(H100, "US-GA-1", 4, 4).await.unwrap();
    let r = post(&e, cluster_body("TRAINING", H100, 8, 4)).await;
    assert_problem(&r, 400, NO_CAPACITY);
    // Four machines of 8 free, but two in each of two data centers.
    admin.set_machines(H100, "US-GA-1", 2, 8).await.unwrap();
    admin.set_machines(H100, "US-TX-3", 2, 8).await.unwrap();
    let r = post(&e, cluster_body("TRAINING", H100, 8, 3)).await;
    assert_problem(&r, 400, NO_CAPACITY);
    assert_eq!(cluster_count(&e).await, 0);
    assert_eq!(pod_ids(&e, "?includeClusterPods=true").await.len(), 0);
    // Two nodes fit either; the preference decides.
    let mut body = cluster_body("TRAINING", H100, 8, 2);
    body["dataCenterIds"] = json!(["US-TX-3", "US-GA-1"]);
    let c = create(&e, body).await;
    assert_eq!(c["dataCenterId"], "US-TX-3");
    // A node of 4 GPUs needs a machine with 4 free: US-GA-1's two, once per cluster.
    let c = create(&e, cluster_body("TRAINING", H100, 4, 2)).await;
    assert_eq!(c["dataCenterId"], "US-GA-1");
    let first: Vec<String> = members(&e, &id_of(&c)).await.iter().map(id_of).collect();
    // Each of those machines has 4 free left: no node of 8, two more nodes of 4.
    let r = post(&e, cluster_body("TRAINING", H100, 8, 2)).await;
    assert_problem(&r, 400, NO_CAPACITY);
    let c = create(&e, cluster_body("TRAINING", H100, 4, 2)).await;
    assert_eq!(c["dataCenterId"], "US-GA-1");
    let r = post(&e, cluster_body("TRAINING", H100, 4, 2)).await;
    assert_problem(&r, 400, NO_CAPACITY);
    let state = e.emu.admin().state().await.unwrap();
    let host_of = |pod: &str| {
        state["pods"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == pod)
            .map(|p| p["machineId"].clone())
            .unwrap()
    };
    assert_ne!(
        host_of(&first[0]),
        host_of(&first[1]),
        "one machine per member"
    );
    e.emu.shutdown().await;
}

#[tokio::test]
async fn availability_reflects_held_gpus_and_delete_gives_them_back() {
    let e = start_default().await;
    e.emu
        .admin()
        .set_machines(H100, "US-GA-1", 2, 8)
        .await
        .unwrap();
    assert_eq!(availability(&e, H100, "POD", 8).await, "LOW");
    assert_eq!(availability(&e, H100, "CLUSTER", 8).await, "LOW");
    let c = create(&e, cluster_body("TRAINING", H100, 8, 2)).await;
    let id = id_of(&c);
    assert_eq!(availability(&e, H100, "POD", 1).await, "NONE");
    assert_eq!(availability(&e, H100, "CLUSTER", 1).await, "NONE");
    let r = e
        .v2(
            Method::POST,
            "/pods",
            Some(json!({"name": "p", "image": "i", "gpu": {"id": H100, "count": 1}})),
        )
        .await;
    assert_problem(&r, 400, NO_CAPACITY);

    let r = e.v2(Method::DELETE, &format!("/clusters/{id}"), None).await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(pod_ids(&e, "?includeClusterPods=true").await.len(), 0);
    assert_eq!(cluster_count(&e).await, 0);
    assert_problem(
        &e.v2(Method::GET, &format!("/clusters/{id}"), None).await,
        404,
        "not found",
    );
    assert_problem(
        &e.v2(Method::GET, &format!("/clusters/{id}/pods"), None)
            .await,
        404,
        "not found",
    );
    assert_eq!(availability(&e, H100, "POD", 8).await, "LOW");
    assert_eq!(availability(&e, H100, "CLUSTER", 8).await, "LOW");
    e.emu.shutdown().await;
}

#[tokio::test]
async fn patch_only_renames() {
    let e = start_default().await;
    let c = create(&e, cluster_body("RAY", RTX4090, 1, 2)).await;
    let path = format!("/clusters/{}", id_of(&c));
    let r = e
        .v2(Method::PATCH, &path, Some(json!({"name": "renamed"})))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_schema("Cluster", &r.body);
    assert_eq!(r.body["name"], "renamed");
    assert_eq!(r.body["compute"], c["compute"]);
    for (body, needle) in [
        (json!({}), "name"),
        (json!({"name": ""}), "name"),
        (json!({"name": "n", "image": "other"}), "image"),
        (
            json!({"compute": {"gpuTypeId": RTX4090, "gpuCountPerPod": 1, "podCount": 3}}),
            "compute",
        ),
        (json!({"type": "SLURM"}), "type"),
    ] {
        let r = e.v2(Method::PATCH, &path, Some(body)).await;
        assert_problem(&r, 422, needle);
    }
    let c = get_ok(&e, &path, "Cluster").await;
    assert_eq!(
        (c["name"].as_str(), c["type"].as_str()),
        (Some("renamed"), Some("RAY"))
    );
    e.emu.shutdown().await;
}

#[tokio::test]
async fn members_bill_to_their_cluster_and_to_the_aggregate() {
    let e = start_default().await;
    let c = create(&e, cluster_body("TRAINING", RTX4090, 2, 2)).await;
    let id = id_of(&c);
    e.advance(HOUR).await;
    let r = e.v2(Method::DELETE, &format!("/clusters/{id}"), None).await;
    assert_eq!(r.status, 204);
    e.advance(HOUR).await;

    let b = get_ok(
        &e,
        "/billing/clusters?bucketSize=day&lastN=3",
        "ListClusterBillingResponse",
    )
    .await;
    let totals = &b["metadata"]["totals"];
    // Two members of 2 RTX 4090s ($1.38/h each) for the hour they lived.
    let gpu = totals["gpuAmount"].as_f64().unwrap();
    assert!((gpu - 2.76).abs() < 0.01, "{b}");
    assert!(totals["diskAmount"].as_f64().unwrap() > 0.0, "{b}");
    assert_eq!(totals["networkingAmount"], 0.0);
    assert_eq!(b["metadata"]["uniqueClusterCount"], 1);
    assert!(
        b["records"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["clusterId"] == id.as_str())
    );
    let filtered = get_ok(
        &e,
        &format!("/billing/clusters?bucketSize=day&lastN=3&clusterId={id}"),
        "ListClusterBillingResponse",
    )
    .await;
    assert_eq!(filtered["metadata"]["totals"], *totals);
    assert_eq!(filtered["metadata"]["query"]["clusterId"], id.as_str());
    let other = get_ok(
        &e,
        "/billing/clusters?bucketSize=day&lastN=3&clusterId=nope",
        "ListClusterBillingResponse",
    )
    .await;
    assert_eq!(other["records"], json!([]));

    let pods = get_ok(
        &e,
        "/billing/pods?bucketSize=day&lastN=3",
        "ListPodBillingResponse",
    )
    .await;
    assert_eq!(pods["records"], json!([]), "members bill to their cluster");
    let all = get_ok(&e, "/billing?bucketSize=day&lastN=3", "ListBillingResponse").await;
    let all = &all["metadata"]["totals"];
    let near = |a: &Value, b: &Value| (a.as_f64().unwrap() - b.as_f64().unwrap()).abs() < 1e-5;
    assert!(
        near(&all["clusterGpuAmount"], &totals["gpuAmount"]),
        "{all}"
    );
    assert!(
        near(&all["clusterDiskAmount"], &totals["diskAmount"]),
        "{all}"
    );
    assert_eq!(all["podGpuAmount"], 0.0);
    e.emu.shutdown().await;
}

#[tokio::test]
async fn faults_rate_limits_and_create_500_reach_the_cluster_routes() {
    let e = start(EmulatorConfig {
        v2_quota: Quota {
            minute: 8,
            hour: 1_000,
            day: 10_000,
        },
        ..config()
    })
    .await;
    let admin = e.emu.admin();
    admin
        .fail_next_creates_on("POST /v2/clusters", 1)
        .await
        .unwrap();
    let r = post(&e, cluster_body("RAY", RTX4090, 1, 2)).await;
    assert_problem(&r, 500, "internal");
    assert_eq!(cluster_count(&e).await, 1, "the create took effect");
    assert!(admin.call_count("POST /v2/clusters").await.unwrap() >= 1);

    admin
        .set_error_rate("GET /v2/clusters/{id}", 1.0, 503)
        .await
        .unwrap();
    let r = e.v2(Method::GET, "/clusters/any", None).await;
    assert_problem(&r, 503, "");
    admin.clear_faults().await.unwrap();

    // The clusters group has its own window of 8 a minute, partly used above.
    let mut answers = Vec::new();
    for _ in 0..8 {
        let r = e.v2(Method::GET, "/clusters", None).await;
        assert!(r.headers.contains_key("ratelimit"), "{:?}", r.headers);
        assert!(r.headers.contains_key("ratelimit-policy"));
        answers.push(r);
    }
    let limited = answers
        .iter()
        .position(|r| r.status == 429)
        .expect("the window ran out");
    assert!(answers[..limited].iter().all(|r| r.status == 200));
    assert_problem(&answers[limited], 429, "rate limit");
    assert!(answers[limited].headers.contains_key("retry-after"));
    assert_eq!(e.v2(Method::GET, "/pods", None).await.status, 200);
    e.emu.shutdown().await;
}

/// The schema check these tests lean on refuses what the document forbids.
#[test]
fn the_schema_check_refuses_what_the_document_forbids() {
    let good = json!({
        "id": "c", "name": "n", "type": "RAY", "createdAt": "2026-06-01T00:00:00Z",
        "compute": {"gpuTypeId": RTX4090, "gpuCountPerPod": 1, "podCount": 2},
        "pods": {"total": 2, "byStatus": {"RUNNING": 2}},
    });
    assert!(schema::violations("Cluster", &good).is_empty());
    let mut extra = good.clone();
    extra["compute"]["cloud"] = json!("SECURE");
    let mut kind = good.clone();
    kind["type"] = json!("BATCH");
    let mut missing = good.clone();
    missing.as_object_mut().unwrap().remove("pods");
    let mut count = good.clone();
    count["pods"]["total"] = json!("two");
    for (bad, needle) in [
        (extra, "compute.cloud"),
        (kind, "type"),
        (missing, "pods: required"),
        (count, "pods.total"),
    ] {
        let problems = schema::violations("Cluster", &bad);
        assert!(
            problems.iter().any(|p| p.contains(needle)),
            "{needle}: {problems:?}"
        );
    }
    let member = json!({"cluster": {"id": "c", "rank": 0, "role": "CAPTAIN"}});
    let problems = schema::violations("PodCluster", &member["cluster"]);
    assert!(problems.iter().any(|p| p.contains("role")), "{problems:?}");
}
