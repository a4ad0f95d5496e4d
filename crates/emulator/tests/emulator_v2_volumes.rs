//! REST v2 network volumes (`/v2/network-volumes`): the document's answers and statuses, and
//! one world with REST v1 (`/v1/networkvolumes` shows the same records).

mod common;

use common::v2::*;
use common::*;
use gpucloud_emulator::v2::limits::Quota;
use reqwest::Method;
use serde_json::{Value, json};

async fn create(e: &Emu, body: Value) -> Value {
    let r = v2::v2(e, Method::POST, "/network-volumes", Some(body)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    rate_headers(&r);
    r.body
}

#[tokio::test]
async fn create_list_get_patch_delete() {
    let e = start_default().await;
    let v = create(
        &e,
        json!({"name": "train", "size": 50, "dataCenter": "EU-RO-1", "type": "HIGH_PERFORMANCE"}),
    )
    .await;
    let id = v["id"].as_str().unwrap().to_string();
    assert_eq!(
        v,
        json!({"id": id, "name": "train", "size": 50, "dataCenter": "EU-RO-1", "type": "HIGH_PERFORMANCE"})
    );
    // Without a type: the data center's primary tier.
    let std = create(
        &e,
        json!({"name": "s", "size": 10, "dataCenter": "US-TX-3"}),
    )
    .await;
    assert_eq!(std["type"], "STANDARD");

    let r = v2::v2(&e, Method::GET, "/network-volumes", None).await;
    assert_eq!(r.status, 200);
    rate_headers(&r);
    let list = r.body["networkVolumes"].as_array().unwrap();
    assert!(list.iter().any(|x| x["id"] == id.as_str()));
    for x in list {
        for field in ["id", "name", "dataCenter", "type"] {
            assert!(x[field].is_string(), "{field}: {x}");
        }
        assert!(x["size"].is_u64());
    }

    let r = v2::v2(&e, Method::GET, &format!("/network-volumes/{id}"), None).await;
    assert_eq!((r.status.as_u16(), &r.body), (200, &v));

    let r = v2::v2(
        &e,
        Method::PATCH,
        &format!("/network-volumes/{id}"),
        Some(json!({"size": 200, "name": "bigger"})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        (r.body["size"].as_u64(), r.body["name"].as_str()),
        (Some(200), Some("bigger"))
    );
    assert_eq!(r.body["type"], "HIGH_PERFORMANCE");
    // The same size is allowed ("greater than or equal").
    let r = v2::v2(
        &e,
        Method::PATCH,
        &format!("/network-volumes/{id}"),
        Some(json!({"size": 200})),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);

    let r = v2::v2(&e, Method::DELETE, &format!("/network-volumes/{id}"), None).await;
    assert_eq!(r.status, 204);
    rate_headers(&r);
    let r = v2::v2(&e, Method::GET, &format!("/network-volumes/{id}"), None).await;
    problem(&r, 404, &id);
}

#[tokio::test]
async fn v1_and_v2_are_one_world() {
    let e = start_default().await;
    // v1 → v2.
    let r = e
        .rest(
            Method::POST,
            "/networkvolumes",
            Some(json!({"name": "from-v1", "size": 100, "dataCenterId": "EU-RO-1"})),
        )
        .await;
    assert_eq!(r.status, 200);
    let v1_id = r.body["id"].as_str().unwrap().to_string();
    let r = v2::v2(&e, Method::GET, &format!("/network-volumes/{v1_id}"), None).await;
    assert_eq!(
        r.body,
        json!({"id": v1_id, "name": "from-v1", "size": 100, "dataCenter": "EU-RO-1", "type": "STANDARD"})
    );
    // v2 → v1: v1's answer keeps its own shape.
    let v = create(
        &e,
        json!({"name": "from-v2", "size": 30, "dataCenter": "US-TX-3"}),
    )
    .await;
    let v2_id = v["id"].as_str().unwrap().to_string();
    let r = e.rest(Method::GET, "/networkvolumes", None).await;
    let listed = r.body.as_array().unwrap();
    let mine = listed.iter().find(|x| x["id"] == v2_id.as_str()).unwrap();
    assert_eq!(
        mine,
        &json!({"id": v2_id, "name": "from-v2", "size": 30, "dataCenterId": "US-TX-3"})
    );
    // An update on one surface shows on the other.
    let r = e
        .rest(
            Method::POST,
            &format!("/networkvolumes/{v2_id}/update"),
            Some(json!({"size": 60})),
        )
        .await;
    assert_eq!(r.status, 200);
    let r = v2::v2(&e, Method::GET, &format!("/network-volumes/{v2_id}"), None).await;
    assert_eq!(r.body["size"], 60);
    v2::v2(
        &e,
        Method::PATCH,
        &format!("/network-volumes/{v1_id}"),
        Some(json!({"name": "renamed"})),
    )
    .await;
    let r = e
        .rest(Method::GET, &format!("/networkvolumes/{v1_id}"), None)
        .await;
    assert_eq!(r.body["name"], "renamed");
    // Deleted over v2: gone from v1.
    assert_eq!(
        v2::v2(
            &e,
            Method::DELETE,
            &format!("/network-volumes/{v1_id}"),
            None
        )
        .await
        .status,
        204
    );
    e.rest(Method::GET, &format!("/networkvolumes/{v1_id}"), None)
        .await
        .assert_error(404, &v1_id);
}

#[tokio::test]
async fn schema_violations_are_422_naming_the_field() {
    let e = start_default().await;
    for (body, field) in [
        (json!({"size": 50, "dataCenter": "EU-RO-1"}), "name"),
        (
            json!({"name": "", "size": 50, "dataCenter": "EU-RO-1"}),
            "name",
        ),
        (
            json!({"name": "a", "size": 9, "dataCenter": "EU-RO-1"}),
            "size",
        ),
        (
            json!({"name": "a", "size": 4097, "dataCenter": "EU-RO-1"}),
            "size",
        ),
        (
            json!({"name": "a", "size": "big", "dataCenter": "EU-RO-1"}),
            "size",
        ),
        (json!({"name": "a", "size": 50}), "dataCenter"),
        (
            json!({"name": "a", "size": 50, "dataCenter": "EU-RO-1", "type": "FAST"}),
            "type",
        ),
        (
            json!({"name": "a", "size": 50, "dataCenter": "EU-RO-1", "colour": "red"}),
            "colour",
        ),
        (
            json!({"name": null, "size": 50, "dataCenter": "EU-RO-1"}),
            "name",
        ),
    ] {
        let r = v2::v2(&e, Method::POST, "/network-volumes", Some(body.clone())).await;
        unprocessable(&r, field);
        rate_headers(&r);
    }
    let r = v2::v2(
        &e,
        Method::PATCH,
        "/network-volumes/nv-demo0001",
        Some(json!({})),
    )
    .await;
    unprocessable(&r, "body");
    let r = v2::v2(
        &e,
        Method::PATCH,
        "/network-volumes/nv-demo0001",
        Some(json!({"size": 5000})),
    )
    .await;
    unprocessable(&r, "size");
    let r = v2::v2(
        &e,
        Method::PATCH,
        "/network-volumes/nv-demo0001",
        Some(json!({"dataCenter": "US-TX-3"})),
    )
    .await;
    unprocessable(&r, "dataCenter");
    // Nothing changed.
    let r = v2::v2(&e, Method::GET, "/network-volumes/nv-demo0001", None).await;
    assert_eq!(
        (r.body["size"].as_u64(), r.body["dataCenter"].as_str()),
        (Some(100), Some("EU-RO-1"))
    );
}

#[tokio::test]
async fn rule_violations_are_400_and_unknown_ids_404() {
    let e = start_default().await;
    let r = v2::v2(
        &e,
        Method::POST,
        "/network-volumes",
        Some(json!({"name": "a", "size": 50, "dataCenter": "MARS-1"})),
    )
    .await;
    problem(&r, 400, "dataCenter");
    let r = v2::v2(
        &e,
        Method::POST,
        "/network-volumes",
        Some(json!({"name": "a", "size": 50, "dataCenter": "US-TX-3", "type": "HIGH_PERFORMANCE"})),
    )
    .await;
    problem(&r, 400, "type");
    // Shrinking.
    let r = v2::v2(
        &e,
        Method::PATCH,
        "/network-volumes/nv-demo0001",
        Some(json!({"size": 99})),
    )
    .await;
    problem(&r, 400, "size");
    rate_headers(&r);
    // In use by an endpoint (attached over v1): cannot be deleted, as over v1.
    let ep = e.endpoint(json!({"networkVolumeId": "nv-demo0001"})).await;
    let r = v2::v2(&e, Method::DELETE, "/network-volumes/nv-demo0001", None).await;
    problem(&r, 400, &ep);
    e.rest(Method::DELETE, &format!("/endpoints/{ep}"), None)
        .await;
    assert_eq!(
        v2::v2(&e, Method::DELETE, "/network-volumes/nv-demo0001", None)
            .await
            .status,
        204
    );
    for method in [Method::GET, Method::PATCH, Method::DELETE] {
        let body = (method == Method::PATCH).then(|| json!({"name": "x"}));
        let r = v2::v2(&e, method, "/network-volumes/nv-missing", body).await;
        problem(&r, 404, "nv-missing");
        rate_headers(&r);
    }
}

#[tokio::test]
async fn auth_scopes_and_rate_limits() {
    let mut cfg = config();
    cfg.v2_quota = Quota {
        minute: 4,
        hour: 1000,
        day: 10_000,
    };
    let e = start(cfg).await;
    // Start at the beginning of a fixed minute window, so the test cannot straddle two.
    e.advance(60_000 - e.emu.now_ms() % 60_000).await;
    unauthenticated(
        &e,
        &[
            (Method::GET, "/network-volumes"),
            (Method::POST, "/network-volumes"),
            (Method::GET, "/network-volumes/nv-demo0001"),
            (Method::PATCH, "/network-volumes/nv-demo0001"),
            (Method::DELETE, "/network-volumes/nv-demo0001"),
        ],
    )
    .await;
    let body = json!({"name": "a", "size": 50, "dataCenter": "EU-RO-1"});
    read_only_refused(
        &e,
        &[
            (Method::POST, "/network-volumes", Some(body.clone())),
            (
                Method::PATCH,
                "/network-volumes/nv-demo0001",
                Some(json!({"size": 200})),
            ),
            (Method::DELETE, "/network-volumes/nv-demo0001", None),
        ],
    )
    .await;
    // The read-only key may read.
    assert_eq!(
        v2_read(&e, Method::GET, "/network-volumes", None)
            .await
            .status,
        200
    );
    let r = v2::v2(&e, Method::GET, "/network-volumes/nv-demo0001", None).await;
    assert_eq!(r.body["size"], 100);
    // The full key's minute quota (4) is per key: three more, then 429.
    for _ in 0..3 {
        assert_eq!(
            v2::v2(&e, Method::GET, "/network-volumes", None)
                .await
                .status,
            200
        );
    }
    let r = v2::v2(&e, Method::GET, "/network-volumes", None).await;
    problem(&r, 429, "rate limit");
    rate_headers(&r);
    assert!(r.headers.get("retry-after").is_some());
    e.advance(60_000).await;
    assert_eq!(
        v2::v2(&e, Method::GET, "/network-volumes", None)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn create_500_and_call_counts() {
    let e = start_default().await;
    let admin = e.emu.admin();
    admin
        .fail_next_creates_on("POST /v2/network-volumes", 1)
        .await
        .unwrap();
    let r = v2::v2(
        &e,
        Method::POST,
        "/network-volumes",
        Some(json!({"name": "ghost", "size": 20, "dataCenter": "EU-RO-1"})),
    )
    .await;
    problem(&r, 500, "");
    // The volume exists all the same.
    let r = v2::v2(&e, Method::GET, "/network-volumes", None).await;
    assert!(
        r.body["networkVolumes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["name"] == "ghost")
    );
    assert_eq!(
        admin.call_count("POST /v2/network-volumes").await.unwrap(),
        1
    );
    assert_eq!(
        admin.call_count("GET /v2/network-volumes").await.unwrap(),
        1
    );
}

/// A benchmark lifts the account's quota over the admin surface while the emulator runs;
/// a reset brings the configured one back. Every list shows the volumes created before it.
#[tokio::test]
async fn the_quota_is_lifted_while_running_and_a_list_shows_every_create() {
    let mut cfg = config();
    cfg.v2_quota = Quota {
        minute: 3,
        hour: 1000,
        day: 10_000,
    };
    let e = start(cfg).await;
    // Start at the beginning of a fixed minute window, so the test cannot straddle two.
    e.advance(60_000 - e.emu.now_ms() % 60_000).await;
    let admin = e.emu.admin();
    let lifted = Quota {
        minute: 1_000_000,
        hour: 1_000_000,
        day: 1_000_000,
    };
    admin.set_v2_quota(lifted).await.unwrap();
    let mut created = Vec::new();
    for i in 0..10 {
        let v = create(
            &e,
            json!({"name": format!("many-{i}"), "size": 10, "dataCenter": "EU-RO-1"}),
        )
        .await;
        created.push(v["id"].as_str().unwrap().to_string());
        let r = v2::v2(&e, Method::GET, "/network-volumes", None).await;
        assert_eq!(r.status, 200);
        let listed: Vec<&str> = r.body["networkVolumes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["id"].as_str().unwrap())
            .collect();
        assert!(
            created.iter().all(|id| listed.contains(&id.as_str())),
            "{listed:?}"
        );
    }
    let r = v2::v2(&e, Method::GET, "/network-volumes", None).await;
    let policy = r.headers["ratelimit-policy"].to_str().unwrap();
    assert!(policy.starts_with("\"minute\";q=1000000;"), "{policy}");

    // A window left out keeps its quota; the answer is the quota in force.
    let r = e
        .http
        .post(format!("{}/_emulator/v2-quota", e.emu.base_url()))
        .json(&json!({"minute": 500_000}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let answer: Value = r.json().await.unwrap();
    assert_eq!(
        answer,
        json!({"minute": 500_000, "hour": 1_000_000, "day": 1_000_000})
    );

    // The reset brings back 3 a minute: three calls, then 429.
    admin.reset().await.unwrap();
    for _ in 0..3 {
        let r = v2::v2(&e, Method::GET, "/network-volumes", None).await;
        assert_eq!(r.status, 200);
    }
    let r = v2::v2(&e, Method::GET, "/network-volumes", None).await;
    problem(&r, 429, "rate limit");
}
