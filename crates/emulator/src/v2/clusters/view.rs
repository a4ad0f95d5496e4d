//! How a cluster reads in REST v2: the document's `Cluster`, with the member summary, the
//! primary (rank 0) and the overlay network worked out from the member pods as they are now.
//!
//! A cluster is read in two steps: [`ClusterSnapshot::take`] copies, under the world's lock,
//! pointers to the cluster and its members and the one fact of the world the answer needs
//! besides them (the primary's public SSH address); [`snapshot_json`] builds the answer after
//! the lock is released. A listing takes every snapshot with one pass over the pods
//! ([`snapshots`]), not one pass per cluster.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::clock::Millis;
use crate::pods::Pod;
use crate::state::{App, World};
use crate::v2::pods::{PodStatus, public_ssh, status_of};
use crate::v2::timestamp;
use crate::world::clusters::{Cluster, OVERLAY_CIDR, VXLAN_PORT};

/// A cluster and what its answer is built from, taken under the world's lock.
#[derive(Debug, Clone)]
pub struct ClusterSnapshot {
    pub cluster: Arc<Cluster>,
    /// The member pods by rank.
    pub members: Vec<Arc<Pod>>,
    /// The primary's public `host:port` for SSH, when it has one.
    pub primary_ssh: Option<(String, u32)>,
}

impl ClusterSnapshot {
    /// The snapshot of `cluster` whose members (by rank) are `members`.
    fn of(world: &World, cluster: Arc<Cluster>, members: Vec<Arc<Pod>>) -> Self {
        let primary_ssh = members.first().and_then(|p| public_ssh(&world.cloud, p));
        Self {
            cluster,
            members,
            primary_ssh,
        }
    }

    /// The snapshot of `cluster`, a cluster of `world`.
    pub fn take(world: &World, cluster: &Cluster) -> Self {
        let mut members: Vec<Arc<Pod>> = world
            .cloud
            .shared_pods()
            .filter(|p| {
                p.cluster
                    .as_ref()
                    .is_some_and(|m| m.cluster_id == cluster.id)
            })
            .cloned()
            .collect();
        members.sort_by_key(|p| p.cluster.as_ref().map(|m| m.rank));
        Self::of(world, Arc::new(cluster.clone()), members)
    }
}

/// Every cluster's snapshot, in id order: the members of all of them gathered in one pass
/// over the pods (in creation order, then sorted by rank, as `Cloud::members` orders them).
pub fn snapshots(world: &World) -> Vec<ClusterSnapshot> {
    let mut members: HashMap<&str, Vec<Arc<Pod>>> = HashMap::new();
    for p in world.cloud.shared_pods() {
        if let Some(m) = &p.cluster {
            members.entry(&m.cluster_id).or_default().push(p.clone());
        }
    }
    world
        .clusters
        .shared()
        .into_iter()
        .map(|c| {
            let mut of_c = members.remove(c.id.as_str()).unwrap_or_default();
            of_c.sort_by_key(|p| p.cluster.as_ref().map(|m| m.rank));
            ClusterSnapshot::of(world, c, of_c)
        })
        .collect()
}

/// The document's `Cluster` for the cluster `c` of `world`.
pub fn cluster_json(app: &App, world: &World, c: &Cluster, now: Millis) -> Value {
    snapshot_json(app, &ClusterSnapshot::take(world, c), now)
}

/// The document's `Cluster`, from a snapshot: needs no lock.
pub fn snapshot_json(app: &App, s: &ClusterSnapshot, now: Millis) -> Value {
    let c = &s.cluster;
    let members = &s.members;
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
            && let Some((host, port)) = &s.primary_ssh
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
