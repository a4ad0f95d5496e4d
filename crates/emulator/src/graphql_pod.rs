//! The GraphQL `Pod` type and how an emulated pod is shown in it.
//!
//! Both ways of answering share this: the ordinary resolvers (`pod(input:)` and the
//! mutations in [`super::graphql`]) build a [`Pod`] with [`pod_view`], and the listing fast
//! path ([`super::graphql_fast`]) builds the same fields straight into a value with the
//! per-field functions here. Keeping them out of both modules is what lets the fast path
//! depend on them without depending on the schema's roots that use the fast path.

use std::fmt;

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
    /// Requested ports, comma separated, each `<port>/<type>`.
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
/// writes `lastStatusChange` (JavaScript's `Date.toString()` in UTC). Written field by field
/// rather than through `strftime`, which reads its format on every call: a listing of
/// 10,000 pods writes 10,000 of these.
struct JsDate(jiff::civil::DateTime);

impl fmt::Display for JsDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
        const MONTHS: [&str; 12] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        let d = &self.0;
        write!(
            f,
            "{} {} {:02} {:04} {:02}:{:02}:{:02} GMT+0000 (Coordinated Universal Time)",
            DAYS[d.weekday().to_monday_zero_offset() as usize],
            MONTHS[(d.month() - 1) as usize],
            d.day(),
            d.year(),
            d.hour(),
            d.minute(),
            d.second()
        )
    }
}

/// `lastStatusChange` of a pod, as it is written (no string built until then).
pub struct LastStatusChange {
    verb: &'static str,
    at: JsDate,
}

impl fmt::Display for LastStatusChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.verb, self.at)
    }
}

/// `lastStatusChange` of a pod.
pub fn last_status_change_at(p: &pods::Pod, app: &App) -> LastStatusChange {
    let verb = match p.desired {
        DesiredStatus::Running => "Rented by User",
        DesiredStatus::Exited => "Exited by User",
    };
    let at = jiff::tz::TimeZone::UTC.to_datetime(app.clock.wall_at(p.last_status_change_at));
    LastStatusChange {
        verb,
        at: JsDate(at),
    }
}

/// `lastStatusChange` of a pod, as a string.
pub fn last_status_change(p: &pods::Pod, app: &App) -> String {
    last_status_change_at(p, app).to_string()
}

/// The id of a pod's GPU `i` in its `runtime`.
pub fn gpu_id(p: &pods::Pod, i: u32) -> GpuId<'_> {
    GpuId(&p.id, i)
}

/// `GPU-<pod id>-<index>`, as it is written.
pub struct GpuId<'a>(&'a str, u32);

impl fmt::Display for GpuId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GPU-{}-{}", self.0, self.1)
    }
}

/// A booted pod's container load, percent CPU and memory: fixed in the emulator.
pub const CONTAINER_LOAD: (f64, f64) = (1.0, 2.0);

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
    pub fn public_ip(&self) -> &str {
        &self.public_ip
    }

    pub fn data_center_id(&self) -> &str {
        &self.data_center_id
    }

    pub fn secure(&self) -> bool {
        self.secure
    }

    pub fn gpu_display_name(&self) -> &str {
        &self.gpu_display_name
    }

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
                id: gpu_id(p, i).to_string(),
                gpu_util_percent: p.gpu_util_percent.unwrap_or(0.0),
                memory_util_percent: 0.0,
            })
            .collect(),
        container: PodRuntimeContainer {
            cpu_percent: CONTAINER_LOAD.0,
            memory_percent: CONTAINER_LOAD.1,
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
        container_disk_in_gb: int32(p.container_disk_in_gb),
        volume_in_gb: int32(p.volume_in_gb),
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

/// A size as GraphQL's 32-bit Int: the records are 64-bit (REST v2 bounds sizes only from
/// below), and a value beyond `i32::MAX` shows as `i32::MAX` rather than wrapping.
pub fn int32(n: u64) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_js_date_is_what_strftime_wrote() {
        let app = crate::state::Emulator::new(crate::EmulatorConfig::default()).unwrap();
        // Every weekday and month, single and double digits, around midnight and noon.
        for at in (0..400).map(|d| d * 86_400_000 + d * 3_599_000 + d % 7) {
            let old = app
                .clock
                .wall_at(at)
                .strftime("%a %b %d %Y %H:%M:%S GMT+0000 (Coordinated Universal Time)")
                .to_string();
            let new = JsDate(jiff::tz::TimeZone::UTC.to_datetime(app.clock.wall_at(at)));
            assert_eq!(new.to_string(), old);
        }
    }
}
