//! REST v2 templates: `GET,POST /v2/templates`, `GET,PATCH,DELETE /v2/templates/{id}`.
//!
//! The records are v1's (`/v1/templates` lists the same ones): v2's `image` is v1's
//! `imageName`, `disk` is `containerDiskInGb`, `mounts.persistent` is `volumeInGb` with
//! `volumeMountPath` (absent when the template has no volume), `args` is `dockerStartCmd`
//! joined by spaces, `serverless` is `isServerless`. `GET /v2/templates/{id}` also serves
//! the public catalog's templates, which cannot be changed or deleted here (404).

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};

use super::container::{ContainerPatch, container_patch_of};
use super::integer::{integer, opt_integer};
use super::problem::V2Result;
use super::records::{self, V2Shown};
use super::request::{Caller, Violations, WriteBody, not_null, nullable, parse_body};
use super::rules::{self, Rules};
use crate::collection::TEMPLATES;
use crate::ids;
use crate::model::{PublicTemplate, Template, TemplateCategory};
use crate::state::{App, World};
use crate::world::endpoints;

// Nested objects of the bodies: only a JSON object reads as one.
crate::v2::object::objects_only!(MountsBody, PersistentBody);

pub fn routes() -> Router<App> {
    Router::new()
        .route("/v2/templates", get(records::list::<Template>).post(create))
        .route(
            "/v2/templates/{id}",
            get(get_one)
                .patch(update)
                .delete(records::delete_unused::<Template>),
        )
}

// ---------------------------------------------------------------- answers

/// The document's `Template`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateView {
    pub id: String,
    pub name: String,
    pub image: String,
    pub args: String,
    pub disk: u64,
    pub mounts: MountsView,
    pub ports: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub registry: Option<String>,
    pub serverless: bool,
    pub public: bool,
    pub category: TemplateCategory,
    pub start_ssh: bool,
    pub start_jupyter: bool,
    pub allowed_cuda_versions: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MountsView {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persistent: Option<PersistentView>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PersistentView {
    pub size: u64,
    pub path: String,
}

fn mounts(volume_in_gb: u64, path: &str) -> MountsView {
    MountsView {
        persistent: (volume_in_gb > 0).then(|| PersistentView {
            size: volume_in_gb,
            path: path.to_string(),
        }),
    }
}

impl V2Shown for Template {
    const LIST_FIELD: &'static str = "templates";

    fn v2(&self) -> impl Serialize + '_ {
        TemplateView::from(self)
    }
}

impl From<&Template> for TemplateView {
    fn from(t: &Template) -> Self {
        Self {
            id: t.id.clone(),
            name: t.name.clone(),
            image: t.image_name.clone(),
            args: t.docker_start_cmd.join(" "),
            disk: t.container_disk_in_gb,
            mounts: mounts(t.volume_in_gb, &t.volume_mount_path),
            ports: t.ports.clone(),
            env: t.env.clone(),
            registry: t.registry.clone(),
            serverless: t.is_serverless,
            public: t.public,
            category: t.category,
            start_ssh: t.start_ssh,
            start_jupyter: t.start_jupyter,
            allowed_cuda_versions: t.allowed_cuda_versions.clone(),
        }
    }
}

impl From<&PublicTemplate> for TemplateView {
    fn from(t: &PublicTemplate) -> Self {
        Self {
            id: t.id.clone(),
            name: t.name.clone(),
            image: t.image_name.clone(),
            args: t.docker_args.clone(),
            disk: t.container_disk_in_gb,
            mounts: mounts(t.volume_in_gb, &t.volume_mount_path),
            ports: t.ports.clone(),
            env: t.env.clone(),
            registry: None,
            serverless: t.is_serverless,
            public: true,
            category: t.category,
            start_ssh: t.start_ssh,
            start_jupyter: t.start_jupyter,
            allowed_cuda_versions: t.allowed_cuda_versions.clone(),
        }
    }
}

// ---------------------------------------------------------------- bodies

/// `TemplateMounts`: a single persistent mount.
#[derive(Debug, Clone, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
struct MountsBody {
    #[serde(default, deserialize_with = "not_null")]
    persistent: Option<PersistentBody>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(remote = "Self", deny_unknown_fields)]
struct PersistentBody {
    #[serde(deserialize_with = "integer")]
    size: i64,
    path: String,
}

/// `CreateTemplateRequest` (`name` and `image` required) and `UpdateTemplateRequest`
/// (everything optional) share their fields.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TemplateBody {
    #[serde(default, deserialize_with = "not_null")]
    name: Option<String>,
    #[serde(default, deserialize_with = "not_null")]
    image: Option<String>,
    #[serde(default, deserialize_with = "not_null")]
    args: Option<String>,
    #[serde(default, deserialize_with = "opt_integer")]
    disk: Option<i64>,
    #[serde(default, deserialize_with = "not_null")]
    env: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "not_null")]
    ports: Option<Vec<String>>,
    #[serde(default, deserialize_with = "nullable")]
    registry: Option<Option<String>>,
    #[serde(default, deserialize_with = "not_null")]
    allowed_cuda_versions: Option<Vec<String>>,
    #[serde(default, deserialize_with = "not_null")]
    category: Option<TemplateCategory>,
    #[serde(default, deserialize_with = "not_null")]
    mounts: Option<MountsBody>,
    #[serde(default, deserialize_with = "not_null")]
    public: Option<bool>,
    #[serde(default, deserialize_with = "not_null")]
    serverless: Option<bool>,
    #[serde(default, deserialize_with = "not_null")]
    start_jupyter: Option<bool>,
    #[serde(default, deserialize_with = "not_null")]
    start_ssh: Option<bool>,
}

impl TemplateBody {
    fn container(&self) -> ContainerPatch {
        container_patch_of!(self)
    }

    /// The document's schema beyond types: required fields on create, lengths, bounds,
    /// patterns.
    fn schema(&self, creating: bool) -> V2Result<()> {
        let mut v = Violations::new();
        if creating {
            v.check(self.name.is_some(), "name", "required");
            v.check(self.image.is_some(), "image", "required");
        }
        if let Some(name) = &self.name {
            v.check(!name.is_empty(), "name", "must not be empty");
        }
        self.container().schema(&mut v);
        if let Some(p) = self.mounts.as_ref().and_then(|m| m.persistent.as_ref()) {
            v.range(Some(p.size), "mounts.persistent.size", Some(10), None);
        }
        for (i, c) in self.allowed_cuda_versions.iter().flatten().enumerate() {
            v.check(
                rules::is_major_minor(c),
                &format!("allowedCudaVersions[{i}]"),
                "must be major.minor, e.g. 12.8",
            );
        }
        v.finish()
    }

    /// Rules against the world.
    fn rules(&self, world: &World) -> V2Result<()> {
        // No rule on the name: the document does not ask template names to be unique
        // (v1's surface, rest.rs, refuses a taken one on its own).
        let mut r = Rules::new();
        self.container().rules(world, &mut r);
        // The persistent size has no upper bound (the document gives only `minimum: 10`).
        if let Some(p) = self.mounts.as_ref().and_then(|m| m.persistent.as_ref()) {
            r.check(
                p.path.starts_with('/'),
                "mounts.persistent.path",
                "must be an absolute path",
            );
        }
        r.finish()
    }

    /// Writes the present fields over `t`.
    fn apply(self, t: &mut Template) {
        let mut c = endpoints::snapshot(t);
        self.container().apply(&mut c);
        t.image_name = c.image;
        t.docker_start_cmd = c.args.split_whitespace().map(str::to_string).collect();
        t.container_disk_in_gb = c.disk;
        t.env = c.env;
        t.ports = c.ports;
        t.registry = c.registry;
        if let Some(name) = self.name {
            t.name = name;
        }
        if let Some(p) = self.mounts.and_then(|m| m.persistent) {
            t.volume_in_gb = p.size as u64;
            t.volume_mount_path = p.path;
        }
        if let Some(v) = self.allowed_cuda_versions {
            t.allowed_cuda_versions = v;
        }
        if let Some(v) = self.category {
            t.category = v;
        }
        if let Some(v) = self.public {
            t.public = v;
        }
        if let Some(v) = self.serverless {
            t.is_serverless = v;
        }
        if let Some(v) = self.start_jupyter {
            t.start_jupyter = v;
        }
        if let Some(v) = self.start_ssh {
            t.start_ssh = v;
        }
    }
}

/// A template with the create defaults of the document (`category` NVIDIA, `startSsh` and
/// `startJupyter` true, not public, not serverless, disk 10 GB).
fn blank(id: String) -> Template {
    Template {
        id,
        name: String::new(),
        image_name: String::new(),
        is_serverless: false,
        container_disk_in_gb: 10,
        volume_in_gb: 0,
        volume_mount_path: "/workspace".into(),
        ports: Vec::new(),
        env: BTreeMap::new(),
        docker_start_cmd: Vec::new(),
        registry: None,
        public: false,
        category: TemplateCategory::Nvidia,
        start_ssh: true,
        start_jupyter: true,
        allowed_cuda_versions: Vec::new(),
        bound_endpoint: None,
    }
}

/// Validates a create against the world and builds the template.
pub fn template_from_create(bytes: &[u8], world: &World) -> V2Result<Template> {
    let body: TemplateBody = parse_body(bytes)?;
    body.schema(true)?;
    body.rules(world)?;
    let mut t = blank(ids::short(10));
    body.apply(&mut t);
    Ok(t)
}

/// Validates a patch against the world and applies it to a copy of `current`.
pub fn template_update(bytes: &[u8], current: &Template, world: &World) -> V2Result<Template> {
    let body: TemplateBody = parse_body(bytes)?;
    body.schema(false)?;
    body.rules(world)?;
    let mut t = current.clone();
    body.apply(&mut t);
    Ok(t)
}

// ---------------------------------------------------------------- handlers

async fn create(State(app): State<App>, WriteBody(body): WriteBody) -> V2Result<Response> {
    let mut world = app.world.lock();
    let t = template_from_create(&body, &world)?;
    world.templates.insert(t.id.clone(), t.clone());
    tracing::info!(template = %t.id, "template created (v2)");
    Ok((StatusCode::CREATED, Json(TemplateView::from(&t))).into_response())
}

async fn get_one(
    State(app): State<App>,
    _caller: Caller,
    Path(id): Path<String>,
) -> V2Result<Json<TemplateView>> {
    let world = app.world.lock();
    if let Some(t) = world.templates.get(&id) {
        return Ok(Json(TemplateView::from(t)));
    }
    world
        .public_templates
        .iter()
        .find(|t| t.id == id)
        .map(|t| Json(TemplateView::from(t)))
        .ok_or_else(|| TEMPLATES.not_found(&id).into())
}

async fn update(
    State(app): State<App>,
    Path(id): Path<String>,
    WriteBody(body): WriteBody,
) -> V2Result<Json<TemplateView>> {
    let mut world = app.world.lock();
    let current = TEMPLATES.find(&world, &id)?;
    let t = template_update(&body, current, &world)?;
    world.templates.insert(id, t.clone());
    Ok(Json(TemplateView::from(&t)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::Fixtures;

    fn world() -> World {
        World::from_fixtures(&Fixtures::built_in()).unwrap()
    }

    #[test]
    fn create_takes_the_document_defaults() {
        let t = template_from_create(br#"{"name":"t","image":"img:1"}"#, &world()).unwrap();
        let v = TemplateView::from(&t);
        assert_eq!(v.category, TemplateCategory::Nvidia);
        assert!(v.start_ssh && v.start_jupyter);
        assert!(!v.public && !v.serverless);
        assert_eq!(v.disk, 10);
        assert_eq!(v.mounts.persistent, None);
        assert_eq!(v.registry, None);
    }

    #[test]
    fn fields_map_onto_the_v1_record() {
        let t = template_from_create(
            br#"{"name":"t","image":"img:1","args":"python serve.py","disk":30,
                "mounts":{"persistent":{"size":50,"path":"/data"}},"serverless":true}"#,
            &world(),
        )
        .unwrap();
        assert_eq!(t.image_name, "img:1");
        assert_eq!(t.docker_start_cmd, vec!["python", "serve.py"]);
        assert_eq!((t.container_disk_in_gb, t.volume_in_gb), (30, 50));
        assert_eq!(t.volume_mount_path, "/data");
        assert!(t.is_serverless);
        assert_eq!(TemplateView::from(&t).args, "python serve.py");
    }

    #[test]
    fn schema_is_422_rules_are_400() {
        let w = world();
        for (body, status, field) in [
            (r#"{"image":"i"}"#, 422, "name"),
            (r#"{"name":"","image":"i"}"#, 422, "name"),
            (r#"{"name":"t","image":"i","disk":0}"#, 422, "disk"),
            (r#"{"name":"t","image":"i","colour":1}"#, 422, "colour"),
            (
                r#"{"name":"t","image":"i","category":"TPU"}"#,
                422,
                "category",
            ),
            (
                r#"{"name":"t","image":"i","mounts":{"persistent":{"size":5,"path":"/d"}}}"#,
                422,
                "mounts.persistent.size",
            ),
            (
                r#"{"name":"t","image":"i","mounts":{"network":[]}}"#,
                422,
                "mounts.network",
            ),
            (
                r#"{"name":"t","image":"i","allowedCudaVersions":["12"]}"#,
                422,
                "allowedCudaVersions[0]",
            ),
            (r#"{"name":"t","image":"i","image2":null}"#, 422, "image2"),
            (r#"{"name":"t","image":"i","ports":["x"]}"#, 400, "ports"),
            (
                r#"{"name":"t","image":"i","registry":"nope"}"#,
                400,
                "registry",
            ),
        ] {
            let p = template_from_create(body.as_bytes(), &w).unwrap_err();
            assert_eq!(p.status.as_u16(), status, "{body}: {p:?}");
            assert!(
                p.errors.iter().any(|e| e.starts_with(field)),
                "{body}: {:?}",
                p.errors
            );
        }
    }

    #[test]
    fn patch_changes_only_what_it_names() {
        let w = world();
        let current = w.templates["tmpl-pytorch"].clone();
        let t = template_update(br#"{"image":"new:2","mounts":{}}"#, &current, &w).unwrap();
        assert_eq!(t.image_name, "new:2");
        assert_eq!(t.volume_in_gb, current.volume_in_gb);
        assert_eq!(t.ports, current.ports);
    }

    /// The document does not ask template names to be unique: a create or a rename to a
    /// name another template has is accepted (v1's surface still refuses it).
    #[test]
    fn a_name_another_template_has_is_accepted() {
        let w = world();
        let t = template_from_create(br#"{"name":"pytorch-2.4","image":"i"}"#, &w).unwrap();
        assert_eq!(t.name, "pytorch-2.4");
        let current = w.templates["tmpl-pytorch"].clone();
        let t = template_update(br#"{"name":"serverless-worker-base"}"#, &current, &w).unwrap();
        assert_eq!(t.name, "serverless-worker-base");
    }

    /// The document bounds `disk` and `mounts.persistent.size` only from below: values far
    /// above v1's limits (1000 GB disk, 4000 GB volume) are kept as sent, on create and update.
    #[test]
    fn sizes_have_no_upper_bound() {
        let w = world();
        let t = template_from_create(
            br#"{"name":"t","image":"i","disk":1099511627776,
                "mounts":{"persistent":{"size":9223372036854775807,"path":"/d"}}}"#,
            &w,
        )
        .unwrap();
        assert_eq!(
            (t.container_disk_in_gb, t.volume_in_gb),
            (1 << 40, i64::MAX as u64)
        );
        let u = template_update(br#"{"disk":1001}"#, &t, &w).unwrap();
        assert_eq!(u.container_disk_in_gb, 1001);
        let shown = serde_json::to_value(TemplateView::from(&u)).unwrap();
        assert_eq!(shown["disk"], 1001);
        assert_eq!(shown["mounts"]["persistent"]["size"], i64::MAX);
    }

    /// `mounts` and `mounts.persistent` are objects; an array (which serde would read as a
    /// struct, field by field) is a 422 naming the field, on update as on create.
    #[test]
    fn mounts_are_objects_not_arrays() {
        let w = world();
        let current = w.templates["tmpl-pytorch"].clone();
        for (body, field) in [
            (r#"{"mounts":[]}"#, "mounts: must be an object"),
            (
                r#"{"mounts":{"persistent":[20,"/d"]}}"#,
                "mounts.persistent: must be an object",
            ),
        ] {
            let p = template_update(body.as_bytes(), &current, &w).unwrap_err();
            assert_eq!(p.status.as_u16(), 422, "{body}: {p:?}");
            assert!(p.errors[0].starts_with(field), "{body}: {:?}", p.errors);
        }
        let p = template_from_create(br#"{"name":"t","image":"i","mounts":[]}"#, &w).unwrap_err();
        assert_eq!(p.status.as_u16(), 422, "{p:?}");
    }
}
