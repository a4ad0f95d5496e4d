//! The NetworkVolume kind: create, rename, grow (never shrink), delete by policy. The
//! decisions are in [`decide`]; this module lists, writes and wires them to the engine.

pub mod decide;
pub mod summary;

use gpucloud_crd::NetworkVolume;
use gpucloud_crd::network_volume::NetworkVolumeStatus;
use gpucloud_platform::PlatformClient;
use gpucloud_platform::domain::{NewVolume, Volume, VolumeUpdate};

use gpucloud_engine::adapter::{
    Actuator, Created, Decide, Inventory, Note, PassContext, Plan, Report, Seen,
};
use gpucloud_engine::failure::Failure;
pub use gpucloud_engine::marker::default_remote_name;
use gpucloud_engine::marker::is_named_for;
use crate::kinds::shared::sweep::OrphanSweep;
use crate::kinds::summary::rows_of;
use crate::kinds::shared::registration::{Census, Controllers, RegisteredKind};
use tokio::task::JoinHandle;

pub use decide::{DesiredVolume, VolumeChange, desired_of, plan_volume};

/// The NetworkVolume kind.
#[derive(Clone, Debug, Default)]
pub struct NetworkVolumeAdapter;

impl Inventory for NetworkVolumeAdapter {
    type Kind = NetworkVolume;
    type Remote = Volume;

    const KIND: &'static str = "NetworkVolume";
    const NOUN: &'static str = "network volume";

    fn orphan_candidate(remote: &Volume) -> Option<gpucloud_policy::orphans::Candidate> {
        Some(gpucloud_policy::orphans::volume_candidate(remote))
    }

    async fn list(&self, client: &PlatformClient) -> Result<Vec<Volume>, Failure> {
        client
            .volumes()
            .list()
            .await
            .map_err(|e| Failure::from_platform("list network volumes", &e))
    }

    fn claims(&self, obj: &NetworkVolume, remote: &Volume) -> bool {
        is_named_for(obj, obj.spec.name.as_deref(), &remote.name)
            && remote.data_center_id == obj.spec.data_center_id
    }
}

impl Actuator for NetworkVolumeAdapter {
    type Desired = DesiredVolume;
    type Change = VolumeChange;
    type State = ();

    async fn desired(
        &self,
        pass: &PassContext<'_>,
        obj: &NetworkVolume,
    ) -> Result<DesiredVolume, Failure> {
        Ok(desired_of(obj, pass.shared.install_tag.get()))
    }

    async fn create(
        &self,
        pass: &PassContext<'_>,
        _obj: &NetworkVolume,
        desired: &DesiredVolume,
    ) -> Result<Created<Volume>, Failure> {
        let new = NewVolume {
            name: desired.name.clone(),
            size_gb: desired.size_gb,
            data_center_id: desired.data_center_id.clone(),
            volume_type: desired.volume_type,
        };
        pass.client
            .volumes()
            .create(&new)
            .await
            .map(Created::quietly)
            .map_err(|e| Failure::from_platform("create the network volume", &e))
    }

    async fn update(
        &self,
        pass: &PassContext<'_>,
        remote: &mut Volume,
        change: &VolumeChange,
    ) -> Result<Note, Failure> {
        let update = VolumeUpdate {
            name: change.name.clone(),
            size_gb: change.size_gb,
        };
        pass.client
            .volumes()
            .update(&remote.id, &update)
            .await
            .map_err(|e| Failure::from_platform("update the network volume", &e))?;
        Ok(Note::updated(decide::describe(change)))
    }

    async fn delete(
        &self,
        client: &PlatformClient,
        id: &str,
        _holder: Option<&NetworkVolume>,
    ) -> Result<(), Failure> {
        // The platform refuses to delete a volume a pod or an endpoint attaches (a 400 on
        // the id): a wait for them to go, as when one `kubectl delete` takes the volume
        // and its pods together, not a spec to fix.
        client.volumes().delete(id).await.map_err(|e| {
            Failure::from_platform("delete the network volume", &e).in_use_on_delete("VolumeInUse")
        })
    }
}

impl Decide for NetworkVolumeAdapter {
    fn plan(
        &self,
        obj: &NetworkVolume,
        desired: &DesiredVolume,
        remote: &Volume,
        _state: &(),
    ) -> Plan<VolumeChange> {
        decide::plan(obj, desired, remote)
    }

    fn report(
        &self,
        obj: &NetworkVolume,
        remote: Option<&Volume>,
        _seen: Seen,
        _state: &(),
    ) -> Report<NetworkVolumeStatus> {
        decide::report(obj, remote)
    }
}

impl crate::kinds::shared::sweep::Swept for NetworkVolumeAdapter {
    const DELETE_ORDER: u8 = 4;

    fn for_sweep(_: &kube::Client) -> Self {
        NetworkVolumeAdapter
    }
}

/// The NetworkVolume kind's registration (see `crate::kinds`).
pub const REGISTERED: RegisteredKind = RegisteredKind {
    crd: gpucloud_crd::managed_crd::<NetworkVolume>,
    controller: Some(start),
    rows: rows_of::<NetworkVolume>,
    sweep: Some(OrphanSweep::of::<NetworkVolumeAdapter>()),
};

fn start(controllers: &Controllers, census: Census) -> JoinHandle<()> {
    controllers.spawn(NetworkVolumeAdapter, census)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_platform::domain::VolumeType;

    fn listed(name: &str, dc: &str) -> Volume {
        Volume {
            id: "vol-1".into(),
            name: name.into(),
            size_gb: 10,
            data_center_id: dc.into(),
            volume_type: VolumeType::Standard,
        }
    }

    #[test]
    fn default_name_is_deterministic_and_unique_per_object() {
        let mut obj = NetworkVolume::new("data", decide::tests::spec());
        obj.metadata = crate::kinds::shared::fixtures::applied("data");
        assert_eq!(default_remote_name(&obj), "team-a-data-1b4e28ba");
        let adapter = NetworkVolumeAdapter;
        assert!(adapter.claims(&obj, &listed("team-a-data-1b4e28ba", "EU-RO-1")));
        assert!(!adapter.claims(&obj, &listed("team-a-data", "EU-RO-1")));
        assert!(!adapter.claims(&obj, &listed("team-a-data-1b4e28ba", "US-TX-3")));
    }
}
