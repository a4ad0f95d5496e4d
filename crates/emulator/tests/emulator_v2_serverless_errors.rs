//! REST v2 serverless endpoints (`/v2/serverless`) refusing what the document refuses:
//! schema violations are 422 and rule violations 400, naming the field; auth scopes, a
//! missing endpoint, and a create answered 500 that did happen.

mod common;

use common::serverless::*;
use common::v2::*;
use common::*;
use reqwest::Method;
use serde_json::{Value, json};

#[tokio::test]
async fn schema_violations_are_422_and_rule_violations_400() {
    let e = start_default().await;
    for (body, field) in [
        (
            json!({"type": "QUEUE", "image": "i", "gpu": {"pools": ["ADA_24"]}, "scaling": {"type": "QUEUE_DELAY", "queueDelay": 4}}),
            "name",
        ),
        (
            json!({"name": "n", "image": "i", "gpu": {"pools": ["ADA_24"]}, "scaling": {"type": "QUEUE_DELAY", "queueDelay": 4}}),
            "type",
        ),
        (
            json!({"name": "n", "type": "QUEUE", "gpu": {"pools": ["ADA_24"]}, "scaling": {"type": "QUEUE_DELAY", "queueDelay": 4}}),
            "image",
        ),
        (
            gpu_body(json!({"scaling": {"type": "QUEUE_DELAY"}})),
            "scaling.queueDelay",
        ),
        (
            gpu_body(json!({"scaling": {"type": "QUEUE_DELAY", "queueDelay": 0.1}})),
            "scaling.queueDelay",
        ),
        (gpu_body(json!({"type": "LOAD_BALANCER"})), "scaling.type"),
        (gpu_body(json!({"gpu": {"pools": []}})), "gpu.pools"),
        (
            gpu_body(json!({"gpu": {"pools": ["ADA_24"], "count": 0}})),
            "gpu.count",
        ),
        (
            gpu_body(json!({"gpu": {"pools": ["ADA_24"], "allowedCudaVersions": ["12"]}})),
            "gpu.allowedCudaVersions[0]",
        ),
        (
            gpu_body(json!({"workers": {"idleTimeout": 4000}})),
            "workers.idleTimeout",
        ),
        (gpu_body(json!({"workers": {"min": -1}})), "workers.min"),
        (gpu_body(json!({"flashboot": true})), "flashboot"),
        (
            gpu_body(json!({"gpuTypeIds": ["NVIDIA A40"]})),
            "gpuTypeIds",
        ),
        (gpu_body(json!({"timeout": "long"})), "timeout"),
        (
            gpu_body(
                json!({"cpu": [{"id": "cpu5c", "vcpuCount": 4}, {"id": "cpu5c", "vcpuCount": 4}]}),
            ),
            "cpu",
        ),
    ] {
        let r = v2::v2(&e, Method::POST, "/serverless", Some(body.clone())).await;
        unprocessable(&r, field);
    }
    // Not a serverless template: 422. Unknown template: 404.
    let r = v2::v2(
        &e,
        Method::POST,
        "/serverless",
        Some(gpu_body(json!({"templateId": "tmpl-pytorch"}))),
    )
    .await;
    unprocessable(&r, "templateId");
    let r = v2::v2(
        &e,
        Method::POST,
        "/serverless",
        Some(gpu_body(json!({"templateId": "tmpl-missing"}))),
    )
    .await;
    problem(&r, 404, "tmpl-missing");
    for (body, field) in [
        (
            gpu_body(json!({"gpu": {"pools": ["TPU_9000"]}})),
            "gpu.pools",
        ),
        (
            gpu_body(json!({"gpu": {"pools": ["ADA_24"], "excludedTypes": ["NVIDIA A40"]}})),
            "gpu.excludedTypes",
        ),
        (
            gpu_body(
                json!({"gpu": {"pools": ["ADA_24"], "excludedTypes": ["NVIDIA GeForce RTX 4090"]}}),
            ),
            "gpu.excludedTypes",
        ),
        (
            gpu_body(
                json!({"gpu": {"pools": ["ADA_24"], "allowedCudaVersions": ["12.8"], "minCudaVersion": "12.4"}}),
            ),
            "gpu.allowedCudaVersions",
        ),
        (
            gpu_body(json!({"cpu": [{"id": "cpu5c", "vcpuCount": 4}]})),
            "gpu",
        ),
        (
            json!({"name": "n", "type": "QUEUE", "image": "i", "scaling": {"type": "QUEUE_DELAY", "queueDelay": 4}}),
            "gpu",
        ),
        (
            gpu_body(json!({"gpu": null, "cpu": [{"id": "cpu5c", "vcpuCount": 3}]})),
            "cpu[0].vcpuCount",
        ),
        (
            gpu_body(json!({"workers": {"min": 4, "max": 2}})),
            "workers.min",
        ),
        (
            gpu_body(
                json!({"scaling": {"type": "REQUEST_COUNT", "requestCount": 2}, "workers": {"idleTimeout": 5}}),
            ),
            "workers.idleTimeout",
        ),
        (
            gpu_body(json!({"dataCenterIds": ["MARS-1"]})),
            "dataCenterIds",
        ),
        (
            gpu_body(json!({"networkVolumes": ["nv-missing"]})),
            "networkVolumes",
        ),
        (
            gpu_body(json!({"networkVolumes": ["nv-demo0001"], "dataCenterIds": ["US-TX-3"]})),
            "networkVolumes",
        ),
        (gpu_body(json!({"registry": "reg-missing"})), "registry"),
        (gpu_body(json!({"ports": ["http"]})), "ports"),
    ] {
        let body = match body.get("gpu") {
            Some(Value::Null) => {
                let mut b = body.clone();
                b.as_object_mut().unwrap().remove("gpu");
                b
            }
            _ => body,
        };
        let r = v2::v2(&e, Method::POST, "/serverless", Some(body.clone())).await;
        problem(&r, 400, field);
        rate_headers(&r);
    }
    // Nothing was created by a refused request.
    let list = get(&e, "/serverless").await;
    assert_eq!(list["endpoints"].as_array().unwrap().len(), 1);

    // Update rules.
    let id = create(&e, gpu_body(json!({}))).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/serverless/{id}");
    unprocessable(
        &v2::v2(
            &e,
            Method::PATCH,
            &path,
            Some(json!({"type": "LOAD_BALANCER"})),
        )
        .await,
        "type",
    );
    unprocessable(
        &v2::v2(
            &e,
            Method::PATCH,
            &path,
            Some(json!({"gpu": {"excludedTypes": ["NVIDIA A40"]}})),
        )
        .await,
        "gpu.excludedTypes",
    );
    problem(
        &v2::v2(
            &e,
            Method::PATCH,
            &path,
            Some(json!({"cpu": [{"id": "cpu5c", "vcpuCount": 4}]})),
        )
        .await,
        400,
        "cpu",
    );
    problem(
        &v2::v2(
            &e,
            Method::PATCH,
            &path,
            Some(json!({"workers": {"min": 9}})),
        )
        .await,
        400,
        "workers.min",
    );
    patch(&e, &id, json!({"gpu": {"minCudaVersion": "12.4"}})).await;
    // The stored floor and a new set would both hold: clear one.
    problem(
        &v2::v2(
            &e,
            Method::PATCH,
            &path,
            Some(json!({"gpu": {"allowedCudaVersions": ["12.8"]}})),
        )
        .await,
        400,
        "gpu.allowedCudaVersions",
    );
    let ep = patch(
        &e,
        &id,
        json!({"gpu": {"allowedCudaVersions": ["12.8"], "minCudaVersion": ""}}),
    )
    .await;
    assert_eq!(
        (
            ep["gpu"]["allowedCudaVersions"].clone(),
            ep["gpu"]["minCudaVersion"].clone()
        ),
        (json!(["12.8"]), Value::Null)
    );
}

#[tokio::test]
async fn auth_scopes_not_found_and_create_500() {
    let e = start_default().await;
    unauthenticated(
        &e,
        &[
            (Method::GET, "/serverless"),
            (Method::POST, "/serverless"),
            (Method::GET, "/serverless/ep-demo0001"),
            (Method::PATCH, "/serverless/ep-demo0001"),
            (Method::DELETE, "/serverless/ep-demo0001"),
            (Method::GET, "/serverless/ep-demo0001/workers"),
            (Method::GET, "/serverless/ep-demo0001/releases"),
            (Method::GET, "/serverless/ep-demo0001/workers/w/logs"),
        ],
    )
    .await;
    read_only_refused(
        &e,
        &[
            (Method::POST, "/serverless", Some(gpu_body(json!({})))),
            (
                Method::PATCH,
                "/serverless/ep-demo0001",
                Some(json!({"name": "x"})),
            ),
            (Method::DELETE, "/serverless/ep-demo0001", None),
        ],
    )
    .await;
    assert_eq!(
        v2_read(&e, Method::GET, "/serverless/ep-demo0001/releases", None)
            .await
            .status,
        200
    );
    for (method, path) in [
        (Method::GET, "/serverless/ep-missing"),
        (Method::PATCH, "/serverless/ep-missing"),
        (Method::DELETE, "/serverless/ep-missing"),
        (Method::GET, "/serverless/ep-missing/workers"),
        (Method::GET, "/serverless/ep-missing/releases"),
        (Method::GET, "/serverless/ep-missing/workers/w/logs"),
    ] {
        let body = (method == Method::PATCH).then(|| json!({"name": "x"}));
        let r = v2::v2(&e, method, path, body).await;
        problem(&r, 404, "ep-missing");
        rate_headers(&r);
    }
    let admin = e.emu.admin();
    admin
        .fail_next_creates_on("POST /v2/serverless", 1)
        .await
        .unwrap();
    let r = v2::v2(
        &e,
        Method::POST,
        "/serverless",
        Some(gpu_body(json!({"name": "ghost"}))),
    )
    .await;
    problem(&r, 500, "");
    let list = get(&e, "/serverless").await;
    let ghost = list["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "ghost")
        .cloned()
        .unwrap();
    // It exists and takes jobs.
    assert_eq!(
        e.job(Method::GET, ghost["id"].as_str().unwrap(), "health", None)
            .await
            .status,
        200
    );
    assert_eq!(admin.call_count("POST /v2/serverless").await.unwrap(), 4);
    assert_eq!(
        admin
            .call_count("GET /v2/serverless/{id}/workers/{worker_id}/logs")
            .await
            .unwrap(),
        3
    );
}
