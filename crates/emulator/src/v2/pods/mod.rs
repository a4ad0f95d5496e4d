//! `/v2/pods`: create, list, read, update, delete, lifecycle actions and logs of the same
//! pods GraphQL deploys, stops and lists (the one `Cloud` of the world).
//!
//! A create places ONE GPU type (or one CPU flavor): no stock there is a 400 with the
//! platform's capacity wording, never a fallback. Status runs PROVISIONING -> STARTING ->
//! RUNNING over the emulator's pod boot time. Instant Cluster members (`/v2/clusters`) are
//! listed only with `includeClusterPods=true`, and update, delete and actions refuse them
//! (409): their cluster manages them.

mod body;
mod global;
mod logs;
mod view;

pub use body::*;
pub use logs::*;
pub use view::*;

use std::collections::BTreeMap;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::catalog::public_template;
use super::event_stream;
use super::problem::{Problem, V2Result};
use super::request::{
    Caller, Int, V2Query, Violations, WriteBody, Writer, not_null, nullable, parse_body,
};
use super::timestamp;
use crate::clock::Millis;
use crate::pods::{
    Cloud, CloudChoice, CpuRequest, DeployRequest, DesiredStatus, Pod, PodError, assign_ports,
    parse_ports,
};
use crate::state::{App, World};

pub fn routes() -> Router<App> {
    Router::new()
        .route("/v2/pods", get(list).post(create))
        .route("/v2/pods/{id}", get(read).patch(update).delete(delete))
        .route("/v2/pods/{id}/action", post(action))
        .route("/v2/pods/{id}/logs", get(logs))
}

// ------------------------------------------------------------------ status

/// Lifecycle status of a pod, as the document spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodStatus {
    Provisioning,
    Starting,
    Running,
    Exited,
}

impl PodStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Provisioning => "PROVISIONING",
            Self::Starting => "STARTING",
            Self::Running => "RUNNING",
            Self::Exited => "EXITED",
        }
    }

    /// The transitions the document allows from this status.
    pub fn actions(self, locked: bool) -> &'static [&'static str] {
        match self {
            Self::Running if locked => &["restart", "terminate"],
            Self::Running => &["stop", "restart", "terminate"],
            Self::Exited => &["start", "terminate"],
            Self::Provisioning | Self::Starting if locked => &["terminate"],
            Self::Provisioning | Self::Starting => &["stop", "terminate"],
        }
    }
}

/// A first start spends half the boot time being provisioned (machine, image) and half
/// starting the container; later starts (resume, restart) only start the container.
pub fn status_of(p: &Pod, now: Millis, boot_ms: u64) -> PodStatus {
    match (p.desired, p.started_at) {
        (DesiredStatus::Exited, _) | (_, None) => PodStatus::Exited,
        (DesiredStatus::Running, Some(started)) => {
            let elapsed = now.saturating_sub(started);
            // A start that fails keeps trying: the pod never leaves STARTING.
            if elapsed >= boot_ms && p.start_failure.is_none() {
                PodStatus::Running
            } else if p.first_start() && elapsed < boot_ms / 2 {
                PodStatus::Provisioning
            } else {
                PodStatus::Starting
            }
        }
    }
}

// ------------------------------------------------------------------ handlers

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ListQuery {
    #[serde(default)]
    include_cluster_pods: Option<bool>,
}

async fn list(State(app): State<App>, _caller: Caller, V2Query(q): V2Query<ListQuery>) -> Response {
    let include = q.include_cluster_pods.unwrap_or(false);
    super::listing::written_off_the_workers(move || pods_listing_with(&app, include).to_json())
        .await
}

async fn read(
    State(app): State<App>,
    _caller: Caller,
    Path(id): Path<String>,
) -> V2Result<Response> {
    let now = app.clock.now();
    let world = app.world.lock();
    let pod = world.cloud.pod(&id).ok_or_else(|| pod_not_found(&id))?;
    Ok(axum::Json(pod_json(&app, &world, pod, now)).into_response())
}

async fn create(State(app): State<App>, WriteBody(body): WriteBody) -> V2Result<Response> {
    let b: CreatePodBody = parse_body(&body)?;
    check_create(&b)?;
    let now = app.clock.now();
    let mut world = app.world.lock();
    let req = deploy_request(&world, &b)?;
    let id = world
        .cloud
        .deploy(req, now)
        .map_err(placement_problem)?
        .id
        .clone();
    let pod = world.cloud.pod_mut(&id).expect("just deployed");
    pod.registry = b.registry.clone().flatten();
    pod.global_networking = b.global_networking.unwrap_or(false);
    world.cloud.rearm_start(&id);
    let pod = world.cloud.pod_mut(&id).expect("just deployed");
    pod.template_id = None;
    if b.start_jupyter == Some(true) {
        add_jupyter_password(pod);
    }
    tracing::info!(pod = %id, "pod created over REST v2");
    let pod = world.cloud.pod(&id).expect("just deployed");
    let body = pod_json(&app, &world, pod, now);
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

/// `startJupyter`: a Jupyter password in the env, unless the pod already has one.
pub(crate) fn add_jupyter_password(pod: &mut Pod) {
    if !pod.env.iter().any(|e| e.starts_with("JUPYTER_PASSWORD=")) {
        pod.env
            .push(format!("JUPYTER_PASSWORD={}", crate::ids::short(20)));
    }
}

/// What a template contributes to a create or update.
struct TemplateSettings {
    image: String,
    args: String,
    disk: u64,
    ports: Vec<String>,
    env: BTreeMap<String, String>,
    persistent: Option<(u64, String)>,
    start_jupyter: bool,
    allowed_cuda_versions: Vec<String>,
}

/// An account template or a public catalog template; 404 when neither, 422 for a
/// serverless one.
fn resolve_template(world: &World, id: &str) -> V2Result<TemplateSettings> {
    if let Some(t) = world.templates.get(id) {
        if t.is_serverless {
            return Err(Problem::unprocessable(vec![format!(
                "templateId: {id} is a serverless template; pods need a pod template"
            )]));
        }
        return Ok(TemplateSettings {
            image: t.image_name.clone(),
            args: t.docker_start_cmd.join(" "),
            disk: t.container_disk_in_gb,
            ports: t.ports.clone(),
            env: t.env.clone(),
            persistent: (t.volume_in_gb > 0).then(|| (t.volume_in_gb, t.volume_mount_path.clone())),
            start_jupyter: false,
            allowed_cuda_versions: Vec::new(),
        });
    }
    let t = public_template(world, id)
        .ok_or_else(|| Problem::not_found(format!("template {id} not found")))?;
    if t.is_serverless {
        return Err(Problem::unprocessable(vec![format!(
            "templateId: {id} is a serverless template; pods need a pod template"
        )]));
    }
    Ok(TemplateSettings {
        image: t.image_name.clone(),
        args: t.docker_args.clone(),
        disk: t.container_disk_in_gb,
        ports: t.ports.clone(),
        env: t.env.clone(),
        persistent: (t.volume_in_gb > 0).then(|| (t.volume_in_gb, t.volume_mount_path.clone())),
        start_jupyter: t.start_jupyter,
        allowed_cuda_versions: t.allowed_cuda_versions.clone(),
    })
}

/// The cross-field rules (400) and references (404) of a create, then the cloud's request.
pub(crate) fn deploy_request(world: &World, b: &CreatePodBody) -> V2Result<DeployRequest> {
    match (&b.gpu, &b.cpu) {
        (Some(_), Some(_)) => {
            return Err(Problem::bad_request(
                "gpu, cpu: set exactly one of them (both were set)",
            ));
        }
        (None, None) => {
            return Err(Problem::bad_request(
                "gpu, cpu: set exactly one of them (neither was set)",
            ));
        }
        _ => {}
    }
    let mounts = b.mounts.as_ref();
    let persistent = mounts.and_then(|m| m.persistent.as_ref());
    let network = mounts.and_then(|m| m.network.as_ref());
    if persistent.is_some() && network.is_some_and(|n| !n.is_empty()) {
        return Err(Problem::bad_request(
            "mounts: persistent and network are mutually exclusive",
        ));
    }
    if b.cpu.is_some() && persistent.is_some() {
        return Err(Problem::bad_request(
            "mounts.persistent: CPU pods support network volumes only",
        ));
    }
    if let Some(g) = &b.gpu
        && g.allowed_cuda_versions
            .as_ref()
            .is_some_and(|a| !a.is_empty())
        && g.min_cuda_version.is_some()
    {
        return Err(Problem::bad_request(
            "gpu.allowedCudaVersions, gpu.minCudaVersion: send one or the other",
        ));
    }
    let data_center_ids = b.data_center_ids.clone().unwrap_or_default();
    if let Some(unknown) = data_center_ids
        .iter()
        .find(|dc| !world.data_centers.iter().any(|d| &d.id == *dc))
    {
        return Err(Problem::bad_request(format!(
            "dataCenterIds: unknown data center {unknown:?}"
        )));
    }
    if let Some(g) = &b.gpu {
        let gpu = world
            .cloud
            .gpu_type(&g.id)
            .ok_or_else(|| Problem::bad_request(format!("gpu.id: unknown GPU type {:?}", g.id)))?;
        let count = g.count.map_or(1, |c| c.0);
        if count > i64::from(gpu.max_gpu_count) {
            return Err(Problem::bad_request(format!(
                "gpu.count: at most {} GPUs of {} fit one pod (got {count})",
                gpu.max_gpu_count, g.id
            )));
        }
    }
    if let Some(c) = &b.cpu
        && !(c.vcpu_count.0 as u64).is_power_of_two()
    {
        return Err(Problem::bad_request(format!(
            "cpu.vcpuCount: must be a power of two (got {})",
            c.vcpu_count
        )));
    }
    if let Some(c) = &b.cpu
        && world.cloud.cpu_type(&c.id).is_none()
    {
        return Err(Problem::bad_request(format!(
            "cpu.id: unknown CPU flavor {:?}",
            c.id
        )));
    }
    let template = b
        .template_id
        .as_deref()
        .map(|id| resolve_template(world, id))
        .transpose()?;
    let (network_volume_id, network_volume_dc, network_path) = match network.and_then(|n| n.first())
    {
        None => (None, None, None),
        Some(n) => {
            let volume = world.volumes.get(&n.volume_id).ok_or_else(|| {
                Problem::not_found(format!("network volume {} not found", n.volume_id))
            })?;
            if !data_center_ids.is_empty() && !data_center_ids.contains(&volume.data_center_id) {
                return Err(Problem::bad_request(format!(
                    "dataCenterIds: the network volume {} is in {}, which is not among them",
                    volume.id, volume.data_center_id
                )));
            }
            (
                Some(volume.id.clone()),
                Some(volume.data_center_id.clone()),
                Some(n.path.clone()),
            )
        }
    };
    let data_center_ids =
        global::create_data_centers(world, b, data_center_ids, network_volume_dc.as_deref())?;
    let ports = match &b.ports {
        Some(p) => Some(p.join(",")),
        None => template.as_ref().map(|t| t.ports.join(",")),
    };
    if let Some(p) = &ports {
        parse_ports(p).map_err(placement_problem)?;
    }
    let mut env: BTreeMap<String, String> =
        template.as_ref().map(|t| t.env.clone()).unwrap_or_default();
    env.extend(b.env.clone().unwrap_or_default());
    let (volume_in_gb, volume_mount_path) = match (persistent, &network_path) {
        (Some(p), _) => (
            // Kept as sent: the document bounds the size only from below.
            Some(p.size.0),
            Some(p.path.clone()),
        ),
        (None, Some(path)) => (Some(0), Some(path.clone())),
        (None, None) if b.cpu.is_none() && mounts.is_none() => {
            match template.as_ref().and_then(|t| t.persistent.clone()) {
                Some((size, path)) => (Some(size as i64), Some(path)),
                None => (Some(0), None),
            }
        }
        (None, None) => (Some(0), None),
    };
    let gpu = b.gpu.as_ref();
    let mut allowed_cuda = gpu.and_then(|g| g.allowed_cuda_versions.clone());
    let min_cuda = gpu.and_then(|g| g.min_cuda_version.clone());
    if allowed_cuda.is_none() && min_cuda.is_none() {
        allowed_cuda = template
            .as_ref()
            .map(|t| t.allowed_cuda_versions.clone())
            .filter(|a| !a.is_empty());
    }
    let mut env_pairs: Vec<(String, String)> = env.into_iter().collect();
    if template.as_ref().is_some_and(|t| t.start_jupyter)
        && b.start_jupyter.is_none()
        && !env_pairs.iter().any(|(k, _)| k == "JUPYTER_PASSWORD")
    {
        env_pairs.push(("JUPYTER_PASSWORD".into(), crate::ids::short(20)));
    }
    Ok(DeployRequest {
        name: Some(b.name.clone()),
        image_name: b
            .image
            .clone()
            .or_else(|| template.as_ref().map(|t| t.image.clone())),
        gpu_type_id: gpu.map(|g| g.id.clone()),
        gpu_count: gpu.map(|g| g.count.map_or(1, |c| c.as_u32()) as i32),
        cloud: match b.cloud.unwrap_or_default() {
            CloudTier::Secure => CloudChoice::Secure,
            CloudTier::Community => CloudChoice::Community,
        },
        data_center_id: None,
        data_center_ids,
        volume_in_gb,
        container_disk_in_gb: b
            .disk
            .map(|d| d.0)
            .or_else(|| template.as_ref().map(|t| t.disk as i64)),
        min_vcpu_count: None,
        min_memory_in_gb: None,
        docker_args: b
            .args
            .clone()
            .or_else(|| template.as_ref().map(|t| t.args.clone())),
        ports,
        volume_mount_path,
        env: env_pairs,
        allowed_cuda_versions: allowed_cuda,
        min_cuda_version: min_cuda,
        cpu: b.cpu.as_ref().map(|c| CpuRequest {
            flavor_id: c.id.clone(),
            vcpus: c.vcpu_count.as_u32(),
        }),
        network_volume_id,
        network_volume_dc,
        template: None,
        support_public_ip: Some(true),
    })
}

async fn update(
    State(app): State<App>,
    Path(id): Path<String>,
    WriteBody(body): WriteBody,
) -> V2Result<Response> {
    let b: UpdatePodBody = parse_body(&body)?;
    check_update(&b)?;
    let now = app.clock.now();
    let mut world = app.world.lock();
    let pod = world
        .cloud
        .pod(&id)
        .ok_or_else(|| pod_not_found(&id))?
        .clone();
    refuse_member(&pod, "modified")?;
    global::check_update(&world, &pod, b.global_networking)?;
    let template = b
        .template_id
        .as_deref()
        .map(|t| resolve_template(&world, t))
        .transpose()?;
    let mount_path = check_mount_change(&pod, b.mounts.as_ref())?;
    let ports = match (&b.ports, &template) {
        (Some(p), _) => Some(p.join(",")),
        (None, Some(t)) => Some(t.ports.join(",")),
        (None, None) => None,
    };
    let port_specs = ports
        .as_deref()
        .map(parse_ports)
        .transpose()
        .map_err(placement_problem)?;
    let env = match (&b.env, &template) {
        (None, None) => None,
        (body_env, t) => {
            let mut env = t.as_ref().map(|t| t.env.clone()).unwrap_or_default();
            env.extend(body_env.clone().unwrap_or_default());
            Some(env)
        }
    };
    let image = b
        .image
        .clone()
        .or_else(|| template.as_ref().map(|t| t.image.clone()));
    let args = b
        .args
        .clone()
        .or_else(|| template.as_ref().map(|t| t.args.clone()));
    let disk = b
        .disk
        .map(Int::as_u64)
        .or_else(|| template.as_ref().map(|t| t.disk));
    let container_changed =
        image.is_some() || args.is_some() || disk.is_some() || ports.is_some() || env.is_some();

    let target = world.cloud.pod_mut(&id).expect("checked above");
    if let Some(name) = &b.name {
        target.name = name.clone();
    }
    if let Some(image) = image {
        target.image_name = image;
    }
    if let Some(args) = args {
        target.docker_args = args;
    }
    if let Some(disk) = disk {
        target.container_disk_in_gb = disk;
    }
    if let (Some(ports), Some(specs)) = (ports, port_specs) {
        target.ports = ports;
        // Ports kept keep their public mapping; new ones get one.
        let fresh = assign_ports(&specs);
        target.port_map = fresh
            .into_iter()
            .map(|(private, public, kind)| {
                target
                    .port_map
                    .iter()
                    .find(|(p, _, k)| *p == private && *k == kind)
                    .cloned()
                    .unwrap_or((private, public, kind))
            })
            .collect();
    }
    if let Some(env) = env {
        target.env = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    }
    if let Some(registry) = &b.registry {
        target.registry = registry.clone();
    }
    if let Some(locked) = b.locked {
        target.locked = locked;
    }
    if let Some(g) = b.global_networking {
        // The document: takes effect on the next start or restart, not live.
        target.global_networking_next = (g != target.global_networking).then_some(g);
    }
    if let Some((size, path)) = mount_path {
        if let Some(size) = size {
            target.volume_in_gb = size;
        }
        target.volume_mount_path = Some(path);
    }
    // Container changes apply by restarting a running container.
    if container_changed && target.desired == DesiredStatus::Running {
        target.started_at = Some(now);
        target.last_status_change_at = now;
        world.cloud.rearm_start(&id);
    }
    let pod = world.cloud.pod(&id).expect("exists");
    Ok(axum::Json(pod_json(&app, &world, pod, now)).into_response())
}

/// The PATCH rules of `mounts` (400 for each): the kind is fixed at create, the network
/// volume cannot change, and mounts cannot be cleared. Returns the new (size, path).
fn check_mount_change(
    pod: &Pod,
    mounts: Option<&Mounts>,
) -> V2Result<Option<(Option<u64>, String)>> {
    let Some(m) = mounts else { return Ok(None) };
    let has_network = pod.network_volume_id.is_some();
    let has_persistent = !has_network && pod.volume_in_gb > 0;
    match (&m.persistent, &m.network) {
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Err(Problem::bad_request(
            "mounts: persistent and network are mutually exclusive",
        )),
        (None, Some(n)) if n.is_empty() => Err(Problem::bad_request(
            "mounts.network: clearing mounts is not supported",
        )),
        (None, Some(n)) => {
            if !has_network {
                return Err(Problem::bad_request(
                    "mounts.network: the pod was created without a network volume; the mount kind is fixed at create",
                ));
            }
            let wanted = &n[0];
            if pod.network_volume_id.as_deref() != Some(wanted.volume_id.as_str()) {
                return Err(Problem::bad_request(
                    "mounts.network[0].volumeId: the network volume of a pod cannot change",
                ));
            }
            Ok(Some((None, wanted.path.clone())))
        }
        (Some(p), None) => {
            if !has_persistent {
                return Err(Problem::bad_request(
                    "mounts.persistent: the pod was created without a persistent mount; the mount kind is fixed at create",
                ));
            }
            Ok(Some((Some(p.size.as_u64()), p.path.clone())))
        }
    }
}

async fn delete(
    State(app): State<App>,
    Path(id): Path<String>,
    _writer: Writer,
) -> V2Result<StatusCode> {
    let now = app.clock.now();
    let mut world = app.world.lock();
    let pod = world.cloud.pod(&id).ok_or_else(|| pod_not_found(&id))?;
    refuse_member(pod, "terminated")?;
    world
        .cloud
        .terminate(&id, now)
        .map_err(|_| pod_not_found(&id))?;
    tracing::info!(pod = %id, "pod terminated over REST v2");
    Ok(StatusCode::NO_CONTENT)
}

async fn action(
    State(app): State<App>,
    Path(id): Path<String>,
    WriteBody(body): WriteBody,
) -> V2Result<Response> {
    let ActionBody { action } = parse_body(&body)?;
    let now = app.clock.now();
    let mut world = app.world.lock();
    let pod = world.cloud.pod(&id).ok_or_else(|| pod_not_found(&id))?;
    let status = status_of(pod, now, app.config.pod_boot_ms);
    let name = match action {
        PodAction::Start => "start",
        PodAction::Stop => "stop",
        PodAction::Restart => "restart",
        PodAction::Terminate => "terminate",
    };
    refuse_member(pod, &format!("given the {name} action"))?;
    if !status.actions(pod.locked).contains(&name) {
        let why = if pod.locked && action == PodAction::Stop {
            " (the pod is locked)"
        } else {
            ""
        };
        return Err(Problem::conflict(format!(
            "cannot {name} pod {id} while it is {}{why}; allowed: {}",
            status.as_str(),
            status.actions(pod.locked).join(", ")
        )));
    }
    match action {
        PodAction::Terminate => {
            world
                .cloud
                .terminate(&id, now)
                .map_err(|_| pod_not_found(&id))?;
            return Ok(StatusCode::NO_CONTENT.into_response());
        }
        PodAction::Stop => {
            world.cloud.stop(&id, now).map_err(placement_problem)?;
        }
        PodAction::Start => {
            world
                .cloud
                .resume(&id, None, now)
                .map_err(placement_problem)?;
        }
        PodAction::Restart => {
            world.cloud.restart(&id, now).map_err(placement_problem)?;
        }
    }
    tracing::info!(pod = %id, action = name, "pod action over REST v2");
    let pod = world.cloud.pod(&id).expect("still exists");
    Ok(axum::Json(pod_json(&app, &world, pod, now)).into_response())
}

#[cfg(test)]
mod tests;
