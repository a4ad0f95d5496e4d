//! Conformance of `/v2/billing/...` with the platform's REST v2 document: what the account
//! ran, priced by the catalog, in buckets on the emulator clock.

mod common;

use common::*;
use reqwest::Method;
use serde_json::{Value, json};

const HOUR: u64 = 3_600_000;

/// The billing routes whose refusals this suite checks (the clusters' route, with the
/// clusters: `emulator_v2_clusters.rs`).
const ROUTES: [&str; 5] = [
    "/billing",
    "/billing/pods",
    "/billing/serverless",
    "/billing/endpoints",
    "/billing/network-volumes",
];

fn close(a: &Value, b: f64) -> bool {
    (a.as_f64().unwrap_or(f64::NAN) - b).abs() < 1e-4
}

fn sum(records: &Value, field: &str) -> f64 {
    records
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[field].as_f64().unwrap())
        .sum()
}

async fn bill(e: &Emu, path: &str) -> Value {
    let r = e.v2(Method::GET, path, None).await;
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    assert!(r.headers.contains_key("ratelimit"));
    r.body
}

#[tokio::test]
async fn pods_are_billed_for_the_hours_they_ran_and_their_disk() {
    let e = start_default().await;
    let r = e
        .v2(
            Method::POST,
            "/pods",
            Some(json!({"name": "b", "image": "i", "gpu": {"id": "NVIDIA GeForce RTX 4090", "count": 2},
                "disk": 20, "mounts": {"persistent": {"size": 50, "path": "/workspace"}}})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_string();
    e.advance(2 * HOUR).await;
    let r = e
        .v2(
            Method::POST,
            &format!("/pods/{id}/action"),
            Some(json!({"action": "stop"})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    e.advance(HOUR).await;

    let b = bill(&e, "/billing/pods?bucketSize=hour&lastN=5").await;
    let records = &b["records"];
    assert!(
        records
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["podId"] == id.as_str())
    );
    // 2 hours at 2 x 0.69; 70 GB running disk for 2 h, 50 GB stopped for 1 h.
    let gpu = 2.0 * 2.0 * 0.69;
    let disk = 2.0 * 70.0 * 0.10 / 730.0 + 50.0 * 0.20 / 730.0;
    assert!((sum(records, "gpuAmount") - gpu).abs() < 1e-3, "{b}");
    assert!((sum(records, "diskAmount") - disk).abs() < 1e-3, "{b}");
    assert!(close(&b["metadata"]["totals"]["gpuAmount"], gpu), "{b}");
    assert!(close(&b["metadata"]["totals"]["cpuAmount"], 0.0));
    assert!(
        close(&b["metadata"]["totals"]["totalAmount"], gpu + disk),
        "{b}"
    );
    assert_eq!(b["metadata"]["uniquePodCount"], 1);
    assert_eq!(
        b["metadata"]["recordCount"],
        records.as_array().unwrap().len()
    );
    assert_eq!(b["metadata"]["query"]["bucketSize"], "hour");
    assert_eq!(b["metadata"]["query"]["podId"], Value::Null);
    for r in records.as_array().unwrap() {
        let total = r["gpuAmount"].as_f64().unwrap()
            + r["cpuAmount"].as_f64().unwrap()
            + r["diskAmount"].as_f64().unwrap();
        assert!(close(&r["totalAmount"], total), "{r}");
        assert!(r["startTime"].as_str().unwrap().ends_with(":00:00Z"));
    }

    // The aggregate carries the same pod spend plus the fixture's 100 GB volume, in the
    // buckets that have billing only: the hours since the emulator started (4, or 3 when it
    // started on the hour), not the one or two of the 5 before it.
    let all = bill(&e, "/billing?bucketSize=hour&lastN=5").await;
    let listed = all["records"].as_array().unwrap();
    assert!((3..=4).contains(&listed.len()), "{all}");
    assert_eq!(all["metadata"]["recordCount"], listed.len());
    assert!(
        listed
            .iter()
            .all(|r| r["totalAmount"].as_f64().unwrap() > 0.0)
    );
    assert!(
        close(&all["metadata"]["totals"]["podGpuAmount"], gpu),
        "{all}"
    );
    let storage = all["metadata"]["totals"]["storageStandardAmount"]
        .as_f64()
        .unwrap();
    assert!(
        storage > 0.0 && storage <= 5.0 * 100.0 * 0.07 / 730.0 + 1e-6,
        "{all}"
    );
    for k in ["clusterGpuAmount", "endpointAmount", "serverlessFeeAmount"] {
        assert!(close(&all["metadata"]["totals"][k], 0.0));
    }

    let filtered = bill(
        &e,
        &format!("/billing/pods?bucketSize=hour&lastN=5&podId={id}"),
    )
    .await;
    assert_eq!(filtered["metadata"]["query"]["podId"], id.as_str());
    let none = bill(&e, "/billing/pods?bucketSize=hour&lastN=5&podId=other").await;
    assert!(none["records"].as_array().unwrap().is_empty());
    assert_eq!(none["metadata"]["uniquePodCount"], 0);
}

#[tokio::test]
async fn cpu_pods_bill_as_cpu_and_graphql_pods_count_too() {
    let e = start_default().await;
    let r = e
        .v2(
            Method::POST,
            "/pods",
            Some(json!({"name": "c", "image": "i", "cpu": {"id": "cpu3c", "vcpuCount": 4}})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = e
        .gql(
            r#"mutation($i: PodFindAndDeployOnDemandInput!) { podFindAndDeployOnDemand(input: $i) { id } }"#,
            json!({"i": {"gpuTypeId": "NVIDIA A40", "gpuCount": 1, "cloudType": "SECURE", "name": "g", "imageName": "i"}}),
        )
        .await;
    assert!(r.body.get("errors").is_none(), "{}", r.body);
    e.advance(HOUR).await;
    let b = bill(&e, "/billing/pods?bucketSize=day&lastN=2").await;
    assert_eq!(b["metadata"]["uniquePodCount"], 2);
    assert!(
        (b["metadata"]["totals"]["cpuAmount"].as_f64().unwrap() - 0.12).abs() < 2e-3,
        "{b}"
    );
    assert!(
        (b["metadata"]["totals"]["gpuAmount"].as_f64().unwrap() - 0.40).abs() < 2e-3,
        "{b}"
    );
}

#[tokio::test]
async fn network_volumes_are_billed_per_gb_month_from_when_they_existed() {
    let e = start_default().await;
    let r = e
        .rest(
            Method::POST,
            "/networkvolumes",
            Some(json!({"name": "extra", "size": 730, "dataCenterId": "US-TX-3"})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_string();
    e.advance(HOUR).await;
    let b = bill(
        &e,
        &format!("/billing/network-volumes?bucketSize=day&lastN=2&networkVolumeId={id}"),
    )
    .await;
    // 730 GB for one hour at 0.07 per GB-month of 730 hours.
    assert!(
        (b["metadata"]["totals"]["standardAmount"].as_f64().unwrap() - 0.07).abs() < 2e-3,
        "{b}"
    );
    assert!(close(
        &b["metadata"]["totals"]["highPerformanceAmount"],
        0.0
    ));
    assert_eq!(b["metadata"]["uniqueNetworkVolumeCount"], 1);
    assert_eq!(b["records"][0]["networkVolumeId"], id.as_str());
    assert_eq!(b["metadata"]["query"]["networkVolumeId"], id.as_str());
    let all = bill(&e, "/billing/network-volumes?bucketSize=day&lastN=2").await;
    assert_eq!(all["metadata"]["uniqueNetworkVolumeCount"], 2);

    // Deleted: billing stops at the delete.
    assert_eq!(
        e.rest(Method::DELETE, &format!("/networkvolumes/{id}"), None)
            .await
            .status,
        204
    );
    e.advance(5 * HOUR).await;
    let after = bill(
        &e,
        &format!("/billing/network-volumes?bucketSize=day&lastN=2&networkVolumeId={id}"),
    )
    .await;
    assert!(
        (after["metadata"]["totals"]["totalAmount"].as_f64().unwrap() - 0.07).abs() < 2e-3,
        "{after}"
    );
}

#[tokio::test]
async fn serverless_and_public_endpoints_answer_the_documented_shape() {
    let e = start_default().await;
    let s = bill(&e, "/billing/serverless?bucketSize=day&lastN=3").await;
    assert!(s["records"].as_array().unwrap().is_empty());
    assert_eq!(s["metadata"]["uniqueServerlessCount"], 0);
    assert_eq!(
        s["metadata"]["totals"],
        json!({"totalAmount": 0.0, "gpuAmount": 0.0, "cpuAmount": 0.0, "diskAmount": 0.0, "feeAmount": 0.0})
    );
    assert_eq!(s["metadata"]["query"]["serverlessId"], Value::Null);
    // The account calls no public endpoint: no bucket has billing, so there are no records.
    let p = bill(&e, "/billing/endpoints?bucketSize=week&lastN=2").await;
    assert!(p["records"].as_array().unwrap().is_empty(), "{p}");
    assert_eq!(p["metadata"]["recordCount"], 0);
    assert_eq!(p["metadata"]["totals"], json!({"totalAmount": 0.0}));
    assert_eq!(p["metadata"]["query"]["bucketSize"], "week");
}

#[tokio::test]
async fn windows_snap_to_buckets_and_bad_queries_are_refused() {
    let e = start_default().await;
    let b = bill(
        &e,
        "/billing?startTime=2026-01-10T05:00:00Z&endTime=2026-01-12T01:00:00Z",
    )
    .await;
    assert_eq!(b["metadata"]["query"]["startTime"], "2026-01-10T00:00:00Z");
    assert_eq!(b["metadata"]["query"]["endTime"], "2026-01-13T00:00:00Z");
    assert_eq!(b["metadata"]["query"]["bucketSize"], "day");
    // Only buckets with billing are listed: the account ran nothing before the emulator
    // started, so a window in the past has none.
    assert!(b["records"].as_array().unwrap().is_empty(), "{b}");
    assert_eq!(b["metadata"]["recordCount"], 0);
    let m = bill(
        &e,
        "/billing?bucketSize=month&startTime=2025-01-15T00:00:00Z&endTime=2025-04-01T00:00:00Z",
    )
    .await;
    assert_eq!(m["metadata"]["query"]["startTime"], "2025-01-01T00:00:00Z");
    assert!(m["records"].as_array().unwrap().is_empty(), "{m}");
    // Default: the last 30 days, by day; the fixture's volume exists since the start (today,
    // or yesterday too when the test runs across midnight UTC), not the 29 days before.
    let d = bill(&e, "/billing").await;
    assert!(
        (1..=2).contains(&d["records"].as_array().unwrap().len()),
        "{d}"
    );
    // No bound on the window: years of hours, or a lastN reaching back before year 1, are
    // answered (the start clamped to what RFC 3339 writes), on every route.
    for q in [
        "?bucketSize=hour&startTime=2020-01-01T00:00:00Z&endTime=2026-01-01T00:00:00Z",
        "?bucketSize=hour&lastN=100000000",
        "?lastN=9223372036854775807",
    ] {
        for route in ROUTES.iter().chain(&["/billing/clusters"]) {
            let r = bill(&e, &format!("{route}{q}")).await;
            assert!(
                r["metadata"]["recordCount"].as_u64().unwrap() <= 2,
                "{route}{q}: {r}"
            );
        }
    }
    let far = bill(&e, "/billing?bucketSize=hour&lastN=100000000").await;
    assert_eq!(
        far["metadata"]["query"]["startTime"],
        "0001-01-01T00:00:00Z"
    );

    for (q, status, needle) in [
        ("?lastN=2&startTime=2026-01-01T00:00:00Z", 400, "lastN"),
        (
            "?startTime=2026-02-01T00:00:00Z&endTime=2026-01-01T00:00:00Z",
            400,
            "startTime",
        ),
        ("?lastN=0", 422, "lastN"),
        ("?lastN=ten", 422, "lastN"),
        ("?bucketSize=fortnight", 422, "bucketSize"),
        ("?startTime=yesterday", 422, "startTime"),
    ] {
        for route in ROUTES {
            let r = e.v2(Method::GET, &format!("{route}{q}"), None).await;
            assert_problem(&r, status, needle);
        }
    }
    let r = e.v2_as("nobody", Method::GET, "/billing", None).await;
    assert_problem(&r, 401, "API key");
    assert_eq!(
        e.v2_as(READ_KEY, Method::GET, "/billing/pods", None)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn serverless_bills_the_worker_time_an_endpoint_ran() {
    let e = start_default().await;
    let created = serverless::create(
        &e,
        json!({"name": "billed", "type": "QUEUE", "templateId": "tmpl-worker-base",
        "scaling": {"type": "QUEUE_DELAY", "queueDelay": 4},
        "gpu": {"pools": ["AMPERE_48"], "count": 1},
        "workers": {"min": 1, "max": 1}}),
    )
    .await;
    let id = created["id"].as_str().unwrap().to_string();
    e.emu.admin().advance_clock(2 * HOUR).await.unwrap();
    // Hourly buckets, so that the two hours never straddle a bucket the query leaves out.
    let s = bill(&e, "/billing/serverless?bucketSize=hour&lastN=4").await;
    let records = s["records"].as_array().unwrap();
    assert!(
        records.iter().all(|r| r["serverlessId"] == id.as_str()),
        "{s}"
    );
    // One worker kept by workersMin for two hours, at the pool's GPU serverless price
    // ($0.48/h for the A40 of AMPERE_48).
    assert!((sum(&s["records"], "gpuAmount") - 0.96).abs() < 1e-3, "{s}");
    assert!(close(
        &s["metadata"]["totals"]["gpuAmount"],
        sum(&s["records"], "gpuAmount")
    ));
    let all = bill(&e, "/billing?bucketSize=hour&lastN=4").await;
    assert!(
        (sum(&all["records"], "serverlessGpuAmount") - 0.96).abs() < 1e-3,
        "{all}"
    );
    // Deleting the endpoint ends its worker time, and what it ran stays billed.
    let r = e
        .v2(Method::DELETE, &format!("/serverless/{id}"), None)
        .await;
    assert_eq!(r.status, 204, "{}", r.body);
    e.emu.admin().advance_clock(HOUR).await.unwrap();
    let after = bill(&e, "/billing/serverless?bucketSize=hour&lastN=5").await;
    assert!(
        (sum(&after["records"], "gpuAmount") - 0.96).abs() < 1e-3,
        "{after}"
    );
}

#[tokio::test]
async fn cpu_endpoints_bill_their_workers_vcpus_at_the_flavors_serverless_price() {
    let e = start_default().await;
    let created = serverless::create(
        &e,
        json!({"name": "cpu", "type": "QUEUE", "image": "python:3.12",
                "cpu": [{"id": "cpu5c", "vcpuCount": 4}],
                "workers": {"min": 1, "max": 1},
                "scaling": {"type": "QUEUE_DELAY", "queueDelay": 4}}),
    )
    .await;
    let id = created["id"].as_str().unwrap().to_string();
    // The worker comes up; then an hour passes.
    let workers = e
        .v2(Method::GET, &format!("/serverless/{id}/workers"), None)
        .await;
    assert_eq!(workers.body["summary"]["total"], 1, "{}", workers.body);
    assert_eq!(workers.body["workers"][0]["gpuCount"], 0);
    assert_eq!(workers.body["workers"][0]["gpuTypeId"], Value::Null);
    // cpu5c has machines only in US-GA-1.
    assert_eq!(workers.body["workers"][0]["dataCenterId"], "US-GA-1");
    e.advance(HOUR).await;

    // cpu5c: 0.05 per vCPU-hour in serverless, 4 vCPUs, one worker for one hour.
    let cpu = 0.05 * 4.0;
    let s = bill(
        &e,
        &format!("/billing/serverless?bucketSize=hour&lastN=3&serverlessId={id}"),
    )
    .await;
    let totals = &s["metadata"]["totals"];
    assert!(
        (totals["cpuAmount"].as_f64().unwrap() - cpu).abs() < 2e-3,
        "{s}"
    );
    assert!(close(&totals["gpuAmount"], 0.0), "{s}");
    assert_eq!(s["metadata"]["uniqueServerlessCount"], 1);
    let all = bill(&e, "/billing?bucketSize=hour&lastN=3").await;
    let serverless_cpu = all["metadata"]["totals"]["serverlessCpuAmount"]
        .as_f64()
        .unwrap();
    assert!((serverless_cpu - cpu).abs() < 2e-3, "{all}");
    // Public endpoints are another product: the account used none.
    let p = bill(&e, "/billing/endpoints?bucketSize=hour&lastN=3").await;
    assert_eq!(p["metadata"]["totals"], json!({"totalAmount": 0.0}));
    // Deleted, its worker time stays billed.
    let r = e
        .v2(Method::DELETE, &format!("/serverless/{id}"), None)
        .await;
    assert!(r.status.is_success(), "{}", r.body);
    let s = bill(&e, "/billing/serverless?bucketSize=hour&lastN=3").await;
    let after = s["metadata"]["totals"]["cpuAmount"].as_f64().unwrap();
    assert!((after - cpu).abs() < 2e-3, "{s}");
}
