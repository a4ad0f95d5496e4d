//! The RegistryCredential adapter: registers a docker-registry Secret's login on the
//! platform and replaces the credential when the Secret changes.
//!
//! The platform never answers the password, so what a credential holds is told by its
//! name: `<prefix>-<first 8 hex digits of the login hash>`. A Secret that changes gives a
//! new name, and the plan is a rotation: register a new credential, keep the old one in
//! `status.retiringIds` while the cluster's Templates follow `status.id` to the new one,
//! and delete the old one once no Template uses it. A pull therefore never meets a deleted
//! credential.

pub mod docker_config;
pub mod summary;

use k8s_openapi::api::core::v1::Secret;
use kube::{Api, ResourceExt};

use gpucloud_crd::registry_credential::{DOCKER_CONFIG_JSON_KEY, RegistryCredentialStatus};
use gpucloud_crd::{RegistryCredential, Template};
use gpucloud_platform::PlatformClient;
use gpucloud_platform::domain::{NewRegistryCredential, RegistryCredential as Credential};

use docker_config::{RegistryLogin, login_for, login_hash};
use gpucloud_engine::adapter::{
    Actuator, Created, Decide, Inventory, Note, PassContext, Plan, Readiness, Report, Seen,
};
use gpucloud_engine::failure::Failure;
use gpucloud_engine::marker::{Marker, default_remote_name, name_marker};
use gpucloud_platform::domain::Identified;

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
    fn listed(credential: Credential) -> Self {
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
fn is_named_for(prefix: &str, name: &str) -> bool {
    name.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|h| h.len() == NAME_HASH_LEN && h.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Pure: the marker in a credential's name: an operator-given prefix (its object's UID
/// prefix) before the login's hash; `None` for a name the spec chose.
fn marker_of_name(name: &str) -> Option<Marker> {
    let (prefix, hash) = name.rsplit_once('-')?;
    let hashed = hash.len() == NAME_HASH_LEN && hash.chars().all(|c| c.is_ascii_hexdigit());
    if hashed { name_marker(prefix) } else { None }
}

fn retiring_of(obj: &RegistryCredential) -> Vec<String> {
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

/// The RegistryCredential kind.
#[derive(Clone, Debug, Default)]
pub struct RegistryCredentialAdapter;

impl RegistryCredentialAdapter {
    async fn login(
        &self,
        pass: &PassContext<'_>,
        obj: &RegistryCredential,
    ) -> Result<RegistryLogin, Failure> {
        let ns = obj.namespace().unwrap_or_default();
        let name = &obj.spec.secret_ref.name;
        let secrets: Api<Secret> = Api::namespaced(pass.shared.kube.clone(), &ns);
        let secret = secrets.get_opt(name).await.map_err(|e| {
            Failure::retryable(
                "KubernetesUnavailable",
                format!("could not read Secret {name}: {e}"),
            )
        })?;
        let Some(secret) = secret else {
            return Err(Failure::waiting(
                "SecretNotFound",
                format!("spec.secretRef: Secret {name} does not exist in {ns} yet"),
            ));
        };
        let data = secret
            .data
            .as_ref()
            .and_then(|d| d.get(DOCKER_CONFIG_JSON_KEY))
            .map(|b| b.0.as_slice());
        login_for(name, secret.type_.as_deref(), data, &obj.spec.registry)
    }

    /// Which replaced credentials a Template of the namespace still pulls with.
    async fn still_used(
        &self,
        pass: &PassContext<'_>,
        obj: &RegistryCredential,
        ids: &[String],
    ) -> Result<Vec<String>, Failure> {
        let ns = obj.namespace().unwrap_or_default();
        let templates: Api<Template> = Api::namespaced(pass.shared.kube.clone(), &ns);
        let list = templates.list(&Default::default()).await.map_err(|e| {
            Failure::retryable(
                "KubernetesUnavailable",
                format!("could not list the Templates of {ns}: {e}"),
            )
        })?;
        Ok(ids
            .iter()
            .filter(|id| {
                list.items.iter().any(|t| {
                    t.status.as_ref().and_then(|s| s.registry_id.as_deref()) == Some(id.as_str())
                })
            })
            .cloned()
            .collect())
    }
}

impl Identified for RemoteCredential {
    fn id(&self) -> &str {
        &self.credential.id
    }
}

impl Inventory for RegistryCredentialAdapter {
    type Kind = RegistryCredential;
    type Remote = RemoteCredential;

    const KIND: &'static str = "RegistryCredential";
    const NOUN: &'static str = "registry credential";

    async fn list(&self, client: &PlatformClient) -> Result<Vec<Self::Remote>, Failure> {
        client
            .registries()
            .list()
            .await
            .map(|l| l.into_iter().map(RemoteCredential::listed).collect())
            .map_err(|e| Failure::from_platform("list registry credentials", &e))
    }

    fn owner_marker(remote: &Self::Remote) -> Option<Marker> {
        marker_of_name(&remote.credential.name)
    }

    fn claims(&self, obj: &RegistryCredential, remote: &Self::Remote) -> bool {
        // The current one, not one being retired.
        is_named_for(&name_prefix(obj), &remote.credential.name)
            && !retiring_of(obj).contains(&remote.credential.id)
    }
}

impl Actuator for RegistryCredentialAdapter {
    type Desired = DesiredCredential;
    type Change = Rotation;

    async fn desired(
        &self,
        pass: &PassContext<'_>,
        obj: &RegistryCredential,
    ) -> Result<DesiredCredential, Failure> {
        let login = self.login(pass, obj).await?;
        let hash = login_hash(
            obj.uid().as_deref().unwrap_or_default(),
            &obj.spec.registry,
            &login,
        );
        Ok(DesiredCredential {
            name: name_for(&name_prefix(obj), &hash),
            login,
            hash,
        })
    }

    async fn create(
        &self,
        pass: &PassContext<'_>,
        _obj: &RegistryCredential,
        desired: &DesiredCredential,
    ) -> Result<Created<Self::Remote>, Failure> {
        let new = NewRegistryCredential {
            name: desired.name.clone(),
            username: desired.login.username.clone(),
            password: desired.login.password.clone(),
        };
        let credential = pass
            .client
            .registries()
            .create(&new)
            .await
            .map_err(|e| Failure::from_platform("register the registry credential", &e))?;
        Ok(Created::quietly(RemoteCredential {
            credential,
            hash: Some(desired.hash.clone()),
            retiring: None,
        }))
    }

    async fn delete(&self, client: &PlatformClient, id: &str) -> Result<(), Failure> {
        // Credentials this one replaced and that were not deleted yet share its name up to
        // the hash suffix; they go first, so that none is left behind.
        let all = client
            .registries()
            .list()
            .await
            .map_err(|e| Failure::from_platform("list registry credentials", &e))?;
        if let Some(current) = all.iter().find(|c| c.id == id)
            && let Some((prefix, _)) = current.name.rsplit_once('-')
        {
            for old in all
                .iter()
                .filter(|c| c.id != id && is_named_for(prefix, &c.name))
            {
                match client.registries().delete(&old.id).await {
                    Ok(()) => {}
                    Err(e) => {
                        let f = Failure::from_platform("delete a replaced registry credential", &e)
                            .in_use_on_delete("RegistryCredentialInUse");
                        if !f.is_not_found() {
                            return Err(f);
                        }
                    }
                }
            }
        }
        client.registries().delete(id).await.map_err(|e| {
            Failure::from_platform("delete the registry credential", &e)
                .in_use_on_delete("RegistryCredentialInUse")
        })
    }

    /// Deletes the replaced credentials no Template of the namespace uses any more.
    async fn after_sync(
        &self,
        pass: &PassContext<'_>,
        obj: &RegistryCredential,
        remote: &mut Self::Remote,
    ) -> Result<(), Failure> {
        let retiring = remote.retiring.clone().unwrap_or_else(|| retiring_of(obj));
        if retiring.is_empty() {
            return Ok(());
        }
        let used = self.still_used(pass, obj, &retiring).await?;
        let mut left = Vec::new();
        for id in retiring {
            if used.contains(&id) {
                left.push(id);
                continue;
            }
            match pass.client.registries().delete(&id).await {
                Ok(()) => {
                    tracing::info!(object = %obj.name_any(), id = %id, "deleted a replaced registry credential");
                }
                Err(e) => {
                    let f = Failure::from_platform("delete a replaced registry credential", &e);
                    if !f.is_not_found() {
                        // Still pulled with (a pod): try again on a later pass.
                        tracing::debug!(object = %obj.name_any(), id = %id, reason = %f.reason, "replaced registry credential kept");
                        left.push(id);
                    }
                }
            }
        }
        remote.retiring = Some(left);
        Ok(())
    }

    fn secrets(&self, obj: &RegistryCredential) -> Vec<String> {
        gpucloud_engine::adapter::secrets_with_credentials(obj, [obj.spec.secret_ref.name.clone()])
    }

    async fn update(
        &self,
        client: &PlatformClient,
        remote: &mut RemoteCredential,
        change: &Rotation,
    ) -> Result<Note, Failure> {
        self.apply_change(client, remote, change).await?;
        Ok(Note::updated(self.describe_change(change)))
    }
}

impl Decide for RegistryCredentialAdapter {
    fn plan(
        &self,
        obj: &RegistryCredential,
        desired: &DesiredCredential,
        remote: &Self::Remote,
    ) -> Plan<Rotation> {
        plan_credential(obj, desired, remote)
    }

    fn report(
        &self,
        obj: &RegistryCredential,
        remote: Option<&RemoteCredential>,
        seen: Seen,
    ) -> Report<RegistryCredentialStatus> {
        Report {
            status: self.status_of(obj, remote, seen),
            readiness: remote.map(|r| self.readiness_of(obj, r)),
            conditions: Vec::new(),
        }
    }
}

/// The parts of the report, the policy and the update, each from what the pass has.
impl RegistryCredentialAdapter {
    async fn apply_change(
        &self,
        client: &PlatformClient,
        remote: &mut RemoteCredential,
        change: &Rotation,
    ) -> Result<(), Failure> {
        // A rotation cut short after its create left the new credential behind: use it.
        let existing = client
            .registries()
            .list()
            .await
            .map_err(|e| Failure::from_platform("list registry credentials", &e))?
            .into_iter()
            .find(|c| c.name == change.name);
        let credential = match existing {
            Some(c) => c,
            None => {
                let new = NewRegistryCredential {
                    name: change.name.clone(),
                    username: change.login.username.clone(),
                    password: change.login.password.clone(),
                };
                client.registries().create(&new).await.map_err(|e| {
                    Failure::from_platform("register the replacing registry credential", &e)
                })?
            }
        };
        *remote = RemoteCredential {
            credential,
            hash: Some(change.hash.clone()),
            retiring: Some(change.retiring.clone()),
        };
        Ok(())
    }

    fn readiness_of(&self, obj: &RegistryCredential, remote: &RemoteCredential) -> Readiness {
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

    fn status_of(
        &self,
        obj: &RegistryCredential,
        remote: Option<&RemoteCredential>,
        _seen: Seen,
    ) -> RegistryCredentialStatus {
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

    fn describe_change(&self, change: &Rotation) -> String {
        format!(
            "registered {:?} to replace the registry credential (the Secret or the name changed); the old one is deleted once no Template uses it",
            change.name
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_crd::RegistryCredentialSpec;
    use gpucloud_crd::registry_credential::DockerConfigSecretRef;

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
        let text = format!(
            "{:?} {}",
            changes[0],
            RegistryCredentialAdapter.describe_change(&changes[0])
        );
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
        let a = RegistryCredentialAdapter;
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
        let kept = RegistryCredentialAdapter
            .report(&o, Some(&r), Seen::default())
            .status;
        assert_eq!(kept.retiring_ids, vec!["r0".to_string()]);
        r.retiring = Some(vec![]);
        r.hash = Some("0123456789abcdef".into());
        let s = RegistryCredentialAdapter
            .report(&o, Some(&r), Seen::default())
            .status;
        assert!(s.retiring_ids.is_empty());
        assert_eq!(s.secret_hash.as_deref(), Some("0123456789abcdef"));
        assert_eq!(s.name.as_deref(), Some("team-a-pull-1b4e28ba-01234567"));
        let json = serde_json::to_string(&s).unwrap();
        assert!(!json.contains("pw-secret"));
    }
}
