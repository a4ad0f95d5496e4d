//! REST v2 templates (`/v2/templates`): the document's answers and statuses, and one world
//! with REST v1 (`/v1/templates` shows the same records in its own shape).

mod common;

use common::v2::*;
use common::*;
use reqwest::Method;
use serde_json::{Value, json};

const REQUIRED: [&str; 15] = [
    "id",
    "name",
    "image",
    "args",
    "disk",
    "mounts",
    "ports",
    "env",
    "registry",
    "serverless",
    "public",
    "category",
    "startSsh",
    "startJupyter",
    "allowedCudaVersions",
];

fn has_every_field(t: &Value) {
    for field in REQUIRED {
        assert!(t.get(field).is_some(), "{field} missing: {t}");
    }
}

async fn create(e: &Emu, body: Value) -> Value {
    let r = v2::v2(e, Method::POST, "/templates", Some(body)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    rate_headers(&r);
    has_every_field(&r.body);
    r.body
}

#[tokio::test]
async fn create_list_get_patch_delete() {
    let e = start_default().await;
    let t = create(
        &e,
        json!({
            "name": "worker", "image": "me/worker:1", "args": "python handler.py", "disk": 20,
            "ports": ["8000/http"], "env": {"MODE": "fast"}, "serverless": true,
            "allowedCudaVersions": ["12.8"], "mounts": {"persistent": {"size": 20, "path": "/data"}}
        }),
    )
    .await;
    let id = t["id"].as_str().unwrap().to_string();
    assert_eq!(t["image"], "me/worker:1");
    assert_eq!(t["args"], "python handler.py");
    assert_eq!(
        t["mounts"],
        json!({"persistent": {"size": 20, "path": "/data"}})
    );
    assert_eq!(t["registry"], Value::Null);
    // The document's defaults.
    assert_eq!(
        (
            &t["category"],
            &t["public"],
            &t["startSsh"],
            &t["startJupyter"]
        ),
        (&json!("NVIDIA"), &json!(false), &json!(true), &json!(true))
    );

    let r = v2::v2(&e, Method::GET, "/templates", None).await;
    assert_eq!(r.status, 200);
    let list = r.body["templates"].as_array().unwrap();
    assert!(list.iter().any(|x| x["id"] == id.as_str()));
    list.iter().for_each(has_every_field);

    let r = v2::v2(&e, Method::GET, &format!("/templates/{id}"), None).await;
    assert_eq!(r.body, t);

    let r = v2::v2(
        &e,
        Method::PATCH,
        &format!("/templates/{id}"),
        Some(json!({"image": "me/worker:2", "env": {"MODE": "slow"}, "mounts": {}, "category": "AMD"})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["image"], "me/worker:2");
    assert_eq!(r.body["env"], json!({"MODE": "slow"}));
    assert_eq!(r.body["category"], "AMD");
    // `mounts: {}` leaves the mount; omitted fields are untouched.
    assert_eq!(r.body["mounts"], t["mounts"]);
    assert_eq!(r.body["args"], t["args"]);

    let r = v2::v2(&e, Method::DELETE, &format!("/templates/{id}"), None).await;
    assert_eq!(r.status, 204);
    problem(
        &v2::v2(&e, Method::GET, &format!("/templates/{id}"), None).await,
        404,
        &id,
    );
}

#[tokio::test]
async fn v1_and_v2_share_templates_in_their_own_shapes() {
    let e = start_default().await;
    // The fixture's template (v1 fields) read over v2.
    let r = v2::v2(&e, Method::GET, "/templates/tmpl-pytorch", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body["image"],
        "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04"
    );
    assert_eq!(r.body["disk"], 20);
    assert_eq!(
        r.body["mounts"],
        json!({"persistent": {"size": 50, "path": "/workspace"}})
    );
    assert_eq!(r.body["serverless"], false);
    // Created over v1, patched over v2, read over v1: v1's answer has exactly v1's fields
    // (`containerRegistryAuthId` too, when the template has a credential).
    let r = e
        .rest(
            Method::POST,
            "/templates",
            Some(json!({"name": "v1-made", "imageName": "img:1", "dockerStartCmd": ["run", "--fast"]})),
        )
        .await;
    assert_eq!(r.status, 200);
    let id = r.body["id"].as_str().unwrap().to_string();
    let r = v2::v2(&e, Method::GET, &format!("/templates/{id}"), None).await;
    assert_eq!(r.body["args"], "run --fast");
    v2::v2(
        &e,
        Method::PATCH,
        &format!("/templates/{id}"),
        Some(json!({"image": "img:2", "disk": 33})),
    )
    .await;
    let r = e.rest(Method::GET, &format!("/templates/{id}"), None).await;
    let keys: Vec<&String> = r.body.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        vec![
            "category",
            "containerDiskInGb",
            "dockerStartCmd",
            "env",
            "id",
            "imageName",
            "isPublic",
            "isServerless",
            "name",
            "ports",
            "volumeInGb",
            "volumeMountPath"
        ]
    );
    assert_eq!(
        (
            r.body["imageName"].as_str(),
            r.body["containerDiskInGb"].as_u64()
        ),
        (Some("img:2"), Some(33))
    );
    // Created over v2: listed by v1, deleted over v1.
    let t = create(&e, json!({"name": "v2-made", "image": "x:1", "disk": 15})).await;
    let v2_id = t["id"].as_str().unwrap().to_string();
    let r = e.rest(Method::GET, "/templates", None).await;
    let mine = r
        .body
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == v2_id.as_str())
        .cloned()
        .unwrap();
    assert_eq!(
        (
            mine["imageName"].as_str(),
            mine["containerDiskInGb"].as_u64()
        ),
        (Some("x:1"), Some(15))
    );
    // Names are unique across both surfaces.
    e.rest(
        Method::POST,
        "/templates",
        Some(json!({"name": "v2-made", "imageName": "y"})),
    )
    .await
    .assert_error(400, "name");
    assert_eq!(
        e.rest(Method::DELETE, &format!("/templates/{v2_id}"), None)
            .await
            .status,
        204
    );
    problem(
        &v2::v2(&e, Method::GET, &format!("/templates/{v2_id}"), None).await,
        404,
        &v2_id,
    );
}

#[tokio::test]
async fn public_templates_are_readable_not_writable() {
    let e = start_default().await;
    let r = v2::v2(&e, Method::GET, "/templates/runpod-worker-vllm", None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    has_every_field(&r.body);
    assert_eq!(r.body["public"], true);
    assert_eq!(r.body["serverless"], true);
    // Not one of the account's: not listed, not changed, not deleted.
    let r = v2::v2(&e, Method::GET, "/templates", None).await;
    assert!(
        !r.body["templates"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == "runpod-worker-vllm")
    );
    problem(
        &v2::v2(
            &e,
            Method::PATCH,
            "/templates/runpod-worker-vllm",
            Some(json!({"name": "mine"})),
        )
        .await,
        404,
        "runpod-worker-vllm",
    );
    problem(
        &v2::v2(&e, Method::DELETE, "/templates/runpod-worker-vllm", None).await,
        404,
        "runpod-worker-vllm",
    );
}

#[tokio::test]
async fn every_documented_error_status() {
    let e = start_default().await;
    unauthenticated(
        &e,
        &[
            (Method::GET, "/templates"),
            (Method::POST, "/templates"),
            (Method::GET, "/templates/tmpl-pytorch"),
            (Method::PATCH, "/templates/tmpl-pytorch"),
            (Method::DELETE, "/templates/tmpl-pytorch"),
        ],
    )
    .await;
    read_only_refused(
        &e,
        &[
            (
                Method::POST,
                "/templates",
                Some(json!({"name": "ro", "image": "i"})),
            ),
            (
                Method::PATCH,
                "/templates/tmpl-pytorch",
                Some(json!({"name": "ro"})),
            ),
            (Method::DELETE, "/templates/tmpl-pytorch", None),
        ],
    )
    .await;
    // 422: the body does not match the document.
    for (body, field) in [
        (json!({"image": "i"}), "name"),
        (json!({"name": "t"}), "image"),
        (json!({"name": "", "image": "i"}), "name"),
        (json!({"name": "t", "image": "i", "disk": 0}), "disk"),
        (json!({"name": "t", "image": "i", "env": {"A": 1}}), "env.A"),
        (
            json!({"name": "t", "image": "i", "category": "TPU"}),
            "category",
        ),
        (
            json!({"name": "t", "image": "i", "mounts": {"network": [{"volumeId": "v", "path": "/p"}]}}),
            "mounts.network",
        ),
        (
            json!({"name": "t", "image": "i", "mounts": {"persistent": {"size": 5, "path": "/p"}}}),
            "mounts.persistent.size",
        ),
        (
            json!({"name": "t", "image": "i", "mounts": {"persistent": {"size": 50}}}),
            "mounts.persistent.path",
        ),
        (
            json!({"name": "t", "image": "i", "allowedCudaVersions": ["twelve"]}),
            "allowedCudaVersions[0]",
        ),
        (
            json!({"name": "t", "image": "i", "imageName": "i"}),
            "imageName",
        ),
    ] {
        let r = v2::v2(&e, Method::POST, "/templates", Some(body)).await;
        unprocessable(&r, field);
    }
    unprocessable(
        &v2::v2(
            &e,
            Method::PATCH,
            "/templates/tmpl-pytorch",
            Some(json!({"public": "yes"})),
        )
        .await,
        "public",
    );
    // 400: rules of the world.
    for (body, field) in [
        (
            json!({"name": "t", "image": "i", "ports": ["http"]}),
            "ports",
        ),
        (
            json!({"name": "t", "image": "i", "registry": "reg-missing"}),
            "registry",
        ),
        (
            json!({"name": "t", "image": "i", "mounts": {"persistent": {"size": 50, "path": "data"}}}),
            "mounts.persistent.path",
        ),
    ] {
        let r = v2::v2(&e, Method::POST, "/templates", Some(body)).await;
        problem(&r, 400, field);
        rate_headers(&r);
    }
    // Nor is a disk above v1's 1000 GB: the document bounds it only from below.
    let r = v2::v2(
        &e,
        Method::POST,
        "/templates",
        Some(json!({"name": "big", "image": "i", "disk": 1_i64 << 40})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["disk"], 1_i64 << 40);
    // A name another template has is no rule of the document (v1 still refuses it).
    let r = v2::v2(
        &e,
        Method::POST,
        "/templates",
        Some(json!({"name": "pytorch-2.4", "image": "i"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    // A template bound to an endpoint cannot be deleted.
    let r = v2::v2(&e, Method::DELETE, "/templates/tmpl-worker-base", None).await;
    problem(&r, 400, "ep-demo0001");
    // 404.
    for method in [Method::GET, Method::PATCH, Method::DELETE] {
        let body = (method == Method::PATCH).then(|| json!({"name": "x"}));
        problem(
            &v2::v2(&e, method, "/templates/tmpl-missing", body).await,
            404,
            "tmpl-missing",
        );
    }
}

#[tokio::test]
async fn a_template_used_by_a_pod_cannot_be_deleted() {
    let e = start_default().await;
    let t = create(&e, json!({"name": "pod-tmpl", "image": "img:1"})).await;
    let id = t["id"].as_str().unwrap();
    let q = format!(
        r#"mutation {{ podFindAndDeployOnDemand(input: {{gpuTypeId: "NVIDIA A40", templateId: "{id}", name: "p"}}) {{ id }} }}"#
    );
    let r = e.gql(&q, json!({})).await;
    let pod = r.body["data"]["podFindAndDeployOnDemand"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", r.body))
        .to_string();
    problem(
        &v2::v2(&e, Method::DELETE, &format!("/templates/{id}"), None).await,
        400,
        &pod,
    );
}

#[tokio::test]
async fn create_500_answers_but_creates() {
    let e = start_default().await;
    let admin = e.emu.admin();
    admin
        .fail_next_creates_on("POST /v2/templates", 1)
        .await
        .unwrap();
    let r = v2::v2(
        &e,
        Method::POST,
        "/templates",
        Some(json!({"name": "ghost", "image": "i"})),
    )
    .await;
    problem(&r, 500, "");
    let r = v2::v2(&e, Method::GET, "/templates", None).await;
    assert!(
        r.body["templates"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "ghost")
    );
    assert_eq!(admin.call_count("POST /v2/templates").await.unwrap(), 1);
}
