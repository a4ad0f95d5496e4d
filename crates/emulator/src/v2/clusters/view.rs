//! How a cluster reads in REST v2: the document's `Cluster`, with the member summary, the
//! primary (rank 0) and the overlay network worked out from the member pods as they are now.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::clock::Millis;
use crate::state::{App, World};
use crate::v2::pods::{PodStatus, public_ssh, status_of};
use crate::v2::timestamp;
use crate::world::clusters::{Cluster, OVERLAY_CIDR, VXLAN_PORT};

/// The document's `Cluster`.
pub fn cluster_json(app: &App, world: &World, c: &Cluster, now: Millis) -> Value {
    let members = world.cloud.members(&c.id);
    let statuses: Vec<PodStatus> = members
        .iter()
        .map(|p| status_of(p, now, app.config.pod_boot_ms))
        .collect();
    let mut by_status: BTreeMap<&str, u32> = BTreeMap::new();
    for s in &statuses {
        *by_status.entry(s.as_str()).or_default() += 1;
    }
    let mut out = json!({
        "id": c.id,
        "name": c.name,
        "type": c.kind,
        "compute": {
            "gpuTypeId": c.gpu_type_id,
            "gpuCountPerPod": c.gpu_count_per_pod,
            "podCount": c.pod_count,
        },
        "dataCenterId": c.data_center_id,
        "pods": {"total": members.len(), "byStatus": by_status},
        "createdAt": timestamp(&app.clock, c.created_at),
    });
    if let (Some(primary), Some(&status)) = (members.first(), statuses.first()) {
        let mut p = json!({"podId": primary.id, "status": status.as_str()});
        if status == PodStatus::Running
            && let Some((host, port)) = public_ssh(&world.cloud, primary)
        {
            p["sshEndpoint"] = json!(format!("{host}:{port}"));
        }
        out["primary"] = p;
        // The overlay comes up with the machines: once the members are past PROVISIONING.
        if status != PodStatus::Provisioning {
            out["network"] = json!({
                "cidr": OVERLAY_CIDR,
                "vxlanId": c.vxlan_id,
                "vxlanPort": VXLAN_PORT,
            });
        }
    }
    out
}
