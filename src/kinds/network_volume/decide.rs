//! The NetworkVolume's decisions, pure: the desired volume from the spec, the plan against
//! the listed volume, and the report. [`super::NetworkVolumeAdapter`] calls them with what
//! it resolved and listed.

use gpucloud_crd::NetworkVolume;
use gpucloud_crd::network_volume::{NetworkVolumeStatus, VolumeClass};
use gpucloud_platform::domain::{Volume, VolumeType};

use gpucloud_engine::adapter::{Plan, Readiness, Report};
use gpucloud_engine::failure::Failure;
use gpucloud_engine::marker::{InstallTag, kept_name, remote_name_of};

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
        name: remote_name_of(obj, obj.spec.name.as_deref(), status_name, tag),
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

/// Pure: the plan for `remote`, keeping the name it already has when that name is one the
/// operator gave this object (a volume made before the install tag keeps its name).
pub fn plan(obj: &NetworkVolume, desired: &DesiredVolume, remote: &Volume) -> Plan<VolumeChange> {
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

/// Pure: status from the listed volume (what was last reported, without one). A volume is
/// usable as soon as it exists.
pub fn report(obj: &NetworkVolume, remote: Option<&Volume>) -> Report<NetworkVolumeStatus> {
    let mut status = obj.status.clone().unwrap_or_default();
    let Some(r) = remote else {
        return Report::status(status);
    };
    status.name = Some(r.name.clone());
    status.size_gb = i32::try_from(r.size_gb).ok();
    status.data_center_id = Some(r.data_center_id.clone());
    status.volume_type = Some(r.volume_type.as_str().to_string());
    let readiness = Readiness::Ready {
        message: format!(
            "volume {} has {} GB in {}",
            r.id, r.size_gb, r.data_center_id
        ),
    };
    Report::with(status, Some(readiness))
}

/// Pure: the Event's words for `change`.
pub fn describe(change: &VolumeChange) -> String {
    match (&change.name, change.size_gb) {
        (Some(n), Some(s)) => {
            format!("renamed the network volume to {n:?} and grew it to {s} GB")
        }
        (Some(n), None) => format!("renamed the network volume to {n:?}"),
        (None, Some(s)) => format!("grew the network volume to {s} GB"),
        (None, None) => "no change".to_string(),
    }
}

#[cfg(test)]
pub(super) mod tests {
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
    fn a_listed_volume_is_reported_and_ready() {
        let obj = NetworkVolume::new("data", spec());
        let report = report(&obj, Some(&remote("a", 10, "EU-RO-1")));
        assert_eq!(report.status.size_gb, Some(10));
        assert_eq!(report.status.name.as_deref(), Some("a"));
        assert!(matches!(
            report.readiness,
            Some(Readiness::Ready { message }) if message == "volume vol-1 has 10 GB in EU-RO-1"
        ));
        // Without a volume, what was last reported stays, and nothing is judged.
        let unseen = super::report(&obj, None);
        assert_eq!(unseen.readiness, None);
        assert_eq!(unseen.status, NetworkVolumeStatus::default());
    }

    #[test]
    fn a_change_is_told_in_words() {
        let both = VolumeChange {
            name: Some("b".into()),
            size_gb: Some(20),
        };
        assert_eq!(
            describe(&both),
            "renamed the network volume to \"b\" and grew it to 20 GB"
        );
        let grow = VolumeChange {
            name: None,
            size_gb: Some(20),
        };
        assert_eq!(describe(&grow), "grew the network volume to 20 GB");
    }

    pub(in crate::kinds::network_volume) fn spec() -> NetworkVolumeSpec {
        NetworkVolumeSpec {
            name: None,
            size_gb: 10,
            data_center_id: "EU-RO-1".into(),
            volume_type: VolumeClass::Standard,
            deletion_policy: Default::default(),
            management_policy: Default::default(),
            credentials_secret_ref: None,
        }
    }
}
