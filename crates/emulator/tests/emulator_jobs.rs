//! Conformance of the job API (spec: Job, Job submission body, policy, States and
//! transitions, Endpoints A), row by row, over real HTTP; streams, workers, webhooks and
//! rate limits are in `emulator_jobs_runtime.rs`.

mod common;

use common::*;
use reqwest::Method;
use serde_json::json;

// ---- Endpoints A: /run, /status, /runsync

#[tokio::test]
async fn run_returns_id_and_in_queue_then_completes_with_the_input_as_output() {
    let e = start_default().await;
    let ep = e.endpoint(json!({})).await;
    let r = e.post(&ep, "run", json!({"input": {"prompt": "hi"}})).await;
    assert_eq!(r.status, 200);
    let obj = r.body.as_object().unwrap();
    assert_eq!(obj.len(), 2, "{{id, status}} only: {}", r.body);
    assert_eq!(r.body["status"], "IN_QUEUE");
    let id = r.body["id"].as_str().unwrap();
    let done = e.wait_final(&ep, id).await;
    assert_eq!(done["status"], "COMPLETED");
    assert_eq!(done["id"], id);
    assert_eq!(done["output"], json!({"prompt": "hi"}));
    assert!(
        done["delayTime"].is_u64() && done["executionTime"].is_u64(),
        "{done}"
    );
}

#[tokio::test]
async fn runsync_returns_the_result_in_the_same_response() {
    let e = start_default().await;
    let ep = e.endpoint(json!({})).await;
    let r = e
        .runsync(&ep, None, json!({"output": {"answer": 42}}))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["status"], "COMPLETED");
    assert_eq!(r.body["output"], json!({"answer": 42}));
    for k in ["id", "delayTime", "executionTime"] {
        assert!(r.body.get(k).is_some(), "{k} missing: {}", r.body);
    }
}

#[tokio::test]
async fn runsync_wait_is_validated_in_milliseconds() {
    let e = start_default().await;
    let ep = e.endpoint(json!({})).await;
    for bad in ["999", "300001", "abc", "-5"] {
        let r = e.runsync(&ep, Some(bad), json!({})).await;
        r.assert_error(400, "wait");
    }
    let r = e.runsync(&ep, Some("1000"), json!({})).await;
    assert_eq!(r.status, 200);
    let r = e.runsync(&ep, Some("300000"), json!({})).await;
    assert_eq!(r.body["status"], "COMPLETED");
    // Rejected requests change nothing: only the two accepted jobs exist.
    assert_eq!(e.health(&ep).await["jobs"]["completed"], 2);
}

#[tokio::test]
async fn runsync_answers_with_the_current_status_when_wait_elapses() {
    let e = fast(100.0).await;
    let ep = e.endpoint(json!({})).await;
    // The work takes 60 s (0.6 s real); wait is 1 s (10 ms real).
    let r = e
        .runsync(&ep, Some("1000"), json!({"sleep_ms": 60000}))
        .await;
    assert_eq!(r.status, 200);
    let status = r.body["status"].as_str().unwrap();
    assert!(
        status == "IN_QUEUE" || status == "IN_PROGRESS",
        "{}",
        r.body
    );
    assert!(r.body.get("output").is_none());
    let id = r.body["id"].as_str().unwrap();
    assert_eq!(e.wait_final(&ep, id).await["status"], "COMPLETED");
}

#[tokio::test]
async fn unknown_endpoint_and_unknown_job_are_404() {
    let e = start_default().await;
    let r = e.post("nope", "run", json!({"input": {}})).await;
    r.assert_error(404, "nope");
    let ep = e.endpoint(json!({})).await;
    e.status(&ep, "missing").await.assert_error(404, "missing");
    e.job(Method::GET, &ep, "stream/missing", None)
        .await
        .assert_error(404, "missing");
    e.job(Method::POST, &ep, "cancel/missing", None)
        .await
        .assert_error(404, "missing");
    e.job(Method::POST, &ep, "retry/missing", None)
        .await
        .assert_error(404, "missing");
}

// ---- Job submission body and policy

#[tokio::test]
async fn invalid_submissions_name_the_field_and_change_nothing() {
    let e = start_default().await;
    let ep = e.endpoint(json!({"workersMax": 0})).await;
    let cases = [
        (json!({}), "input: required"),
        (json!({"input": "text"}), "input: must be an object"),
        (
            json!({"input": {}, "policy": {"executionTimeout": 4999}}),
            "policy.executionTimeout",
        ),
        (
            json!({"input": {}, "policy": {"executionTimeout": 604800001u64}}),
            "policy.executionTimeout",
        ),
        (json!({"input": {}, "policy": {"ttl": 9999}}), "policy.ttl"),
        (
            json!({"input": {}, "policy": {"ttl": 604800001u64}}),
            "policy.ttl",
        ),
        (
            json!({"input": {}, "policy": {"lowPriority": 1}}),
            "policy.lowPriority",
        ),
        (json!({"input": {}, "webhook": "ftp://x"}), "webhook"),
        (
            json!({"input": {}, "s3Config": {"bucketName": 3}}),
            "s3Config.bucketName",
        ),
        (
            json!({"input": {}, "surprise": true}),
            "surprise: unexpected property",
        ),
    ];
    for (body, needle) in cases {
        for op in ["run", "runsync"] {
            e.job(Method::POST, &ep, op, Some(body.clone()))
                .await
                .assert_error(400, needle);
        }
    }
    let r = e
        .raw(
            Method::POST,
            &e.job_url(&ep, "run"),
            KEY,
            b"{not json".to_vec(),
        )
        .await;
    r.assert_error(400, "JSON");
    assert_eq!(e.health(&ep).await["jobs"]["inQueue"], 0);
    // The full body with every documented field is accepted.
    let ok = json!({"input": {}, "webhook": "http://127.0.0.1:9/hook",
        "policy": {"executionTimeout": 5000, "lowPriority": false, "ttl": 10000},
        "s3Config": {"accessId": "a", "accessSecret": "s", "bucketName": "b", "endpointUrl": "https://s3.example.com"}});
    assert_eq!(e.job(Method::POST, &ep, "run", Some(ok)).await.status, 200);
}

#[tokio::test]
async fn payload_limits_are_10_mb_for_run_and_20_mb_for_runsync() {
    let e = start_default().await;
    let ep = e.endpoint(json!({})).await;
    let body = |size: usize| {
        let pad = "x".repeat(size - 40);
        serde_json::to_vec(&json!({"input": {"output": 1, "pad": pad}})).unwrap()
    };
    let r = e
        .raw(
            Method::POST,
            &e.job_url(&ep, "run"),
            KEY,
            body(10 * MIB + 10),
        )
        .await;
    r.assert_error(413, "10 MB");
    let r = e
        .raw(Method::POST, &e.job_url(&ep, "run"), KEY, body(9 * MIB))
        .await;
    assert_eq!(r.status, 200);
    let r = e
        .raw(
            Method::POST,
            &e.job_url(&ep, "runsync"),
            KEY,
            body(15 * MIB),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["status"], "COMPLETED");
    let r = e
        .raw(
            Method::POST,
            &e.job_url(&ep, "runsync"),
            KEY,
            body(20 * MIB + 10),
        )
        .await;
    r.assert_error(413, "20 MB");
}

// ---- States and transitions

#[tokio::test]
async fn cancel_removes_a_queued_job_and_stops_a_running_one() {
    let e = start_default().await;
    // No workers: jobs stay queued.
    let queued_ep = e.endpoint(json!({"workersMax": 0})).await;
    let id = e.run(&queued_ep, json!({"input": {}})).await;
    let r = e
        .job(Method::POST, &queued_ep, &format!("cancel/{id}"), None)
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, json!({"id": id, "status": "CANCELLED"}));
    assert_eq!(e.status(&queued_ep, &id).await.body["status"], "CANCELLED");
    assert_eq!(e.health(&queued_ep).await["jobs"]["inQueue"], 0);

    let ep = e.endpoint(json!({"workersMax": 1})).await;
    let running = e.run(&ep, json!({"input": {"sleep_ms": 3_600_000}})).await;
    e.wait_status(&ep, &running, |b| b["status"] == "IN_PROGRESS")
        .await;
    let r = e
        .job(Method::POST, &ep, &format!("cancel/{running}"), None)
        .await;
    assert_eq!(r.body["status"], "CANCELLED");
    // The worker is free again: the next job completes.
    let next = e.run(&ep, json!({"input": {}})).await;
    assert_eq!(e.wait_final(&ep, &next).await["status"], "COMPLETED");
    assert_eq!(e.status(&ep, &running).await.body["status"], "CANCELLED");
    // Only IN_QUEUE and IN_PROGRESS jobs can be cancelled.
    e.job(Method::POST, &ep, &format!("cancel/{next}"), None)
        .await
        .assert_error(400, "COMPLETED");
}

#[tokio::test]
async fn retry_only_for_failed_or_timed_out_keeps_the_id_and_drops_the_output() {
    let e = fast(1000.0).await;
    let ep = e.endpoint(json!({})).await;
    let failed = e.run(&ep, json!({"input": {"fail": "boom"}})).await;
    let body = e.wait_final(&ep, &failed).await;
    assert_eq!(body["status"], "FAILED");
    assert_eq!(body["error"], "boom");
    let r = e
        .job(Method::POST, &ep, &format!("retry/{failed}"), None)
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, json!({"id": failed, "status": "IN_QUEUE"}));
    let again = e.wait_final(&ep, &failed).await;
    assert_eq!(again["id"], failed.as_str());
    assert_eq!(e.health(&ep).await["jobs"]["retried"], 1);

    // TIMED_OUT can be retried; its error is gone once it is queued again.
    let slow = e
        .run(
            &ep,
            json!({"input": {"sleep_ms": 60000}, "policy": {"executionTimeout": 5000}}),
        )
        .await;
    assert_eq!(e.wait_final(&ep, &slow).await["status"], "TIMED_OUT");
    let r = e
        .job(Method::POST, &ep, &format!("retry/{slow}"), None)
        .await;
    assert_eq!(r.body["status"], "IN_QUEUE");

    let ok = e.run(&ep, json!({"input": {}})).await;
    e.wait_final(&ep, &ok).await;
    e.job(Method::POST, &ep, &format!("retry/{ok}"), None)
        .await
        .assert_error(400, "FAILED or TIMED_OUT");
}

#[tokio::test]
async fn execution_timeout_gives_timed_out() {
    let e = fast(1000.0).await;
    let ep = e.endpoint(json!({})).await;
    let id = e
        .run(
            &ep,
            json!({"input": {"sleep_ms": 600000}, "policy": {"executionTimeout": 5000}}),
        )
        .await;
    let body = e.wait_final(&ep, &id).await;
    assert_eq!(body["status"], "TIMED_OUT");
    let exec = body["executionTime"].as_u64().unwrap();
    assert!((5000..600000).contains(&exec), "executionTime {exec} ms");
    // The endpoint's executionTimeoutMs applies when the policy says nothing.
    let ep2 = e.endpoint(json!({"executionTimeoutMs": 5000})).await;
    let id = e.run(&ep2, json!({"input": {"sleep_ms": 600000}})).await;
    assert_eq!(e.wait_final(&ep2, &id).await["status"], "TIMED_OUT");
}

#[tokio::test]
async fn ttl_deletes_a_job_even_while_it_runs() {
    let e = start_default().await;
    let ep = e.endpoint(json!({})).await;
    let id = e
        .run(
            &ep,
            json!({"input": {"sleep_ms": 3_600_000}, "policy": {"ttl": 10000}}),
        )
        .await;
    e.wait_status(&ep, &id, |b| b["status"] == "IN_PROGRESS")
        .await;
    e.advance(10_000).await;
    e.status(&ep, &id).await.assert_error(404, &id);
    assert_eq!(e.health(&ep).await["jobs"]["inProgress"], 0);
}

#[tokio::test]
async fn ttl_counts_queue_time_and_status_ttl_sets_it() {
    let e = start_default().await;
    let ep = e.endpoint(json!({"workersMax": 0})).await;
    let id = e
        .run(&ep, json!({"input": {}, "policy": {"ttl": 10000}}))
        .await;
    e.advance(9_000).await;
    assert_eq!(e.status(&ep, &id).await.body["status"], "IN_QUEUE");
    e.advance(1_000).await;
    e.status(&ep, &id).await.assert_error(404, &id);

    // Default TTL is 24 h; `?ttl=` on /status replaces it (validated in ms).
    let id = e.run(&ep, json!({"input": {}})).await;
    e.job(Method::GET, &ep, &format!("status/{id}?ttl=9999"), None)
        .await
        .assert_error(400, "ttl");
    e.advance(23 * 3_600_000).await;
    assert_eq!(e.status(&ep, &id).await.status, 200);
    let r = e
        .job(Method::GET, &ep, &format!("status/{id}?ttl=86400000"), None)
        .await;
    assert_eq!(r.status, 200);
    e.advance(3_600_000).await;
    e.status(&ep, &id).await.assert_error(404, &id);

    let id = e.run(&ep, json!({"input": {}})).await;
    let r = e
        .job(
            Method::GET,
            &ep,
            &format!("status/{id}?ttl=604800000"),
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    e.advance(86_400_000).await;
    assert_eq!(e.status(&ep, &id).await.body["status"], "IN_QUEUE");
}

#[tokio::test]
async fn async_results_are_kept_30_minutes_then_gone_and_not_retryable() {
    let e = start_default().await;
    let ep = e.endpoint(json!({})).await;
    let ok = e.run(&ep, json!({"input": {}})).await;
    let failed = e.run(&ep, json!({"input": {"fail": "x"}})).await;
    e.wait_final(&ep, &ok).await;
    e.wait_final(&ep, &failed).await;
    e.advance(30 * 60_000 - 1_000).await;
    assert_eq!(e.status(&ep, &ok).await.status, 200);
    e.advance(1_000).await;
    e.status(&ep, &ok).await.assert_error(404, &ok);
    e.job(Method::POST, &ep, &format!("retry/{failed}"), None)
        .await
        .assert_error(404, &failed);
}

#[tokio::test]
async fn sync_results_are_kept_1_minute_or_up_to_wait() {
    let e = start_default().await;
    let ep = e.endpoint(json!({})).await;
    let r = e.runsync(&ep, None, json!({})).await;
    let short = r.body["id"].as_str().unwrap().to_string();
    // Default wait is 90 s, so the result is kept 90 s.
    let r = e.runsync(&ep, Some("1000"), json!({})).await;
    let one_minute = r.body["id"].as_str().unwrap().to_string();
    let r = e.runsync(&ep, Some("300000"), json!({})).await;
    let five_minutes = r.body["id"].as_str().unwrap().to_string();
    e.advance(60_000).await;
    e.status(&ep, &one_minute)
        .await
        .assert_error(404, &one_minute);
    assert_eq!(e.status(&ep, &short).await.status, 200);
    e.advance(30_000).await;
    e.status(&ep, &short).await.assert_error(404, &short);
    assert_eq!(e.status(&ep, &five_minutes).await.status, 200);
    e.advance(210_000).await;
    e.status(&ep, &five_minutes)
        .await
        .assert_error(404, &five_minutes);
}

#[tokio::test]
async fn purge_queue_removes_only_queued_jobs() {
    let e = fast(10.0).await;
    let ep = e.endpoint(json!({"workersMax": 1})).await;
    let running = e.run(&ep, json!({"input": {"sleep_ms": 3_600_000}})).await;
    e.wait_status(&ep, &running, |b| b["status"] == "IN_PROGRESS")
        .await;
    let q1 = e.run(&ep, json!({"input": {}})).await;
    let _q2 = e.run(&ep, json!({"input": {}})).await;
    let r = e.job(Method::POST, &ep, "purge-queue", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, json!({"removed": 2, "status": "completed"}));
    assert_eq!(e.status(&ep, &running).await.body["status"], "IN_PROGRESS");
    e.status(&ep, &q1).await.assert_error(404, &q1);
    let h = e.health(&ep).await;
    assert_eq!(
        (
            h["jobs"]["inQueue"].as_u64(),
            h["jobs"]["inProgress"].as_u64()
        ),
        (Some(0), Some(1))
    );
}

#[tokio::test]
async fn health_report_has_every_field() {
    let e = fast(1000.0).await;
    let ep = e.endpoint(json!({})).await;
    let a = e.run(&ep, json!({"input": {}})).await;
    let b = e.run(&ep, json!({"input": {"fail": "no"}})).await;
    e.wait_final(&ep, &a).await;
    e.wait_final(&ep, &b).await;
    let h = e.health(&ep).await;
    for k in ["completed", "failed", "inProgress", "inQueue", "retried"] {
        assert!(h["jobs"][k].is_u64(), "jobs.{k}: {h}");
    }
    for k in ["idle", "running"] {
        assert!(h["workers"][k].is_u64(), "workers.{k}: {h}");
    }
    assert_eq!(h["jobs"]["completed"], 1);
    assert_eq!(h["jobs"]["failed"], 1);
}
