//! The unit tests' objects, shared by the tests of the ledger and of its members.

use gpucloud_crd::pod::{PodPhase, PodStatus};
use gpucloud_crd::{CommonStatus, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

/// Pod `team/p` in `phase` at `cost` per hour, up for a minute when last synced (second
/// 1000).
pub(super) fn pod(phase: Option<PodPhase>, cost: Option<f64>) -> Pod {
    let spec: PodSpec =
        serde_json::from_value(serde_json::json!({"image": "i", "gpu": {"types": ["A"]}})).unwrap();
    let mut p = Pod::new("p", spec);
    p.metadata.namespace = Some("team".into());
    p.status = Some(PodStatus {
        phase,
        cost_per_hour: cost,
        uptime_seconds: Some(60),
        common: CommonStatus {
            last_sync_time: Some(Time(Timestamp::from_second(1000).unwrap())),
            ..Default::default()
        },
        ..Default::default()
    });
    p
}
