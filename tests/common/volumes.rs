//! What the NetworkVolume suites share: the one remote volume of a Ready object, the
//! platform id of a volume, and whether an Event with a reason was published about an
//! object.

use gpucloud_crd::NetworkVolume;
use gpucloud_engine::marker::names_object;
use kube::{Api, ResourceExt};

use super::operator::Env;

/// The annotations of the crash-safe create, spelled out here rather than read from the
/// engine, so that renaming one (which breaks objects already in clusters) fails a test.
pub const PENDING: &str = "gpucloud.io/external-create-pending";
pub const EXTERNAL_ID: &str = "gpucloud.io/external-id";

/// The platform id that the NetworkVolume `name`'s status reports.
pub async fn volume_id(env: &Env, name: &str) -> String {
    let volumes: Api<NetworkVolume> = env.api();
    let nv = volumes.get(name).await.expect("the NetworkVolume exists");
    nv.status.and_then(|s| s.common.id).expect("status.id")
}

/// The remote volume of a Ready object: exactly one on the platform carries its name, and
/// it is the one status names. The create marker stays (it is what finds the volume again
/// if status is ever lost); no external-id annotation is written.
pub async fn assert_exactly_one_remote(env: &Env, nv: &NetworkVolume) -> String {
    let status = nv.status.as_ref().expect("status");
    let id = status.common.id.clone().expect("status.id");
    let name = status.name.clone().expect("status.name");
    assert!(
        names_object(nv, &name),
        "{name}: not the deterministic name"
    );
    let remote = env.remote_volumes(&name).await;
    assert_eq!(
        remote.len(),
        1,
        "{}: want exactly one remote volume named {name}, got {remote:#?}",
        nv.name_any()
    );
    assert_eq!(remote[0].id, id);
    assert!(!nv.annotations().contains_key(EXTERNAL_ID));
    assert!(
        nv.annotations().contains_key(PENDING),
        "the create marker is gone"
    );
    id
}

pub async fn has_reason_event(env: &Env, name: &str, wanted: &str) -> bool {
    env.events_about("NetworkVolume", name)
        .await
        .iter()
        .any(|e| e.reason.as_deref() == Some(wanted))
}
