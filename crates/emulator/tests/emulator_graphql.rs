//! Conformance of the GraphQL API (spec D, Pod, GpuType, Pod states, Authentication) and of
//! the capacity behaviour in the field notes.

mod common;

use common::*;
use reqwest::Method;
use serde_json::{Value, json};

const A40: &str = "NVIDIA A40";
const H100: &str = "NVIDIA H100 80GB HBM3";
const NO_CAPACITY: &str = "There are no longer any instances available with the requested specifications. Please refresh and try again.";
const HOST_FULL: &str = "There are not enough free GPUs on the host machine to start this pod";

const DEPLOY: &str = r#"mutation Deploy($input: PodFindAndDeployOnDemandInput!) {
  podFindAndDeployOnDemand(input: $input) { id imageName env machineId machine { podHostId } desiredStatus gpuCount costPerHr }
}"#;

const POD: &str = r#"query P($id: String!) {
  pod(input: {podId: $id}) {
    id name imageName env machineId desiredStatus
    machine { podHostId gpuDisplayName }
    runtime { uptimeInSeconds ports { ip isIpPublic privatePort publicPort type } gpus { id gpuUtilPercent memoryUtilPercent } container { cpuPercent memoryPercent } }
  }
}"#;

async fn deploy(e: &Emu, input: Value) -> Resp {
    e.gql(DEPLOY, json!({"input": input})).await
}

async fn deploy_ok(e: &Emu, gpu: &str, count: i32) -> Value {
    let r = deploy(e, json!({"gpuTypeId": gpu, "gpuCount": count, "cloudType": "ALL", "name": "p", "imageName": "img:1",
        "ports": "8888/http,22/tcp", "env": [{"key": "A", "value": "1"}], "containerDiskInGb": 20, "volumeInGb": 10,
        "minVcpuCount": 2, "minMemoryInGb": 8, "dockerArgs": "", "volumeMountPath": "/workspace", "allowedCudaVersions": ["12.4"]})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.get("errors").is_none(), "{}", r.body);
    r.body["data"]["podFindAndDeployOnDemand"].clone()
}

async fn pod(e: &Emu, id: &str) -> Value {
    let r = e.gql(POD, json!({"id": id})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body["data"]["pod"].clone()
}

async fn free(e: &Emu, gpu: &str) -> u64 {
    let state = e.emu.admin().state().await.unwrap();
    state["machines"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["gpuTypeId"] == gpu)
        .map(|m| m["freeGpus"].as_u64().unwrap())
        .sum()
}

#[tokio::test]
async fn deploy_returns_the_spec_fields_and_takes_stock() {
    let e = start_default().await;
    let before = free(&e, A40).await;
    let p = deploy_ok(&e, A40, 2).await;
    for f in ["id", "imageName", "machineId"] {
        assert!(p[f].is_string(), "{f}: {p}");
    }
    assert_eq!(p["env"], json!(["A=1"]));
    assert!(
        p["machine"]["podHostId"]
            .as_str()
            .unwrap()
            .starts_with(p["id"].as_str().unwrap())
    );
    assert_eq!(p["desiredStatus"], "RUNNING");
    assert_eq!(free(&e, A40).await, before - 2);
    assert!((p["costPerHr"].as_f64().unwrap() - 0.8).abs() < 1e-9, "{p}");
}

#[tokio::test]
async fn runtime_is_null_until_boot_then_has_ports_gpus_and_container() {
    let e = start_default().await;
    let p = deploy_ok(&e, A40, 2).await;
    let id = p["id"].as_str().unwrap();
    assert_eq!(pod(&e, id).await["runtime"], Value::Null);
    e.advance(5_000).await;
    let booted = pod(&e, id).await;
    let rt = &booted["runtime"];
    assert!(rt["uptimeInSeconds"].is_u64(), "{booted}");
    let ports = rt["ports"].as_array().unwrap();
    assert_eq!(ports.len(), 2);
    let private: Vec<u64> = ports
        .iter()
        .map(|p| p["privatePort"].as_u64().unwrap())
        .collect();
    assert_eq!(private, vec![8888, 22]);
    assert_eq!(ports[0]["type"], "http");
    assert_eq!(ports[1]["type"], "tcp");
    assert!(ports.iter().all(|p| p["isIpPublic"] == true
        && p["ip"].as_str().unwrap().contains('.')
        && p["publicPort"].as_u64().unwrap() > 0));
    assert_eq!(rt["gpus"].as_array().unwrap().len(), 2);
    assert!(rt["container"]["cpuPercent"].is_number());
    assert_eq!(booted["machine"]["gpuDisplayName"], "A40");
    e.advance(60_000).await;
    assert!(
        pod(&e, id).await["runtime"]["uptimeInSeconds"]
            .as_u64()
            .unwrap()
            >= 60
    );
}

#[tokio::test]
async fn stop_resume_terminate() {
    let e = start_default().await;
    let before = free(&e, A40).await;
    let id = deploy_ok(&e, A40, 1).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    e.advance(5_000).await;
    let r = e
        .gql(
            r#"mutation($id: String!) { podStop(input: {podId: $id}) { id desiredStatus } }"#,
            json!({"id": id}),
        )
        .await;
    assert_eq!(
        r.body["data"]["podStop"],
        json!({"id": id, "desiredStatus": "EXITED"})
    );
    assert_eq!(pod(&e, &id).await["runtime"], Value::Null);
    assert_eq!(free(&e, A40).await, before, "GPUs back to stock");
    let r = e.gql(r#"mutation($id: String!) { podResume(input: {podId: $id, gpuCount: 1}) { id desiredStatus imageName } }"#, json!({"id": id})).await;
    assert_eq!(
        r.body["data"]["podResume"],
        json!({"id": id, "desiredStatus": "RUNNING", "imageName": "img:1"})
    );
    assert_eq!(free(&e, A40).await, before - 1);
    let r = e
        .gql(
            r#"mutation($id: String!) { podTerminate(input: {podId: $id}) }"#,
            json!({"id": id}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert!(r.body.get("errors").is_none(), "{}", r.body);
    // The platform reports an unknown pod as an error, not as a silent null.
    let r = e.gql(POD, json!({"id": id})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["pod"], Value::Null, "{}", r.body);
    let message = r.body["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("not found") && message.contains(&id),
        "{}",
        r.body
    );
    assert_eq!(free(&e, A40).await, before);
    let r = e
        .gql(
            r#"mutation($id: String!) { podStop(input: {podId: $id}) { id } }"#,
            json!({"id": id}),
        )
        .await;
    assert!(
        r.body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("not found"),
        "{}",
        r.body
    );
}

#[tokio::test]
async fn no_stock_gives_the_platform_error_text_and_creates_nothing() {
    let e = start_default().await;
    e.emu.admin().set_stock(H100, None, 0).await.unwrap();
    let r = deploy(
        &e,
        json!({"gpuTypeId": H100, "gpuCount": 1, "imageName": "x", "cloudType": "ALL"}),
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["errors"][0]["message"], NO_CAPACITY);
    assert_eq!(r.body["data"]["podFindAndDeployOnDemand"], Value::Null);
    let pods = e.gql("{ myself { pods { id } } }", json!({})).await;
    assert_eq!(pods.body["data"]["myself"]["pods"], json!([]));
    // Community only: H100 has no community machines in the built-in catalog.
    e.emu.admin().set_stock(H100, Some(true), 8).await.unwrap();
    let r = deploy(
        &e,
        json!({"gpuTypeId": H100, "imageName": "x", "cloudType": "COMMUNITY"}),
    )
    .await;
    assert_eq!(r.body["errors"][0]["message"], NO_CAPACITY);
    let r = deploy(
        &e,
        json!({"gpuTypeId": H100, "imageName": "x", "cloudType": "SECURE"}),
    )
    .await;
    assert!(r.body.get("errors").is_none(), "{}", r.body);
}

#[tokio::test]
async fn resume_fails_when_the_host_gpus_were_taken() {
    let e = start_default().await;
    e.emu.admin().set_stock(H100, None, 8).await.unwrap();
    let id = deploy_ok(&e, H100, 8).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    e.gql(
        r#"mutation($id: String!) { podStop(input: {podId: $id}) { id } }"#,
        json!({"id": id}),
    )
    .await;
    deploy_ok(&e, H100, 4).await;
    let r = e.gql(r#"mutation($id: String!) { podResume(input: {podId: $id, gpuCount: 8}) { id desiredStatus } }"#, json!({"id": id})).await;
    assert_eq!(r.body["errors"][0]["message"], HOST_FULL);
    assert_eq!(pod(&e, &id).await["desiredStatus"], "EXITED");
}

#[tokio::test]
async fn invalid_deploys_name_the_field() {
    let e = start_default().await;
    for (input, needle) in [
        (
            json!({"gpuTypeId": "NVIDIA Nope", "imageName": "x"}),
            "gpuTypeId",
        ),
        (
            json!({"gpuTypeId": A40, "imageName": "x", "gpuCount": 0}),
            "gpuCount",
        ),
        (
            json!({"gpuTypeId": A40, "imageName": "x", "gpuCount": 9}),
            "gpuCount",
        ),
        (json!({"gpuTypeId": A40}), "imageName"),
        (
            json!({"gpuTypeId": A40, "imageName": "x", "ports": "80"}),
            "ports",
        ),
        (
            json!({"gpuTypeId": A40, "imageName": "x", "dataCenterId": "XX-1"}),
            "dataCenterId",
        ),
        (
            json!({"gpuTypeId": A40, "imageName": "x", "networkVolumeId": "nv-nope"}),
            "networkVolumeId",
        ),
        (
            json!({"gpuTypeId": A40, "imageName": "x", "templateId": "tmpl-nope"}),
            "templateId",
        ),
    ] {
        let r = deploy(&e, input).await;
        let msg = r.body["errors"][0]["message"].as_str().unwrap_or_default();
        assert!(msg.contains(needle), "{needle}: {}", r.body);
    }
    let pods = e.gql("{ myself { pods { id } } }", json!({})).await;
    assert_eq!(pods.body["data"]["myself"]["pods"], json!([]));
}

#[tokio::test]
async fn gpu_types_with_lowest_price() {
    let e = start_default().await;
    let r = e
        .gql(
            r#"{ gpuTypes { id displayName memoryInGb secureCloud communityCloud } }"#,
            json!({}),
        )
        .await;
    let all = r.body["data"]["gpuTypes"].as_array().unwrap();
    for id in [
        "NVIDIA GeForce RTX 4090",
        A40,
        "NVIDIA A100 80GB PCIe",
        H100,
    ] {
        assert!(all.iter().any(|g| g["id"] == id), "{id}");
    }
    let q = r#"query($id: String) { gpuTypes(input: {id: $id}) {
        id displayName memoryInGb secureCloud communityCloud securePrice communityPrice
        secure: lowestPrice(input: {gpuCount: 1, secureCloud: true}) { uninterruptablePrice stockStatus availableGpuCounts }
        community: lowestPrice(input: {gpuCount: 2, secureCloud: false}) { uninterruptablePrice stockStatus availableGpuCounts }
    } }"#;
    let r = e.gql(q, json!({"id": H100})).await;
    let g = &r.body["data"]["gpuTypes"][0];
    assert_eq!(r.body["data"]["gpuTypes"].as_array().unwrap().len(), 1);
    assert_eq!(g["memoryInGb"], 80);
    assert_eq!(g["secure"]["uninterruptablePrice"], 2.99);
    assert_eq!(
        g["secure"]["availableGpuCounts"],
        json!([1, 2, 3, 4, 5, 6, 7, 8])
    );
    assert!(["High", "Medium", "Low"].contains(&g["secure"]["stockStatus"].as_str().unwrap()));
    assert_eq!(g["community"]["stockStatus"], "None");
    assert_eq!(g["community"]["availableGpuCounts"], json!([]));
    e.emu.admin().set_stock(H100, Some(true), 2).await.unwrap();
    let r = e.gql(q, json!({"id": H100})).await;
    assert_eq!(
        r.body["data"]["gpuTypes"][0]["secure"]["stockStatus"],
        "Low"
    );
    assert_eq!(
        r.body["data"]["gpuTypes"][0]["secure"]["availableGpuCounts"],
        json!([1, 2])
    );
    let r = e.gql(q, json!({"id": "nothing"})).await;
    assert_eq!(r.body["data"]["gpuTypes"], json!([]));
}

#[tokio::test]
async fn any_valid_document_aliases_fragments_variables() {
    let e = start_default().await;
    let id = deploy_ok(&e, A40, 1).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let q = r#"
      fragment PodBits on Pod { id desiredStatus }
      query Many($id: String!) {
        me: myself { id pods { ...PodBits } }
        one: pod(input: {podId: $id}) { ... on Pod { name } ...PodBits }
        missing: pod(input: {podId: "nope"}) { id }
      }"#;
    let r = e.gql(q, json!({"id": id})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let d = &r.body["data"];
    assert_eq!(d["me"]["pods"][0]["id"], id.as_str());
    assert_eq!(
        d["one"],
        json!({"name": "p", "id": id, "desiredStatus": "RUNNING"})
    );
    assert_eq!(d["missing"], Value::Null);
}

#[tokio::test]
async fn invalid_documents_are_400() {
    let e = start_default().await;
    let r = e.gql("{ myself { nope } }", json!({})).await;
    assert_eq!(r.status, 400);
    assert!(
        r.body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("nope")
    );
    let r = e.gql("{ myself { ", json!({})).await;
    assert_eq!(r.status, 400);
    let r = e
        .gql(
            "query($id: String!) { pod(input: {podId: $id}) { id } }",
            json!({}),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
}

#[tokio::test]
async fn graphql_auth_by_query_parameter_and_bearer() {
    let e = start_default().await;
    let body = json!({"query": "{ myself { id } }"});
    let url = e.emu.graphql_url();
    let r = e.call(Method::POST, &url, None, Some(body.clone())).await;
    assert_eq!(r.status, 401);
    assert!(r.body["errors"][0]["message"].is_string());
    let r = e
        .call(
            Method::POST,
            &format!("{url}?api_key=wrong"),
            None,
            Some(body.clone()),
        )
        .await;
    assert_eq!(r.status, 401);
    let r = e
        .call(Method::POST, &url, Some("Bearer wrong"), Some(body.clone()))
        .await;
    assert_eq!(r.status, 401);
    let r = e
        .call(
            Method::POST,
            &format!("{url}?api_key={KEY}"),
            None,
            Some(body.clone()),
        )
        .await;
    assert_eq!(r.status, 200);
    let r = e
        .call(
            Method::POST,
            &url,
            Some(&format!("Bearer {KEY}")),
            Some(body.clone()),
        )
        .await;
    assert_eq!(r.status, 200);
    assert!(r.body["data"]["myself"]["id"].is_string());
    // Read-only keys may query but not mutate.
    let r = e
        .call(
            Method::POST,
            &format!("{url}?api_key={READ_KEY}"),
            None,
            Some(body),
        )
        .await;
    assert_eq!(r.status, 200);
    let m = json!({"query": "mutation { podStop(input: {podId: \"x\"}) { id } }"});
    let r = e
        .call(
            Method::POST,
            &format!("{url}?api_key={READ_KEY}"),
            None,
            Some(m),
        )
        .await;
    assert_eq!(r.status, 403);
    assert!(
        r.body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("read-only")
    );
}

#[tokio::test]
async fn many_pods_are_listed() {
    let e = start_default().await;
    e.emu.admin().set_stock(A40, Some(true), 400).await.unwrap();
    for _ in 0..300 {
        let r = deploy(
            &e,
            json!({"gpuTypeId": A40, "imageName": "x", "cloudType": "SECURE"}),
        )
        .await;
        assert!(r.body.get("errors").is_none(), "{}", r.body);
    }
    let r = e
        .gql(
            "{ myself { pods { id desiredStatus machine { gpuDisplayName } } } }",
            json!({}),
        )
        .await;
    assert_eq!(
        r.body["data"]["myself"]["pods"].as_array().unwrap().len(),
        300
    );
}

/// `myself { pods }` is built by a fast path; it must answer exactly what the ordinary
/// resolvers of `pod(input:)` answer, for any selection.
#[tokio::test]
async fn pod_listing_matches_single_pod_resolution_for_any_selection() {
    let e = start_default().await;
    let id = deploy_ok(&e, A40, 2).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    e.advance(5_000).await;
    let selection = r#"
        __typename id alias: name imageName env machineId desiredStatus gpuCount vcpuCount memoryInGb
        containerDiskInGb volumeInGb volumeMountPath dockerArgs dockerId ports port costPerHr podType
        uptimeSeconds lastStatusChange networkVolumeId templateId
        machine { podHostId gpuDisplayName gpuTypeId dataCenterId secureCloud __typename }
        runtime { uptimeInSeconds ports { ip isIpPublic privatePort publicPort type } gpus { id gpuUtilPercent memoryUtilPercent } container { cpuPercent memoryPercent } }
        ...Extra
        ... on Pod { machine { podHostId } }
        skipped: id @skip(if: true)
        kept: id @include(if: $yes)
        dropped: name @include(if: false)
    "#;
    let q = format!(
        "fragment Extra on Pod {{ costPerHr gpuCount }}
         query($id: String!, $yes: Boolean!) {{ myself {{ pods {{ {selection} }} }} pod(input: {{podId: $id}}) {{ {selection} }} }}"
    );
    let r = e.gql(&q, json!({"id": id, "yes": true})).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let listed = &r.body["data"]["myself"]["pods"][0];
    let single = &r.body["data"]["pod"];
    assert_eq!(listed, single);
    assert_eq!(listed["alias"], "p");
    assert_eq!(listed["kept"], id.as_str());
    assert!(listed.get("skipped").is_none() && listed.get("dropped").is_none());
    assert_eq!(listed["desiredStatus"], "RUNNING");
    assert_eq!(listed["runtime"]["ports"].as_array().unwrap().len(), 2);
}
