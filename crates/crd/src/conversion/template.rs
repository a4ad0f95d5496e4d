//! Template: `args`, `ports` and `env` are the container settings; nothing is lost either
//! way.

use super::shared::carry;
use crate::container::ContainerSettings;
use crate::template as beta;
use crate::v1alpha1::template as alpha;

/// Moves a Template spec to the other version; the fields both spell the same move as they
/// are.
macro_rules! spec {
    ($($how:tt)*) => {
        carry!($($how)*;
            same: name, image, container_disk_gb, volume_gb, volume_mount_path, serverless,
            category, allowed_cuda_versions, start_ssh, start_jupyter, registry_credential_ref,
            deletion_policy, management_policy, credentials_secret_ref)
    };
}

/// A `v1alpha1` Template in `v1beta1`.
pub fn to_v1beta1(template: alpha::Template) -> beta::Template {
    let spec = spec!(template.spec => alpha::TemplateSpec, beta::TemplateSpec;
        bind: args, ports, env;
        set: container: ContainerSettings { args, ports, env });
    beta::Template {
        metadata: template.metadata,
        spec,
        status: template.status,
    }
}

/// A `v1beta1` Template in `v1alpha1`.
pub fn to_v1alpha1(template: beta::Template) -> alpha::Template {
    let spec = spec!(template.spec => beta::TemplateSpec, alpha::TemplateSpec;
        bind: container;
        set: args: container.args, ports: container.ports, env: container.env);
    alpha::Template {
        metadata: template.metadata,
        spec,
        status: template.status,
    }
}
