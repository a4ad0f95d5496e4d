//! The kind's CustomResourceDefinition, read by name just before a remote object is
//! deleted, for [`crate::decide::guard_delete`]: a fresh GET, never a cache, because an
//! uninstall that takes the CRDs along can begin between a pass's start and its delete.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::PartialObjectMeta;
use kube::{Api, Resource};

use super::Engine;
use crate::adapter::Adapter;
use crate::decide::CrdState;

/// The name of the CRD that serves `K`: `<plural>.<group>`.
pub(super) fn crd_name<K: Resource<DynamicType = ()>>() -> String {
    format!("{}.{}", K::plural(&()), K::group(&()))
}

/// Pure: what a read of the CRD's metadata says of it (a 404 reads as `None`).
fn state_of(
    read: Result<Option<PartialObjectMeta<CustomResourceDefinition>>, kube::Error>,
) -> CrdState {
    match read {
        Ok(Some(crd)) if crd.metadata.deletion_timestamp.is_some() => CrdState::Deleting,
        Ok(Some(_)) => CrdState::Installed,
        Ok(None) => CrdState::Gone,
        Err(err) => CrdState::Unreadable(err.to_string()),
    }
}

impl<A: Adapter> Engine<A> {
    /// The kind's CRD as the apiserver has it now (metadata only: `get` by name is all the
    /// operator's RBAC grants on CRDs).
    pub(super) async fn crd_state(&self) -> CrdState {
        let crds: Api<CustomResourceDefinition> = Api::all(self.shared.kube.clone());
        state_of(crds.get_metadata_opt(&crd_name::<A::Kind>()).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::api::ObjectMeta;

    fn crd(deleting: bool) -> PartialObjectMeta<CustomResourceDefinition> {
        PartialObjectMeta {
            metadata: ObjectMeta {
                name: Some("networkvolumes.gpucloud.io".into()),
                deletion_timestamp: deleting
                    .then_some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn the_crd_name_is_the_plural_and_the_group() {
        assert_eq!(
            crd_name::<gpucloud_crd::NetworkVolume>(),
            "networkvolumes.gpucloud.io"
        );
    }

    #[test]
    fn a_crd_with_a_deletion_timestamp_is_being_deleted() {
        assert_eq!(state_of(Ok(Some(crd(true)))), CrdState::Deleting);
        assert_eq!(state_of(Ok(Some(crd(false)))), CrdState::Installed);
        assert_eq!(state_of(Ok(None)), CrdState::Gone);
    }

    #[test]
    fn a_failed_read_is_unreadable_not_gone() {
        let forbidden = kube::Error::Api(
            kube::core::Status::failure("forbidden", "Forbidden")
                .with_code(403)
                .boxed(),
        );
        let CrdState::Unreadable(err) = state_of(Err(forbidden)) else {
            panic!("a 403 says nothing of the CRD");
        };
        assert!(err.contains("forbidden"), "{err}");
    }
}
