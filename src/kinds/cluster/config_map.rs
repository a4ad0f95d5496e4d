//! The ConfigMap `<name>-cluster` beside a Cluster: what distributed programs need to find
//! each other, in keys a Job can take whole with `envFrom` (torchrun's `MASTER_ADDR`,
//! `NNODES`, `NPROC_PER_NODE`, `WORLD_SIZE`) and an MPI hostfile. Rewritten when the
//! cluster is replaced, so it always describes the cluster that runs.

use std::collections::BTreeMap;

use kube::ResourceExt;

use gpucloud_crd::Cluster;
use gpucloud_platform::domain::Cluster as RemoteCluster;

/// Label on the ConfigMap, naming the Cluster that owns it.
pub const LABEL: &str = "gpucloud.io/cluster";

/// `<name>-cluster`.
pub fn name_of(obj: &Cluster) -> String {
    format!("{}-cluster", obj.name_any())
}

/// Pure: the ConfigMap's data for `remote`; `None` until every node has an address.
pub fn data_of(remote: &RemoteCluster) -> Option<BTreeMap<String, String>> {
    let addresses: Vec<&str> = remote
        .members
        .iter()
        .map(|m| m.address.as_deref())
        .collect::<Option<_>>()?;
    let primary = remote
        .members
        .iter()
        .find(|m| m.rank == Some(0))
        .or(remote.members.first())?
        .address
        .clone()?;
    let per_node = remote.gpu_count_per_pod;
    let hostfile: String = addresses
        .iter()
        .map(|a| format!("{a} slots={per_node}\n"))
        .collect();
    Some(BTreeMap::from([
        ("CLUSTER_ID".to_string(), remote.id.clone()),
        ("MASTER_ADDR".to_string(), primary),
        ("NNODES".to_string(), remote.pod_count.to_string()),
        ("NPROC_PER_NODE".to_string(), per_node.to_string()),
        (
            "WORLD_SIZE".to_string(),
            (u64::from(remote.pod_count) * u64::from(per_node)).to_string(),
        ),
        ("NODE_ADDRS".to_string(), addresses.join(" ")),
        ("hostfile".to_string(), hostfile),
    ]))
}
