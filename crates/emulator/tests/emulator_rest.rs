//! Conformance of the REST management API (spec B, NetworkVolume, NetworkVolumeUpdateInput,
//! Endpoint creation input, Error body, Authentication) and the registry delegation API (C).

mod common;

use common::*;
use reqwest::Method;
use serde_json::{Value, json};

async fn volume(e: &Emu, size: u32) -> Value {
    let r = e
        .rest(
            Method::POST,
            "/networkvolumes",
            Some(json!({"name": "vol", "size": size, "dataCenterId": "EU-RO-1"})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
}

// ---- Network volume update (POST .../update and PATCH synonym)

#[tokio::test]
async fn volume_update_by_post_and_patch_returns_the_volume() {
    let e = start_default().await;
    let v = volume(&e, 100).await;
    let id = v["id"].as_str().unwrap();
    let r = e
        .rest(
            Method::POST,
            &format!("/networkvolumes/{id}/update"),
            Some(json!({"size": 200})),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body,
        json!({"id": id, "name": "vol", "size": 200, "dataCenterId": "EU-RO-1"})
    );
    let r = e
        .rest(
            Method::PATCH,
            &format!("/networkvolumes/{id}"),
            Some(json!({"name": "renamed", "size": 4000})),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        (r.body["name"].as_str(), r.body["size"].as_u64()),
        (Some("renamed"), Some(4000))
    );
    // Names need not be unique.
    let other = volume(&e, 10).await;
    let r = e
        .rest(
            Method::PATCH,
            &format!("/networkvolumes/{}", other["id"].as_str().unwrap()),
            Some(json!({"name": "renamed"})),
        )
        .await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn volume_update_rejects_invalid_input_with_400_and_changes_nothing() {
    let e = start_default().await;
    let v = volume(&e, 100).await;
    let id = v["id"].as_str().unwrap().to_string();
    let cases = [
        (
            json!({"size": 100}),
            "size: must be greater than the current size",
        ),
        (
            json!({"size": 99}),
            "size: must be greater than the current size",
        ),
        (json!({"size": 4001}), "size: must be between 0 and 4000"),
        (json!({"size": -1}), "size: must be between 0 and 4000"),
        (json!({"size": "big"}), "size: must be an integer"),
        (json!({"name": 5}), "name: must be a string"),
        (
            json!({"name": "x", "dataCenterId": "US-TX-3"}),
            "dataCenterId: unexpected property",
        ),
    ];
    for (body, needle) in cases {
        for path in [
            format!("/networkvolumes/{id}/update"),
            format!("/networkvolumes/{id}"),
        ] {
            let method = if path.ends_with("update") {
                Method::POST
            } else {
                Method::PATCH
            };
            let r = e.rest(method, &path, Some(body.clone())).await;
            r.assert_error(400, needle);
            assert!(r.body["errors"].is_array(), "errors list: {}", r.body);
        }
    }
    // A body is required.
    let r = e
        .raw(
            Method::POST,
            &format!("{}/networkvolumes/{id}/update", e.emu.rest_url()),
            &format!("Bearer {KEY}"),
            vec![],
        )
        .await;
    r.assert_error(400, "body");
    let now = e
        .rest(Method::GET, &format!("/networkvolumes/{id}"), None)
        .await;
    assert_eq!(now.body, v, "a rejected update changed the volume");
}

#[tokio::test]
async fn volume_update_unknown_id_is_404() {
    let e = start_default().await;
    e.rest(
        Method::POST,
        "/networkvolumes/nope/update",
        Some(json!({"size": 10})),
    )
    .await
    .assert_error(404, "nope");
    e.rest(
        Method::PATCH,
        "/networkvolumes/nope",
        Some(json!({"size": 10})),
    )
    .await
    .assert_error(404, "nope");
}

#[tokio::test]
async fn volumes_create_list_get_delete() {
    let e = start_default().await;
    let before = e
        .rest(Method::GET, "/networkvolumes", None)
        .await
        .body
        .as_array()
        .unwrap()
        .len();
    assert!(before >= 1, "fixtures seed a volume");
    for (body, needle) in [
        (
            json!({"size": 10, "dataCenterId": "EU-RO-1"}),
            "name: required",
        ),
        (
            json!({"name": "a", "size": 0, "dataCenterId": "EU-RO-1"}),
            "size",
        ),
        (
            json!({"name": "a", "size": 4001, "dataCenterId": "EU-RO-1"}),
            "size",
        ),
        (
            json!({"name": "a", "size": 10, "dataCenterId": "MOON-1"}),
            "dataCenterId: unknown data center",
        ),
        (json!({"name": "a", "size": 10}), "dataCenterId: required"),
    ] {
        e.rest(Method::POST, "/networkvolumes", Some(body))
            .await
            .assert_error(400, needle);
    }
    let v = volume(&e, 50).await;
    let id = v["id"].as_str().unwrap();
    let list = e.rest(Method::GET, "/networkvolumes", None).await.body;
    assert_eq!(list.as_array().unwrap().len(), before + 1);
    assert_eq!(
        e.rest(Method::GET, &format!("/networkvolumes/{id}"), None)
            .await
            .body,
        v
    );
    assert_eq!(
        e.rest(Method::DELETE, &format!("/networkvolumes/{id}"), None)
            .await
            .status,
        204
    );
    e.rest(Method::GET, &format!("/networkvolumes/{id}"), None)
        .await
        .assert_error(404, id);
}

// ---- Endpoints

#[tokio::test]
async fn endpoint_create_returns_the_record_with_defaults() {
    let e = start_default().await;
    let r = e
        .rest(Method::POST, "/endpoints", Some(json!({
            "name": "sd", "templateId": "tmpl-worker-base",
            "gpuTypeIds": ["NVIDIA A40", "NVIDIA GeForce RTX 4090"], "workersMin": 1, "workersMax": 4, "idleTimeout": 60
        })))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let b = &r.body;
    assert!(b["id"].is_string());
    assert_eq!(b["name"], "sd");
    assert_eq!(b["templateId"], "tmpl-worker-base");
    assert_eq!(
        b["gpuTypeIds"],
        json!(["NVIDIA A40", "NVIDIA GeForce RTX 4090"])
    );
    assert_eq!(
        (
            b["workersMin"].as_u64(),
            b["workersMax"].as_u64(),
            b["idleTimeout"].as_u64()
        ),
        (Some(1), Some(4), Some(60))
    );
    assert_eq!(b["scalerType"], "QUEUE_DELAY");
    assert_eq!(b["scalerValue"], 4);
    assert_eq!(b["gpuCount"], 1);
    assert_eq!(b["executionTimeoutMs"], 600000);
    assert_eq!(b["flashboot"], false);
    assert!(b.get("networkVolumeId").is_some());
    let id = b["id"].as_str().unwrap();
    // The job API serves the new endpoint at once.
    let idle = e.health(id).await["workers"]["idle"].as_u64().unwrap();
    assert!(idle <= 1, "workersMin is 1: {idle} idle workers");
    let r = e.rest(Method::POST, "/endpoints", Some(json!({"name": "d", "templateId": "tmpl-worker-base", "gpuTypeIds": ["NVIDIA A40"]}))).await;
    assert_eq!(r.body["idleTimeout"], 5);
}

#[tokio::test]
async fn endpoint_create_validation_names_the_field_and_creates_nothing() {
    let e = start_default().await;
    let count = || e.rest_count("/endpoints");
    let before = count().await;
    let base = json!({"name": "x", "templateId": "tmpl-worker-base", "gpuTypeIds": ["NVIDIA A40"]});
    let cases = [
        (
            json!({"workersMin": 5, "workersMax": 2}),
            "workersMin: must not be greater than workersMax",
        ),
        (
            json!({"templateId": "missing"}),
            "templateId: unknown template",
        ),
        (
            json!({"gpuTypeIds": ["NVIDIA Quantum 1"]}),
            "gpuTypeIds: unknown GPU type",
        ),
        (
            json!({"gpuTypeIds": "NVIDIA A40"}),
            "gpuTypeIds: must be an array of strings",
        ),
        (json!({"idleTimeout": 0}), "idleTimeout"),
        (json!({"idleTimeout": 3601}), "idleTimeout"),
        (json!({"workersMax": -1}), "workersMax"),
        (json!({"scalerType": "SOMETIMES"}), "scalerType"),
        (json!({"scalerValue": 0}), "scalerValue"),
        (json!({"executionTimeoutMs": 10}), "executionTimeoutMs"),
        (json!({"networkVolumeId": "nv-missing"}), "networkVolumeId"),
        (json!({"name": ""}), "name: must not be empty"),
        (
            json!({"unknownThing": 1}),
            "unknownThing: unexpected property",
        ),
    ];
    for (patch, needle) in cases {
        let mut body = base.clone();
        for (k, v) in patch.as_object().unwrap() {
            body[k] = v.clone();
        }
        e.rest(Method::POST, "/endpoints", Some(body))
            .await
            .assert_error(400, needle);
    }
    e.rest(Method::POST, "/endpoints", Some(json!({})))
        .await
        .assert_error(400, "name: required");
    e.rest(Method::POST, "/endpoints", None)
        .await
        .assert_error(400, "body");
    assert_eq!(count().await, before);
}

#[tokio::test]
async fn endpoint_get_patch_delete() {
    let e = start_default().await;
    let id = e.endpoint(json!({"workersMax": 2})).await;
    let got = e.rest(Method::GET, &format!("/endpoints/{id}"), None).await;
    assert_eq!(got.body["workersMax"], 2);
    let r = e
        .rest(
            Method::PATCH,
            &format!("/endpoints/{id}"),
            Some(json!({"workersMin": 3})),
        )
        .await;
    r.assert_error(400, "workersMin: must not be greater than workersMax");
    assert_eq!(
        e.rest(Method::GET, &format!("/endpoints/{id}"), None)
            .await
            .body,
        got.body
    );
    let r = e
        .rest(
            Method::PATCH,
            &format!("/endpoints/{id}"),
            Some(json!({"workersMax": 5, "idleTimeout": 3600, "name": "new"})),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        (
            r.body["workersMax"].as_u64(),
            r.body["idleTimeout"].as_u64(),
            r.body["name"].as_str()
        ),
        (Some(5), Some(3600), Some("new"))
    );
    assert_eq!(
        e.rest(Method::DELETE, &format!("/endpoints/{id}"), None)
            .await
            .status,
        204
    );
    e.rest(Method::GET, &format!("/endpoints/{id}"), None)
        .await
        .assert_error(404, &id);
    e.rest(Method::DELETE, &format!("/endpoints/{id}"), None)
        .await
        .assert_error(404, &id);
    // The job API forgets it too.
    e.job(Method::GET, &id, "health", None)
        .await
        .assert_error(404, &id);
}

// ---- Templates

#[tokio::test]
async fn templates_create_list_get_delete() {
    let e = start_default().await;
    let r = e.rest(Method::POST, "/templates", Some(json!({"name": "t1", "imageName": "img:1", "isServerless": true, "env": {"A": "b"}, "ports": ["8000/http"]}))).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_string();
    assert_eq!(r.body["env"], json!({"A": "b"}));
    e.rest(
        Method::POST,
        "/templates",
        Some(json!({"name": "t1", "imageName": "img"})),
    )
    .await
    .assert_error(400, "name");
    e.rest(Method::POST, "/templates", Some(json!({"name": "t2"})))
        .await
        .assert_error(400, "imageName: required");
    let list = e.rest(Method::GET, "/templates", None).await.body;
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == id.as_str())
    );
    assert_eq!(
        e.rest(Method::GET, &format!("/templates/{id}"), None)
            .await
            .body["name"],
        "t1"
    );
    // A template in use cannot be deleted.
    let ep = e.endpoint(json!({"templateId": id})).await;
    e.rest(Method::DELETE, &format!("/templates/{id}"), None)
        .await
        .assert_error(400, &ep);
    e.rest(Method::DELETE, &format!("/endpoints/{ep}"), None)
        .await;
    assert_eq!(
        e.rest(Method::DELETE, &format!("/templates/{id}"), None)
            .await
            .status,
        204
    );
    e.rest(Method::GET, &format!("/templates/{id}"), None)
        .await
        .assert_error(404, &id);
}

// ---- Authentication

#[tokio::test]
async fn rest_auth_401_403() {
    let e = start_default().await;
    let url = format!("{}/endpoints", e.emu.rest_url());
    e.call(Method::GET, &url, None, None)
        .await
        .assert_error(401, "API key");
    e.call(Method::GET, &url, Some("Bearer nope"), None)
        .await
        .assert_error(401, "API key");
    // REST needs the bearer scheme.
    e.call(Method::GET, &url, Some(KEY), None)
        .await
        .assert_error(401, "API key");
    let read = format!("Bearer {READ_KEY}");
    assert_eq!(
        e.call(Method::GET, &url, Some(&read), None).await.status,
        200
    );
    let body = json!({"name": "x", "templateId": "tmpl-worker-base", "gpuTypeIds": ["NVIDIA A40"]});
    e.call(Method::POST, &url, Some(&read), Some(body))
        .await
        .assert_error(403, "read-only");
    let vol = format!("{}/networkvolumes/nv-demo0001", e.emu.rest_url());
    e.call(Method::PATCH, &vol, Some(&read), Some(json!({"size": 200})))
        .await
        .assert_error(403, "read-only");
    e.call(
        Method::POST,
        &format!("{vol}/update"),
        Some(&read),
        Some(json!({"size": 200})),
    )
    .await
    .assert_error(403, "read-only");
    e.call(Method::DELETE, &vol, Some(&read), None)
        .await
        .assert_error(403, "read-only");
    assert_eq!(
        e.rest(Method::GET, "/networkvolumes/nv-demo0001", None)
            .await
            .body["size"],
        100
    );
}

#[tokio::test]
async fn unknown_routes_get_the_error_body() {
    let e = start_default().await;
    e.rest(Method::GET, "/nothing-here", None)
        .await
        .assert_error(404, "/v1/nothing-here");
    e.rest(Method::PUT, "/endpoints", None)
        .await
        .assert_error(405, "PUT");
}

// ---- Registry delegation (C)

#[tokio::test]
async fn registry_lists_delegations_with_every_field() {
    let e = start_default().await;
    let url = format!("{}/v2/registries/delegations", e.emu.registry_url());
    let r = e
        .call(Method::GET, &url, Some(&format!("Bearer {KEY}")), None)
        .await;
    assert_eq!(r.status, 200);
    let list = r.body["delegations"].as_array().unwrap();
    assert!(!list.is_empty());
    for field in [
        "id",
        "delegatorUserId",
        "cloudUser",
        "repository",
        "tag",
        "cloudRegion",
        "createdAt",
        "name",
        "dockerRegistryUri",
    ] {
        assert!(list[0][field].is_string(), "{field}: {}", list[0]);
    }
    assert!(
        list[0]["createdAt"]
            .as_str()
            .unwrap()
            .parse::<jiff::Timestamp>()
            .is_ok()
    );
    // Not taken for an endpoint called "registries".
    assert!(r.body.get("jobs").is_none());
}

#[tokio::test]
async fn registry_errors_401_403_404_429() {
    let mut cfg = config();
    cfg.api_keys.push("no-registry".parse().unwrap());
    cfg.registry_forbidden_keys = vec!["no-registry".into()];
    cfg.registry_requests_per_minute = 5;
    let e = start(cfg).await;
    let url = format!("{}/v2/registries/delegations", e.emu.registry_url());
    e.call(Method::GET, &url, None, None)
        .await
        .assert_error(401, "API key");
    e.call(Method::GET, &url, Some("Bearer bad"), None)
        .await
        .assert_error(401, "API key");
    e.call(Method::GET, &url, Some("Bearer no-registry"), None)
        .await
        .assert_error(403, "registry");
    let auth = format!("Bearer {KEY}");
    e.call(
        Method::GET,
        &format!("{url}/dlg-missing"),
        Some(&auth),
        None,
    )
    .await
    .assert_error(404, "dlg-missing");
    let r = e
        .call(Method::GET, &format!("{url}/dlg-0001"), Some(&auth), None)
        .await;
    assert_eq!(r.body["id"], "dlg-0001");
    for _ in 0..3 {
        assert_eq!(
            e.call(Method::GET, &url, Some(&auth), None).await.status,
            200
        );
    }
    let r = e.call(Method::GET, &url, Some(&auth), None).await;
    r.assert_error(429, "per minute");
    assert!(r.headers.get("retry-after").is_some());
    e.advance(60_000).await;
    assert_eq!(
        e.call(Method::GET, &url, Some(&auth), None).await.status,
        200
    );
}
