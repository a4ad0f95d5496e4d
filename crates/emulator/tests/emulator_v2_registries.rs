//! REST v2 container registry credentials (`/v2/registries`) and registry delegations
//! (`/v2/registries/delegations`), which serve both the seed's contract (`cloudUser`,
//! `cloudRegion`, its per-minute limit and 403 rule) and REST v2's (`awsUser`, `awsRegion`,
//! create and revoke).

mod common;

use common::v2::*;
use common::*;
use gpucloud_platform::{ApiKey, BaseUrls, PlatformClient, PlatformConfig};
use reqwest::Method;
use serde_json::{Value, json};

const SECRET: &str = "correct-horse-battery-staple";

/// `POST /registries` for `name` with a throwaway login, whatever the answer.
async fn post_registry(e: &Emu, name: &str) -> Resp {
    let body = json!({"name": name, "username": "u", "password": "p"});
    v2::v2(e, Method::POST, "/registries", Some(body)).await
}

async fn create_registry(e: &Emu, name: &str) -> Value {
    let r = v2::v2(
        e,
        Method::POST,
        "/registries",
        Some(json!({"name": name, "username": "ci-bot", "password": SECRET})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    rate_headers(&r);
    r.body
}

#[tokio::test]
async fn credentials_are_write_only() {
    let e = start_default().await;
    let reg = create_registry(&e, "hub").await;
    let id = reg["id"].as_str().unwrap().to_string();
    assert_eq!(reg, json!({"id": id, "name": "hub"}));
    let r = v2::v2(&e, Method::GET, "/registries", None).await;
    assert_eq!(r.body, json!({"registries": [{"id": id, "name": "hub"}]}));
    let r = v2::v2(&e, Method::GET, &format!("/registries/{id}"), None).await;
    assert_eq!(r.body, reg);
    rate_headers(&r);
    // Never in the state dump either.
    let state = e.emu.admin().state().await.unwrap().to_string();
    assert!(state.contains(&id) && !state.contains(SECRET), "{state}");
    // A malformed credential is refused without echoing it.
    let r = v2::v2(
        &e,
        Method::POST,
        "/registries",
        Some(json!({"name": "x", "username": "u", "password": 12345678})),
    )
    .await;
    unprocessable(&r, "password");
    assert!(!r.body.to_string().contains("12345678"));

    let r = v2::v2(&e, Method::DELETE, &format!("/registries/{id}"), None).await;
    assert_eq!(r.status, 204);
    problem(
        &v2::v2(&e, Method::GET, &format!("/registries/{id}"), None).await,
        404,
        &id,
    );
}

#[tokio::test]
async fn in_use_by_an_endpoint_it_stays_and_templates_lose_it() {
    let e = start_default().await;
    let reg = create_registry(&e, "private").await;
    let id = reg["id"].as_str().unwrap().to_string();
    let t = v2::v2(
        &e,
        Method::POST,
        "/templates",
        Some(json!({"name": "t", "image": "me/private:1", "registry": id})),
    )
    .await;
    assert_eq!(t.status, 201, "{}", t.body);
    assert_eq!(t.body["registry"], id.as_str());
    let ep = v2::v2(
        &e,
        Method::POST,
        "/serverless",
        Some(json!({"name": "p", "type": "QUEUE", "image": "me/private:1", "registry": id,
                    "gpu": {"pools": ["ADA_24"]}, "scaling": {"type": "QUEUE_DELAY", "queueDelay": 4}})),
    )
    .await;
    assert_eq!(ep.status, 201, "{}", ep.body);
    let ep_id = ep.body["id"].as_str().unwrap().to_string();
    problem(
        &v2::v2(&e, Method::DELETE, &format!("/registries/{id}"), None).await,
        400,
        &ep_id,
    );
    // Once the endpoint is gone the credential goes, and the template forgets it.
    assert_eq!(
        v2::v2(&e, Method::DELETE, &format!("/serverless/{ep_id}"), None)
            .await
            .status,
        204
    );
    assert_eq!(
        v2::v2(&e, Method::DELETE, &format!("/registries/{id}"), None)
            .await
            .status,
        204
    );
    let tid = t.body["id"].as_str().unwrap();
    let t = v2::v2(&e, Method::GET, &format!("/templates/{tid}"), None).await;
    assert_eq!(t.body["registry"], Value::Null);
}

#[tokio::test]
async fn every_documented_error_status() {
    let e = start_default().await;
    unauthenticated(
        &e,
        &[
            (Method::GET, "/registries"),
            (Method::POST, "/registries"),
            (Method::GET, "/registries/r"),
            (Method::DELETE, "/registries/r"),
        ],
    )
    .await;
    read_only_refused(
        &e,
        &[
            (
                Method::POST,
                "/registries",
                Some(json!({"name": "n", "username": "u", "password": "p"})),
            ),
            (Method::DELETE, "/registries/r", None),
        ],
    )
    .await;
    for (body, field) in [
        (json!({"username": "u", "password": "p"}), "name"),
        (json!({"name": "n", "password": "p"}), "username"),
        (json!({"name": "n", "username": "u"}), "password"),
        (
            json!({"name": "", "username": "u", "password": "p"}),
            "name",
        ),
        (
            json!({"name": "n", "username": "u", "password": ""}),
            "password",
        ),
        (
            json!({"name": "n", "username": "u", "password": "p", "url": "x"}),
            "url",
        ),
    ] {
        unprocessable(
            &v2::v2(&e, Method::POST, "/registries", Some(body)).await,
            field,
        );
    }
    create_registry(&e, "taken").await;
    // A second credential of a name is no rule of the document: both exist.
    assert_eq!(post_registry(&e, "taken").await.status, 201);
    problem(
        &v2::v2(&e, Method::GET, "/registries/reg-missing", None).await,
        404,
        "reg-missing",
    );
    problem(
        &v2::v2(&e, Method::DELETE, "/registries/reg-missing", None).await,
        404,
        "reg-missing",
    );
    let admin = e.emu.admin();
    admin
        .fail_next_creates_on("POST /v2/registries", 1)
        .await
        .unwrap();
    problem(&post_registry(&e, "ghost").await, 500, "");
    let r = v2::v2(&e, Method::GET, "/registries", None).await;
    assert!(
        r.body["registries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["name"] == "ghost")
    );
    assert_eq!(admin.call_count("POST /v2/registries").await.unwrap(), 12);
}

// ---------------------------------------------------------------- delegations

fn minute_headers(r: &Resp, quota: u32) {
    let limit = r
        .headers
        .get("ratelimit")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let policy = r
        .headers
        .get("ratelimit-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert!(limit.starts_with("\"minute\";r="), "RateLimit: {limit:?}");
    assert_eq!(policy, format!("\"minute\";q={quota};w=60"));
}

#[tokio::test]
async fn delegations_serve_both_contracts() {
    let e = start_default().await;
    let r = v2::v2(&e, Method::GET, "/registries/delegations", None).await;
    assert_eq!(r.status, 200);
    minute_headers(&r, 60);
    let d = &r.body["delegations"][0];
    // The seed's names and REST v2's, same values.
    assert_eq!(d["cloudUser"], d["awsUser"]);
    assert_eq!(d["cloudRegion"], d["awsRegion"]);
    for field in [
        "id",
        "delegatorUserId",
        "awsUser",
        "repository",
        "tag",
        "awsRegion",
        "createdAt",
        "name",
        "dockerRegistryUri",
    ] {
        assert!(d[field].is_string(), "{field}: {d}");
    }

    let r = v2::v2(
        &e,
        Method::POST,
        "/registries/delegations",
        Some(json!({"resource": "arn:aws:ecr:us-east-2:418399314813:repository/runpod/deployment", "name": "deploy"})),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    minute_headers(&r, 60);
    let id = r.body["id"].as_str().unwrap().to_string();
    assert_eq!(
        (
            r.body["awsUser"].as_str(),
            r.body["awsRegion"].as_str(),
            r.body["repository"].as_str(),
            r.body["tag"].as_str()
        ),
        (
            Some("418399314813"),
            Some("us-east-2"),
            Some("runpod/deployment"),
            Some("latest")
        )
    );
    assert_eq!(r.body["cloudUser"], "418399314813");
    assert_eq!(
        r.body["dockerRegistryUri"],
        "418399314813.dkr.ecr.us-east-2.amazonaws.com"
    );
    assert!(
        r.body["createdAt"]
            .as_str()
            .unwrap()
            .parse::<jiff::Timestamp>()
            .is_ok()
    );
    // The seed's client still reads the listing.
    let urls = BaseUrls::single_host(&e.emu.base_url()).unwrap();
    let client = PlatformClient::new(PlatformConfig::new(urls, ApiKey::new(KEY).unwrap())).unwrap();
    let listed = client.registry().list_delegations().await.unwrap();
    assert!(
        listed
            .iter()
            .any(|d| d.id == id && d.cloud_region == "us-east-2")
    );

    let delegation = format!("/registries/delegations/{id}");
    let r = v2::v2(&e, Method::DELETE, &delegation, None).await;
    assert_eq!(r.status, 204);
    minute_headers(&r, 60);
    let r = v2::v2(&e, Method::DELETE, &delegation, None).await;
    problem(&r, 404, &id);
    minute_headers(&r, 60);
    // The seed's GET by id still answers; a 405 advertises only the documented DELETE.
    let r = v2::v2(&e, Method::GET, "/registries/delegations/dlg-0001", None).await;
    assert_eq!(
        (r.status.as_u16(), &r.body["awsUser"]),
        (200, &r.body["cloudUser"])
    );
    let r = v2::v2(&e, Method::PUT, "/registries/delegations/dlg-0001", None).await;
    problem(&r, 405, "PUT");
    assert_eq!(r.headers["allow"], "DELETE");
}

#[tokio::test]
async fn delegation_errors_keep_the_seed_rules_as_problems() {
    let mut cfg = config();
    cfg.api_keys.push("no-registry".parse().unwrap());
    cfg.registry_forbidden_keys = vec!["no-registry".into()];
    cfg.registry_requests_per_minute = 6;
    let e = start(cfg).await;
    let create = json!({"resource": "arn:aws:ecr:us-east-2:418399314813:repository/app"});
    problem(
        &v2_as(
            &e,
            None,
            Method::POST,
            "/registries/delegations",
            Some(create.clone()),
        )
        .await,
        401,
        "API key",
    );
    problem(
        &v2_as(
            &e,
            Some("no-registry"),
            Method::GET,
            "/registries/delegations",
            None,
        )
        .await,
        403,
        "registry",
    );
    let r = v2_read(
        &e,
        Method::POST,
        "/registries/delegations",
        Some(create.clone()),
    )
    .await;
    problem(&r, 403, "read-only");
    minute_headers(&r, 6);
    problem(
        &v2_read(&e, Method::DELETE, "/registries/delegations/dlg-0001", None).await,
        403,
        "read-only",
    );
    unprocessable(
        &v2::v2(
            &e,
            Method::POST,
            "/registries/delegations",
            Some(json!({"name": "x"})),
        )
        .await,
        "resource",
    );
    unprocessable(
        &v2::v2(
            &e,
            Method::POST,
            "/registries/delegations",
            Some(json!({"resource": "arn", "tag": "x"})),
        )
        .await,
        "tag",
    );
    problem(
        &v2::v2(
            &e,
            Method::POST,
            "/registries/delegations",
            Some(json!({"resource": "arn:aws:s3:::bucket"})),
        )
        .await,
        400,
        "resource",
    );
    // Six calls per minute for the full key (the three above count): the seventh is a 429.
    for _ in 0..3 {
        assert_eq!(
            v2::v2(&e, Method::GET, "/registries/delegations", None)
                .await
                .status,
            200
        );
    }
    let r = v2::v2(&e, Method::GET, "/registries/delegations", None).await;
    problem(&r, 429, "per minute");
    assert!(r.headers.get("retry-after").is_some());
    minute_headers(&r, 6);
    assert!(
        r.headers["ratelimit"]
            .to_str()
            .unwrap()
            .starts_with("\"minute\";r=0;")
    );
}
