//! Templates, whichever backend serves them.
//!
//! REST v2 can change every field of a template in place. The seed API (REST v1) cannot
//! change `serverless` or `category` after the create (its `TemplateUpdateInput` has
//! neither) and knows nothing of SSH, Jupyter or CUDA constraints: a template it reports
//! says so in [`Template::fixed`] and leaves those fields unset, and a create or an update
//! that asks for them is refused as invalid input.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::super::config::PlatformApi;
use super::super::error::PlatformError;
use super::super::{PlatformClient, TemplateCreate, TemplateUpdate, v2};

type Result<T> = std::result::Result<T, PlatformError>;

/// Fields a seed template cannot change in place.
const SEED_FIXED: &[&str] = &["serverless", "category"];

/// A template as both backends describe it. `Debug` shows the env keys only: the values
/// may be secrets.
#[derive(Clone, PartialEq, Eq)]
pub struct Template {
    pub id: String,
    pub name: String,
    pub image: String,
    /// The container's arguments, space-separated; empty: the image's own.
    pub args: String,
    pub container_disk_gb: Option<i64>,
    /// Local volume; 0: none.
    pub volume_gb: i64,
    pub volume_mount_path: Option<String>,
    pub env: BTreeMap<String, String>,
    pub ports: Vec<String>,
    pub serverless: bool,
    pub registry_id: Option<String>,
    /// `NVIDIA`, `AMD` or `CPU`; `None` when the backend does not say.
    pub category: Option<String>,
    /// `None`: the backend does not report it (seed).
    pub start_ssh: Option<bool>,
    pub start_jupyter: Option<bool>,
    pub allowed_cuda_versions: Option<Vec<String>>,
    /// Fields this backend cannot change in place: a change needs a new template.
    pub fixed: &'static [&'static str],
}

impl std::fmt::Debug for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Template")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("image", &self.image)
            .field("env_keys", &self.env.keys().collect::<Vec<_>>())
            .field("registry_id", &self.registry_id)
            .finish_non_exhaustive()
    }
}

/// What a create asks for. `Debug` shows the env keys only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct NewTemplate {
    pub name: String,
    pub image: String,
    pub args: String,
    pub container_disk_gb: Option<i64>,
    pub volume_gb: i64,
    pub volume_mount_path: Option<String>,
    pub env: BTreeMap<String, String>,
    pub ports: Vec<String>,
    pub serverless: bool,
    pub registry_id: Option<String>,
    pub category: Option<String>,
    pub start_ssh: Option<bool>,
    pub start_jupyter: Option<bool>,
    pub allowed_cuda_versions: Vec<String>,
}

impl std::fmt::Debug for NewTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewTemplate")
            .field("name", &self.name)
            .field("image", &self.image)
            .field("env_keys", &self.env.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// An in-place change: only what is set changes. `Debug` shows the env keys only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct TemplateChange {
    pub name: Option<String>,
    pub image: Option<String>,
    pub args: Option<String>,
    pub container_disk_gb: Option<i64>,
    /// Size and path of the local volume, together.
    pub volume: Option<(i64, Option<String>)>,
    pub env: Option<BTreeMap<String, String>>,
    pub ports: Option<Vec<String>>,
    /// `Some(None)`: no credential.
    pub registry_id: Option<Option<String>>,
    pub serverless: Option<bool>,
    pub category: Option<String>,
    pub start_ssh: Option<bool>,
    pub start_jupyter: Option<bool>,
    pub allowed_cuda_versions: Option<Vec<String>>,
}

impl TemplateChange {
    /// The spec fields this change touches, for messages and Events.
    pub fn fields(&self) -> Vec<&'static str> {
        [
            ("name", self.name.is_some()),
            ("image", self.image.is_some()),
            ("args", self.args.is_some()),
            ("containerDiskGb", self.container_disk_gb.is_some()),
            ("volumeGb", self.volume.is_some()),
            ("env", self.env.is_some()),
            ("ports", self.ports.is_some()),
            ("registryCredentialRef", self.registry_id.is_some()),
            ("serverless", self.serverless.is_some()),
            ("category", self.category.is_some()),
            ("startSsh", self.start_ssh.is_some()),
            ("startJupyter", self.start_jupyter.is_some()),
            ("allowedCudaVersions", self.allowed_cuda_versions.is_some()),
        ]
        .into_iter()
        .filter_map(|(f, set)| set.then_some(f))
        .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.fields().is_empty()
    }
}

impl std::fmt::Debug for TemplateChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemplateChange")
            .field("fields", &self.fields())
            .finish()
    }
}

/// Template calls; obtained from [`PlatformClient::templates`].
#[derive(Clone, Debug)]
pub struct Templates {
    client: PlatformClient,
}

impl PlatformClient {
    /// Templates, on whichever backend the configuration chose.
    pub fn templates(&self) -> Templates {
        Templates::new(self.clone())
    }
}

impl Templates {
    pub(crate) fn new(client: PlatformClient) -> Self {
        Self { client }
    }

    /// The account's own templates, in one call.
    pub async fn list(&self) -> Result<Vec<Template>> {
        super::list_from(
            self.client.api(),
            self.client.rest().list_templates(),
            from_seed,
            self.client.v2().list_templates_as(from_v2),
        )
        .await
    }

    /// Creates a template. Never retried after an ambiguous failure: see
    /// [`PlatformError::may_have_been_applied`].
    pub async fn create(&self, new: &NewTemplate) -> Result<Template> {
        let missing = [("registry", "registryId"), ("auth", "registryId")];
        match self.client.api() {
            PlatformApi::Seed => {
                seed_supports(new.start_ssh, new.start_jupyter, &new.allowed_cuda_versions)?;
                let input = TemplateCreate {
                    name: new.name.clone(),
                    image_name: new.image.clone(),
                    is_serverless: Some(new.serverless),
                    container_disk_in_gb: new.container_disk_gb,
                    volume_in_gb: Some(new.volume_gb),
                    volume_mount_path: new.volume_mount_path.clone(),
                    env: Some(seed_env(&new.env)),
                    ports: Some(new.ports.clone()),
                    docker_start_cmd: Some(seed_args(&new.args)),
                    container_registry_auth_id: new.registry_id.clone(),
                    category: new.category.clone(),
                };
                let created = self
                    .client
                    .rest()
                    .create_template(&input)
                    .await
                    .map_err(|e| super::refers_to_missing(e, &missing))?;
                Ok(from_seed(created))
            }
            PlatformApi::V2 => {
                let input = v2::CreateTemplate {
                    name: new.name.clone(),
                    container: v2::CreateContainerConfig {
                        image: new.image.clone(),
                        args: (!new.args.is_empty()).then(|| new.args.clone()),
                        disk: new
                            .container_disk_gb
                            .map(|d| gigabytes("containerDiskGb", d))
                            .transpose()?,
                        env: Some(new.env.clone()),
                        ports: Some(new.ports.clone()),
                        registry: new.registry_id.clone(),
                    },
                    mounts: v2_mounts(new.volume_gb, new.volume_mount_path.as_deref())?,
                    category: new.category.clone().map(v2::TemplateCategory::from),
                    public: None,
                    serverless: Some(new.serverless),
                    start_jupyter: new.start_jupyter,
                    start_ssh: new.start_ssh,
                    allowed_cuda_versions: Some(new.allowed_cuda_versions.clone()),
                };
                let created = self
                    .client
                    .v2()
                    .create_template(&input)
                    .await
                    .map_err(|e| super::refers_to_missing(e, &missing))?;
                Ok(from_v2(created))
            }
        }
    }

    /// Changes a template in place. On the seed backend a change of a field in
    /// [`Template::fixed`] is refused as invalid input: the caller replaces the template.
    pub async fn update(&self, id: &str, change: &TemplateChange) -> Result<()> {
        match self.client.api() {
            PlatformApi::Seed => {
                if let Some(field) = [
                    ("serverless", change.serverless.is_some()),
                    ("category", change.category.is_some()),
                ]
                .iter()
                .find_map(|(f, set)| set.then_some(*f))
                {
                    return Err(PlatformError::invalid_input(
                        field,
                        "the seed API (REST v1) cannot change it in place; the template must be replaced",
                    ));
                }
                seed_supports(
                    change.start_ssh,
                    change.start_jupyter,
                    change.allowed_cuda_versions.as_deref().unwrap_or_default(),
                )?;
                let input = TemplateUpdate {
                    name: change.name.clone(),
                    image_name: change.image.clone(),
                    container_disk_in_gb: change.container_disk_gb,
                    volume_in_gb: change.volume.as_ref().map(|(gb, _)| *gb),
                    volume_mount_path: change.volume.as_ref().and_then(|(_, p)| p.clone()),
                    env: change.env.as_ref().map(seed_env),
                    ports: change.ports.clone(),
                    docker_start_cmd: change.args.as_deref().map(seed_args),
                    container_registry_auth_id: change
                        .registry_id
                        .as_ref()
                        .map(|r| r.clone().unwrap_or_default()),
                };
                self.client
                    .rest()
                    .update_template(id, &input)
                    .await
                    .map(drop)
            }
            PlatformApi::V2 => {
                let mounts = match &change.volume {
                    Some((gb, path)) => Some(
                        v2_mounts(*gb, path.as_deref())?
                            .unwrap_or_else(v2::TemplateMounts::default),
                    ),
                    None => None,
                };
                let input = v2::UpdateTemplate {
                    name: change.name.clone(),
                    container: v2::UpdateContainerConfig {
                        image: change.image.clone(),
                        args: change.args.clone(),
                        disk: change
                            .container_disk_gb
                            .map(|d| gigabytes("containerDiskGb", d))
                            .transpose()?,
                        env: change.env.clone(),
                        ports: change.ports.clone(),
                        registry: change.registry_id.clone(),
                    },
                    mounts,
                    category: change.category.clone().map(v2::TemplateCategory::from),
                    public: None,
                    serverless: change.serverless,
                    start_jupyter: change.start_jupyter,
                    start_ssh: change.start_ssh,
                    allowed_cuda_versions: change.allowed_cuda_versions.clone(),
                };
                self.client.v2().update_template(id, &input).await.map(drop)
            }
        }
    }

    /// Deletes a template; refused while a pod or an endpoint uses it.
    pub async fn delete(&self, id: &str) -> Result<()> {
        match self.client.api() {
            PlatformApi::Seed => self.client.rest().delete_template(id).await,
            PlatformApi::V2 => self.client.v2().delete_template(id).await,
        }
    }
}

/// The seed API has no SSH, Jupyter or CUDA settings on templates.
fn seed_supports(
    start_ssh: Option<bool>,
    start_jupyter: Option<bool>,
    cuda: &[String],
) -> Result<()> {
    let unsupported = [
        ("startSsh", start_ssh.is_some()),
        ("startJupyter", start_jupyter.is_some()),
        ("allowedCudaVersions", !cuda.is_empty()),
    ];
    match unsupported.iter().find(|(_, set)| *set) {
        Some((field, _)) => Err(PlatformError::invalid_input(
            *field,
            "the seed API (REST v1) has no such template setting; leave it unset or use REST v2",
        )),
        None => Ok(()),
    }
}

fn seed_env(env: &BTreeMap<String, String>) -> Map<String, Value> {
    env.iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect()
}

fn seed_args(args: &str) -> Vec<String> {
    args.split_whitespace().map(str::to_string).collect()
}

fn from_seed(t: super::super::Template) -> Template {
    let volume_gb = t.volume_in_gb.unwrap_or(0);
    Template {
        id: t.id,
        name: t.name,
        image: t.image_name.unwrap_or_default(),
        args: t.docker_start_cmd.unwrap_or_default().join(" "),
        container_disk_gb: t.container_disk_in_gb,
        volume_gb,
        volume_mount_path: t.volume_mount_path.filter(|_| volume_gb > 0),
        env: t
            .env
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(k, v)| v.as_str().map(|s| (k, s.to_string())))
            .collect(),
        ports: t.ports.unwrap_or_default(),
        serverless: t.is_serverless.unwrap_or(false),
        registry_id: t.container_registry_auth_id.filter(|r| !r.is_empty()),
        category: t.category,
        start_ssh: None,
        start_jupyter: None,
        allowed_cuda_versions: None,
        fixed: SEED_FIXED,
    }
}

fn from_v2(t: v2::Template) -> Template {
    let persistent = t.mounts.and_then(|m| m.persistent);
    Template {
        id: t.id,
        name: t.name,
        image: t.container.image,
        args: t.container.args.unwrap_or_default(),
        container_disk_gb: t.container.disk.map(i64::from),
        volume_gb: persistent.as_ref().map_or(0, |p| i64::from(p.size)),
        volume_mount_path: persistent.map(|p| p.path),
        env: t.container.env,
        ports: t.container.ports,
        serverless: t.serverless,
        registry_id: t.container.registry,
        category: t.category.map(|c| c.as_str().to_string()),
        start_ssh: Some(t.start_ssh),
        start_jupyter: Some(t.start_jupyter),
        allowed_cuda_versions: Some(t.allowed_cuda_versions),
        fixed: &[],
    }
}

fn v2_mounts(volume_gb: i64, path: Option<&str>) -> Result<Option<v2::TemplateMounts>> {
    if volume_gb <= 0 {
        return Ok(None);
    }
    Ok(Some(v2::TemplateMounts {
        persistent: Some(v2::PersistentMount {
            size: gigabytes("volumeGb", volume_gb)?,
            path: path.unwrap_or("/workspace").to_string(),
        }),
    }))
}

/// A size in GB as REST v2 takes it (unsigned).
fn gigabytes(field: &str, size: i64) -> Result<u32> {
    u32::try_from(size)
        .map_err(|_| PlatformError::invalid_input(field, format!("{size} is not a size in GB")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_env_values() {
        let mut env = BTreeMap::new();
        env.insert("TOKEN".to_string(), "s3cr3t-value".to_string());
        let new = NewTemplate {
            env: env.clone(),
            ..Default::default()
        };
        let change = TemplateChange {
            env: Some(env.clone()),
            ..Default::default()
        };
        let seed = from_seed(super::super::super::Template {
            id: "t".into(),
            name: "n".into(),
            image_name: None,
            is_serverless: None,
            container_disk_in_gb: None,
            volume_in_gb: None,
            volume_mount_path: None,
            env: Some(seed_env(&env)),
            ports: None,
            docker_start_cmd: None,
            container_registry_auth_id: None,
            category: None,
            extra: Map::new(),
        });
        for text in [
            format!("{new:?}"),
            format!("{change:?}"),
            format!("{seed:?}"),
        ] {
            assert!(!text.contains("s3cr3t-value"), "{text}");
        }
        assert_eq!(seed.env, env);
    }

    #[test]
    fn seed_refuses_what_it_cannot_hold() {
        assert!(seed_supports(None, None, &[]).is_ok());
        let err = seed_supports(Some(false), None, &[])
            .unwrap_err()
            .to_string();
        assert!(err.contains("startSsh"), "{err}");
        let err = seed_supports(None, None, &["12.4".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("allowedCudaVersions"), "{err}");
    }

    #[test]
    fn a_change_names_its_spec_fields() {
        let change = TemplateChange {
            image: Some("img:2".into()),
            registry_id: Some(None),
            ..Default::default()
        };
        assert_eq!(change.fields(), vec!["image", "registryCredentialRef"]);
        assert!(TemplateChange::default().is_empty());
    }
}
