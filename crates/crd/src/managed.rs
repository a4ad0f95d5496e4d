//! What the engine needs to know of every custom resource it manages: its policies, its
//! credentials and the common part of its status. The trait lives beside the types so
//! that each kind implements it here, where the type is defined.

use std::fmt::Debug;

use kube::core::NamespaceResourceScope;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{CommonStatus, CredentialsSecretRef, DeletionPolicy, ManagementPolicy};

/// A namespaced custom resource, read from and written to JSON: all that a controller's
/// runtime (the watch, its cache, the loop of passes) needs of a kind. Every type that is
/// one is one.
pub trait NamespacedKind:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl<K> NamespacedKind for K where
    K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

/// A custom resource the engine manages.
pub trait ManagedKind: NamespacedKind {
    type Status: Clone + Debug + Default + PartialEq + Serialize + Send + Sync;

    fn deletion_policy(&self) -> DeletionPolicy;
    fn management_policy(&self) -> ManagementPolicy;
    fn credentials(&self) -> Option<&CredentialsSecretRef>;
    fn current_status(&self) -> Option<&Self::Status>;
    fn status_mut(&mut self) -> &mut Option<Self::Status>;
    fn common(status: &Self::Status) -> &CommonStatus;
    fn common_mut(status: &mut Self::Status) -> &mut CommonStatus;

    /// `namespace/name`, for logs, Events and backoff keys.
    fn key(&self) -> String {
        format!(
            "{}/{}",
            self.namespace().unwrap_or_default(),
            self.name_any()
        )
    }
}

/// Implements [`ManagedKind`] for a custom resource whose spec carries the common policy
/// fields and whose status embeds [`CommonStatus`] as `common`. Invoked where the kind is
/// defined.
macro_rules! managed_kind {
    ($kind:ty, $status:ty) => {
        impl $crate::ManagedKind for $kind {
            type Status = $status;

            fn deletion_policy(&self) -> $crate::DeletionPolicy {
                self.spec.deletion_policy
            }
            fn management_policy(&self) -> $crate::ManagementPolicy {
                self.spec.management_policy
            }
            fn credentials(&self) -> Option<&$crate::CredentialsSecretRef> {
                self.spec.credentials_secret_ref.as_ref()
            }
            fn current_status(&self) -> Option<&Self::Status> {
                self.status.as_ref()
            }
            fn status_mut(&mut self) -> &mut Option<Self::Status> {
                &mut self.status
            }
            fn common(status: &Self::Status) -> &$crate::CommonStatus {
                &status.common
            }
            fn common_mut(status: &mut Self::Status) -> &mut $crate::CommonStatus {
                &mut status.common
            }
        }
    };
}

pub(crate) use managed_kind;
