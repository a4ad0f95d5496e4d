//! The admin surface: faults, latency, 429 bursts, stock, "create succeeded but answered
//! 500", state dump, call counts and reset, all through the typed [`AdminClient`].

mod common;

use std::time::{Duration, Instant};

use common::*;
use reqwest::Method;
use serde_json::json;

fn endpoint_body() -> serde_json::Value {
    json!({"name": "f", "templateId": "tmpl-worker-base", "gpuTypeIds": ["NVIDIA A40"]})
}

/// Creates the endpoint of `endpoint_body` over REST v1.
async fn post_endpoint(e: &Emu) -> Resp {
    e.rest(Method::POST, "/endpoints", Some(endpoint_body()))
        .await
}

#[tokio::test]
async fn error_rate_answers_with_the_status_changes_nothing_and_is_counted() {
    let e = start_default().await;
    let admin = e.emu.admin();
    admin
        .set_error_rate("POST /v1/endpoints", 1.0, 503)
        .await
        .unwrap();
    let before = e.rest_count("/endpoints").await;
    post_endpoint(&e).await.assert_error(503, "injected");
    assert_eq!(e.rest_count("/endpoints").await, before);
    assert_eq!(admin.call_count("POST /v1/endpoints").await.unwrap(), 1);
    assert_eq!(admin.call_count("GET /v1/endpoints").await.unwrap(), 2);
    admin.clear_faults().await.unwrap();
    assert_eq!(post_endpoint(&e).await.status, 200);
    // Error rates per GraphQL operation.
    admin
        .set_error_rate("graphql:podFindAndDeployOnDemand", 1.0, 502)
        .await
        .unwrap();
    let r = e.gql(r#"mutation { podFindAndDeployOnDemand(input: {gpuTypeId: "NVIDIA A40", imageName: "x"}) { id } }"#, json!({})).await;
    assert_eq!(r.status, 502);
    assert!(r.body["errors"][0]["message"].is_string());
    assert_eq!(
        e.gql("{ myself { pods { id } } }", json!({})).await.status,
        200
    );
    assert_eq!(
        admin
            .call_count("graphql:podFindAndDeployOnDemand")
            .await
            .unwrap(),
        1
    );
    // Partial rates are random but bounded.
    admin.clear_faults().await.unwrap();
    admin
        .set_error_rate("GET /v1/templates", 0.5, 500)
        .await
        .unwrap();
    let mut failed = 0;
    for _ in 0..200 {
        if e.rest(Method::GET, "/templates", None).await.status == 500 {
            failed += 1;
        }
    }
    assert!(
        (50..150).contains(&failed),
        "{failed} of 200 failed at rate 0.5"
    );
}

#[tokio::test]
async fn latency_is_added() {
    let e = start_default().await;
    e.emu
        .admin()
        .add_latency("GET /v1/networkvolumes", 300)
        .await
        .unwrap();
    let t = Instant::now();
    assert_eq!(
        e.rest(Method::GET, "/networkvolumes", None).await.status,
        200
    );
    assert!(t.elapsed() >= Duration::from_millis(300));
    assert_eq!(e.rest(Method::GET, "/templates", None).await.status, 200);
    // Only to the route named: the emulator's own decision for a call (the latency it
    // then sleeps) adds none to another route. A real-time upper bound on that call's
    // answer would say the same, and fail whenever a loaded machine is slow.
    let faults = gpucloud_emulator::faults::Faults::default();
    faults
        .add_rule(
            serde_json::from_value(json!({"route": "GET /v1/networkvolumes", "latencyMs": 300}))
                .unwrap(),
        )
        .unwrap();
    let added = |route: &str, path: &str| faults.on_call(route, path, 0).latency_ms;
    assert_eq!(added("GET /v1/networkvolumes", "/v1/networkvolumes"), 300);
    assert_eq!(added("GET /v1/templates", "/v1/templates"), 0);
}

#[tokio::test]
async fn burst_of_429_then_back_to_normal() {
    let e = start_default().await;
    let admin = e.emu.admin();
    admin.burst_429(Some("GET /v1/endpoints"), 2).await.unwrap();
    for _ in 0..2 {
        let r = e.rest(Method::GET, "/endpoints", None).await;
        r.assert_error(429, "rate limit");
        assert!(r.headers.get("retry-after").is_some());
    }
    assert_eq!(e.rest(Method::GET, "/endpoints", None).await.status, 200);
    // A timed burst on every route, on the emulator's clock.
    admin.burst_429_for(None, 10_000).await.unwrap();
    assert_eq!(e.rest(Method::GET, "/templates", None).await.status, 429);
    let ep = "ep-demo0001";
    assert_eq!(e.job(Method::GET, ep, "health", None).await.status, 429);
    admin.advance_clock(10_000).await.unwrap();
    assert_eq!(e.rest(Method::GET, "/templates", None).await.status, 200);
}

#[tokio::test]
async fn create_succeeds_but_answers_500() {
    let e = start_default().await;
    let admin = e.emu.admin();
    admin.fail_next_creates(1).await.unwrap();
    let before = e.rest_count("/endpoints").await;
    post_endpoint(&e).await.assert_error(500, "internal");
    assert_eq!(
        e.rest_count("/endpoints").await,
        before + 1,
        "the endpoint exists despite the 500"
    );
    assert_eq!(
        admin.call_count("POST /v1/endpoints").await.unwrap(),
        1,
        "not retried"
    );
    assert_eq!(post_endpoint(&e).await.status, 200);

    admin
        .fail_next_creates_on("graphql:podFindAndDeployOnDemand", 1)
        .await
        .unwrap();
    // Not a create: untouched.
    assert_eq!(post_endpoint(&e).await.status, 200);
    let r = e.gql(r#"mutation { podFindAndDeployOnDemand(input: {gpuTypeId: "NVIDIA A40", imageName: "x", name: "dup-check"}) { id } }"#, json!({})).await;
    assert_eq!(r.status, 500);
    let pods = e.gql("{ myself { pods { id name } } }", json!({})).await;
    assert_eq!(pods.body["data"]["myself"]["pods"][0]["name"], "dup-check");
}

/// The free community-cloud A40 GPUs of an admin state dump.
fn community_a40_free(state: &serde_json::Value) -> u64 {
    let machines = state["machines"].as_array().expect("machines in the dump");
    machines
        .iter()
        .filter(|m| m["gpuTypeId"] == "NVIDIA A40" && m["secureCloud"] == false)
        .map(|m| m["freeGpus"].as_u64().unwrap())
        .sum()
}

#[tokio::test]
async fn stock_state_dump_and_reset() {
    let e = start_default().await;
    let admin = e.emu.admin();
    admin.set_stock("NVIDIA A40", Some(false), 3).await.unwrap();
    let state = admin.state().await.unwrap();
    let community_free = community_a40_free(&state);
    assert_eq!(community_free, 3);
    for key in [
        "endpoints",
        "networkVolumes",
        "templates",
        "delegations",
        "pods",
        "jobs",
        "clock",
        "faults",
    ] {
        assert!(state.get(key).is_some(), "{key} missing from the dump");
    }
    assert!(admin.set_stock("NVIDIA Nope", None, 1).await.is_err());
    post_endpoint(&e).await;
    admin.reset().await.unwrap();
    assert_eq!(e.rest_count("/endpoints").await, 1);
    let calls = admin.calls().await.unwrap();
    assert_eq!(calls.get("POST /v1/endpoints"), None);
    let state = admin.state().await.unwrap();
    let free = community_a40_free(&state);
    assert_eq!(free, 8, "back to the fixtures");
}

#[tokio::test]
async fn state_dump_never_contains_the_api_key() {
    let e = start_default().await;
    e.run("ep-demo0001", json!({"input": {}})).await;
    let text = e.emu.admin().state().await.unwrap().to_string();
    assert!(!text.contains(KEY) && !text.contains(READ_KEY));
}
