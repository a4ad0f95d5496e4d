//! The RegistryCredential's decisions, pure: the credential's name from its login, the
//! rotation plan, and the report. [`super::RegistryCredentialAdapter`] calls them with what
//! it resolved and listed.

use gpucloud_crd::RegistryCredential;
use gpucloud_crd::registry_credential::RegistryCredentialStatus;
use gpucloud_platform::domain::RegistryCredential as Credential;

use super::docker_config::RegistryLogin;
use gpucloud_engine::adapter::{Plan, Readiness, Report};
use gpucloud_engine::marker::{Marker, default_remote_name, name_marker};

/// Hex digits of the login hash that end a credential's name.
const NAME_HASH_LEN: usize = 8;

/// A credential as the platform lists it, with what this pass learnt besides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteCredential {
    pub credential: Credential,
    /// Hash of the login it was registered with, when this pass registered it.
    pub hash: Option<String>,
    /// Replaced credentials still to delete, when this pass changed the list.
    pub retiring: Option<Vec<String>>,
}

impl RemoteCredential {
    pub(super) fn listed(credential: Credential) -> Self {
        Self {
            credential,
            hash: None,
            retiring: None,
        }
    }
}

/// The credential the spec and the Secret want. `Debug` masks the login.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesiredCredential {
    /// The name, hash suffix included.
    pub name: String,
    pub login: RegistryLogin,
    pub hash: String,
}

/// Registering a new credential in place of the current one. `Debug` masks the login.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rotation {
    pub name: String,
    pub login: RegistryLogin,
    pub hash: String,
    /// `status.retiringIds` with the current credential added.
    pub retiring: Vec<String>,
}

/// The name up to the hash suffix: the spec's, or `<namespace>-<name>-<uid>`.
pub fn name_prefix(obj: &RegistryCredential) -> String {
    obj.spec
        .name
        .clone()
        .unwrap_or_else(|| default_remote_name(obj))
}

/// The platform name of a credential registered with a login of hash `hash`.
pub fn name_for(prefix: &str, hash: &str) -> String {
    format!("{prefix}-{}", &hash[..NAME_HASH_LEN.min(hash.len())])
}

/// Whether `name` is one of `prefix`'s credentials (any login).
pub(super) fn is_named_for(prefix: &str, name: &str) -> bool {
    name.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|h| h.len() == NAME_HASH_LEN && h.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Pure: the marker in a credential's name: an operator-given prefix (its object's UID
/// prefix) before the login's hash; `None` for a name the spec chose.
pub(super) fn marker_of_name(name: &str) -> Option<Marker> {
    let (prefix, hash) = name.rsplit_once('-')?;
    let hashed = hash.len() == NAME_HASH_LEN && hash.chars().all(|c| c.is_ascii_hexdigit());
    if hashed { name_marker(prefix) } else { None }
}

pub(super) fn retiring_of(obj: &RegistryCredential) -> Vec<String> {
    obj.status
        .as_ref()
        .map(|s| s.retiring_ids.clone())
        .unwrap_or_default()
}

/// Pure: the current credential holds the wanted login when it has the wanted name; any
/// other (a Secret that changed, a renamed spec, an adopted credential whose password
/// cannot be known) is rotated.
pub fn plan_credential(
    obj: &RegistryCredential,
    desired: &DesiredCredential,
    remote: &RemoteCredential,
) -> Plan<Rotation> {
    if remote.credential.name == desired.name {
        return Plan::UpToDate;
    }
    let mut retiring = retiring_of(obj);
    if !retiring.contains(&remote.credential.id) {
        retiring.push(remote.credential.id.clone());
    }
    Plan::Update(vec![Rotation {
        name: desired.name.clone(),
        login: desired.login.clone(),
        hash: desired.hash.clone(),
        retiring,
    }])
}

/// Pure: a registered credential is usable at once; the message names what is retiring.
fn readiness(obj: &RegistryCredential, remote: &RemoteCredential) -> Readiness {
    let retiring = remote.retiring.clone().unwrap_or_else(|| retiring_of(obj));
    let mut message = format!(
        "credential {} registered for {}",
        remote.credential.id, obj.spec.registry
    );
    if !retiring.is_empty() {
        message.push_str(&format!(
            "; replaced credentials {} are deleted once no Template uses them",
            retiring.join(", ")
        ));
    }
    Readiness::Ready { message }
}

/// Pure: status from the listed credential (never the login), what was last reported
/// without one.
fn status(obj: &RegistryCredential, remote: Option<&RemoteCredential>) -> RegistryCredentialStatus {
    let mut status = obj.status.clone().unwrap_or_default();
    if let Some(r) = remote {
        status.name = Some(r.credential.name.clone());
        if let Some(h) = &r.hash {
            status.secret_hash = Some(h.clone());
        }
        if let Some(retiring) = &r.retiring {
            status.retiring_ids = retiring.clone();
        }
    }
    status
}

/// Pure: the Event's words for a rotation.
pub fn describe(change: &Rotation) -> String {
    format!(
        "registered {:?} to replace the registry credential (the Secret or the name changed); the old one is deleted once no Template uses it",
        change.name
    )
}

/// Pure: status and readiness from the listed credential.
pub fn report(
    obj: &RegistryCredential,
    remote: Option<&RemoteCredential>,
) -> Report<RegistryCredentialStatus> {
    Report::with(status(obj, remote), remote.map(|r| readiness(obj, r)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_crd::RegistryCredentialSpec;
    use gpucloud_crd::registry_credential::DockerConfigSecretRef;
    use gpucloud_engine::adapter::Inventory;

    fn obj(retiring: &[&str]) -> RegistryCredential {
        let mut o = RegistryCredential::new(
            "pull",
            RegistryCredentialSpec {
                name: None,
                secret_ref: DockerConfigSecretRef {
                    name: "ghcr".into(),
                },
                registry: "ghcr.io".into(),
                deletion_policy: Default::default(),
                management_policy: Default::default(),
                credentials_secret_ref: None,
            },
        );
        o.metadata = crate::kinds::shared::fixtures::applied("pull");
        o.status = Some(RegistryCredentialStatus {
            retiring_ids: retiring.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        });
        o
    }

    fn desired(hash: &str) -> DesiredCredential {
        DesiredCredential {
            name: name_for("team-a-pull-1b4e28ba", hash),
            login: RegistryLogin {
                username: "bot".into(),
                password: "pw-secret".into(),
            },
            hash: hash.into(),
        }
    }

    fn remote(id: &str, name: &str) -> RemoteCredential {
        RemoteCredential::listed(Credential {
            id: id.into(),
            name: name.into(),
        })
    }

    #[test]
    fn the_same_login_is_up_to_date() {
        let d = desired("0123456789abcdef");
        assert_eq!(
            plan_credential(
                &obj(&[]),
                &d,
                &remote("r1", "team-a-pull-1b4e28ba-01234567")
            ),
            Plan::UpToDate
        );
    }

    #[test]
    fn a_changed_secret_rotates_and_retires_the_old_credential() {
        let d = desired("fedcba9876543210");
        let plan = plan_credential(
            &obj(&["r0"]),
            &d,
            &remote("r1", "team-a-pull-1b4e28ba-01234567"),
        );
        let Plan::Update(changes) = plan else {
            panic!("want a rotation, got {plan:?}");
        };
        assert_eq!(changes[0].name, "team-a-pull-1b4e28ba-fedcba98");
        assert_eq!(
            changes[0].retiring,
            vec!["r0".to_string(), "r1".to_string()]
        );
        let text = format!("{:?} {}", changes[0], describe(&changes[0]));
        assert!(
            !text.contains("pw-secret") && !text.contains("bot"),
            "{text}"
        );
    }

    #[test]
    fn a_credentials_marker_is_its_prefixs_before_the_login_hash() {
        assert_eq!(
            marker_of_name("team-a-pull-1b4e28ba-01234567"),
            Some(Marker::UidPrefix("1b4e28ba".into()))
        );
        assert_eq!(marker_of_name("my-registry-01234567"), None);
        assert_eq!(marker_of_name("team-a-pull-1b4e28ba"), None);
    }

    #[test]
    fn claims_its_own_current_credential_only() {
        let o = obj(&["r0"]);
        let a = super::super::RegistryCredentialAdapter;
        assert!(a.claims(&o, &remote("r1", "team-a-pull-1b4e28ba-01234567")));
        // A replaced one is being retired, not taken back.
        assert!(!a.claims(&o, &remote("r0", "team-a-pull-1b4e28ba-76543210")));
        assert!(!a.claims(&o, &remote("r2", "team-a-pull-1b4e28ba")));
        assert!(!a.claims(&o, &remote("r3", "team-a-pull-1b4e28ba-0123456z")));
        assert!(!a.claims(&o, &remote("r4", "team-a-pull-2b4e28ba-01234567")));
    }

    #[test]
    fn status_keeps_no_login_and_follows_the_retiring_list() {
        let o = obj(&["r0"]);
        let mut r = remote("r1", "team-a-pull-1b4e28ba-01234567");
        let kept = report(&o, Some(&r)).status;
        assert_eq!(kept.retiring_ids, vec!["r0".to_string()]);
        r.retiring = Some(vec![]);
        r.hash = Some("0123456789abcdef".into());
        let s = report(&o, Some(&r)).status;
        assert!(s.retiring_ids.is_empty());
        assert_eq!(s.secret_hash.as_deref(), Some("0123456789abcdef"));
        assert_eq!(s.name.as_deref(), Some("team-a-pull-1b4e28ba-01234567"));
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("pw-secret"));
    }
}
