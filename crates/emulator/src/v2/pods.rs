//! `/v2/pods`: create, list, read, update, delete, lifecycle actions and logs of the same
//! pods GraphQL deploys, stops and lists (the one `Cloud` of the world).
//!
//! A create places ONE GPU type (or one CPU flavor): no stock there is a 400 with the
//! platform's capacity wording, never a fallback. Status runs PROVISIONING -> STARTING ->
//! RUNNING over the emulator's pod boot time.

use std::collections::BTreeMap;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::catalog::public_template;
use super::problem::{Problem, V2Result};
use super::request::{Caller, Int, V2Query, Violations, not_null, nullable, parse_body};
use super::timestamp;
use crate::clock::Millis;
use crate::pods::{
    CloudChoice, CpuRequest, DeployRequest, DesiredStatus, Pod, PodError, assign_ports, parse_ports,
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
    pub fn actions(self, locked: bool) -> Vec<&'static str> {
        match self {
            Self::Running if locked => vec!["restart", "terminate"],
            Self::Running => vec!["stop", "restart", "terminate"],
            Self::Exited => vec!["start", "terminate"],
            Self::Provisioning | Self::Starting if locked => vec!["terminate"],
            Self::Provisioning | Self::Starting => vec!["stop", "terminate"],
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
            if elapsed >= boot_ms {
                PodStatus::Running
            } else if p.first_start() && elapsed < boot_ms / 2 {
                PodStatus::Provisioning
            } else {
                PodStatus::Starting
            }
        }
    }
}

// ------------------------------------------------------------------ view

const SSH_PROXY_HOST: &str = "ssh.emulator.localhost";
const DEFAULT_MOUNT_PATH: &str = "/workspace";

/// `KEY=VALUE` pairs as a JSON object.
fn env_object(env: &[String]) -> Value {
    env.iter()
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv.as_str(), ""));
            (k.to_string(), Value::String(v.to_string()))
        })
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn mounts_of(p: &Pod) -> Value {
    let path = p
        .volume_mount_path
        .clone()
        .unwrap_or_else(|| DEFAULT_MOUNT_PATH.into());
    match &p.network_volume_id {
        Some(volume) => json!({"network": [{"volumeId": volume, "path": path}]}),
        None if p.volume_in_gb > 0 => json!({"persistent": {"size": p.volume_in_gb, "path": path}}),
        None => json!({}),
    }
}

/// The document's `Pod` object.
pub fn pod_json(app: &App, world: &World, p: &Pod, now: Millis) -> Value {
    let cloud = &world.cloud;
    let status = status_of(p, now, app.config.pod_boot_ms);
    let machine = cloud.machine(&p.machine_id);
    let ip = machine.map(|m| m.public_ip.clone());
    let running = status == PodStatus::Running;
    let booted_at = p.started_at.map(|s| s + app.config.pod_boot_ms);
    let direct = running
        .then(|| {
            p.port_map
                .iter()
                .find(|(private, _, kind)| *private == 22 && kind == "tcp")
        })
        .flatten()
        .map(|(_, public, _)| {
            let host = ip.clone().unwrap_or_default();
            json!({"host": host, "port": public, "username": "root",
                   "command": format!("ssh root@{host} -p {public}")})
        });
    let runtime = running.then(|| {
        let uptime = booted_at.map_or(0, |b| now.saturating_sub(b) / 1000);
        json!({
            "uptime": uptime,
            "gpus": (0..p.gpu_count).map(|i| json!({
                "util": p.gpu_util_percent.map_or((37 + 11 * i) % 100, |u| u.round() as u32),
                "memoryUtil": (21 + 7 * i) % 100,
            })).collect::<Vec<_>>(),
            "cpu": {"util": 12},
            "memory": {"util": 34},
            "ports": p.port_map.iter().map(|(private, public, kind)| json!({
                "private": private, "public": public, "type": kind, "ip": ip,
            })).collect::<Vec<_>>(),
        })
    });
    let mut pod = json!({
        "id": p.id,
        "name": p.name,
        "image": p.image_name,
        "args": p.docker_args,
        "disk": p.container_disk_in_gb,
        "ports": p.ports.split(',').map(str::trim).filter(|s| !s.is_empty()).collect::<Vec<_>>(),
        "env": env_object(&p.env),
        "registry": p.registry,
        "status": status.as_str(),
        "actions": status.actions(p.locked),
        "mounts": mounts_of(p),
        "cloud": if machine.is_none_or(|m| m.secure) { "SECURE" } else { "COMMUNITY" },
        "dataCenterId": machine.map(|m| m.data_center_id.clone()),
        "cudaVersion": p.cuda_version,
        "ssh": {
            "proxy": {
                "host": SSH_PROXY_HOST, "port": 22, "username": p.pod_host_id,
                "command": format!("ssh {}@{SSH_PROXY_HOST}", p.pod_host_id),
            },
            "direct": direct,
        },
        "template": Value::Null,
        "cost": if status == PodStatus::Exited { 0.0 } else { p.cost_per_hr },
        "locked": p.locked,
        "globalNetworking": if p.global_networking {
            json!({"enabled": true, "ip": global_ip(&p.id), "internalDns": format!("{}.runpod.internal", p.id)})
        } else {
            json!({"enabled": false})
        },
        "runtime": runtime,
        "createdAt": timestamp(&app.clock, p.created_at),
        "startedAt": if running { booted_at.map(|b| timestamp(&app.clock, b)) } else { None },
    });
    match &p.cpu {
        Some(cpu) => {
            pod["cpu"] = json!({"id": cpu.flavor_id, "vcpuCount": cpu.vcpus, "memory": (p.memory_in_gb as u64).max(1)});
        }
        None => pod["gpu"] = json!({"id": p.gpu_type_id, "count": p.gpu_count}),
    }
    pod
}

/// A stable private address on the global network, derived from the pod id.
fn global_ip(id: &str) -> String {
    let h = id
        .bytes()
        .fold(0u32, |a, b| a.wrapping_mul(31).wrapping_add(u32::from(b)));
    format!(
        "10.{}.{}.{}",
        (h >> 16) & 0xff,
        (h >> 8) & 0xff,
        (h & 0xfe).max(2)
    )
}

// ------------------------------------------------------------------ bodies

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CloudTier {
    #[default]
    Secure,
    Community,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PersistentMount {
    pub size: Int,
    pub path: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkMount {
    pub volume_id: String,
    pub path: String,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Mounts {
    #[serde(default, deserialize_with = "not_null")]
    pub persistent: Option<PersistentMount>,
    #[serde(default, deserialize_with = "not_null")]
    pub network: Option<Vec<NetworkMount>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateGpu {
    pub id: String,
    #[serde(default, deserialize_with = "not_null")]
    pub count: Option<Int>,
    #[serde(default, deserialize_with = "not_null")]
    pub allowed_cuda_versions: Option<Vec<String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub min_cuda_version: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateCpu {
    pub id: String,
    pub vcpu_count: Int,
}

/// The container settings shared by create and update.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreatePodBody {
    pub name: String,
    #[serde(default, deserialize_with = "not_null")]
    pub image: Option<String>,
    #[serde(default, deserialize_with = "not_null")]
    pub args: Option<String>,
    #[serde(default, deserialize_with = "not_null")]
    pub disk: Option<Int>,
    #[serde(default, deserialize_with = "not_null")]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub ports: Option<Vec<String>>,
    #[serde(default, deserialize_with = "nullable")]
    pub registry: Option<Option<String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub cloud: Option<CloudTier>,
    #[serde(default, deserialize_with = "not_null")]
    pub cpu: Option<CreateCpu>,
    #[serde(default, deserialize_with = "not_null")]
    pub gpu: Option<CreateGpu>,
    #[serde(default, deserialize_with = "not_null")]
    pub data_center_ids: Option<Vec<String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub global_networking: Option<bool>,
    #[serde(default, deserialize_with = "not_null")]
    pub mounts: Option<Mounts>,
    #[serde(default, deserialize_with = "not_null")]
    pub start_jupyter: Option<bool>,
    #[serde(default, deserialize_with = "not_null")]
    pub start_ssh: Option<bool>,
    #[serde(default, deserialize_with = "not_null")]
    pub template_id: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdatePodBody {
    #[serde(default, deserialize_with = "not_null")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "not_null")]
    pub image: Option<String>,
    #[serde(default, deserialize_with = "not_null")]
    pub args: Option<String>,
    #[serde(default, deserialize_with = "not_null")]
    pub disk: Option<Int>,
    #[serde(default, deserialize_with = "not_null")]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub ports: Option<Vec<String>>,
    #[serde(default, deserialize_with = "nullable")]
    pub registry: Option<Option<String>>,
    #[serde(default, deserialize_with = "not_null")]
    pub global_networking: Option<bool>,
    #[serde(default, deserialize_with = "not_null")]
    pub locked: Option<bool>,
    #[serde(default, deserialize_with = "not_null")]
    pub mounts: Option<Mounts>,
    #[serde(default, deserialize_with = "not_null")]
    pub template_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PodAction {
    Start,
    Stop,
    Restart,
    Terminate,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ActionBody {
    action: PodAction,
}

// ------------------------------------------------------------------ checks

fn cuda_version_ok(v: &str) -> bool {
    v.split_once('.').is_some_and(|(a, b)| {
        !a.is_empty()
            && !b.is_empty()
            && a.bytes().all(|c| c.is_ascii_digit())
            && b.bytes().all(|c| c.is_ascii_digit())
    })
}

fn check_mounts(v: &mut Violations, m: &Mounts) {
    if let Some(p) = &m.persistent {
        v.range(Some(p.size.0), "mounts.persistent.size", Some(10), None);
    }
    if let Some(n) = &m.network {
        v.check(n.len() <= 1, "mounts.network", "must have at most 1 item");
    }
}

/// Schema rules serde cannot express: lengths, minimums, patterns, the image/template rule.
fn check_create(b: &CreatePodBody) -> V2Result<()> {
    let mut v = Violations::new();
    v.check(!b.name.is_empty(), "name", "must not be empty");
    v.range(b.disk.map(|d| d.0), "disk", Some(1), None);
    if let Some(t) = &b.template_id {
        v.check(!t.is_empty(), "templateId", "must not be empty");
    }
    if b.template_id.is_none() {
        v.check(
            b.image.is_some(),
            "image",
            "required unless templateId is set",
        );
    }
    if let Some(g) = &b.gpu {
        v.range(g.count.map(|c| c.0), "gpu.count", Some(1), None);
        for (i, c) in g.allowed_cuda_versions.iter().flatten().enumerate() {
            v.check(
                cuda_version_ok(c),
                &format!("gpu.allowedCudaVersions[{i}]"),
                format!("must look like major.minor (got {c:?})"),
            );
        }
        if let Some(min) = &g.min_cuda_version {
            v.check(
                cuda_version_ok(min),
                "gpu.minCudaVersion",
                format!("must look like major.minor (got {min:?})"),
            );
        }
    }
    if let Some(c) = &b.cpu {
        v.check(!c.id.is_empty(), "cpu.id", "must not be empty");
        v.range(Some(c.vcpu_count.0), "cpu.vcpuCount", Some(2), None);
    }
    if let Some(m) = &b.mounts {
        check_mounts(&mut v, m);
    }
    v.finish()
}

fn check_update(b: &UpdatePodBody) -> V2Result<()> {
    let mut v = Violations::new();
    if let Some(n) = &b.name {
        v.check(!n.is_empty(), "name", "must not be empty");
    }
    v.range(b.disk.map(|d| d.0), "disk", Some(1), None);
    if let Some(m) = &b.mounts {
        check_mounts(&mut v, m);
    }
    v.finish()
}

/// A capacity or rule failure of the cloud, as the v2 answer (always a 400: the body
/// matched the document).
fn placement_problem(err: PodError) -> Problem {
    match err {
        PodError::NotFound(id) => Problem::not_found(format!("pod {id} not found")),
        PodError::Invalid { field, rule } => {
            let field = match field {
                "gpuTypeId" => "gpu.id",
                "gpuCount" => "gpu.count",
                "dataCenterId" => "dataCenterIds",
                "imageName" => "image",
                other => other,
            };
            Problem::bad_request(format!("{field}: {rule}"))
        }
        other => Problem::bad_request(other.to_string()),
    }
}

fn pod_not_found(id: &str) -> Problem {
    Problem::not_found(format!("pod {id} not found"))
}

// ------------------------------------------------------------------ handlers

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ListQuery {
    #[serde(default)]
    include_cluster_pods: Option<bool>,
}

async fn list(State(app): State<App>, _caller: Caller, V2Query(q): V2Query<ListQuery>) -> Response {
    // The emulator has no clusters, so there are no member pods to include or exclude.
    let _ = q.include_cluster_pods;
    let now = app.clock.now();
    let world = app.world.lock();
    let pods: Vec<Value> = world
        .cloud
        .pods()
        .map(|p| pod_json(&app, &world, p, now))
        .collect();
    axum::Json(json!({ "pods": pods })).into_response()
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

async fn create(State(app): State<App>, caller: Caller, body: Bytes) -> V2Result<Response> {
    caller.require_write()?;
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
    pod.template_id = None;
    if b.start_jupyter == Some(true) && !pod.env.iter().any(|e| e.starts_with("JUPYTER_PASSWORD="))
    {
        pod.env
            .push(format!("JUPYTER_PASSWORD={}", crate::ids::short(20)));
    }
    tracing::info!(pod = %id, "pod created over REST v2");
    let pod = world.cloud.pod(&id).expect("just deployed");
    let body = pod_json(&app, &world, pod, now);
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

/// What a template contributes to a create or update.
struct TemplateSettings {
    image: String,
    args: String,
    disk: u32,
    ports: Vec<String>,
    env: BTreeMap<String, String>,
    persistent: Option<(u32, String)>,
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
fn deploy_request(world: &World, b: &CreatePodBody) -> V2Result<DeployRequest> {
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
    if b.cpu.is_some() && b.cloud == Some(CloudTier::Community) {
        return Err(Problem::bad_request(
            "cloud: CPU pods run in the SECURE cloud only",
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
            Some(p.size.as_u32().min(i32::MAX as u32) as i32),
            Some(p.path.clone()),
        ),
        (None, Some(path)) => (Some(0), Some(path.clone())),
        (None, None) if b.cpu.is_none() && mounts.is_none() => {
            match template.as_ref().and_then(|t| t.persistent.clone()) {
                Some((size, path)) => (Some(size as i32), Some(path)),
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
            .map(|d| d.as_u32().min(i32::MAX as u32) as i32)
            .or_else(|| template.as_ref().map(|t| t.disk as i32)),
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
    caller: Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> V2Result<Response> {
    caller.require_write()?;
    let b: UpdatePodBody = parse_body(&body)?;
    check_update(&b)?;
    let now = app.clock.now();
    let mut world = app.world.lock();
    let pod = world
        .cloud
        .pod(&id)
        .ok_or_else(|| pod_not_found(&id))?
        .clone();
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
        .map(Int::as_u32)
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
        // Takes effect on the next start; the emulator shows it at once.
        target.global_networking = g;
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
    }
    let pod = world.cloud.pod(&id).expect("exists");
    Ok(axum::Json(pod_json(&app, &world, pod, now)).into_response())
}

/// The PATCH rules of `mounts` (400 for each): the kind is fixed at create, the network
/// volume cannot change, and mounts cannot be cleared. Returns the new (size, path).
fn check_mount_change(
    pod: &Pod,
    mounts: Option<&Mounts>,
) -> V2Result<Option<(Option<u32>, String)>> {
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
            Ok(Some((Some(p.size.as_u32()), p.path.clone())))
        }
    }
}

async fn delete(
    State(app): State<App>,
    caller: Caller,
    Path(id): Path<String>,
) -> V2Result<StatusCode> {
    caller.require_write()?;
    let now = app.clock.now();
    app.world
        .lock()
        .cloud
        .terminate(&id, now)
        .map_err(|_| pod_not_found(&id))?;
    tracing::info!(pod = %id, "pod terminated over REST v2");
    Ok(StatusCode::NO_CONTENT)
}

async fn action(
    State(app): State<App>,
    caller: Caller,
    Path(id): Path<String>,
    body: Bytes,
) -> V2Result<Response> {
    caller.require_write()?;
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

// ------------------------------------------------------------------ logs

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogSource {
    Container,
    System,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct LogsQuery {
    #[serde(default)]
    source: Option<LogSource>,
    #[serde(default)]
    tail: Option<u32>,
    #[serde(default)]
    since: Option<String>,
}

/// One log line of a pod's history.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    pub at: Millis,
    pub source: LogSource,
    pub line: String,
}

/// Most lines a pod's history yields (the document's `tail` maximum).
const MAX_LOG_LINES: usize = 5000;

/// A plausible history of a pod up to `now`: the system's provisioning steps, the
/// container's start, then a heartbeat line every emulated minute of uptime.
pub fn pod_history(p: &Pod, now: Millis, boot_ms: u64) -> Vec<LogLine> {
    let mut lines = vec![
        LogLine {
            at: p.created_at,
            source: LogSource::System,
            line: format!("pod {} scheduled on machine {}", p.id, p.machine_id),
        },
        LogLine {
            at: p.created_at,
            source: LogSource::System,
            line: format!("pulling image {}", p.image_name),
        },
    ];
    if let Some(started) = p.started_at {
        if !p.first_start() {
            lines.push(LogLine {
                at: started,
                source: LogSource::System,
                line: "starting container".into(),
            });
        }
        let booted = started + boot_ms;
        if booted <= now {
            if p.first_start() {
                lines.push(LogLine {
                    at: started + boot_ms / 2,
                    source: LogSource::System,
                    line: format!("image {} pulled", p.image_name),
                });
            }
            lines.push(LogLine {
                at: booted,
                source: LogSource::System,
                line: "container started".into(),
            });
            lines.push(LogLine {
                at: booted,
                source: LogSource::Container,
                line: format!("{} ready", p.image_name),
            });
            let minutes = ((now - booted) / 60_000) as usize;
            let first = minutes.saturating_sub(MAX_LOG_LINES);
            for m in first..minutes {
                let at = booted + (m as u64 + 1) * 60_000;
                lines.push(LogLine {
                    at,
                    source: LogSource::Container,
                    line: format!("heartbeat: up {} min", m + 1),
                });
            }
        }
    } else {
        lines.push(LogLine {
            at: p.last_status_change_at,
            source: LogSource::System,
            line: "container stopped".into(),
        });
    }
    lines.sort_by_key(|l| l.at);
    lines
}

fn parse_time(app: &App, field: &str, value: &str) -> V2Result<Millis> {
    let t = chrono::DateTime::parse_from_rfc3339(value).map_err(|_| {
        Problem::unprocessable(vec![format!(
            "{field}: must be an RFC 3339 date-time (got {value:?})"
        )])
    })?;
    let start = app.clock.wall_at(0);
    let ms = (t.with_timezone(&chrono::Utc) - start).num_milliseconds();
    Ok(ms.max(0) as Millis)
}

async fn logs(
    State(app): State<App>,
    _caller: Caller,
    Path(id): Path<String>,
    V2Query(q): V2Query<LogsQuery>,
    headers: HeaderMap,
) -> V2Result<Response> {
    if q.tail.is_some_and(|t| t as usize > MAX_LOG_LINES) {
        return Err(Problem::unprocessable(vec![format!(
            "tail: must be at most {MAX_LOG_LINES}"
        )]));
    }
    let last_event = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(|v| parse_time(&app, "Last-Event-ID", v))
        .transpose()?;
    let since = q
        .since
        .as_deref()
        .map(|s| parse_time(&app, "since", s))
        .transpose()?;
    let now = app.clock.now();
    let history = {
        let world = app.world.lock();
        let pod = world.cloud.pod(&id).ok_or_else(|| pod_not_found(&id))?;
        pod_history(pod, now, app.config.pod_boot_ms)
    };
    let chosen: Vec<&LogLine> = history
        .iter()
        .filter(|l| q.source.is_none_or(|s| s == l.source))
        .collect();
    let chosen: Vec<&LogLine> = match (last_event, since) {
        (Some(after), _) => chosen.into_iter().filter(|l| l.at > after).collect(),
        (None, Some(from)) => chosen.into_iter().filter(|l| l.at >= from).collect(),
        (None, None) => {
            let tail = q.tail.unwrap_or(100) as usize;
            let skip = chosen.len().saturating_sub(tail);
            chosen.into_iter().skip(skip).collect()
        }
    };
    let mut out = String::new();
    for l in chosen {
        let ts = app
            .clock
            .wall_at(l.at)
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        let source = match l.source {
            LogSource::Container => "container",
            LogSource::System => "system",
        };
        let data = json!({"source": source, "line": l.line, "ts": ts});
        out.push_str(&format!("id: {ts}\ndata: {data}\n\n"));
    }
    let mut response = Response::new(Body::from(out));
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::Fixtures;
    use crate::pods::Cloud;

    fn cloud() -> Cloud {
        let f = Fixtures::built_in();
        Cloud::new(
            f.gpu_types,
            f.data_centers.into_iter().map(|d| d.id).collect(),
        )
        .with_cpu_types(f.cpu_types)
    }

    fn gpu_req() -> DeployRequest {
        DeployRequest {
            name: Some("p".into()),
            image_name: Some("img".into()),
            gpu_type_id: Some("NVIDIA GeForce RTX 4090".into()),
            gpu_count: Some(1),
            ports: Some("22/tcp".into()),
            ..DeployRequest::default()
        }
    }

    #[test]
    fn status_moves_through_the_boot() {
        let mut c = cloud();
        let id = c.deploy(gpu_req(), 1_000).unwrap().id.clone();
        let p = c.pod(&id).unwrap().clone();
        assert_eq!(status_of(&p, 1_000, 5_000), PodStatus::Provisioning);
        assert_eq!(status_of(&p, 3_600, 5_000), PodStatus::Starting);
        assert_eq!(status_of(&p, 6_000, 5_000), PodStatus::Running);
        c.stop(&id, 7_000).unwrap();
        assert_eq!(
            status_of(c.pod(&id).unwrap(), 7_000, 5_000),
            PodStatus::Exited
        );
        c.resume(&id, None, 8_000).unwrap();
        // A later start never shows PROVISIONING again.
        assert_eq!(
            status_of(c.pod(&id).unwrap(), 8_000, 5_000),
            PodStatus::Starting
        );
    }

    #[test]
    fn actions_follow_the_document() {
        assert_eq!(
            PodStatus::Running.actions(false),
            ["stop", "restart", "terminate"]
        );
        assert_eq!(PodStatus::Exited.actions(false), ["start", "terminate"]);
        assert_eq!(
            PodStatus::Provisioning.actions(false),
            ["stop", "terminate"]
        );
        assert!(!PodStatus::Running.actions(true).contains(&"stop"));
    }

    #[test]
    fn cpu_pods_take_vcpus_and_give_them_back() {
        let mut c = cloud();
        let req = DeployRequest {
            gpu_type_id: None,
            cpu: Some(CpuRequest {
                flavor_id: "cpu3c".into(),
                vcpus: 4,
            }),
            cloud: CloudChoice::Secure,
            ..gpu_req()
        };
        let free = |c: &Cloud| -> u32 {
            c.machines()
                .iter()
                .filter(|m| m.cpu_flavor.as_deref() == Some("cpu3c"))
                .map(|m| m.free)
                .sum()
        };
        let before = free(&c);
        let id = c.deploy(req, 0).unwrap().id.clone();
        assert_eq!(free(&c), before - 4);
        let p = c.pod(&id).unwrap();
        assert_eq!((p.gpu_count, p.memory_in_gb), (0, 8.0));
        assert!((p.cost_per_hr - 0.12).abs() < 1e-9);
        c.stop(&id, 1).unwrap();
        assert_eq!(free(&c), before);
        c.terminate(&id, 2).unwrap();
        assert_eq!(free(&c), before);
    }

    #[test]
    fn history_grows_with_uptime_and_is_capped() {
        let mut c = cloud();
        let id = c.deploy(gpu_req(), 0).unwrap().id.clone();
        let p = c.pod(&id).unwrap();
        let early = pod_history(p, 1_000, 5_000);
        assert!(early.iter().all(|l| l.source == LogSource::System));
        let later = pod_history(p, 5_000 + 10 * 60_000, 5_000);
        assert_eq!(
            later
                .iter()
                .filter(|l| l.line.starts_with("heartbeat"))
                .count(),
            10
        );
        let long = pod_history(p, 5_000 + 100_000 * 60_000, 5_000);
        assert!(long.len() <= MAX_LOG_LINES + 10);
        assert!(long.windows(2).all(|w| w[0].at <= w[1].at));
    }

    #[test]
    fn env_renders_as_an_object() {
        let env = env_object(&["A=1".into(), "B=x=y".into()]);
        assert_eq!(env, json!({"A": "1", "B": "x=y"}));
    }
}
