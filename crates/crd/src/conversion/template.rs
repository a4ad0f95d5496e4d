//! Template: `args`, `ports` and `env` are the container settings, and `startSsh` and
//! `startJupyter` are false when unset in `v1beta1` where `v1alpha1` leaves them to the
//! platform, whose default is true. An unset one is written out as true, so that the
//! converted object still asks for what the platform did, and the annotation says it was
//! unset, so that it comes back unset.

use super::shared::{Kept, carry};
use crate::template as alpha;
use crate::v1beta1::shared::ContainerSettings;
use crate::v1beta1::template as beta;

/// What the platform does with a `startSsh` or `startJupyter` that `v1alpha1` leaves unset.
const PLATFORM_DEFAULT: bool = true;
const START_SSH: &str = "startSsh";
const START_JUPYTER: &str = "startJupyter";

/// Moves a Template spec to the other version; the fields both spell the same move as they
/// are.
macro_rules! spec {
    ($($how:tt)*) => {
        carry!($($how)*;
            same: name, image, container_disk_gb, volume_gb, volume_mount_path, serverless,
            category, allowed_cuda_versions, registry_credential_ref, deletion_policy,
            management_policy, credentials_secret_ref)
    };
}

/// A `v1alpha1` Template in `v1beta1`.
pub fn to_v1beta1(template: alpha::Template) -> beta::Template {
    let mut metadata = template.metadata;
    Kept::take(&mut metadata);
    let mut kept = Kept::default();
    let mut written_out = |value: Option<bool>, field: &str| {
        value.unwrap_or_else(|| {
            kept.unset.push(field.to_string());
            PLATFORM_DEFAULT
        })
    };
    let spec = spec!(template.spec => alpha::TemplateSpec, beta::TemplateSpec;
        bind: args, ports, env, start_ssh, start_jupyter;
        set: container: ContainerSettings { args, ports, env },
            start_ssh: written_out(start_ssh, START_SSH),
            start_jupyter: written_out(start_jupyter, START_JUPYTER));
    kept.put(&mut metadata);
    beta::Template {
        metadata,
        spec,
        status: template.status,
    }
}

/// A `v1beta1` Template in `v1alpha1`.
pub fn to_v1alpha1(template: beta::Template) -> alpha::Template {
    let mut metadata = template.metadata;
    let kept = Kept::take(&mut metadata);
    // Unset again only while it still says what the platform does when unset: an edit
    // since is the user's word.
    let unset_again = |value: bool, field: &str| {
        let unset = value == PLATFORM_DEFAULT && kept.unset.iter().any(|f| f == field);
        (!unset).then_some(value)
    };
    let spec = spec!(template.spec => beta::TemplateSpec, alpha::TemplateSpec;
        bind: container, start_ssh, start_jupyter;
        set: args: container.args, ports: container.ports, env: container.env,
            start_ssh: unset_again(start_ssh, START_SSH),
            start_jupyter: unset_again(start_jupyter, START_JUPYTER));
    alpha::Template {
        metadata,
        spec,
        status: template.status,
    }
}
