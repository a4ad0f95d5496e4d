//! Pod: `dockerArgs` is `args`, `gpu.types` is `gpu.typeIds`; nothing is lost either way.

use super::shared::carry;
use crate::container::ContainerSettings;
use crate::gpu::Gpu;
use crate::pod::{self as beta, PodGpu};
use crate::v1alpha1::pod::{self as alpha, GpuRequirements};

/// Moves a Pod spec to the other version; the fields both spell the same move as they are.
macro_rules! spec {
    ($($how:tt)*) => {
        carry!($($how)*;
            same: desired_state, image, container_disk_gb, volume_gb, volume_mount_path,
            min_vcpu_count, min_memory_gb, cloud_type, allowed_cuda_versions, data_center_id,
            cpu, global_networking, network_volume_ref, network_volume_id, template_ref,
            registry_credential_ref, update_strategy, deletion_policy, management_policy,
            credentials_secret_ref, schedule, max_runtime, idle_stop, resume_policy,
            resume_timeout, startup_timeout, on_startup_failure)
    };
}

/// A `v1alpha1` Pod in `v1beta1`.
pub fn to_v1beta1(pod: alpha::Pod) -> beta::Pod {
    let spec = spec!(pod.spec => alpha::PodSpec, beta::PodSpec;
    bind: docker_args, ports, env, gpu;
    set: container: ContainerSettings { args: docker_args, ports, env },
        gpu: gpu.map(|g| PodGpu {
            gpu: Gpu { type_ids: g.types, count: g.count },
            max_price_per_hour: g.max_price_per_hour,
        }));
    beta::Pod {
        metadata: pod.metadata,
        spec,
        status: pod.status,
    }
}

/// A `v1beta1` Pod in `v1alpha1`.
pub fn to_v1alpha1(pod: beta::Pod) -> alpha::Pod {
    let spec = spec!(pod.spec => beta::PodSpec, alpha::PodSpec;
    bind: container, gpu;
    set: docker_args: container.args, ports: container.ports, env: container.env,
        gpu: gpu.map(|g| GpuRequirements {
            types: g.gpu.type_ids,
            count: g.gpu.count,
            max_price_per_hour: g.max_price_per_hour,
        }));
    alpha::Pod {
        metadata: pod.metadata,
        spec,
        status: pod.status,
    }
}
