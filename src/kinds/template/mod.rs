//! The Template adapter: create, change in place (or replace, where the backend cannot
//! change a field), and delete only once no Endpoint of the cluster uses the template.

pub mod decide;
pub mod summary;

use decide::applied;
pub use decide::{
    Owner, change_of, describe_change, desired_of, plan_template, remote_name, users_of,
};

use kube::api::ListParams;
use kube::{Api, ResourceExt};

use gpucloud_crd::template::TemplateStatus;
use gpucloud_crd::{Endpoint, Pod, RegistryCredential, Template};
use gpucloud_platform::PlatformClient;
use gpucloud_platform::domain::{NewTemplate, Template as Remote, TemplateChange};

use crate::kinds::shared::dependency;
use crate::kinds::shared::secret_env;
use gpucloud_engine::adapter::{
    Actuator, Created, Decide, Inventory, Note, PassContext, Plan, Readiness, Report, Seen,
};
use gpucloud_engine::failure::Failure;
use gpucloud_engine::marker::{is_named_for, kept_name};
use crate::kinds::shared::sweep::OrphanSweep;
use crate::kinds::summary::rows_of;
use crate::kinds::shared::registration::{Census, Controllers, RegisteredKind};
use tokio::task::JoinHandle;

/// The Template kind.
#[derive(Clone)]
pub struct TemplateAdapter {
    kube: kube::Client,
}

impl TemplateAdapter {
    pub fn new(kube: kube::Client) -> Self {
        Self { kube }
    }

    /// The cluster's users of template `id`: in the namespace of `holder` (its Template)
    /// when there is one, which a namespaced Role allows to list, else the Endpoints of
    /// every namespace. `None` when they cannot be listed (the platform's own refusal is
    /// the check then).
    async fn users(&self, id: &str, holder: Option<&Template>) -> Option<Vec<String>> {
        let owner = holder.map(|t| Owner {
            namespace: t.namespace().unwrap_or_default(),
            name: t.name_any(),
        });
        let lp = ListParams::default();
        let listed = match &owner {
            Some(o) => {
                let endpoints: Api<Endpoint> = Api::namespaced(self.kube.clone(), &o.namespace);
                let pods: Api<Pod> = Api::namespaced(self.kube.clone(), &o.namespace);
                match (endpoints.list(&lp).await, pods.list(&lp).await) {
                    (Ok(e), Ok(p)) => Ok((e.items, p.items)),
                    (Err(err), _) | (_, Err(err)) => Err(err),
                }
            }
            None => Api::<Endpoint>::all(self.kube.clone())
                .list(&lp)
                .await
                .map(|e| (e.items, Vec::new())),
        };
        match listed {
            Ok((endpoints, pods)) => Some(users_of(id, owner.as_ref(), &endpoints, &pods)),
            Err(err) => {
                tracing::debug!(error = %err, template = %id, "could not list a template's users");
                None
            }
        }
    }

    async fn desired_template(
        &self,
        pass: &PassContext<'_>,
        obj: &Template,
    ) -> Result<NewTemplate, Failure> {
        let ns = obj.namespace().unwrap_or_default();
        let registry_id = match &obj.spec.registry_credential_ref {
            Some(r) => Some(
                dependency::ready_id::<RegistryCredential>(
                    pass.shared,
                    &ns,
                    &r.name,
                    "spec.registryCredentialRef",
                )
                .await?,
            ),
            None => None,
        };
        let env = secret_env::resolve(pass.shared, &ns, &obj.spec.container.env).await?;
        Ok(desired_of(
            obj,
            env,
            registry_id,
            pass.shared.install_tag.get(),
        ))
    }
}

impl Inventory for TemplateAdapter {
    type Kind = Template;
    type Remote = Remote;

    const KIND: &'static str = "Template";
    const NOUN: &'static str = "template";

    fn orphan_candidate(remote: &Self::Remote) -> Option<gpucloud_policy::orphans::Candidate> {
        Some(gpucloud_policy::orphans::template_candidate(remote))
    }

    async fn list(&self, client: &PlatformClient) -> Result<Vec<Self::Remote>, Failure> {
        client
            .templates()
            .list()
            .await
            .map_err(|e| Failure::from_platform("list templates", &e))
    }

    fn claims(&self, obj: &Template, remote: &Self::Remote) -> bool {
        is_named_for(obj, obj.spec.name.as_deref(), &remote.name)
    }
}

impl Actuator for TemplateAdapter {
    type Desired = NewTemplate;
    type Change = TemplateChange;
    type State = ();

    async fn desired(
        &self,
        pass: &PassContext<'_>,
        obj: &Template,
    ) -> Result<NewTemplate, Failure> {
        self.desired_template(pass, obj).await
    }

    async fn create(
        &self,
        pass: &PassContext<'_>,
        _obj: &Template,
        desired: &NewTemplate,
    ) -> Result<Created<Self::Remote>, Failure> {
        pass.client
            .templates()
            .create(desired)
            .await
            .map(Created::quietly)
            .map_err(|e| Failure::from_platform("create the template", &e))
    }

    async fn delete(
        &self,
        client: &PlatformClient,
        id: &str,
        holder: Option<&Template>,
    ) -> Result<(), Failure> {
        // The cluster's users are named in the condition; the platform refuses too, but by
        // its own ids, and not for a REST v2 pod (resolved at create time).
        if let Some(users) = self.users(id, holder).await
            && !users.is_empty()
        {
            return Err(Failure::waiting(
                "TemplateInUse",
                format!(
                    "template {id} is still used by {}; it is deleted from the platform once they are gone",
                    users.join(", ")
                ),
            ));
        }
        client.templates().delete(id).await.map_err(|e| {
            Failure::from_platform("delete the template", &e).in_use_on_delete("TemplateInUse")
        })
    }

    fn secrets(&self, obj: &Template) -> Vec<String> {
        secret_env::secrets_read(obj, &obj.spec.container.env)
    }

    async fn update(
        &self,
        pass: &PassContext<'_>,
        remote: &mut Remote,
        change: &TemplateChange,
    ) -> Result<Note, Failure> {
        self.apply_change(pass.client, remote, change).await?;
        Ok(Note::updated(describe_change(change)))
    }
}

impl Decide for TemplateAdapter {
    fn plan(
        &self,
        obj: &Template,
        desired: &NewTemplate,
        remote: &Self::Remote,
        _state: &(),
    ) -> Plan<TemplateChange> {
        match kept_name(obj, obj.spec.name.as_deref(), &remote.name) {
            Some(name) if name != desired.name => {
                let kept = NewTemplate {
                    name: name.to_string(),
                    ..desired.clone()
                };
                plan_template(&kept, remote)
            }
            _ => plan_template(desired, remote),
        }
    }

    fn report(
        &self,
        obj: &Template,
        remote: Option<&Remote>,
        seen: Seen,
        _state: &(),
    ) -> Report<TemplateStatus> {
        Report {
            status: self.status_of(obj, remote, seen),
            readiness: remote.map(|r| self.readiness_of(obj, r)),
            conditions: Vec::new(),
        }
    }
}

/// The parts of the report, the policy and the update, each from what the pass has.
impl TemplateAdapter {
    async fn apply_change(
        &self,
        client: &PlatformClient,
        remote: &mut Remote,
        change: &TemplateChange,
    ) -> Result<(), Failure> {
        client
            .templates()
            .update(&remote.id, change)
            .await
            .map_err(|e| Failure::from_platform("update the template", &e))?;
        applied(remote, change);
        Ok(())
    }

    fn readiness_of(&self, _obj: &Template, remote: &Remote) -> Readiness {
        Readiness::Ready {
            message: format!("template {} runs {}", remote.id, remote.image),
        }
    }

    fn status_of(&self, obj: &Template, remote: Option<&Remote>, _seen: Seen) -> TemplateStatus {
        let mut status = obj.status.clone().unwrap_or_default();
        if let Some(r) = remote {
            status.name = Some(r.name.clone());
            status.image = Some(r.image.clone());
            status.registry_id = r.registry_id.clone();
        }
        status
    }
}

impl crate::kinds::shared::sweep::Swept for TemplateAdapter {
    const DELETE_ORDER: u8 = 3;

    fn for_sweep(kube: &kube::Client) -> Self {
        TemplateAdapter::new(kube.clone())
    }
}

/// The Template kind's registration (see `crate::kinds`).
pub const REGISTERED: RegisteredKind = RegisteredKind {
    crd: gpucloud_crd::managed_crd::<Template>,
    controller: Some(start),
    rows: rows_of::<Template>,
    sweep: Some(OrphanSweep::of::<TemplateAdapter>()),
};

fn start(controllers: &Controllers, census: Census) -> JoinHandle<()> {
    controllers.spawn(TemplateAdapter::new(controllers.shared.kube.clone()), census)
}
