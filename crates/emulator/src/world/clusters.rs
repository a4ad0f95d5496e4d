//! Instant Clusters: the record of each cluster (name, type, shape, data center, private
//! overlay network) over its member pods, which live in the cloud as ordinary pods. Creating
//! a cluster deploys every member at once or none; deleting it terminates every member.
//!
//! Every cluster gets its own overlay (VXLAN id) on the same private CIDR: overlays are
//! isolated from each other, so their address ranges may repeat, as on the platform.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::World;
use crate::clock::Millis;
use crate::ids;
use crate::pods::{DeployRequest, Membership, PodError};

/// The private CIDR of every cluster's overlay network.
pub const OVERLAY_CIDR: &str = "10.65.0.0/16";
/// The UDP port VXLAN traffic uses (the IANA-assigned one).
pub const VXLAN_PORT: u32 = 4789;
/// The first VXLAN id handed out.
const FIRST_VXLAN_ID: u32 = 100;
/// Host number of rank 0 on the overlay: .0 is the network, .1 its gateway.
const FIRST_HOST: u32 = 2;

/// What a cluster runs, as the document names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ClusterKind {
    Application,
    Training,
    Slurm,
    Ray,
}

impl ClusterKind {
    /// The member's role: SLURM and RAY assign one (rank 0 leads), the others none.
    pub fn role(self, rank: u32) -> Option<&'static str> {
        match (self, rank) {
            (Self::Slurm, 0) => Some("SLURM_CONTROLLER"),
            (Self::Slurm, _) => Some("SLURM_COMPUTE"),
            (Self::Ray, 0) => Some("RAY_HEAD"),
            (Self::Ray, _) => Some("RAY_WORKER"),
            (Self::Application | Self::Training, _) => None,
        }
    }
}

/// The address of the member of rank `rank` on the overlay: .2, .3, ... of `OVERLAY_CIDR`.
pub fn member_ip(rank: u32) -> String {
    let host = FIRST_HOST + rank;
    format!("10.65.{}.{}", host >> 8, host & 0xff)
}

/// An Instant Cluster. Its members are the cloud's pods whose membership names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cluster {
    pub id: String,
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ClusterKind,
    pub gpu_type_id: String,
    pub gpu_count_per_pod: u32,
    pub pod_count: u32,
    pub data_center_id: String,
    /// Member pod ids by rank.
    pub member_ids: Vec<String>,
    pub vxlan_id: u32,
    pub created_at: Millis,
}

/// What a cluster is created from: its identity and a deploy request every member shares.
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    pub name: String,
    pub kind: ClusterKind,
    pub pod_count: u32,
    /// One member's deploy (GPU type and count per pod, container, data centers, mounts).
    pub member: DeployRequest,
}

impl World {
    /// Deploys every member of a new cluster (or none: the placement error) and records it.
    pub fn create_cluster(&mut self, spec: ClusterSpec, now: Millis) -> Result<&Cluster, PodError> {
        let id = ids::short(10);
        let members = (0..spec.pod_count)
            .map(|rank| Membership {
                cluster_id: id.clone(),
                rank,
                ip: member_ip(rank),
            })
            .collect();
        let member_ids = self.cloud.deploy_cluster(&spec.member, members, now)?;
        for (rank, pod_id) in member_ids.iter().enumerate() {
            let pod = self.cloud.pod_mut(pod_id)?;
            pod.name = format!("{}-{rank}", spec.name);
        }
        let data_center_id = member_ids
            .first()
            .and_then(|p| self.cloud.pod(p))
            .and_then(|p| self.cloud.machine(&p.machine_id))
            .map(|m| m.data_center_id.clone())
            .unwrap_or_default();
        // One past the highest in use, found in the index rather than by reading every
        // cluster: with 100,000 clusters that read was most of what a create cost.
        let vxlan_id = self
            .cluster_vxlans
            .last()
            .map_or(FIRST_VXLAN_ID, |highest| highest + 1);
        let cluster = Cluster {
            id: id.clone(),
            name: spec.name,
            kind: spec.kind,
            gpu_type_id: spec.member.gpu_type_id.clone().unwrap_or_default(),
            gpu_count_per_pod: spec.member.gpu_count.unwrap_or(1).max(1) as u32,
            pod_count: spec.pod_count,
            data_center_id,
            member_ids,
            vxlan_id,
            created_at: now,
        };
        self.clusters.insert(id.clone(), cluster);
        self.cluster_vxlans.insert(vxlan_id);
        Ok(&self.clusters[&id])
    }

    /// Removes a cluster and terminates every member (their GPUs go back to stock).
    pub fn delete_cluster(&mut self, id: &str, now: Millis) -> Option<Cluster> {
        let cluster = Arc::unwrap_or_clone(self.clusters.remove(id)?);
        self.cluster_vxlans.remove(&cluster.vxlan_id);
        for pod_id in &cluster.member_ids {
            // A member is only ever terminated here, so it is still there.
            let _ = self.cloud.terminate(pod_id, now);
        }
        Some(cluster)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::Fixtures;

    #[test]
    fn members_get_consecutive_overlay_addresses_inside_the_cidr() {
        assert_eq!(member_ip(0), "10.65.0.2");
        assert_eq!(member_ip(1), "10.65.0.3");
        assert_eq!(member_ip(253), "10.65.0.255");
        assert_eq!(member_ip(254), "10.65.1.0");
        // The largest cluster (250 members) stays inside 10.65.0.0/16 and never repeats.
        let all: std::collections::HashSet<String> = (0..250).map(member_ip).collect();
        assert_eq!(all.len(), 250);
        assert!(all.iter().all(|ip| ip.starts_with("10.65.")));
    }

    #[test]
    fn roles_follow_the_cluster_type() {
        assert_eq!(ClusterKind::Slurm.role(0), Some("SLURM_CONTROLLER"));
        assert_eq!(ClusterKind::Slurm.role(3), Some("SLURM_COMPUTE"));
        assert_eq!(ClusterKind::Ray.role(0), Some("RAY_HEAD"));
        assert_eq!(ClusterKind::Ray.role(1), Some("RAY_WORKER"));
        assert_eq!(ClusterKind::Training.role(0), None);
        assert_eq!(ClusterKind::Application.role(2), None);
    }

    fn spec(pod_count: u32, gpu_count: i32) -> ClusterSpec {
        ClusterSpec {
            name: "c".into(),
            kind: ClusterKind::Ray,
            pod_count,
            member: DeployRequest {
                image_name: Some("img".into()),
                gpu_type_id: Some("NVIDIA GeForce RTX 4090".into()),
                gpu_count: Some(gpu_count),
                ..DeployRequest::default()
            },
        }
    }

    #[test]
    fn a_new_cluster_takes_the_vxlan_id_past_the_highest_in_use() {
        let mut w = World::from_fixtures(&Fixtures::built_in()).unwrap();
        // The rule as it was computed, from every cluster.
        let past_highest = |w: &World| {
            w.clusters
                .values()
                .map(|c| c.vxlan_id + 1)
                .max()
                .unwrap_or(FIRST_VXLAN_ID)
        };
        let (mut made, mut assigned) = (Vec::new(), Vec::new());
        // Creates and deletes of the newest, the oldest and one between.
        for step in [
            "c", "c", "c", "d-1", "c", "d0", "c", "d1", "c", "c", "d*", "c",
        ] {
            if step == "c" {
                let expected = past_highest(&w);
                let c = w.create_cluster(spec(1, 1), 0).unwrap();
                assert_eq!(c.vxlan_id, expected, "{step} after {made:?}");
                made.push((c.id.clone(), c.vxlan_id));
                assigned.push(c.vxlan_id);
            } else {
                let i = match step {
                    "d-1" => made.len() - 1,
                    "d0" => 0,
                    "d1" => 1,
                    _ => made.len() / 2,
                };
                let (id, _) = made.remove(i);
                w.delete_cluster(&id, 1).unwrap();
            }
        }
        let ids: Vec<u32> = made.iter().map(|(_, v)| *v).collect();
        assert_eq!(w.cluster_vxlans.iter().copied().collect::<Vec<_>>(), {
            let mut sorted = ids.clone();
            sorted.sort();
            sorted
        });
        // A deleted newest cluster's id is taken again, as it always was.
        let third = FIRST_VXLAN_ID + 2;
        assert_eq!(
            assigned.iter().filter(|v| **v == third).count(),
            2,
            "{assigned:?}"
        );
    }

    #[test]
    fn a_cluster_holds_its_gpus_until_deleted() {
        let mut w = World::from_fixtures(&Fixtures::built_in()).unwrap();
        let free = |w: &World| w.cloud.free_gpus("NVIDIA GeForce RTX 4090", None);
        let before = free(&w);
        let c = w.create_cluster(spec(3, 4), 0).unwrap().clone();
        assert_eq!(free(&w), before - 12);
        let members = w.cloud.members(&c.id);
        assert_eq!(members.len(), 3);
        let machines: std::collections::HashSet<&str> =
            members.iter().map(|p| p.machine_id.as_str()).collect();
        assert_eq!(machines.len(), 3, "one member per machine");
        assert!(members.iter().all(|p| {
            w.cloud.machine(&p.machine_id).unwrap().data_center_id == c.data_center_id
        }));
        assert_eq!(members[0].cluster.as_ref().unwrap().ip, "10.65.0.2");
        assert_eq!(w.cloud.standalone_pods().count(), 0);
        // Capacity for five nodes exists nowhere in one data center: nothing is deployed.
        assert_eq!(
            w.create_cluster(spec(5, 8), 0).unwrap_err(),
            PodError::NoCapacity
        );
        assert_eq!(w.cloud.pod_count(), 3);
        w.delete_cluster(&c.id, 1).unwrap();
        assert_eq!(free(&w), before);
        assert_eq!(w.cloud.pod_count(), 0);
    }
}
