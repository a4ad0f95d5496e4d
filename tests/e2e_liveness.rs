//! The liveness probe end to end: a real kube-apiserver, the emulator over real HTTP, the
//! operator in-process with a short `--liveness-stall-timeout`. While its passes end,
//! `/healthz` answers 200 for longer than the limit; once the emulator holds every listing
//! of network volumes far beyond the limit (a latency fault, with a `--platform-timeout`
//! long enough that the operator waits it out), the NetworkVolume controller is wedged and
//! `/healthz` answers 503 naming it, while `/readyz` still answers 200 (the process
//! serves); once the held call ends, `/healthz` is 200 again. Run through
//! `scripts/test.sh` (it needs `KUBECONFIG`).

mod common;

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use common::backend::routes;
use common::operator::{Env, free_port, is_ready, volume};
use common::wait_until;

const TIMEOUT: Duration = Duration::from_secs(30);
/// The stall limit the operator runs with.
const LIMIT: Duration = Duration::from_secs(3);
/// How long the emulator holds each listing of volumes once wedged: far beyond the limit.
const HELD_MS: u64 = 20_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_wedged_controller_fails_healthz_naming_its_kind_and_a_healthy_one_does_not() {
    let env = Env::start("liveness").await;
    let port = free_port();
    let op = env.operator(&[
        &format!("--metrics-addr=127.0.0.1:{port}"),
        &format!("--liveness-stall-timeout={}s", LIMIT.as_secs()),
        "--platform-timeout=10m",
    ]);
    let healthz = format!("http://127.0.0.1:{port}/healthz");
    let readyz = format!("http://127.0.0.1:{port}/readyz");

    // Healthy: a volume is made and then compared with the platform every poll interval
    // (2 s), each pass well within the limit; /healthz stays 200 for three limits.
    env.create(&volume("kept", 10, json!({}))).await;
    env.wait_for("kept", TIMEOUT, "Ready", is_ready).await;
    let healthy_until = Instant::now() + LIMIT * 3;
    while Instant::now() < healthy_until {
        let (status, body) = common::http::get(&healthz, None).await;
        assert_eq!(
            (status, body.as_str()),
            (StatusCode::OK, "ok"),
            "a healthy operator"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Wedged: the next pass's listing is held for 20 s, and the client's 10 min limit per
    // attempt lets it wait.
    let list_route = routes().list_volumes;
    env.emulator
        .admin()
        .add_latency(list_route, HELD_MS)
        .await
        .unwrap();
    let wedged_at = Instant::now();
    let said = loop {
        let (status, body) = common::http::get(&healthz, None).await;
        if status == StatusCode::SERVICE_UNAVAILABLE {
            break body;
        }
        assert!(
            wedged_at.elapsed() < Duration::from_secs(15),
            "/healthz never turned 503 with the volume listing held; last: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    eprintln!(
        "/healthz answered 503 {} ms after the listing was held: {said}",
        wedged_at.elapsed().as_millis()
    );
    assert!(said.contains("NetworkVolume"), "names the kind: {said}");
    assert!(
        said.contains("stall limit of 3s"),
        "names the limit: {said}"
    );
    for other in ["Pod ", "Endpoint ", "Template ", "Budget "] {
        assert!(!said.contains(other), "only the wedged kind: {said}");
    }
    assert_eq!(
        common::http::get(&readyz, None).await.0,
        StatusCode::OK,
        "a wedged process still serves; restarting it is the liveness probe's job"
    );

    // The held call ends: live again.
    env.emulator.admin().clear_faults().await.unwrap();
    let recovered = wait_until(
        Duration::from_millis(HELD_MS) + Duration::from_secs(15),
        || async { common::http::get(&healthz, None).await.0 == StatusCode::OK },
    )
    .await;
    assert!(recovered, "/healthz stayed 503 after the held call ended");
    env.finish(op).await;
}
