//! Instant Clusters, on the backend that has them: REST v2 only. On the seed API the
//! facade lists none and refuses to create (see [`Clusters::supported`]); callers say so
//! as a condition instead of calling.
//!
//! A cluster is read with its members: one `GET /v2/clusters` and one
//! `GET /v2/pods?includeClusterPods=true` for every cluster of the account, joined here by
//! cluster id, so that watching N clusters costs two calls per interval, not N + 1.

use std::collections::HashMap;

use super::super::config::PlatformApi;
use super::super::error::PlatformError;
use super::super::{PlatformClient, v2};

type Result<T> = std::result::Result<T, PlatformError>;

/// One node of a cluster: a member pod as the operator needs it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterNode {
    pub id: String,
    /// NODE_RANK; 0 is the primary. `None` until assigned.
    pub rank: Option<u32>,
    /// `SLURM_CONTROLLER`, `RAY_HEAD`...; `None` for training and application clusters.
    pub role: Option<String>,
    /// Address on the cluster's private network; `None` until assigned.
    pub address: Option<String>,
    /// `RUNNING`, `PROVISIONING`...
    pub status: String,
    /// USD per hour now (0 when not running).
    pub cost_per_hour: f64,
}

/// The container settings every member shares, as the platform reports them on the
/// members (the cluster object does not carry them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeContainer {
    pub image: String,
    pub args: Option<String>,
    pub disk_gb: Option<u32>,
    /// Sorted `port/type` entries.
    pub ports: Vec<String>,
    /// Sorted; values may be secret and are never logged by this type's users.
    pub env: Vec<(String, String)>,
    pub network_volume_id: Option<String>,
}

/// A cluster with its members.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cluster {
    pub id: String,
    pub name: String,
    /// `TRAINING`, `SLURM`, `RAY`, `APPLICATION`.
    pub cluster_type: String,
    pub gpu_type_id: String,
    pub gpu_count_per_pod: u32,
    pub pod_count: u32,
    pub data_center_id: Option<String>,
    pub cidr: Option<String>,
    pub primary_pod_id: Option<String>,
    pub ssh_endpoint: Option<String>,
    pub template_id: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    /// By rank (unranked last).
    pub members: Vec<ClusterNode>,
    /// The first member's container settings; `None` before any member is listed.
    pub container: Option<NodeContainer>,
}

impl Cluster {
    /// Members the platform reports running.
    pub fn running_nodes(&self) -> usize {
        self.members
            .iter()
            .filter(|m| m.status == super::RUNNING)
            .count()
    }

    /// What the whole cluster costs per hour: the sum of its members'.
    pub fn cost_per_hour(&self) -> f64 {
        self.members.iter().map(|m| m.cost_per_hour).sum()
    }

    /// The value of env variable `key` on the members, if they carry it.
    pub fn env_value(&self, key: &str) -> Option<&str> {
        self.container
            .as_ref()?
            .env
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// What a create asks for; the data center is the one placement chosen.
#[derive(Clone, PartialEq)]
pub struct ClusterRequest {
    pub name: String,
    pub cluster_type: String,
    pub gpu_type_id: String,
    pub gpu_count_per_pod: u32,
    pub pod_count: u32,
    pub data_center_id: Option<String>,
    pub container: NodeContainer,
    /// Where the network volume is mounted (with `container.network_volume_id`).
    pub volume_mount_path: String,
    pub start_ssh: bool,
}

impl std::fmt::Debug for ClusterRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env: Vec<&str> = self.container.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ClusterRequest")
            .field("name", &self.name)
            .field("type", &self.cluster_type)
            .field("gpu_type_id", &self.gpu_type_id)
            .field("gpu_count_per_pod", &self.gpu_count_per_pod)
            .field("pod_count", &self.pod_count)
            .field("data_center_id", &self.data_center_id)
            .field("image", &self.container.image)
            .field("env_keys", &env)
            .finish_non_exhaustive()
    }
}

/// Where a cluster of one shape may go: a GPU type in a data center with some stock for
/// one node, at the price of the whole cluster.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterOffer {
    pub gpu_type_id: String,
    pub data_center_id: String,
    /// The most GPUs one machine of this type has.
    pub max_gpus_per_machine: u32,
    /// USD per hour of the whole cluster; `None` when the type is not offered.
    pub price_per_hour: Option<f64>,
    pub in_stock: bool,
}

/// Instant Cluster calls; obtained from [`PlatformClient::clusters`].
#[derive(Clone, Debug)]
pub struct Clusters {
    client: PlatformClient,
}

impl PlatformClient {
    /// Instant Clusters (REST v2 only).
    pub fn clusters(&self) -> Clusters {
        Clusters {
            client: self.clone(),
        }
    }
}

impl Clusters {
    /// Whether the configured backend has clusters (REST v2 has; the seed API has not).
    pub fn supported(&self) -> bool {
        self.client.api() == PlatformApi::V2
    }

    fn unsupported() -> PlatformError {
        PlatformError::invalid_input(
            "backend",
            "the seed API has no Instant Clusters; use the REST v2 backend",
        )
    }

    /// Every cluster of the account with its members: two calls on REST v2, none on the
    /// seed API (which has no clusters).
    pub async fn list(&self) -> Result<Vec<Cluster>> {
        if !self.supported() {
            return Ok(Vec::new());
        }
        let v2 = self.client.v2();
        let clusters = v2.list_clusters().await?;
        if clusters.is_empty() {
            return Ok(Vec::new());
        }
        let members = v2.all_cluster_members().await?;
        Ok(join(clusters, members))
    }

    /// Creates a cluster. Never retried after an ambiguous failure: see
    /// [`PlatformError::may_have_been_applied`].
    pub async fn create(&self, request: &ClusterRequest) -> Result<Cluster> {
        if !self.supported() {
            return Err(Self::unsupported());
        }
        let created = self.client.v2().create_cluster(&to_v2(request)).await?;
        // The members of a fresh cluster are listed by the next pass.
        Ok(join(vec![created], Vec::new()).remove(0))
    }

    /// Renames the cluster: the only change the platform makes in place.
    pub async fn rename(&self, id: &str, name: &str) -> Result<()> {
        if !self.supported() {
            return Err(Self::unsupported());
        }
        self.client.v2().rename_cluster(id, name).await.map(drop)
    }

    /// Deletes the cluster and every member.
    pub async fn delete(&self, id: &str) -> Result<()> {
        if !self.supported() {
            return Err(Self::unsupported());
        }
        self.client.v2().delete_cluster(id).await
    }

    /// Where nodes of `gpus_per_node` GPUs can go, per GPU type and data center, at the
    /// price of `nodes` of them (secure cloud: clusters run there), with the catalog's
    /// availability for clusters. One call.
    pub async fn offers(&self, gpus_per_node: u32, nodes: u32) -> Result<Vec<ClusterOffer>> {
        if !self.supported() {
            return Err(Self::unsupported());
        }
        let query = v2::GpuQuery {
            availability: true,
            products: vec![v2::Product::Cluster],
            count: Some(gpus_per_node.max(1)),
            cloud: Some(v2::Cloud::Secure),
            ..Default::default()
        };
        let types = self.client.v2().list_gpu_types(&query).await?;
        Ok(cluster_offers(types, gpus_per_node, nodes))
    }
}

/// Pure: the offers of one catalog answer, one per GPU type and data center with any
/// availability, in the catalog's order of data centers (most available first); a type
/// in no data center gets one offer that is not in stock, so that it is known.
pub fn cluster_offers(
    types: Vec<v2::GpuType>,
    gpus_per_node: u32,
    nodes: u32,
) -> Vec<ClusterOffer> {
    let mut offers = Vec::new();
    for g in types {
        let per_gpu = g.price.secure;
        let price = (g.secure && per_gpu > 0.0)
            .then(|| per_gpu * f64::from(gpus_per_node) * f64::from(nodes));
        let max = g.max_count.secure;
        let data_centers = g.data_centers.clone().unwrap_or_default();
        if data_centers.is_empty() {
            offers.push(ClusterOffer {
                gpu_type_id: g.id.clone(),
                data_center_id: String::new(),
                max_gpus_per_machine: max,
                price_per_hour: price,
                in_stock: false,
            });
        }
        for dc in data_centers {
            offers.push(ClusterOffer {
                gpu_type_id: g.id.clone(),
                data_center_id: dc.id,
                max_gpus_per_machine: max,
                price_per_hour: price,
                in_stock: !matches!(
                    dc.availability,
                    v2::AvailabilityLevel::None | v2::AvailabilityLevel::Other(_)
                ),
            });
        }
    }
    offers
}

fn to_v2(r: &ClusterRequest) -> v2::CreateCluster {
    let c = &r.container;
    v2::CreateCluster {
        name: r.name.clone(),
        cluster_type: v2::ClusterType::from(r.cluster_type.clone()),
        compute: v2::ClusterCompute {
            gpu_type_id: r.gpu_type_id.clone(),
            gpu_count_per_pod: r.gpu_count_per_pod,
            pod_count: r.pod_count,
        },
        container: v2::ClusterContainerConfig {
            image: Some(c.image.clone()),
            args: c.args.clone(),
            disk: c.disk_gb,
            env: (!c.env.is_empty()).then(|| c.env.iter().cloned().collect()),
            ports: (!c.ports.is_empty()).then(|| c.ports.clone()),
            registry: v2::NoRegistry,
        },
        data_center_ids: r.data_center_id.clone().map(|dc| vec![dc]),
        mounts: c.network_volume_id.as_ref().map(|id| v2::Mounts {
            persistent: None,
            network: Some(vec![v2::NetworkMount {
                volume_id: id.clone(),
                path: r.volume_mount_path.clone(),
            }]),
        }),
        start_jupyter: None,
        start_ssh: r.start_ssh.then_some(true),
    }
}

/// Pure: the clusters with their members (from the pod list), members by rank.
pub fn join(clusters: Vec<v2::Cluster>, members: Vec<v2::Pod>) -> Vec<Cluster> {
    let mut by_cluster: HashMap<String, Vec<v2::Pod>> = HashMap::new();
    for pod in members {
        if let Some(m) = &pod.cluster {
            by_cluster.entry(m.id.clone()).or_default().push(pod);
        }
    }
    clusters
        .into_iter()
        .map(|c| {
            let mut pods = by_cluster.remove(&c.id).unwrap_or_default();
            pods.sort_by_key(|p| {
                (
                    p.cluster.as_ref().and_then(|m| m.rank).unwrap_or(u32::MAX),
                    p.id.clone(),
                )
            });
            let container = pods.first().map(node_container);
            let members = pods.iter().map(node_of).collect();
            Cluster {
                id: c.id,
                name: c.name,
                cluster_type: c.cluster_type.as_str().to_string(),
                gpu_type_id: c.compute.gpu_type_id,
                gpu_count_per_pod: c.compute.gpu_count_per_pod,
                pod_count: c.compute.pod_count,
                data_center_id: c.data_center_id,
                cidr: c.network.map(|n| n.cidr),
                primary_pod_id: c.primary.as_ref().map(|p| p.pod_id.clone()),
                ssh_endpoint: c.primary.and_then(|p| p.ssh_endpoint),
                template_id: c.template,
                created_at: c.created_at,
                members,
                container,
            }
        })
        .collect()
}

fn node_of(p: &v2::Pod) -> ClusterNode {
    let membership = p.cluster.clone().unwrap_or_default();
    ClusterNode {
        id: p.id.clone(),
        rank: membership.rank,
        role: membership.role,
        address: membership.ip,
        status: p.status.as_str().to_string(),
        cost_per_hour: p.cost,
    }
}

fn node_container(p: &v2::Pod) -> NodeContainer {
    let mut ports = p.container.ports.clone();
    ports.sort();
    NodeContainer {
        image: p.container.image.clone(),
        args: p.container.args.clone().filter(|a| !a.is_empty()),
        disk_gb: p.container.disk,
        ports,
        env: p.container.env.clone().into_iter().collect(),
        network_volume_id: p
            .mounts
            .network
            .as_ref()
            .and_then(|n| n.first())
            .map(|n| n.volume_id.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn member(id: &str, cluster: &str, rank: u32, status: &str, cost: f64) -> v2::Pod {
        serde_json::from_value(json!({
            "id": id, "name": id, "status": status, "image": "img", "cost": cost,
            "env": {"GPUCLOUD_OBJECT_UID": "uid-1"},
            "cluster": {"id": cluster, "rank": rank, "ip": format!("10.65.0.{}", rank + 2)},
        }))
        .unwrap()
    }

    fn cluster(id: &str) -> v2::Cluster {
        serde_json::from_value(json!({
            "id": id, "name": id, "type": "TRAINING",
            "compute": {"gpuTypeId": "H100", "gpuCountPerPod": 8, "podCount": 2},
            "pods": {"total": 2, "byStatus": {"RUNNING": 2}},
            "network": {"cidr": "10.65.0.0/16"},
            "createdAt": "2026-11-26T00:00:00Z",
        }))
        .unwrap()
    }

    #[test]
    fn members_join_their_cluster_by_rank_and_add_up_its_cost() {
        let joined = join(
            vec![cluster("c1"), cluster("c2")],
            vec![
                member("p1", "c1", 1, "RUNNING", 10.0),
                member("p0", "c1", 0, "RUNNING", 10.0),
                member("q0", "c9", 0, "RUNNING", 1.0),
            ],
        );
        let c1 = &joined[0];
        let ids: Vec<&str> = c1.members.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(ids, ["p0", "p1"]);
        assert_eq!(c1.members[0].address.as_deref(), Some("10.65.0.2"));
        assert_eq!(c1.cost_per_hour(), 20.0);
        assert_eq!(c1.running_nodes(), 2);
        assert_eq!(c1.env_value("GPUCLOUD_OBJECT_UID"), Some("uid-1"));
        assert_eq!(c1.cidr.as_deref(), Some("10.65.0.0/16"));
        assert!(joined[1].members.is_empty());
        assert_eq!(joined[1].env_value("GPUCLOUD_OBJECT_UID"), None);
    }

    #[test]
    fn a_create_body_sends_no_registry_and_one_data_center() {
        let request = ClusterRequest {
            name: "ns-train-1b4e28ba".into(),
            cluster_type: "RAY".into(),
            gpu_type_id: "H100".into(),
            gpu_count_per_pod: 8,
            pod_count: 4,
            data_center_id: Some("US-TX-3".into()),
            container: NodeContainer {
                image: "img".into(),
                env: vec![("A".into(), "secret".into())],
                network_volume_id: Some("vol-1".into()),
                ..NodeContainer::default()
            },
            volume_mount_path: "/ckpt".into(),
            start_ssh: false,
        };
        let body = serde_json::to_value(to_v2(&request)).unwrap();
        assert_eq!(
            body,
            json!({
                "name": "ns-train-1b4e28ba", "type": "RAY",
                "compute": {"gpuTypeId": "H100", "gpuCountPerPod": 8, "podCount": 4},
                "image": "img", "env": {"A": "secret"},
                "dataCenterIds": ["US-TX-3"],
                "mounts": {"network": [{"volumeId": "vol-1", "path": "/ckpt"}]},
            })
        );
        assert!(!format!("{request:?}").contains("secret"));
    }

    #[test]
    fn offers_price_the_whole_cluster_per_data_center() {
        let types: Vec<v2::GpuType> = serde_json::from_value(json!([
            {"id": "H100", "name": "H100", "secure": true, "price": {"secure": 2.5},
             "maxCount": {"secure": 8},
             "dataCenters": [{"id": "US-TX-3", "availability": "HIGH"},
                             {"id": "EU-RO-1", "availability": "NONE"}]},
            {"id": "A40", "name": "A40", "secure": false, "price": {"community": 0.4}},
        ]))
        .unwrap();
        let offers = cluster_offers(types, 8, 4);
        assert_eq!(offers.len(), 3);
        assert_eq!(offers[0].price_per_hour, Some(80.0));
        assert!(offers[0].in_stock);
        assert!(!offers[1].in_stock);
        assert_eq!(offers[0].max_gpus_per_machine, 8);
        assert_eq!(offers[2].price_per_hour, None, "not on the secure cloud");
    }
}
