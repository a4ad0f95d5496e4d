//! The NetworkVolume adapter: create, rename, grow (never shrink), delete by policy.

pub mod summary;

use gpucloud_crd::NetworkVolume;
use gpucloud_crd::network_volume::{NetworkVolumeStatus, VolumeClass};
use gpucloud_platform::PlatformClient;
use gpucloud_platform::domain::{NewVolume, Volume, VolumeType, VolumeUpdate};

use gpucloud_engine::adapter::{Adapter, Created, PassContext, Plan, Readiness, Seen};
use gpucloud_engine::failure::Failure;
pub use gpucloud_engine::marker::default_remote_name;
use gpucloud_engine::marker::{InstallTag, is_named_for, kept_name, remote_name_of};

/// The volume as the spec wants it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesiredVolume {
    pub name: String,
    pub size_gb: i64,
    pub data_center_id: String,
    pub volume_type: VolumeType,
}

/// One in-place change: a rename, a growth, or both in one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeChange {
    pub name: Option<String>,
    pub size_gb: Option<i64>,
}

/// The desired volume; `tag` is this install's (see [`InstallTag`]), for the name of an
/// object the spec does not name.
pub fn desired_of(obj: &NetworkVolume, tag: Option<&InstallTag>) -> DesiredVolume {
    let status_name = obj.status.as_ref().and_then(|s| s.name.as_deref());
    DesiredVolume {
        name: obj
            .spec
            .name
            .clone()
            .unwrap_or_else(|| remote_name_of(obj, status_name, tag)),
        size_gb: i64::from(obj.spec.size_gb),
        data_center_id: obj.spec.data_center_id.clone(),
        volume_type: match obj.spec.volume_type {
            VolumeClass::Standard => VolumeType::Standard,
            VolumeClass::HighPerformance => VolumeType::HighPerformance,
        },
    }
}

/// Pure: what to do to `remote` to match `desired`.
pub fn plan_volume(desired: &DesiredVolume, remote: &Volume) -> Plan<VolumeChange> {
    if remote.data_center_id != desired.data_center_id {
        return Plan::Blocked(Failure::permanent(
            "DataCenterMismatch",
            format!(
                "volume {} is in data center {} but spec.dataCenterId is {}; a volume cannot move",
                remote.id, remote.data_center_id, desired.data_center_id
            ),
        ));
    }
    if remote.volume_type != desired.volume_type {
        return Plan::Blocked(Failure::permanent(
            "TypeMismatch",
            format!(
                "volume {} is {} on the platform but spec.type is {}; a volume cannot change its storage class",
                remote.id,
                remote.volume_type.as_str(),
                desired.volume_type.as_str()
            ),
        ));
    }
    if desired.size_gb < remote.size_gb {
        return Plan::Blocked(Failure::permanent(
            "ShrinkRefused",
            format!(
                "volume {} has {} GB on the platform and spec.sizeGb asks for {}; volumes cannot shrink, set sizeGb to at least {}",
                remote.id, remote.size_gb, desired.size_gb, remote.size_gb
            ),
        ));
    }
    let change = VolumeChange {
        name: (remote.name != desired.name).then(|| desired.name.clone()),
        size_gb: (desired.size_gb > remote.size_gb).then_some(desired.size_gb),
    };
    if change.name.is_none() && change.size_gb.is_none() {
        Plan::UpToDate
    } else {
        Plan::Update(vec![change])
    }
}

/// The NetworkVolume kind.
#[derive(Clone, Debug, Default)]
pub struct NetworkVolumeAdapter;

impl Adapter for NetworkVolumeAdapter {
    type Kind = NetworkVolume;
    type Remote = Volume;
    type Desired = DesiredVolume;
    type Change = VolumeChange;

    const KIND: &'static str = "NetworkVolume";
    const NOUN: &'static str = "network volume";

    const ORPHAN_SWEEP: bool = true;

    fn orphan_candidate(remote: &Self::Remote) -> Option<gpucloud_policy::orphans::Candidate> {
        Some(gpucloud_policy::orphans::volume_candidate(remote))
    }

    fn id(remote: &Self::Remote) -> &str {
        &remote.id
    }

    async fn list(&self, client: &PlatformClient) -> Result<Vec<Self::Remote>, Failure> {
        client
            .volumes()
            .list()
            .await
            .map_err(|e| Failure::from_platform("list network volumes", &e))
    }

    fn claims(&self, obj: &NetworkVolume, remote: &Self::Remote) -> bool {
        is_named_for(obj, obj.spec.name.as_deref(), &remote.name)
            && remote.data_center_id == obj.spec.data_center_id
    }

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
    ) -> Result<Created<Self::Remote>, Failure> {
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

    fn plan(
        &self,
        obj: &NetworkVolume,
        desired: &DesiredVolume,
        remote: &Self::Remote,
    ) -> Plan<VolumeChange> {
        match kept_name(obj, obj.spec.name.as_deref(), &remote.name) {
            Some(name) if name != desired.name => {
                let kept = DesiredVolume {
                    name: name.to_string(),
                    ..desired.clone()
                };
                plan_volume(&kept, remote)
            }
            _ => plan_volume(desired, remote),
        }
    }

    async fn apply(
        &self,
        client: &PlatformClient,
        remote: &mut Self::Remote,
        change: &VolumeChange,
    ) -> Result<(), Failure> {
        let update = VolumeUpdate {
            name: change.name.clone(),
            size_gb: change.size_gb,
        };
        client
            .volumes()
            .update(&remote.id, &update)
            .await
            .map_err(|e| Failure::from_platform("update the network volume", &e))
    }

    async fn delete(&self, client: &PlatformClient, id: &str) -> Result<(), Failure> {
        client
            .volumes()
            .delete(id)
            .await
            .map_err(|e| Failure::from_platform("delete the network volume", &e))
    }

    fn readiness(&self, _obj: &NetworkVolume, remote: &Self::Remote) -> Readiness {
        Readiness::Ready {
            message: format!(
                "volume {} has {} GB in {}",
                remote.id, remote.size_gb, remote.data_center_id
            ),
        }
    }

    fn status(
        &self,
        obj: &NetworkVolume,
        remote: Option<&Self::Remote>,
        _seen: Seen,
    ) -> NetworkVolumeStatus {
        let mut status = obj.status.clone().unwrap_or_default();
        if let Some(r) = remote {
            status.name = Some(r.name.clone());
            status.size_gb = i32::try_from(r.size_gb).ok();
            status.data_center_id = Some(r.data_center_id.clone());
            status.volume_type = Some(r.volume_type.as_str().to_string());
        }
        status
    }

    fn describe(&self, change: &VolumeChange) -> String {
        match (&change.name, change.size_gb) {
            (Some(n), Some(s)) => {
                format!("renamed the network volume to {n:?} and grew it to {s} GB")
            }
            (Some(n), None) => format!("renamed the network volume to {n:?}"),
            (None, Some(s)) => format!("grew the network volume to {s} GB"),
            (None, None) => "no change".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_crd::NetworkVolumeSpec;

    fn remote(name: &str, size: i64, dc: &str) -> Volume {
        Volume {
            id: "vol-1".into(),
            name: name.into(),
            size_gb: size,
            data_center_id: dc.into(),
            volume_type: VolumeType::Standard,
        }
    }

    fn desired(name: &str, size: i64, dc: &str) -> DesiredVolume {
        DesiredVolume {
            name: name.into(),
            size_gb: size,
            data_center_id: dc.into(),
            volume_type: VolumeType::Standard,
        }
    }

    #[test]
    fn up_to_date_when_equal() {
        assert_eq!(
            plan_volume(&desired("a", 10, "EU-RO-1"), &remote("a", 10, "EU-RO-1")),
            Plan::UpToDate
        );
    }

    #[test]
    fn grows_and_renames_in_one_change() {
        let plan = plan_volume(&desired("b", 20, "EU-RO-1"), &remote("a", 10, "EU-RO-1"));
        assert_eq!(
            plan,
            Plan::Update(vec![VolumeChange {
                name: Some("b".into()),
                size_gb: Some(20)
            }])
        );
    }

    #[test]
    fn never_shrinks() {
        match plan_volume(&desired("a", 5, "EU-RO-1"), &remote("a", 10, "EU-RO-1")) {
            Plan::Blocked(f) => {
                assert_eq!(f.reason, "ShrinkRefused");
                assert!(f.message.contains("at least 10"), "{}", f.message);
                assert!(f.is_permanent());
            }
            other => panic!("want Blocked, got {other:?}"),
        }
    }

    #[test]
    fn never_changes_storage_class() {
        let mut want = desired("a", 10, "EU-RO-1");
        want.volume_type = VolumeType::HighPerformance;
        assert!(matches!(
            plan_volume(&want, &remote("a", 10, "EU-RO-1")),
            Plan::Blocked(f) if f.reason == "TypeMismatch" && f.message.contains("spec.type is HIGH_PERFORMANCE")
        ));
    }

    #[test]
    fn never_moves_data_centers() {
        assert!(matches!(
            plan_volume(&desired("a", 10, "US-TX-3"), &remote("a", 10, "EU-RO-1")),
            Plan::Blocked(f) if f.reason == "DataCenterMismatch"
        ));
    }

    #[test]
    fn default_name_is_deterministic_and_unique_per_object() {
        let mut obj = NetworkVolume::new(
            "data",
            NetworkVolumeSpec {
                name: None,
                size_gb: 10,
                data_center_id: "EU-RO-1".into(),
                volume_type: VolumeClass::Standard,
                deletion_policy: Default::default(),
                management_policy: Default::default(),
                credentials_secret_ref: None,
            },
        );
        obj.metadata = crate::kinds::shared::fixtures::applied("data");
        assert_eq!(default_remote_name(&obj), "team-a-data-1b4e28ba");
        assert!(NetworkVolumeAdapter.claims(&obj, &remote("team-a-data-1b4e28ba", 10, "EU-RO-1")));
        assert!(!NetworkVolumeAdapter.claims(&obj, &remote("team-a-data", 10, "EU-RO-1")));
        assert!(!NetworkVolumeAdapter.claims(&obj, &remote("team-a-data-1b4e28ba", 10, "US-TX-3")));
    }
}
