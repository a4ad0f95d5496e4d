//! Cluster: `compute.gpuTypes` and `compute.gpuCountPerPod` are the GPU block's `typeIds`
//! and `count`, `compute.podCount` is `nodeCount`, and `args`, `ports` and `env` are the
//! container settings; nothing is lost either way.

use super::shared::carry;
use crate::cluster as beta;
use crate::container::ContainerSettings;
use crate::gpu::Gpu;
use crate::v1alpha1::cluster::{self as alpha, ClusterCompute};

/// Moves a Cluster spec to the other version; the fields both spell the same move as they
/// are.
macro_rules! spec {
    ($($how:tt)*) => {
        carry!($($how)*;
            same: cluster_type, data_center_ids, name, image, template_ref,
            registry_credential_ref, container_disk_gb, network_volume_ref, volume_mount_path,
            start_ssh, max_price_per_hour, max_runtime, update_strategy, budget_stop_policy,
            deletion_policy, management_policy, credentials_secret_ref)
    };
}

/// A `v1alpha1` Cluster in `v1beta1`.
pub fn to_v1beta1(cluster: alpha::Cluster) -> beta::Cluster {
    let spec = spec!(cluster.spec => alpha::ClusterSpec, beta::ClusterSpec;
        bind: compute, args, env, ports;
        set: gpu: Gpu { type_ids: compute.gpu_types, count: compute.gpu_count_per_pod },
            node_count: compute.pod_count,
            container: ContainerSettings { args, ports, env });
    beta::Cluster {
        metadata: cluster.metadata,
        spec,
        status: cluster.status,
    }
}

/// A `v1beta1` Cluster in `v1alpha1`.
pub fn to_v1alpha1(cluster: beta::Cluster) -> alpha::Cluster {
    let spec = spec!(cluster.spec => beta::ClusterSpec, alpha::ClusterSpec;
        bind: gpu, node_count, container;
        set: compute: ClusterCompute {
                gpu_types: gpu.type_ids,
                gpu_count_per_pod: gpu.count,
                pod_count: node_count,
            },
            args: container.args, env: container.env, ports: container.ports);
    alpha::Cluster {
        metadata: cluster.metadata,
        spec,
        status: cluster.status,
    }
}
