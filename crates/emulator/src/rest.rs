//! The REST management API under `/v1` (bearer auth): endpoints, network volumes, templates
//! (container registry credentials are in `rest_registries`).
//!
//! Every write is validated in full before anything changes; a refused request leaves the
//! state exactly as it was.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};

use super::collection::{ENDPOINTS, Keyed, TEMPLATES, VOLUMES};
use super::error::ApiError;
use super::ids;
use super::model::{
    EndpointRecord, NetworkVolume, ScalerType, Template, TemplateCategory, VolumeType,
};
use super::pods::parse_ports;
use super::state::{App, World};
use super::validate::{Fields, check, parse_object};
use super::world::endpoints;

type Result<T> = std::result::Result<T, ApiError>;

pub const MAX_VOLUME_GB: i64 = 4000;
pub const MAX_WORKERS: i64 = 1000;

// ---------------------------------------------------------------- v1 shapes

// The records carry REST v2's fields too; v1 answers show exactly v1's.

/// An endpoint as v1 shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct V1Endpoint<'a> {
    id: &'a str,
    name: &'a str,
    template_id: &'a str,
    gpu_type_ids: &'a [String],
    gpu_count: u64,
    workers_min: u64,
    workers_max: u64,
    idle_timeout: u32,
    scaler_type: ScalerType,
    scaler_value: u64,
    execution_timeout_ms: u64,
    flashboot: bool,
    network_volume_id: &'a Option<String>,
}

impl<'a> From<&'a EndpointRecord> for V1Endpoint<'a> {
    fn from(e: &'a EndpointRecord) -> Self {
        Self {
            id: &e.id,
            name: &e.name,
            template_id: &e.template_id,
            gpu_type_ids: &e.gpu_type_ids,
            gpu_count: e.gpu_count,
            workers_min: e.workers_min,
            workers_max: e.workers_max,
            idle_timeout: e.idle_timeout,
            scaler_type: e.scaler_type,
            scaler_value: e.scaler_value,
            execution_timeout_ms: e.execution_timeout_ms,
            flashboot: e.flashboot,
            network_volume_id: &e.network_volume_id,
        }
    }
}

/// A network volume as v1 shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct V1Volume<'a> {
    id: &'a str,
    name: &'a str,
    size: u32,
    data_center_id: &'a str,
}

impl<'a> From<&'a NetworkVolume> for V1Volume<'a> {
    fn from(v: &'a NetworkVolume) -> Self {
        Self {
            id: &v.id,
            name: &v.name,
            size: v.size,
            data_center_id: &v.data_center_id,
        }
    }
}

/// A template as v1 shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct V1Template<'a> {
    id: &'a str,
    name: &'a str,
    image_name: &'a str,
    is_serverless: bool,
    container_disk_in_gb: u64,
    volume_in_gb: u64,
    volume_mount_path: &'a str,
    ports: &'a [String],
    env: &'a std::collections::BTreeMap<String, String>,
    docker_start_cmd: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    container_registry_auth_id: Option<&'a str>,
    is_public: bool,
    category: TemplateCategory,
}

impl<'a> From<&'a Template> for V1Template<'a> {
    fn from(t: &'a Template) -> Self {
        Self {
            id: &t.id,
            name: &t.name,
            image_name: &t.image_name,
            is_serverless: t.is_serverless,
            container_disk_in_gb: t.container_disk_in_gb,
            volume_in_gb: t.volume_in_gb,
            volume_mount_path: &t.volume_mount_path,
            ports: &t.ports,
            env: &t.env,
            docker_start_cmd: &t.docker_start_cmd,
            container_registry_auth_id: t.registry.as_deref(),
            is_public: t.public,
            category: t.category,
        }
    }
}

// ---------------------------------------------------------------- every collection

/// A record as v1 shows it.
pub trait V1Shown: Keyed {
    fn v1(&self) -> impl Serialize + '_;
}

impl V1Shown for EndpointRecord {
    fn v1(&self) -> impl Serialize + '_ {
        V1Endpoint::from(self)
    }
}

impl V1Shown for NetworkVolume {
    fn v1(&self) -> impl Serialize + '_ {
        V1Volume::from(self)
    }
}

impl V1Shown for Template {
    fn v1(&self) -> impl Serialize + '_ {
        V1Template::from(self)
    }
}

/// `GET` of a whole collection.
pub async fn list<R: V1Shown>(State(app): State<App>, headers: HeaderMap) -> Result<Response> {
    app.keys.bearer(&headers)?;
    // Pointers under the lock, the JSON after it (see `record_map`), on the blocking pool.
    let answer = super::v2::listing::written_off_the_workers(move || {
        let records = (R::COLLECTION.records)(&app.world.lock()).shared();
        super::v2::listing::list_json(None, &records, 96, |r, out| {
            serde_json::to_writer(out, &r.v1())
        })
    });
    Ok(answer.await)
}

/// `GET` of one record.
pub async fn get_one<R: V1Shown>(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response> {
    app.keys.bearer(&headers)?;
    let world = app.world.lock();
    Ok(Json(R::COLLECTION.find(&world, &id)?.v1()).into_response())
}

/// `DELETE` of a record nothing uses any more (endpoints have their own: their workers go
/// too).
pub async fn delete_unused<R: Keyed>(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response> {
    let what = format!("delete {}s", R::COLLECTION.noun);
    authorize_write(&app, &headers, &what)?;
    R::COLLECTION.delete_unused(&mut app.world.lock(), &id)?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// A record v1 creates from the body alone (an endpoint has its own create: a runtime
/// starts with it).
pub trait V1Created: V1Shown + Clone {
    /// Validates a create body against the world and builds the record.
    fn from_create(map: &Map<String, Value>, world: &World) -> Result<Self>;
    fn id(&self) -> &str;
}

/// `POST` of a new record.
pub async fn create<R: V1Created>(
    State(app): State<App>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    let what = format!("create {}s", R::COLLECTION.noun);
    authorize_write(&app, &headers, &what)?;
    let map = parse_object(&body, false)?;
    let mut world = app.world.lock();
    let record = R::from_create(&map, &world)?;
    (R::COLLECTION.records_mut)(&mut world).insert(record.id().to_owned(), record.clone());
    Ok(Json(record.v1()).into_response())
}

/// The check before every write: a known key (401) that may write (403 naming `what`).
fn authorize_write(app: &App, headers: &HeaderMap, what: &str) -> Result<()> {
    app.keys.bearer(headers)?.require_write(what)?;
    Ok(())
}

// ---------------------------------------------------------------- endpoints

/// Validates an endpoint create (`existing` = None) or update body against the world.
pub fn endpoint_from_body(
    map: &Map<String, Value>,
    existing: Option<&EndpointRecord>,
    world: &World,
) -> Result<EndpointRecord> {
    let creating = existing.is_none();
    let mut f = Fields::new(map);
    let name = if creating {
        f.req_string("name")
    } else {
        f.opt_string("name")
    };
    if name.as_ref().is_some_and(|n| n.chars().count() > 191) {
        f.fail("name", "must be at most 191 characters");
    }
    let template_id = if creating {
        f.req_string("templateId")
    } else {
        f.opt_string("templateId")
    };
    if let Some(t) = &template_id
        && !world.templates.contains_key(t)
    {
        f.fail("templateId", format!("unknown template {t:?}"));
    }
    let gpu_type_ids = f.opt_strings("gpuTypeIds");
    match &gpu_type_ids {
        None if creating && !map.contains_key("gpuTypeIds") => f.fail("gpuTypeIds", "required"),
        Some(ids) if ids.is_empty() => f.fail("gpuTypeIds", "must name at least one GPU type"),
        Some(ids) => {
            for id in ids {
                if world.cloud.gpu_type(id).is_none() {
                    f.fail("gpuTypeIds", format!("unknown GPU type {id:?}"));
                }
            }
            let mut sorted = ids.clone();
            sorted.sort();
            sorted.dedup();
            if sorted.len() != ids.len() {
                f.fail("gpuTypeIds", "must not repeat a GPU type");
            }
        }
        None => {}
    }
    let gpu_count = f.opt_int("gpuCount", 1, 8);
    let workers_min = f.opt_int("workersMin", 0, MAX_WORKERS);
    let workers_max = f.opt_int("workersMax", 0, MAX_WORKERS);
    let idle_timeout = f.opt_int("idleTimeout", 1, 3600);
    let scaler_type = f.opt_string("scalerType").and_then(|s| {
        let parsed = ScalerType::parse(&s);
        if parsed.is_none() {
            f.fail("scalerType", "must be QUEUE_DELAY or REQUEST_COUNT");
        }
        parsed
    });
    let scaler_value = f.opt_int("scalerValue", 1, 3600);
    let execution_timeout_ms = f.opt_int("executionTimeoutMs", 5_000, 7 * 86_400_000);
    let flashboot = f.opt_bool("flashboot");
    let network_volume_id = f.opt_string("networkVolumeId");
    if let Some(v) = &network_volume_id
        && !world.volumes.contains_key(v)
    {
        f.fail("networkVolumeId", format!("unknown network volume {v:?}"));
    }
    let mut errors = f.finish();

    let base = existing
        .cloned()
        .unwrap_or_else(|| EndpointRecord::with_defaults(ids::short(14)));
    let record = EndpointRecord {
        id: base.id,
        name: name.unwrap_or(base.name),
        template_id: template_id.unwrap_or(base.template_id),
        gpu_type_ids: gpu_type_ids.unwrap_or(base.gpu_type_ids),
        gpu_count: gpu_count.map_or(base.gpu_count, |v| v as u64),
        workers_min: workers_min.map_or(base.workers_min, |v| v as u64),
        workers_max: workers_max.map_or(base.workers_max, |v| v as u64),
        idle_timeout: idle_timeout.map_or(base.idle_timeout, |v| v as u32),
        scaler_type: scaler_type.unwrap_or(base.scaler_type),
        scaler_value: scaler_value.map_or(base.scaler_value, |v| v as u64),
        execution_timeout_ms: execution_timeout_ms.map_or(base.execution_timeout_ms, |v| v as u64),
        flashboot: flashboot.unwrap_or(base.flashboot),
        network_volume_id: if map.contains_key("networkVolumeId") {
            network_volume_id
        } else {
            base.network_volume_id
        },
        ..base
    };
    if record.workers_min > record.workers_max && errors.is_empty() {
        errors.push(format!(
            "workersMin: must not be greater than workersMax ({} > {})",
            record.workers_min, record.workers_max
        ));
    }
    check(errors)?;
    Ok(record)
}

pub async fn create_endpoint(
    State(app): State<App>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response> {
    authorize_write(&app, &headers, "create endpoints")?;
    let map = parse_object(&body, false)?;
    let now = app.clock.now();
    let record = {
        let mut world = app.world.lock();
        let mut record = endpoint_from_body(&map, None, &world)?;
        endpoints::hydrate(&mut record, &world, now);
        world.endpoints.insert(record.id.clone(), record.clone());
        record
    };
    app.add_runtime(&record);
    tracing::info!(endpoint = %record.id, "endpoint created");
    Ok(Json(V1Endpoint::from(&record)).into_response())
}

pub async fn update_endpoint(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response> {
    authorize_write(&app, &headers, "update endpoints")?;
    let now = app.clock.now();
    let (record, released) = {
        let mut world = app.world.lock();
        let existing = ENDPOINTS.find(&world, &id)?.clone();
        let map = parse_object(&body, false)?;
        let mut record = endpoint_from_body(&map, Some(&existing), &world)?;
        endpoints::follow_v1_update(&existing, &mut record, &world);
        let released = endpoints::commit_update(&mut world, &existing, &mut record, now);
        (record, released)
    };
    app.update_runtime(&record, released);
    Ok(Json(V1Endpoint::from(&record)).into_response())
}

pub async fn delete_endpoint(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
) -> Result<Response> {
    authorize_write(&app, &headers, "delete endpoints")?;
    let removed = ENDPOINTS.delete_unused(&mut app.world.lock(), &id)?;
    app.retire_runtime(&removed);
    Ok(StatusCode::NO_CONTENT.into_response())
}

// ---------------------------------------------------------------- network volumes

pub fn volume_from_create(map: &Map<String, Value>, world: &World) -> Result<NetworkVolume> {
    let mut f = Fields::new(map);
    let name = f.req_string("name");
    let size = f.req_int("size", 1, MAX_VOLUME_GB);
    let dc = f.req_string("dataCenterId");
    if let Some(dc) = &dc
        && !world.data_centers.iter().any(|d| &d.id == dc)
    {
        f.fail("dataCenterId", format!("unknown data center {dc:?}"));
    }
    check(f.finish())?;
    let data_center_id = dc.unwrap_or_default();
    Ok(NetworkVolume {
        id: ids::unused(10, |id| world.volumes.contains_key(id)),
        name: name.unwrap_or_default(),
        size: size.unwrap_or_default() as u32,
        volume_type: default_volume_type(world, &data_center_id),
        data_center_id,
    })
}

/// The storage tier a volume gets when its create does not name one: the data center's
/// primary tier.
pub fn default_volume_type(world: &World, data_center_id: &str) -> VolumeType {
    world
        .data_centers
        .iter()
        .find(|d| d.id == data_center_id)
        .and_then(|d| d.network_volume_types.first().copied())
        .unwrap_or(VolumeType::Standard)
}

/// NetworkVolumeUpdateInput: name optional; size optional, 0..4000, greater than now.
pub fn volume_update(map: &Map<String, Value>, current: &NetworkVolume) -> Result<NetworkVolume> {
    let mut f = Fields::new(map);
    let name = f.opt_string("name");
    let size = f.opt_int("size", 0, MAX_VOLUME_GB);
    if let Some(size) = size
        && size <= i64::from(current.size)
    {
        f.fail(
            "size",
            format!(
                "must be greater than the current size of {} GB (volumes only grow)",
                current.size
            ),
        );
    }
    check(f.finish())?;
    let mut updated = current.clone();
    if let Some(name) = name {
        updated.name = name;
    }
    if let Some(size) = size {
        updated.size = size as u32;
    }
    Ok(updated)
}

pub async fn update_volume(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response> {
    authorize_write(&app, &headers, "update network volumes")?;
    let mut world = app.world.lock();
    let current = VOLUMES.find(&world, &id)?;
    let map = parse_object(&body, false)?;
    let updated = volume_update(&map, current)?;
    world.volumes.insert(id, updated.clone());
    Ok(Json(V1Volume::from(&updated)).into_response())
}

impl V1Created for NetworkVolume {
    fn from_create(map: &Map<String, Value>, world: &World) -> Result<Self> {
        volume_from_create(map, world)
    }

    fn id(&self) -> &str {
        &self.id
    }
}

// ---------------------------------------------------------------- templates

pub fn template_from_create(map: &Map<String, Value>, world: &World) -> Result<Template> {
    let mut f = Fields::new(map);
    let name = f.req_string("name");
    if let Some(n) = &name
        && world.templates.values().any(|t| &t.name == n)
    {
        f.fail("name", format!("a template named {n:?} already exists"));
    }
    let image_name = f.req_string("imageName");
    let is_serverless = f.opt_bool("isServerless");
    let container_disk = f.opt_int("containerDiskInGb", 1, 1000);
    let volume = f.opt_int("volumeInGb", 0, MAX_VOLUME_GB);
    let mount = f.opt_string("volumeMountPath");
    let ports = f.opt_strings("ports");
    if let Some(ports) = &ports
        && let Err(e) = parse_ports(&ports.join(","))
    {
        f.fail("ports", e.to_string().trim_start_matches("ports: "));
    }
    let env = template_env(&mut f).unwrap_or_default();
    let start_cmd = f.opt_strings("dockerStartCmd");
    let registry = template_registry(&mut f, world);
    let public = f.opt_bool("isPublic");
    let category = template_category(&mut f);
    check(f.finish())?;
    Ok(Template {
        id: ids::short(10),
        name: name.unwrap_or_default(),
        image_name: image_name.unwrap_or_default(),
        is_serverless: is_serverless.unwrap_or(false),
        container_disk_in_gb: container_disk.map_or(10, |v| v as u64),
        volume_in_gb: volume.map_or(0, |v| v as u64),
        volume_mount_path: mount.unwrap_or_else(|| "/workspace".into()),
        ports: ports.unwrap_or_default(),
        env,
        docker_start_cmd: start_cmd.unwrap_or_default(),
        registry,
        public: public.unwrap_or(false),
        category: category.unwrap_or_default(),
        start_ssh: true,
        start_jupyter: true,
        allowed_cuda_versions: Vec::new(),
        bound_endpoint: None,
    })
}

impl V1Created for Template {
    fn from_create(map: &Map<String, Value>, world: &World) -> Result<Self> {
        template_from_create(map, world)
    }

    fn id(&self) -> &str {
        &self.id
    }
}

/// `containerRegistryAuthId`, which must name a credential of the account (empty: none).
fn template_registry(f: &mut Fields<'_>, world: &World) -> Option<String> {
    let id = f.opt_string("containerRegistryAuthId")?;
    if id.is_empty() {
        // An update's way to say "no credential".
        return None;
    }
    if world.registries.contains_key(&id) {
        Some(id)
    } else {
        f.fail(
            "containerRegistryAuthId",
            format!("unknown container registry auth {id:?}"),
        );
        None
    }
}

/// `category`: `NVIDIA`, `AMD` or `CPU`.
fn template_category(f: &mut Fields<'_>) -> Option<TemplateCategory> {
    match f.opt_string("category")?.as_str() {
        "NVIDIA" => Some(TemplateCategory::Nvidia),
        "AMD" => Some(TemplateCategory::Amd),
        "CPU" => Some(TemplateCategory::Cpu),
        other => {
            f.fail(
                "category",
                format!("{other:?} is not one of NVIDIA, AMD, CPU"),
            );
            None
        }
    }
}

/// Validates a `TemplateUpdateInput` against the world and applies it to a copy of
/// `current`. The document's update takes neither `isServerless` nor `category`: those
/// stay as they were made.
pub fn template_update(
    map: &Map<String, Value>,
    current: &Template,
    world: &World,
) -> Result<Template> {
    let mut f = Fields::new(map);
    let name = f.opt_string("name");
    if let Some(n) = &name
        && world
            .templates
            .values()
            .any(|t| &t.name == n && t.id != current.id)
    {
        f.fail("name", format!("a template named {n:?} already exists"));
    }
    let image_name = f.opt_string("imageName");
    let container_disk = f.opt_int("containerDiskInGb", 1, 1000);
    let volume = f.opt_int("volumeInGb", 0, MAX_VOLUME_GB);
    let mount = f.opt_string("volumeMountPath");
    let ports = f.opt_strings("ports");
    if let Some(ports) = &ports
        && !ports.is_empty()
        && let Err(e) = parse_ports(&ports.join(","))
    {
        f.fail("ports", e.to_string().trim_start_matches("ports: "));
    }
    let env = template_env(&mut f);
    let start_cmd = f.opt_strings("dockerStartCmd");
    let registry = template_registry(&mut f, world);
    let registry_present = f.present("containerRegistryAuthId");
    let public = f.opt_bool("isPublic");
    check(f.finish())?;
    let mut t = current.clone();
    if let Some(v) = name {
        t.name = v;
    }
    if let Some(v) = image_name {
        t.image_name = v;
    }
    if let Some(v) = container_disk {
        t.container_disk_in_gb = v as u64;
    }
    if let Some(v) = volume {
        t.volume_in_gb = v as u64;
    }
    if let Some(v) = mount {
        t.volume_mount_path = v;
    }
    if let Some(v) = ports {
        t.ports = v;
    }
    if let Some(v) = env {
        t.env = v;
    }
    if let Some(v) = start_cmd {
        t.docker_start_cmd = v;
    }
    if registry_present {
        t.registry = registry;
    }
    if let Some(v) = public {
        t.public = v;
    }
    Ok(t)
}

/// `env`: an object of string values.
fn template_env(f: &mut Fields<'_>) -> Option<std::collections::BTreeMap<String, String>> {
    let obj = f.opt_object("env")?;
    let mut env = std::collections::BTreeMap::new();
    for (k, v) in obj {
        match v.as_str() {
            Some(s) => {
                env.insert(k.clone(), s.to_string());
            }
            None => f.fail("env", format!("value of {k:?} must be a string")),
        }
    }
    Some(env)
}

/// `PATCH /templates/{id}` and its synonym `POST /templates/{id}/update`.
pub async fn update_template(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response> {
    authorize_write(&app, &headers, "update templates")?;
    let map = parse_object(&body, false)?;
    let mut world = app.world.lock();
    let current = TEMPLATES.find(&world, &id)?;
    let updated = template_update(&map, current, &world)?;
    world.templates.insert(id, updated.clone());
    Ok(Json(V1Template::from(&updated)).into_response())
}

#[cfg(test)]
mod tests;
