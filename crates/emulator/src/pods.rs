//! Pods on simulated machines: GPU stock, deploy, stop, resume, terminate and prices, and
//! the member pods of Instant Clusters (`cluster`).
//!
//! Stock is modelled as machines with a number of GPUs, so the two capacity failures of the
//! platform fall out naturally: a deploy fails when no machine of the requested type and
//! cloud has enough free GPUs, and a stopped pod stays tied to its host, so resuming fails
//! when other pods took the host's GPUs meanwhile.

mod cluster;
mod host;
mod placement;
mod stock;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::clock::Millis;
use super::ids;
use super::model::{CpuTypeFixture, GpuTypeFixture, PodFixture, StockFixture};
use super::start_failure::{StartFailure, StartRules};

pub const NO_CAPACITY: &str = "There are no longer any instances available with the requested specifications. Please refresh and try again.";
pub const HOST_FULL: &str = "There are not enough free GPUs on the host machine to start this pod";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodError {
    #[error("{NO_CAPACITY}")]
    NoCapacity,
    #[error("{HOST_FULL}")]
    HostFull,
    #[error("pod not found: {0}")]
    NotFound(String),
    #[error("{field}: {rule}")]
    Invalid { field: &'static str, rule: String },
}

fn invalid(field: &'static str, rule: impl Into<String>) -> PodError {
    PodError::Invalid {
        field,
        rule: rule.into(),
    }
}

/// Which cloud a deploy may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CloudChoice {
    #[default]
    All,
    Secure,
    Community,
}

impl CloudChoice {
    fn allows(self, secure: bool) -> bool {
        match self {
            Self::All => true,
            Self::Secure => secure,
            Self::Community => !secure,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DesiredStatus {
    Running,
    Exited,
}

/// A machine hosting GPUs of one type, or vCPUs of one CPU flavor (`cpu_flavor` set,
/// `gpu_type_id` empty, `total`/`free` counting vCPUs).
#[derive(Debug, Clone)]
pub struct Machine {
    pub id: String,
    pub gpu_type_id: String,
    pub cpu_flavor: Option<String>,
    pub data_center_id: String,
    pub secure: bool,
    pub total: u32,
    pub free: u32,
    pub public_ip: String,
    pub cuda_versions: Vec<String>,
}

/// The CPU side of a CPU pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuAllocation {
    pub flavor_id: String,
    pub vcpus: u32,
}

/// What a CPU pod asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuRequest {
    pub flavor_id: String,
    pub vcpus: u32,
}

/// One stretch of a pod's life at one rate: running (compute and disk billed) or stopped
/// (only its volume disk billed). The ledger billing reads.
#[derive(Debug, Clone, PartialEq)]
pub struct PodInterval {
    pub pod_id: String,
    pub running: bool,
    /// CPU pod (compute billed as CPU rather than GPU).
    pub cpu: bool,
    pub cost_per_hr: f64,
    pub container_disk_gb: u64,
    pub volume_gb: u64,
    /// The cluster the pod was a member of: its time bills to the cluster, not as a pod.
    pub cluster_id: Option<String>,
    pub from: Millis,
    /// Open while `None`.
    pub to: Option<Millis>,
}

/// A pod's place in an Instant Cluster: which cluster, its node rank (0 is the primary) and
/// its address on the cluster's private overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    pub cluster_id: String,
    pub rank: u32,
    pub ip: String,
}

/// A deployed pod.
#[derive(Debug, Clone)]
pub struct Pod {
    pub id: String,
    pub name: String,
    pub image_name: String,
    pub env: Vec<String>,
    pub machine_id: String,
    /// Set for CPU pods (then `gpu_type_id` is empty and `gpu_count` 0).
    pub cpu: Option<CpuAllocation>,
    /// CUDA version of the host, as it reports it (none for CPU hosts).
    pub cuda_version: Option<String>,
    pub created_at: Millis,
    /// Locked pods cannot be stopped.
    pub locked: bool,
    pub global_networking: bool,
    /// A change of `global_networking` asked while the pod ran: it applies at the next start.
    pub global_networking_next: Option<bool>,
    /// Container registry credential id for private images.
    pub registry: Option<String>,
    pub pod_host_id: String,
    pub gpu_type_id: String,
    pub gpu_count: u32,
    pub desired: DesiredStatus,
    pub vcpu_count: f64,
    pub memory_in_gb: f64,
    // 64-bit: REST v2 gives disks and persistent mounts no upper bound.
    pub container_disk_in_gb: u64,
    pub volume_in_gb: u64,
    pub volume_mount_path: Option<String>,
    pub docker_args: String,
    pub ports: String,
    pub cost_per_hr: f64,
    pub network_volume_id: Option<String>,
    pub template_id: Option<String>,
    pub support_public_ip: bool,
    /// When the pod was last started (deploy or resume); `None` while stopped.
    pub started_at: Option<Millis>,
    pub last_status_change_at: Millis,
    /// Utilisation every GPU of the pod reports, in percent, as a test set it
    /// (`/_emulator/gpu-utilisation`); `None`: each surface's usual figures.
    pub gpu_util_percent: Option<f64>,
    /// (private port, public port, type) for every requested port.
    pub port_map: Vec<(u32, u32, String)>,
    /// Set for a member of an Instant Cluster, which only the cluster may change.
    pub cluster: Option<Membership>,
    /// Why the current start never completes (a test's rule matched it when it started).
    pub start_failure: Option<StartFailure>,
}

impl Pod {
    /// What the pod holds on its machine: GPUs, or vCPUs for a CPU pod.
    pub fn units(&self) -> u32 {
        self.cpu.as_ref().map_or(self.gpu_count, |c| c.vcpus)
    }

    /// Whether the current start is the pod's first one (it is still being provisioned).
    pub fn first_start(&self) -> bool {
        self.started_at == Some(self.created_at)
    }
}

/// What a deploy asks for, after GraphQL input parsing.
#[derive(Debug, Clone, Default)]
pub struct DeployRequest {
    pub name: Option<String>,
    pub image_name: Option<String>,
    pub gpu_type_id: Option<String>,
    pub gpu_count: Option<i32>,
    pub cloud: CloudChoice,
    pub data_center_id: Option<String>,
    // 64-bit: REST v2 passes its sizes through unbounded (GraphQL's are 32-bit Ints).
    pub volume_in_gb: Option<i64>,
    pub container_disk_in_gb: Option<i64>,
    pub min_vcpu_count: Option<i32>,
    pub min_memory_in_gb: Option<i32>,
    pub docker_args: Option<String>,
    pub ports: Option<String>,
    pub volume_mount_path: Option<String>,
    pub env: Vec<(String, String)>,
    pub allowed_cuda_versions: Option<Vec<String>>,
    /// Lowest acceptable CUDA version (`major.minor`, compared numerically).
    pub min_cuda_version: Option<String>,
    /// Acceptable data centers (any when empty); `data_center_id` narrows further.
    pub data_center_ids: Vec<String>,
    /// A CPU pod instead of a GPU pod.
    pub cpu: Option<CpuRequest>,
    pub network_volume_id: Option<String>,
    /// Data center of the network volume, resolved by the caller.
    pub network_volume_dc: Option<String>,
    pub template: Option<TemplateDefaults>,
    pub support_public_ip: Option<bool>,
}

/// What a template contributes to a deploy.
#[derive(Debug, Clone, Default)]
pub struct TemplateDefaults {
    pub id: String,
    pub image_name: String,
    pub container_disk_in_gb: u64,
    pub volume_in_gb: u64,
    pub volume_mount_path: String,
    pub ports: Vec<String>,
    pub env: Vec<(String, String)>,
}

/// What a deploy's checks settle before it is placed: the same for every pod of a cluster.
#[derive(Debug, Clone)]
struct Checked {
    template: TemplateDefaults,
    image_name: String,
    ports: String,
    port_specs: Vec<(u32, String)>,
}

/// Where a deploy lands and what it costs.
struct Placement {
    machine_id: String,
    /// GPUs or vCPUs taken from the machine.
    units: u32,
    gpu_type_id: String,
    gpu_count: u32,
    vcpus: u32,
    memory_gb: u32,
    price_per_hr: f64,
    cuda_version: Option<String>,
}

/// `major.minor` (or a bare major) as numbers, so 12.11 sorts above 12.2.
pub fn cuda_parts(v: &str) -> (u32, u32) {
    let (major, minor) = v.split_once('.').unwrap_or((v, "0"));
    (major.parse().unwrap_or(0), minor.parse().unwrap_or(0))
}

pub fn cuda_order(a: &str, b: &str) -> std::cmp::Ordering {
    cuda_parts(a).cmp(&cuda_parts(b))
}

/// Whether `version` is at least `min`; a bare major `min` accepts every release of it.
pub fn cuda_at_least(version: &str, min: &str) -> bool {
    cuda_parts(version) >= cuda_parts(min)
}

/// The lowest price and stock of a GPU type for a GPU count and cloud.
#[derive(Debug, Clone, PartialEq)]
pub struct PriceInfo {
    pub uninterruptable_price: Option<f64>,
    pub minimum_bid_price: Option<f64>,
    pub stock_status: &'static str,
    pub available_gpu_counts: Vec<i32>,
}

/// GPU catalog, machines and pods.
#[derive(Debug, Clone, Default)]
pub struct Cloud {
    pub gpu_types: Vec<GpuTypeFixture>,
    pub cpu_types: Vec<CpuTypeFixture>,
    pub data_centers: Vec<String>,
    machines: Vec<Machine>,
    machine_index: HashMap<String, usize>,
    /// Pods in creation order (by sequence number). Shared, so that a listing copies
    /// pointers under the world's lock and writes its answer after it (`v2::pods::view`);
    /// an edit copies a pod first only while a listing still holds it.
    pods: BTreeMap<u64, Arc<Pod>>,
    pod_index: HashMap<String, u64>,
    next_seq: u64,
    next_ip: u32,
    /// The machines as `lowestPrice` reports them while the stock view is frozen. The real
    /// platform's stock figures are a cached view: a deploy can fail for capacity while
    /// they still show stock, and this lets tests make the two disagree.
    stock_view: Option<Vec<Machine>>,
    /// Every pod's running and stopped stretches, terminated pods included.
    usage: Vec<PodInterval>,
    /// The start failures tests switched on (`host`).
    start_rules: StartRules,
    /// Price factor per GPU type or CPU flavor id for pods created from now on (`host`).
    markups: HashMap<String, f64>,
    /// GPUs (or vCPUs) of a machine that other tenants hold, by machine id (`host`).
    host_holds: HashMap<String, u32>,
}

impl Cloud {
    pub fn new(gpu_types: Vec<GpuTypeFixture>, data_centers: Vec<String>) -> Self {
        let mut cloud = Self {
            gpu_types: gpu_types.clone(),
            data_centers,
            ..Self::default()
        };
        for g in &gpu_types {
            for s in &g.stock {
                cloud.add_machines(g, s);
            }
        }
        cloud
    }

    /// Adds the CPU flavors and their machines.
    pub fn with_cpu_types(mut self, cpu_types: Vec<CpuTypeFixture>) -> Self {
        for c in &cpu_types {
            for s in &c.stock {
                for _ in 0..s.machines {
                    self.next_ip += 1;
                    let machine = Machine {
                        id: ids::short(12),
                        gpu_type_id: String::new(),
                        cpu_flavor: Some(c.id.clone()),
                        data_center_id: s.data_center_id.clone(),
                        secure: true,
                        total: s.vcpus_per_machine,
                        free: s.vcpus_per_machine,
                        public_ip: self.next_public_ip(),
                        cuda_versions: Vec::new(),
                    };
                    self.machine_index
                        .insert(machine.id.clone(), self.machines.len());
                    self.machines.push(machine);
                }
            }
        }
        self.cpu_types = cpu_types;
        self
    }

    fn next_public_ip(&self) -> String {
        format!(
            "203.0.{}.{}",
            113 + self.next_ip / 250,
            1 + self.next_ip % 250
        )
    }

    pub fn cpu_type(&self, id: &str) -> Option<&CpuTypeFixture> {
        self.cpu_types.iter().find(|c| c.id == id)
    }

    /// The machines as the catalog reports them: the frozen view while there is one.
    pub fn stock_machines(&self) -> &[Machine] {
        self.stock_view.as_deref().unwrap_or(&self.machines)
    }

    /// Running and stopped stretches of every pod, in the order they began.
    pub fn pod_usage(&self) -> &[PodInterval] {
        &self.usage
    }

    fn open_interval(&mut self, id: &str, running: bool, now: Millis) {
        let Some(p) = self.pod(id) else { return };
        let interval = PodInterval {
            pod_id: p.id.clone(),
            running,
            cpu: p.cpu.is_some(),
            cost_per_hr: p.cost_per_hr,
            container_disk_gb: p.container_disk_in_gb,
            volume_gb: p.volume_in_gb,
            cluster_id: p.cluster.as_ref().map(|m| m.cluster_id.clone()),
            from: now,
            to: None,
        };
        self.usage.push(interval);
    }

    fn close_interval(&mut self, id: &str, now: Millis) {
        if let Some(open) = self
            .usage
            .iter_mut()
            .rev()
            .find(|i| i.pod_id == id && i.to.is_none())
        {
            open.to = Some(now.max(open.from));
        }
    }

    fn add_machines(&mut self, g: &GpuTypeFixture, s: &StockFixture) {
        for _ in 0..s.machines {
            self.next_ip += 1;
            let machine = Machine {
                id: ids::short(12),
                gpu_type_id: g.id.clone(),
                cpu_flavor: None,
                data_center_id: s.data_center_id.clone(),
                secure: s.secure_cloud,
                total: s.gpus_per_machine,
                free: s.gpus_per_machine,
                public_ip: self.next_public_ip(),
                cuda_versions: g.cuda_versions.clone(),
            };
            self.machine_index
                .insert(machine.id.clone(), self.machines.len());
            self.machines.push(machine);
        }
    }

    pub fn gpu_type(&self, id: &str) -> Option<&GpuTypeFixture> {
        self.gpu_types.iter().find(|g| g.id == id)
    }

    pub fn machine(&self, id: &str) -> Option<&Machine> {
        self.machine_index.get(id).map(|&i| &self.machines[i])
    }

    fn machine_mut(&mut self, id: &str) -> Option<&mut Machine> {
        self.machine_index
            .get(id)
            .copied()
            .map(move |i| &mut self.machines[i])
    }

    pub fn machines(&self) -> &[Machine] {
        &self.machines
    }

    pub fn pods(&self) -> impl Iterator<Item = &Pod> {
        self.pods.values().map(Arc::as_ref)
    }

    /// Every pod in creation order, as pointers that outlive the world's lock.
    pub fn shared_pods(&self) -> impl Iterator<Item = &Arc<Pod>> {
        self.pods.values()
    }

    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    pub fn pod(&self, id: &str) -> Option<&Pod> {
        self.shared_pod(id).map(Arc::as_ref)
    }

    /// A pod by id, as a pointer that outlives the world's lock.
    pub fn shared_pod(&self, id: &str) -> Option<&Arc<Pod>> {
        self.pod_index.get(id).and_then(|seq| self.pods.get(seq))
    }

    /// A pod to edit in place. Only for settings that hold no resources (name, image, env,
    /// ports, lock, ...): GPUs, machine and state change through deploy/stop/resume/terminate.
    pub fn pod_mut(&mut self, id: &str) -> Result<&mut Pod, PodError> {
        let seq = *self
            .pod_index
            .get(id)
            .ok_or_else(|| PodError::NotFound(id.to_string()))?;
        Ok(Arc::make_mut(
            self.pods.get_mut(&seq).expect("index and pods agree"),
        ))
    }

    /// Free GPUs of a type in a cloud (both clouds when `secure` is `None`).
    pub fn free_gpus(&self, gpu_type_id: &str, secure: Option<bool>) -> u32 {
        self.machines
            .iter()
            .filter(|m| m.gpu_type_id == gpu_type_id && secure.is_none_or(|s| m.secure == s))
            .map(|m| m.free)
            .sum()
    }

    /// Deploys a pod on the first machine that fits: GPUs of the one requested type, or
    /// vCPUs of the requested CPU flavor. Never falls back to another type.
    pub fn deploy(&mut self, req: DeployRequest, now: Millis) -> Result<&Pod, PodError> {
        let checked = self.check_deploy(&req, true)?;
        let placement = match &req.cpu {
            Some(cpu) => self.place_cpu(&req, cpu)?,
            None => self.place_gpu(&req)?,
        };
        let seq = self.install(&req, &checked, placement, None, now);
        Ok(&*self.pods[&seq])
    }

    /// The rules of a deploy that do not depend on stock, and what they settle. A pod needs
    /// an image (or a template's) when `image_required`; a cluster's members do not (REST
    /// v2 leaves a cluster's image optional) and then have none.
    fn check_deploy(&self, req: &DeployRequest, image_required: bool) -> Result<Checked, PodError> {
        let template = req.template.clone().unwrap_or_default();
        let image_name = req
            .image_name
            .clone()
            .filter(|s| !s.is_empty())
            .or_else(|| (!template.image_name.is_empty()).then(|| template.image_name.clone()))
            .or_else(|| (!image_required).then(String::new))
            .ok_or_else(|| invalid("imageName", "required unless templateId is given"))?;
        for (field, value) in [
            ("volumeInGb", req.volume_in_gb),
            ("containerDiskInGb", req.container_disk_in_gb),
            ("minVcpuCount", req.min_vcpu_count.map(i64::from)),
            ("minMemoryInGb", req.min_memory_in_gb.map(i64::from)),
        ] {
            if value.is_some_and(|v| v < 0) {
                return Err(invalid(field, "must not be negative"));
            }
        }
        for dc in req.data_center_id.iter().chain(&req.data_center_ids) {
            if !self.data_centers.contains(dc) {
                return Err(invalid(
                    "dataCenterId",
                    format!("unknown data center {dc:?}"),
                ));
            }
        }
        if let (Some(dc), Some(vol_dc)) = (&req.data_center_id, &req.network_volume_dc)
            && dc != vol_dc
        {
            return Err(invalid(
                "dataCenterId",
                format!("the network volume is in {vol_dc}, not {dc}"),
            ));
        }
        let ports = req
            .ports
            .clone()
            .unwrap_or_else(|| template.ports.join(","));
        let port_specs = parse_ports(&ports)?;
        Ok(Checked {
            template,
            image_name,
            ports,
            port_specs,
        })
    }

    /// Puts a checked pod on its placement: the machine's GPUs or vCPUs are taken and its
    /// usage starts. Returns the pod's sequence number.
    fn install(
        &mut self,
        req: &DeployRequest,
        checked: &Checked,
        placement: Placement,
        cluster: Option<Membership>,
        now: Millis,
    ) -> u64 {
        let Checked {
            template,
            image_name,
            ports,
            port_specs,
        } = checked.clone();
        let machine = self
            .machine_mut(&placement.machine_id)
            .expect("placement names a machine");
        machine.free -= placement.units;

        let id = ids::short(14);
        let mut env: Vec<String> = template
            .env
            .iter()
            .filter(|(k, _)| !req.env.iter().any(|(rk, _)| rk == k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        env.extend(req.env.iter().map(|(k, v)| format!("{k}={v}")));
        let priced_as = req
            .cpu
            .as_ref()
            .map_or(&placement.gpu_type_id, |c| &c.flavor_id);
        let markup = self.markups.get(priced_as).copied().unwrap_or(1.0);
        let pod = Pod {
            pod_host_id: format!("{id}-{}", &placement.machine_id[..8]),
            id: id.clone(),
            name: req.name.clone().unwrap_or_default(),
            image_name,
            env,
            machine_id: placement.machine_id,
            cpu: req.cpu.as_ref().map(|c| CpuAllocation {
                flavor_id: c.flavor_id.clone(),
                vcpus: c.vcpus,
            }),
            cuda_version: placement.cuda_version,
            created_at: now,
            locked: false,
            global_networking: false,
            global_networking_next: None,
            registry: None,
            gpu_type_id: placement.gpu_type_id,
            gpu_count: placement.gpu_count,
            desired: DesiredStatus::Running,
            vcpu_count: f64::from(req.min_vcpu_count.unwrap_or(0).max(placement.vcpus as i32)),
            memory_in_gb: f64::from(
                req.min_memory_in_gb
                    .unwrap_or(0)
                    .max(placement.memory_gb as i32),
            ),
            container_disk_in_gb: req.container_disk_in_gb.map(|v| v as u64).unwrap_or(
                if template.id.is_empty() {
                    10
                } else {
                    template.container_disk_in_gb
                },
            ),
            volume_in_gb: req
                .volume_in_gb
                .map(|v| v as u64)
                .unwrap_or(template.volume_in_gb),
            volume_mount_path: req.volume_mount_path.clone().or_else(|| {
                (!template.volume_mount_path.is_empty()).then(|| template.volume_mount_path.clone())
            }),
            docker_args: req.docker_args.clone().unwrap_or_default(),
            ports,
            cost_per_hr: (placement.price_per_hr * markup * 1000.0).round() / 1000.0,
            network_volume_id: req.network_volume_id.clone(),
            template_id: (!template.id.is_empty()).then(|| template.id.clone()),
            support_public_ip: req.support_public_ip.unwrap_or(true),
            started_at: Some(now),
            gpu_util_percent: None,
            last_status_change_at: now,
            port_map: assign_ports(&port_specs),
            cluster,
            start_failure: None,
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.pod_index.insert(id.clone(), seq);
        self.pods.insert(seq, Arc::new(pod));
        self.open_interval(&id, true, now);
        self.arm_start(&id);
        seq
    }

    /// Restarts a running pod's container in place: it boots again, on the same host.
    pub fn restart(&mut self, id: &str, now: Millis) -> Result<&Pod, PodError> {
        let pod = self.pod_mut(id)?;
        if pod.desired == DesiredStatus::Running {
            pod.started_at = Some(now);
            pod.last_status_change_at = now;
        }
        self.arm_start(id);
        self.pod(id).ok_or_else(|| PodError::NotFound(id.into()))
    }

    /// Stops a pod: EXITED, GPUs back to its host. Stopping a stopped pod changes nothing.
    pub fn stop(&mut self, id: &str, now: Millis) -> Result<&Pod, PodError> {
        let pod = self.pod_mut(id)?;
        if pod.desired == DesiredStatus::Running {
            pod.desired = DesiredStatus::Exited;
            pod.started_at = None;
            pod.start_failure = None;
            pod.last_status_change_at = now;
            let (machine_id, count) = (pod.machine_id.clone(), pod.units());
            if let Some(m) = self.machine_mut(&machine_id) {
                m.free = (m.free + count).min(m.total);
            }
            self.close_interval(id, now);
            self.open_interval(id, false, now);
        }
        self.pod(id).ok_or_else(|| PodError::NotFound(id.into()))
    }

    /// Resumes a stopped pod on its host. Resuming a running pod changes nothing.
    pub fn resume(
        &mut self,
        id: &str,
        gpu_count: Option<i32>,
        now: Millis,
    ) -> Result<&Pod, PodError> {
        let pod = self.pod(id).ok_or_else(|| PodError::NotFound(id.into()))?;
        if pod.desired == DesiredStatus::Running {
            return Ok(self.pod(id).expect("exists"));
        }
        let wanted = match &pod.cpu {
            Some(cpu) => cpu.vcpus,
            None => {
                let max = self
                    .gpu_type(&pod.gpu_type_id)
                    .map_or(8, |g| g.max_gpu_count);
                let wanted = gpu_count.unwrap_or(pod.gpu_count as i32);
                if wanted < 1 || wanted as u32 > max {
                    return Err(invalid("gpuCount", format!("must be between 1 and {max}")));
                }
                wanted as u32
            }
        };
        let machine_id = pod.machine_id.clone();
        let machine = self.machine_mut(&machine_id).ok_or(PodError::HostFull)?;
        if machine.free < wanted {
            return Err(PodError::HostFull);
        }
        machine.free -= wanted;
        let price_per_unit = {
            let pod = self.pod(id).expect("exists");
            pod.cost_per_hr / f64::from(pod.units().max(1))
        };
        let pod = self.pod_mut(id)?;
        pod.cost_per_hr = (price_per_unit * f64::from(wanted) * 1000.0).round() / 1000.0;
        if pod.cpu.is_none() {
            pod.gpu_count = wanted;
        }
        pod.desired = DesiredStatus::Running;
        pod.started_at = Some(now);
        pod.last_status_change_at = now;
        let specs: Vec<(u32, String)> = pod
            .port_map
            .iter()
            .map(|(p, _, t)| (*p, t.clone()))
            .collect();
        pod.port_map = assign_ports(&specs);
        self.close_interval(id, now);
        self.open_interval(id, true, now);
        self.arm_start(id);
        self.pod(id).ok_or_else(|| PodError::NotFound(id.into()))
    }

    /// Removes a pod for good; its GPUs go back to stock.
    pub fn terminate(&mut self, id: &str, now: Millis) -> Result<(), PodError> {
        let seq = self
            .pod_index
            .remove(id)
            .ok_or_else(|| PodError::NotFound(id.into()))?;
        let pod = self.pods.remove(&seq).expect("index and pods agree");
        if pod.desired == DesiredStatus::Running
            && let Some(m) = self.machine_mut(&pod.machine_id)
        {
            m.free = (m.free + pod.units()).min(m.total);
        }
        self.close_interval(id, now);
        Ok(())
    }
}

/// The platform's coarse stock words.
pub fn stock_status(deployable: u32) -> &'static str {
    match deployable {
        0 => "None",
        1..=3 => "Low",
        4..=15 => "Medium",
        _ => "High",
    }
}

/// Parses `8888/http,22/tcp`.
pub fn parse_ports(ports: &str) -> Result<Vec<(u32, String)>, PodError> {
    ports
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (port, kind) = p.split_once('/').ok_or_else(|| {
                invalid("ports", format!("{p:?} is not of the form <port>/<type>"))
            })?;
            let port: u32 = port
                .parse()
                .ok()
                .filter(|n| (1..=65535).contains(n))
                .ok_or_else(|| invalid("ports", format!("{p:?}: port must be 1..65535")))?;
            if kind != "http" && kind != "tcp" && kind != "udp" {
                return Err(invalid(
                    "ports",
                    format!("{p:?}: type must be http, tcp or udp"),
                ));
            }
            Ok((port, kind.to_string()))
        })
        .collect()
}

/// A random public port for every (private port, type).
pub fn assign_ports(specs: &[(u32, String)]) -> Vec<(u32, u32, String)> {
    use rand::Rng;
    let mut rng = rand::rng();
    specs
        .iter()
        .map(|(p, t)| (*p, rng.random_range(10_000..60_000), t.clone()))
        .collect()
}

#[cfg(test)]
mod tests;
