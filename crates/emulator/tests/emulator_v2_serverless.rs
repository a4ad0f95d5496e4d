//! REST v2 serverless endpoints (`/v2/serverless`): the document's answers and statuses,
//! one world with REST v1 and the job API (an endpoint created here runs jobs at its
//! `requestUrls`), releases and the rollover of stale workers on the emulated clock (refusals:
//! `emulator_v2_serverless_errors.rs`).

mod common;

use common::serverless::*;
use common::v2::*;
use common::*;
use reqwest::Method;
use serde_json::{Value, json};

/// Emulated milliseconds between two worker replacements of a rollover.
const ROLLOVER_MS: u64 = 30_000;

fn v1_endpoint(list: &Value, id: &str) -> Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} not listed by v1: {list}"))
}

#[tokio::test]
async fn a_v2_endpoint_runs_jobs_at_its_request_urls_and_is_a_v1_endpoint() {
    let e = start_default().await;
    let ep = create(
        &e,
        gpu_body(json!({"env": {"MODEL": "tiny"}, "timeout": 120000, "flashboot": "FLASHBOOT"})),
    )
    .await;
    let id = ep["id"].as_str().unwrap().to_string();
    let base = format!("{}/v2/{id}", e.emu.base_url());
    assert_eq!(ep["requestUrls"]["run"], format!("{base}/run"));
    assert_eq!(
        ep["requestUrls"]["status"],
        format!("{base}/status/%7Bjob_id%7D")
    );
    assert_eq!(
        ep["requestUrls"]["purgeQueue"],
        format!("{base}/purge-queue")
    );
    assert_eq!(ep["type"], "QUEUE");
    assert_eq!(ep["gpu"]["pools"], json!(["ADA_24"]));
    assert_eq!(ep["gpu"]["allowedCudaVersions"], json!([]));
    assert!(ep["gpu"]["minCudaVersion"].is_null());
    assert_eq!(ep["workers"], json!({"min": 0, "max": 3, "idleTimeout": 5}));
    assert_eq!(
        ep["scaling"],
        json!({"type": "QUEUE_DELAY", "queueDelay": 4.0})
    );
    assert_eq!(
        (ep["timeout"].as_u64(), ep["flashboot"].as_str()),
        (Some(120_000), Some("FLASHBOOT"))
    );
    assert!(
        ep["createdAt"]
            .as_str()
            .unwrap()
            .parse::<jiff::Timestamp>()
            .is_ok()
    );

    // The job API serves it at once.
    let url = ep["requestUrls"]["runSync"].as_str().unwrap();
    let r = e
        .call(
            Method::POST,
            url,
            Some(&format!("Bearer {KEY}")),
            Some(json!({"input": {"output": "hi"}})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        (r.body["status"].as_str(), &r.body["output"]),
        (Some("COMPLETED"), &json!("hi"))
    );
    // The per-job URLs take the job id in place of the (percent-encoded) placeholder.
    let job = e
        .call(
            Method::POST,
            ep["requestUrls"]["run"].as_str().unwrap(),
            Some(KEY),
            Some(json!({"input": {}})),
        )
        .await;
    let job_id = job.body["id"].as_str().unwrap();
    let status_url = ep["requestUrls"]["status"]
        .as_str()
        .unwrap()
        .replace("%7Bjob_id%7D", job_id);
    let status = e.call(Method::GET, &status_url, Some(KEY), None).await;
    assert_eq!(
        (status.status.as_u16(), status.body["id"].as_str()),
        (200, Some(job_id))
    );
    e.wait_final(&id, job_id).await;
    let health = e
        .call(
            Method::GET,
            ep["requestUrls"]["health"].as_str().unwrap(),
            Some(KEY),
            None,
        )
        .await;
    assert_eq!(health.body["jobs"]["completed"], 2);

    // v1 lists the same record, its fields mapped.
    let list = e.rest(Method::GET, "/endpoints", None).await.body;
    let v1 = v1_endpoint(&list, &id);
    assert_eq!(v1["gpuTypeIds"], json!(["NVIDIA GeForce RTX 4090"]));
    assert_eq!(
        (v1["workersMax"].as_u64(), v1["idleTimeout"].as_u64()),
        (Some(3), Some(5))
    );
    assert_eq!(
        (v1["executionTimeoutMs"].as_u64(), v1["flashboot"].as_bool()),
        (Some(120_000), Some(true))
    );
    assert_eq!(
        (v1["scalerType"].as_str(), v1["scalerValue"].as_u64()),
        (Some("QUEUE_DELAY"), Some(4))
    );
    // Its template is the one the emulator made for it, with its container settings.
    let t = e
        .rest(
            Method::GET,
            &format!("/templates/{}", v1["templateId"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(t.status, 200, "{}", t.body);
    assert_eq!(
        (t.body["imageName"].as_str(), &t.body["env"]),
        (Some("me/worker:1"), &json!({"MODEL": "tiny"}))
    );

    // A v1 update shows over v2.
    let r = e
        .rest(
            Method::PATCH,
            &format!("/endpoints/{id}"),
            Some(json!({"workersMax": 7})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        get(&e, &format!("/serverless/{id}")).await["workers"]["max"],
        7
    );

    // Deleted over v2: gone from v1, from the job API, and its template with it.
    let r = v2::v2(&e, Method::DELETE, &format!("/serverless/{id}"), None).await;
    assert_eq!(r.status, 204);
    problem(
        &v2::v2(&e, Method::GET, &format!("/serverless/{id}"), None).await,
        404,
        &id,
    );
    let list = e.rest(Method::GET, "/endpoints", None).await.body;
    assert!(
        !list
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["id"] == id.as_str())
    );
    assert_eq!(e.job(Method::GET, &id, "health", None).await.status, 404);
    let tmpl = v1["templateId"].as_str().unwrap();
    assert_eq!(
        e.rest(Method::GET, &format!("/templates/{tmpl}"), None)
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn a_v1_endpoint_reads_as_a_v2_endpoint() {
    let e = start_default().await;
    let id = e
        .endpoint(json!({"gpuTypeIds": ["NVIDIA A40"], "networkVolumeId": "nv-demo0001", "scalerType": "REQUEST_COUNT", "scalerValue": 2}))
        .await;
    let ep = get(&e, &format!("/serverless/{id}")).await;
    // A40 is in AMPERE_48 with the A6000, which the selection leaves out.
    assert_eq!(ep["gpu"]["pools"], json!(["AMPERE_48"]));
    assert_eq!(ep["gpu"]["excludedTypes"], json!(["NVIDIA RTX A6000"]));
    assert_eq!(ep["image"], "runpod/worker-basic:1.0.0");
    assert_eq!(ep["env"], json!({"LOG_LEVEL": "info"}));
    assert_eq!(ep["networkVolumes"], json!(["nv-demo0001"]));
    assert_eq!(
        ep["scaling"],
        json!({"type": "REQUEST_COUNT", "requestCount": 2})
    );
    // Not applicable to a queue endpoint scaling on requestCount: omitted.
    assert!(
        ep["workers"].get("idleTimeout").is_none(),
        "{}",
        ep["workers"]
    );
    let list = get(&e, "/serverless").await;
    let ids: Vec<&str> = list["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["id"].as_str())
        .collect();
    assert!(
        ids.contains(&id.as_str()) && ids.contains(&"ep-demo0001"),
        "{ids:?}"
    );
    // A v2 update shows over v1.
    patch(
        &e,
        &id,
        json!({"gpu": {"pools": ["ADA_24", "AMPERE_48"], "excludedTypes": ["NVIDIA A40"]}}),
    )
    .await;
    let v1 = e
        .rest(Method::GET, &format!("/endpoints/{id}"), None)
        .await
        .body;
    assert_eq!(
        v1["gpuTypeIds"],
        json!(["NVIDIA GeForce RTX 4090", "NVIDIA RTX A6000"])
    );
}

#[tokio::test]
async fn from_a_template_and_cpu_and_load_balancer_endpoints() {
    let e = start_default().await;
    let ep = create(
        &e,
        json!({"name": "from-t", "type": "QUEUE", "templateId": "tmpl-worker-base", "env": {"EXTRA": "1"},
               "gpu": {"pools": ["AMPERE_48"]}, "scaling": {"type": "REQUEST_COUNT", "requestCount": 3}}),
    )
    .await;
    assert_eq!(ep["image"], "runpod/worker-basic:1.0.0");
    assert_eq!(ep["env"], json!({"LOG_LEVEL": "info", "EXTRA": "1"}));
    // The document's defaults for a create.
    assert_eq!(
        (ep["timeout"].as_u64(), ep["flashboot"].as_str()),
        (Some(300_000), Some("OFF"))
    );
    assert_eq!(
        (ep["workers"]["min"].as_u64(), ep["workers"]["max"].as_u64()),
        (Some(0), Some(3))
    );
    let id = ep["id"].as_str().unwrap();
    let v1 = e
        .rest(Method::GET, &format!("/endpoints/{id}"), None)
        .await
        .body;
    assert_eq!(v1["templateId"], "tmpl-worker-base");
    // A template bound to an endpoint cannot be deleted.
    problem(
        &v2::v2(&e, Method::DELETE, "/templates/tmpl-worker-base", None).await,
        400,
        "used by",
    );

    let cpu = create(
        &e,
        json!({"name": "cpu", "type": "QUEUE", "image": "python:3.12", "cpu": [{"id": "cpu5c", "vcpuCount": 4}],
               "scaling": {"type": "QUEUE_DELAY", "queueDelay": 2.5}}),
    )
    .await;
    assert_eq!(
        cpu["cpu"],
        json!([{"id": "cpu5c", "vcpuCount": 4, "memory": 8}])
    );
    assert!(cpu.get("gpu").is_none());
    assert_eq!(cpu["scaling"]["queueDelay"], 2.5);
    let cpu_id = cpu["id"].as_str().unwrap();
    let v1 = e
        .rest(Method::GET, &format!("/endpoints/{cpu_id}"), None)
        .await
        .body;
    assert_eq!(
        (v1["gpuTypeIds"].clone(), v1["scalerValue"].as_u64()),
        (json!([]), Some(3))
    );
    let workers = get(&e, &format!("/serverless/{cpu_id}/workers")).await;
    assert_eq!(workers["summary"]["total"], 0);

    let lb = create(
        &e,
        json!({"name": "lb", "type": "LOAD_BALANCER", "image": "me/server:1", "env": {"HEALTH_CHECK_PATH": "/healthz"},
               "gpu": {"pools": ["ADA_24"]}, "scaling": {"type": "REQUEST_COUNT", "requestCount": 1}}),
    )
    .await;
    let lb_id = lb["id"].as_str().unwrap();
    let base = format!("{}/lb/{lb_id}", e.emu.base_url());
    assert_eq!(
        lb["requestUrls"],
        json!({"base": base, "health": format!("{base}/healthz")})
    );
    assert!(lb["workers"]["idleTimeout"].is_u64());
}

/// The ids of stale and fresh workers.
fn staleness(workers: &Value) -> (Vec<String>, Vec<String>) {
    let mut stale = Vec::new();
    let mut fresh = Vec::new();
    for w in workers["workers"].as_array().unwrap() {
        let id = w["id"].as_str().unwrap().to_string();
        if w["isStale"].as_bool().unwrap() {
            stale.push(id);
        } else {
            fresh.push(id);
        }
    }
    (stale, fresh)
}

#[tokio::test]
async fn an_update_makes_a_release_and_workers_roll_over_on_the_emulated_clock() {
    let e = start_default().await;
    let ep = create(&e, gpu_body(json!({"workers": {"min": 2, "max": 3}}))).await;
    let id = ep["id"].as_str().unwrap().to_string();
    let workers = get(&e, &format!("/serverless/{id}/workers")).await;
    assert_eq!(workers["endpointVersion"], 1);
    assert_eq!(
        workers["summary"],
        json!({"running": 0, "idle": 2, "initializing": 0, "throttled": 0, "unhealthy": 0, "total": 2})
    );
    let first = &workers["workers"][0];
    assert_eq!(
        (first["status"].as_str(), first["isStale"].as_bool()),
        (Some("IDLE"), Some(false))
    );
    assert_eq!(
        (first["gpuCount"].as_u64(), first["gpuTypeId"].as_str()),
        (Some(1), Some("NVIDIA GeForce RTX 4090"))
    );
    assert_eq!(first["image"], "me/worker:1");
    let old_ids: Vec<String> = workers["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["id"].as_str().unwrap().to_string())
        .collect();

    // Scaling settings reach the workers at once and make no release.
    patch(&e, &id, json!({"workers": {"max": 5}, "scaling": {"type": "QUEUE_DELAY", "queueDelay": 2}, "name": "renamed"})).await;
    assert_eq!(
        get(&e, &format!("/serverless/{id}/releases")).await["endpointVersion"],
        1
    );

    // A new image is a new release; every worker is now stale.
    patch(&e, &id, json!({"image": "me/worker:2", "env": {"A": "1"}})).await;
    let releases = get(&e, &format!("/serverless/{id}/releases")).await;
    assert_eq!(releases["endpointVersion"], 2);
    assert_eq!(
        releases["rollout"],
        json!({"inProgress": true, "workersOnLatest": 0, "workersTotal": 2, "percentOnLatest": 0})
    );
    let newest = &releases["releases"][0];
    assert_eq!(
        (
            newest["version"].as_u64(),
            newest["source"].as_str(),
            newest["workerCount"].as_u64()
        ),
        (Some(2), Some("MANUAL"), Some(0))
    );
    assert!(newest["buildId"].is_null());
    let fields: Vec<&str> = newest["diff"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["field"].as_str())
        .collect();
    assert_eq!(fields, vec!["image", "env"]);
    assert_eq!(
        (&newest["diff"][0]["old"], &newest["diff"][0]["new"]),
        (&json!("me/worker:1"), &json!("me/worker:2"))
    );
    assert_eq!(releases["releases"][1]["workerCount"], 2);
    let workers = get(&e, &format!("/serverless/{id}/workers")).await;
    assert_eq!(workers["endpointVersion"], 2);
    let (stale, fresh) = staleness(&workers);
    assert_eq!((stale.len(), fresh.len()), (2, 0));
    // Stale workers still run the old image.
    assert_eq!(workers["workers"][0]["image"], "me/worker:1");

    // One worker per interval, oldest first.
    e.advance(ROLLOVER_MS).await;
    let workers = get(&e, &format!("/serverless/{id}/workers")).await;
    let (stale, fresh) = staleness(&workers);
    assert_eq!(
        (stale, fresh.len()),
        (vec![old_ids[1].clone()], 1),
        "{workers}"
    );
    assert!(
        !old_ids.contains(&fresh[0]),
        "a replacement is a new worker"
    );
    let replacement = workers["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["id"] == fresh[0].as_str())
        .unwrap();
    assert_eq!(
        (
            replacement["version"].as_u64(),
            replacement["image"].as_str()
        ),
        (Some(2), Some("me/worker:2"))
    );
    let rollout = get(&e, &format!("/serverless/{id}/releases")).await["rollout"].clone();
    assert_eq!(
        rollout,
        json!({"inProgress": true, "workersOnLatest": 1, "workersTotal": 2, "percentOnLatest": 50})
    );

    e.advance(ROLLOVER_MS).await;
    let workers = get(&e, &format!("/serverless/{id}/workers")).await;
    let (stale, fresh) = staleness(&workers);
    assert_eq!((stale.len(), fresh.len()), (0, 2));
    let rollout = get(&e, &format!("/serverless/{id}/releases")).await["rollout"].clone();
    assert_eq!(rollout["inProgress"], false);
    assert_eq!(rollout["percentOnLatest"], 100);

    // A v1 update of the worker configuration is a release too.
    let r = e
        .rest(
            Method::PATCH,
            &format!("/endpoints/{id}"),
            Some(json!({"templateId": "tmpl-worker-base"})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let releases = get(&e, &format!("/serverless/{id}/releases")).await;
    assert_eq!(releases["endpointVersion"], 3);
    assert_eq!(
        releases["releases"][0]["diff"][0]["new"],
        "runpod/worker-basic:1.0.0"
    );
}

#[tokio::test]
async fn worker_logs_stream_as_server_sent_events() {
    let e = start_default().await;
    let ep = create(&e, gpu_body(json!({"workers": {"min": 1, "max": 1}}))).await;
    let id = ep["id"].as_str().unwrap();
    let workers = get(&e, &format!("/serverless/{id}/workers")).await;
    let worker = workers["workers"][0]["id"].as_str().unwrap().to_string();
    let url = format!(
        "{}/v2/serverless/{id}/workers/{worker}/logs",
        e.emu.base_url()
    );
    let get_logs = |query: &'static str, last: Option<String>| {
        let http = e.http.clone();
        let url = format!("{url}{query}");
        async move {
            let mut req = http
                .get(url)
                .header("authorization", format!("Bearer {KEY}"));
            if let Some(l) = last {
                req = req.header("last-event-id", l);
            }
            let resp = req.send().await.unwrap();
            let status = resp.status().as_u16();
            let ct = resp
                .headers()
                .get("content-type")
                .map(|v| v.to_str().unwrap().to_string());
            (status, ct, resp.text().await.unwrap())
        }
    };
    let (status, ct, text) = get_logs("", None).await;
    assert_eq!((status, ct.as_deref()), (200, Some("text/event-stream")));
    let events: Vec<&str> = text.split("\n\n").filter(|s| !s.is_empty()).collect();
    assert_eq!(events.len(), 4, "{text}");
    let (id_line, data_line) = events[0].split_once('\n').unwrap();
    assert!(id_line.starts_with("id: "));
    let data: Value = serde_json::from_str(data_line.strip_prefix("data: ").unwrap()).unwrap();
    assert_eq!(data["source"], "system");
    assert!(data["line"].as_str().unwrap().contains(&worker));
    assert!(text.contains("me/worker:1"));
    // Filters: source, tail, resume after an event.
    let (_, _, text) = get_logs("?source=container", None).await;
    assert_eq!(text.matches("id: ").count(), 1);
    let (_, _, text) = get_logs("?tail=2", None).await;
    assert_eq!(text.matches("id: ").count(), 2);
    let second = events[1]
        .lines()
        .next()
        .unwrap()
        .strip_prefix("id: ")
        .unwrap()
        .to_string();
    let (_, _, text) = get_logs("", Some(second)).await;
    assert_eq!(text.matches("id: ").count(), 2);
    let (status, _, _) = get_logs("?tail=5001", None).await;
    assert_eq!(status, 422);
    let (status, _, _) = get_logs("?source=kernel", None).await;
    assert_eq!(status, 422);
    let r = v2::v2(
        &e,
        Method::GET,
        &format!("/serverless/{id}/workers/w-missing/logs"),
        None,
    )
    .await;
    problem(&r, 404, "w-missing");
}
