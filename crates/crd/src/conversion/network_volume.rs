//! NetworkVolume: the same fields in both versions.

use super::shared::carry;
use crate::network_volume as alpha;
use crate::v1beta1::network_volume as beta;

/// Moves a NetworkVolume spec to the other version, field by field.
macro_rules! spec {
    ($value:expr => $from:path, $to:path) => {
        carry!($value => $from, $to; bind: ; set: ;
            same: name, size_gb, data_center_id, volume_type, deletion_policy,
            management_policy, credentials_secret_ref)
    };
}

/// A `v1alpha1` NetworkVolume in `v1beta1`.
pub fn to_v1beta1(volume: alpha::NetworkVolume) -> beta::NetworkVolume {
    beta::NetworkVolume {
        metadata: volume.metadata,
        spec: spec!(volume.spec => alpha::NetworkVolumeSpec, beta::NetworkVolumeSpec),
        status: volume.status,
    }
}

/// A `v1beta1` NetworkVolume in `v1alpha1`.
pub fn to_v1alpha1(volume: beta::NetworkVolume) -> alpha::NetworkVolume {
    alpha::NetworkVolume {
        metadata: volume.metadata,
        spec: spec!(volume.spec => beta::NetworkVolumeSpec, alpha::NetworkVolumeSpec),
        status: volume.status,
    }
}
