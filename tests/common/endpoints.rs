//! Serverless Endpoints of the end-to-end suites, and jobs that keep their workers busy.

use gpucloud_crd::{Endpoint, EndpointSpec};
use gpucloud_platform::JobRequest;
use serde_json::{Value, json};

use super::merged;
use super::operator::Env;

/// An Endpoint on the emulator's worker template with 0 to 2 workers, `spec` on top.
pub fn endpoint(name: &str, spec: Value) -> Endpoint {
    let base = json!({"templateId": "tmpl-worker-base", "workersMin": 0, "workersMax": 2});
    let spec: EndpointSpec = serde_json::from_value(merged(base, spec)).unwrap();
    Endpoint::new(name, spec)
}

/// Submits `jobs` jobs of a minute each to endpoint `id` through the job API, so that
/// workers start for them and stay busy.
pub async fn run_minute_jobs(env: &Env, id: &str, jobs: usize) {
    for _ in 0..jobs {
        env.platform
            .jobs()
            .run(id, &JobRequest::new(json!({"sleep_ms": 60_000})))
            .await
            .unwrap();
    }
}
