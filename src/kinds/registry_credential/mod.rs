//! The RegistryCredential adapter: registers a docker-registry Secret's login on the
//! platform and replaces the credential when the Secret changes.
//!
//! The platform never answers the password, so what a credential holds is told by its
//! name: `<prefix>-<first 8 hex digits of the login hash>`. A Secret that changes gives a
//! new name, and the plan is a rotation: register a new credential, keep the old one in
//! `status.retiringIds` while the cluster's Templates follow `status.id` to the new one,
//! and delete the old one once no Template uses it. A pull therefore never meets a deleted
//! credential.

pub mod decide;
pub mod docker_config;
pub mod summary;

use k8s_openapi::api::core::v1::Secret;
use kube::{Api, ResourceExt};

use gpucloud_crd::registry_credential::{DOCKER_CONFIG_JSON_KEY, RegistryCredentialStatus};
use gpucloud_crd::{RegistryCredential, Template};
use gpucloud_platform::PlatformClient;
use gpucloud_platform::domain::NewRegistryCredential;

use docker_config::{RegistryLogin, login_for, login_hash};
use gpucloud_engine::adapter::{
    Actuator, Created, Decide, Inventory, Note, PassContext, Plan, Report, Seen,
};
use gpucloud_engine::failure::Failure;
use gpucloud_engine::marker::Marker;

pub use decide::{
    DesiredCredential, RemoteCredential, Rotation, name_for, name_prefix, plan_credential,
};
use decide::{is_named_for, marker_of_name, retiring_of};
use gpucloud_platform::domain::Identified;
use crate::kinds::summary::rows_of;
use crate::kinds::shared::registration::{Census, Controllers, RegisteredKind};
use tokio::task::JoinHandle;

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
    type State = ();

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

    async fn delete(
        &self,
        client: &PlatformClient,
        id: &str,
        _holder: Option<&RegistryCredential>,
    ) -> Result<(), Failure> {
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
        pass: &PassContext<'_>,
        remote: &mut RemoteCredential,
        change: &Rotation,
    ) -> Result<Note, Failure> {
        self.apply_change(pass.client, remote, change).await?;
        Ok(Note::updated(decide::describe(change)))
    }
}

impl Decide for RegistryCredentialAdapter {
    fn plan(
        &self,
        obj: &RegistryCredential,
        desired: &DesiredCredential,
        remote: &Self::Remote,
        _state: &(),
    ) -> Plan<Rotation> {
        plan_credential(obj, desired, remote)
    }

    fn report(
        &self,
        obj: &RegistryCredential,
        remote: Option<&RemoteCredential>,
        _seen: Seen,
        _state: &(),
    ) -> Report<RegistryCredentialStatus> {
        decide::report(obj, remote)
    }
}

/// The platform calls of a rotation.
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
}

/// The RegistryCredential kind's registration (see `crate::kinds`).
pub const REGISTERED: RegisteredKind = RegisteredKind {
    crd: gpucloud_crd::managed_crd::<RegistryCredential>,
    controller: Some(start),
    rows: rows_of::<RegistryCredential>,
    sweep: None,
};

fn start(controllers: &Controllers, census: Census) -> JoinHandle<()> {
    controllers.spawn(RegistryCredentialAdapter, census)
}
