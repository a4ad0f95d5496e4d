//! RegistryCredential: the same fields in both versions.

use super::shared::carry;
use crate::registry_credential as alpha;
use crate::v1beta1::registry_credential as beta;

/// Moves a RegistryCredential spec to the other version, field by field.
macro_rules! spec {
    ($value:expr => $from:path, $to:path) => {
        carry!($value => $from, $to; bind: ; set: ;
            same: name, secret_ref, registry, deletion_policy, management_policy,
            credentials_secret_ref)
    };
}

/// A `v1alpha1` RegistryCredential in `v1beta1`.
pub fn to_v1beta1(credential: alpha::RegistryCredential) -> beta::RegistryCredential {
    beta::RegistryCredential {
        metadata: credential.metadata,
        spec: spec!(credential.spec => alpha::RegistryCredentialSpec, beta::RegistryCredentialSpec),
        status: credential.status,
    }
}

/// A `v1beta1` RegistryCredential in `v1alpha1`.
pub fn to_v1alpha1(credential: beta::RegistryCredential) -> alpha::RegistryCredential {
    alpha::RegistryCredential {
        metadata: credential.metadata,
        spec: spec!(credential.spec => beta::RegistryCredentialSpec, alpha::RegistryCredentialSpec),
        status: credential.status,
    }
}
