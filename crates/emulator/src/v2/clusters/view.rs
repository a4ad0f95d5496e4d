//! How a cluster reads in REST v2: the document's `Cluster`, with the member summary, the
//! primary (rank 0) and the overlay network worked out from the member pods as they are now.
//!
//! A cluster is read in two steps: [`ClusterSnapshot::take`] copies, under the world's lock,
//! pointers to the cluster and its members and the one fact of the world the answer needs
//! besides them (the primary's public SSH address); [`snapshot_view`] writes the answer after
//! the lock is released, borrowing from the snapshot. The members are looked up by id, so a
//! listing ([`snapshots`]) or a create costs no pass over all the pods.

use std::sync::Arc;

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::clock::{Millis, Rfc3339Secs};
use crate::pods::Pod;
use crate::state::{App, World};
use crate::v2::pods::{PodStatus, public_ssh, status_of};
use crate::world::clusters::{Cluster, ClusterKind, OVERLAY_CIDR, VXLAN_PORT};

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
        Self::of(world, Arc::new(cluster.clone()), members_of(world, cluster))
    }
}

/// The member pods of `cluster` by rank, looked up by id (the record lists them by rank)
/// rather than found by reading every pod: answering a create or a read then costs the
/// same among 100,000 pods as among ten, and a listing does no grouping of all pods.
fn members_of(world: &World, cluster: &Cluster) -> Vec<Arc<Pod>> {
    cluster
        .member_ids
        .iter()
        .filter_map(|id| world.cloud.shared_pod(id))
        .filter(|p| {
            p.cluster
                .as_ref()
                .is_some_and(|m| m.cluster_id == cluster.id)
        })
        .cloned()
        .collect()
}

/// Every cluster's snapshot, in id order.
pub fn snapshots(world: &World) -> Vec<ClusterSnapshot> {
    let clusters = world.clusters.shared();
    crate::v2::listing::map_in_halves(&clusters, |c| {
        ClusterSnapshot::of(world, c.clone(), members_of(world, c))
    })
}

/// The document's `Cluster` for the cluster `c` of `world`.
pub fn cluster_json(app: &App, world: &World, c: &Cluster, now: Millis) -> Value {
    let snapshot = ClusterSnapshot::take(world, c);
    serde_json::to_value(snapshot_view(app, &snapshot, now)).expect("a cluster view serialises")
}

/// The document's `Cluster`, from a snapshot: needs no lock. Its keys are in alphabetical
/// order, as every cluster answer has had them since they were built as `serde_json::Value`s
/// (whose maps sort their keys).
pub fn snapshot_view<'a>(app: &App, s: &'a ClusterSnapshot, now: Millis) -> ClusterView<'a> {
    let c = &s.cluster;
    let mut by_status = ByStatus::default();
    let mut primary = None;
    for (rank, p) in s.members.iter().enumerate() {
        let status = status_of(p, now, app.config.pod_boot_ms);
        by_status.count(status);
        if rank == 0 {
            primary = Some((p, status));
        }
    }
    ClusterView {
        compute: Compute {
            gpu_count_per_pod: c.gpu_count_per_pod,
            gpu_type_id: &c.gpu_type_id,
            pod_count: c.pod_count,
        },
        created_at: Rfc3339Secs(app.clock.wall_at(c.created_at)),
        data_center_id: &c.data_center_id,
        id: &c.id,
        name: &c.name,
        // The overlay comes up with the machines: once the members are past PROVISIONING.
        network: primary
            .filter(|(_, status)| *status != PodStatus::Provisioning)
            .map(|_| Network {
                cidr: OVERLAY_CIDR,
                vxlan_id: c.vxlan_id,
                vxlan_port: VXLAN_PORT,
            }),
        pods: Members {
            by_status,
            total: s.members.len(),
        },
        primary: primary.map(|(p, status)| Primary {
            pod_id: &p.id,
            ssh_endpoint: s
                .primary_ssh
                .as_ref()
                .filter(|_| status == PodStatus::Running)
                .map(|(host, port)| SshEndpoint(host, *port)),
            status: status.as_str(),
        }),
        kind: c.kind,
    }
}

/// The document's `Cluster`; fields in alphabetical order (see [`snapshot_view`]).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterView<'a> {
    compute: Compute<'a>,
    created_at: Rfc3339Secs,
    data_center_id: &'a str,
    id: &'a str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    network: Option<Network>,
    pods: Members,
    #[serde(skip_serializing_if = "Option::is_none")]
    primary: Option<Primary<'a>>,
    #[serde(rename = "type")]
    kind: ClusterKind,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Compute<'a> {
    gpu_count_per_pod: u32,
    gpu_type_id: &'a str,
    pod_count: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Network {
    cidr: &'static str,
    vxlan_id: u32,
    vxlan_port: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Members {
    by_status: ByStatus,
    total: usize,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Primary<'a> {
    pod_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    ssh_endpoint: Option<SshEndpoint<'a>>,
    status: &'static str,
}

/// `host:port`, written without being built.
struct SshEndpoint<'a>(&'a str, u32);

impl Serialize for SshEndpoint<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&format_args!("{}:{}", self.0, self.1))
    }
}

/// How many members are in each status: only the statuses some member is in, by name.
#[derive(Default)]
struct ByStatus {
    /// By status, in the alphabetical order of their names ([`ByStatus::NAMED`]).
    counts: [u32; 4],
}

impl ByStatus {
    const NAMED: [PodStatus; 4] = [
        PodStatus::Exited,
        PodStatus::Provisioning,
        PodStatus::Running,
        PodStatus::Starting,
    ];

    fn count(&mut self, status: PodStatus) {
        if let Some(i) = Self::NAMED.iter().position(|s| *s == status) {
            self.counts[i] += 1;
        }
    }
}

impl Serialize for ByStatus {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(
            Self::NAMED
                .iter()
                .zip(self.counts)
                .filter(|(_, n)| *n > 0)
                .map(|(s, n)| (s.as_str(), n)),
        )
    }
}
