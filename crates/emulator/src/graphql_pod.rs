//! The GraphQL `Pod` type and how an emulated pod is shown in it.
//!
//! Both ways of answering share this: the ordinary resolvers (`pod(input:)` and the
//! mutations in [`super::graphql`]) build a [`Pod`] with [`pod_view`], and the listing fast
//! path ([`super::graphql_fast`]) builds the same fields straight into a value with the
//! per-field functions here. Keeping them out of both modules is what lets the fast path
//! depend on them without depending on the schema's roots that use the fast path.

use async_graphql::{Enum, SimpleObject};

use super::clock::Millis;
use super::pods::{self, DesiredStatus};
use super::state::App;

#[derive(Enum, Copy, Clone, Eq, PartialEq, Debug)]
pub enum PodStatus {
    Created,
    Running,
    Restarting,
    Exited,
    Paused,
    Dead,
    Terminated,
}

#[derive(SimpleObject, Debug, Clone)]
pub struct Pod {
    pub id: String,
    pub name: String,
    pub image_name: String,
    /// Each entry is KEY=value.
    pub env: Vec<String>,
    pub machine_id: String,
    pub machine: Option<PodMachineInfo>,
    pub desired_status: PodStatus,
    /// Null until the pod's container has booted, and while it is stopped.
    pub runtime: Option<PodRuntime>,
    pub gpu_count: i32,
    pub vcpu_count: f64,
    pub memory_in_gb: f64,
    pub container_disk_in_gb: i32,
    pub volume_in_gb: i32,
    pub volume_mount_path: Option<String>,
    pub docker_args: String,
    pub docker_id: Option<String>,
    /// Requested ports, comma separated, each <port>/<type>.
    pub ports: String,
    pub port: Option<i32>,
    pub cost_per_hr: f64,
    pub pod_type: String,
    pub uptime_seconds: i32,
    pub last_status_change: String,
    pub network_volume_id: Option<String>,
    pub template_id: Option<String>,
}

#[derive(SimpleObject, Debug, Clone)]
pub struct PodMachineInfo {
    pub pod_host_id: String,
    pub gpu_display_name: String,
    pub gpu_type_id: String,
    pub data_center_id: String,
    pub secure_cloud: bool,
}

#[derive(SimpleObject, Debug, Clone)]
pub struct PodRuntime {
    pub uptime_in_seconds: i32,
    pub ports: Vec<PodRuntimePort>,
    pub gpus: Vec<PodRuntimeGpu>,
    pub container: PodRuntimeContainer,
}

#[derive(SimpleObject, Debug, Clone)]
pub struct PodRuntimePort {
    pub ip: String,
    pub is_ip_public: bool,
    pub private_port: i32,
    pub public_port: i32,
    #[graphql(name = "type")]
    pub kind: String,
}

#[derive(SimpleObject, Debug, Clone)]
pub struct PodRuntimeGpu {
    pub id: String,
    pub gpu_util_percent: f64,
    pub memory_util_percent: f64,
}

#[derive(SimpleObject, Debug, Clone)]
pub struct PodRuntimeContainer {
    pub cpu_percent: f64,
    pub memory_percent: f64,
}

/// "Fri Nov 21 2025 10:00:00 GMT+0000 (Coordinated Universal Time)", as the platform
/// writes `lastStatusChange` (JavaScript's `Date.toString()` in UTC).
fn js_date(app: &App, at: Millis) -> String {
    app.clock
        .wall_at(at)
        .strftime("%a %b %d %Y %H:%M:%S GMT+0000 (Coordinated Universal Time)")
        .to_string()
}

/// `lastStatusChange` of a pod.
pub fn last_status_change(p: &pods::Pod, app: &App) -> String {
    let verb = match p.desired {
        DesiredStatus::Running => "Rented by User",
        DesiredStatus::Exited => "Exited by User",
    };
    format!("{verb}: {}", js_date(app, p.last_status_change_at))
}

pub fn status_of(p: &pods::Pod) -> PodStatus {
    match p.desired {
        DesiredStatus::Running => PodStatus::Running,
        DesiredStatus::Exited => PodStatus::Exited,
    }
}

/// Whether the pod has booted, and its uptime in seconds (0 until then).
pub fn uptime_of(p: &pods::Pod, app: &App, now: Millis) -> (bool, i32) {
    let booted_at = p
        .started_at
        .map(|s| s.saturating_add(app.config.pod_boot_ms))
        .filter(|&b| b <= now && p.start_failure.is_none());
    let uptime = booted_at.map_or(0, |b| ((now - b) / 1000).min(i32::MAX as u64) as i32);
    (booted_at.is_some(), uptime)
}

/// What a pod's fields show of its machine and GPU type. A listing copies it under the
/// world's lock with a pointer to the pod, and builds its answer after releasing the lock.
#[derive(Debug, Clone)]
pub struct PodHost {
    /// Empty when the machine is gone, as are the data center and the GPU's name.
    public_ip: String,
    data_center_id: String,
    secure: bool,
    gpu_display_name: String,
}

impl PodHost {
    pub fn of(p: &pods::Pod, cloud: &pods::Cloud) -> Self {
        let machine = cloud.machine(&p.machine_id);
        Self {
            public_ip: machine.map_or_else(String::new, |m| m.public_ip.clone()),
            data_center_id: machine.map_or_else(String::new, |m| m.data_center_id.clone()),
            secure: machine.is_some_and(|m| m.secure),
            gpu_display_name: cloud
                .gpu_type(&p.gpu_type_id)
                .map_or_else(String::new, |g| g.display_name.clone()),
        }
    }
}

/// `runtime` of a booted pod.
pub fn runtime_of(p: &pods::Pod, host: &PodHost, uptime: i32) -> PodRuntime {
    PodRuntime {
        uptime_in_seconds: uptime,
        ports: p
            .port_map
            .iter()
            .map(|(private, public, kind)| PodRuntimePort {
                ip: host.public_ip.clone(),
                is_ip_public: p.support_public_ip,
                private_port: *private as i32,
                public_port: *public as i32,
                kind: kind.clone(),
            })
            .collect(),
        gpus: (0..p.gpu_count)
            .map(|i| PodRuntimeGpu {
                id: format!("GPU-{}-{i}", p.id),
                gpu_util_percent: p.gpu_util_percent.unwrap_or(0.0),
                memory_util_percent: 0.0,
            })
            .collect(),
        container: PodRuntimeContainer {
            cpu_percent: 1.0,
            memory_percent: 2.0,
        },
    }
}

pub fn machine_of(p: &pods::Pod, host: &PodHost) -> PodMachineInfo {
    PodMachineInfo {
        pod_host_id: p.pod_host_id.clone(),
        gpu_display_name: host.gpu_display_name.clone(),
        gpu_type_id: p.gpu_type_id.clone(),
        data_center_id: host.data_center_id.clone(),
        secure_cloud: host.secure,
    }
}

pub fn pod_view(p: &pods::Pod, cloud: &pods::Cloud, now: Millis, app: &App) -> Pod {
    let (booted, uptime) = uptime_of(p, app, now);
    let host = PodHost::of(p, cloud);
    Pod {
        id: p.id.clone(),
        name: p.name.clone(),
        image_name: p.image_name.clone(),
        env: p.env.clone(),
        machine_id: p.machine_id.clone(),
        machine: Some(machine_of(p, &host)),
        desired_status: status_of(p),
        runtime: booted.then(|| runtime_of(p, &host, uptime)),
        gpu_count: p.gpu_count as i32,
        vcpu_count: p.vcpu_count,
        memory_in_gb: p.memory_in_gb,
        container_disk_in_gb: p.container_disk_in_gb as i32,
        volume_in_gb: p.volume_in_gb as i32,
        volume_mount_path: p.volume_mount_path.clone(),
        docker_args: p.docker_args.clone(),
        docker_id: None,
        ports: p.ports.clone(),
        port: None,
        cost_per_hr: p.cost_per_hr,
        pod_type: POD_TYPE.into(),
        uptime_seconds: uptime,
        last_status_change: last_status_change(p, app),
        network_volume_id: p.network_volume_id.clone(),
        template_id: p.template_id.clone(),
    }
}

/// On-demand pods are "RESERVED" on the platform.
pub const POD_TYPE: &str = "RESERVED";
