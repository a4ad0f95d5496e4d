//! NetworkVolume, RegistryCredential and Budget: the same spec in both versions, so
//! converting one moves its parts as they are.

/// The conversions of kind `$kind`, in module `$module`.
macro_rules! same_spec {
    ($module:ident, $kind:ident) => {
        #[doc = concat!("`", stringify!($kind), "`: the same spec in both versions.")]
        pub mod $module {
            use crate::v1alpha1;

            #[doc = concat!("A `v1alpha1` ", stringify!($kind), " in `v1beta1`.")]
            pub fn to_v1beta1(object: v1alpha1::$kind) -> crate::$kind {
                crate::$kind {
                    metadata: object.metadata,
                    spec: object.spec,
                    status: object.status,
                }
            }

            #[doc = concat!("A `v1beta1` ", stringify!($kind), " in `v1alpha1`.")]
            pub fn to_v1alpha1(object: crate::$kind) -> v1alpha1::$kind {
                v1alpha1::Object {
                    metadata: object.metadata,
                    spec: object.spec,
                    status: object.status,
                }
            }
        }
    };
}

same_spec!(network_volume, NetworkVolume);
same_spec!(registry_credential, RegistryCredential);
same_spec!(budget, Budget);
