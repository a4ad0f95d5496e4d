//! GPU pods, whichever backend serves them.
//!
//! The pod the facades return has the seed API's shape (`myself { pods }`), the richer of
//! the two: REST v2 pods are mapped into it, so the Pod controller reads one shape. What
//! differs is placement: the seed's deploy takes one GPU type and may land in any data
//! center; REST v2 places on exactly one GPU type, in the data centers and cloud it is
//! told, and never falls back. Both are driven the same way here: the caller chooses a
//! [`Placement`] from [`GpuOffer`]s and tries them in order.

use super::super::config::PlatformApi;
use super::super::error::PlatformError;
use super::super::graphql::types::{CloudType, DeployPodInput, EnvVar, ResumePodInput};
use super::super::{PlatformClient, v2};

pub use super::super::graphql::types::{
    Pod, PodGlobalAddress, PodMachine, PodRuntime, PodRuntimeContainer, PodRuntimeGpu,
    PodRuntimePort,
};

type Result<T> = std::result::Result<T, PlatformError>;

/// The platform's word for a running pod.
pub const RUNNING: &str = "RUNNING";
/// The platform's word for a stopped pod.
pub const EXITED: &str = "EXITED";
/// The platform's word for a pod that is gone.
pub const TERMINATED: &str = "TERMINATED";

/// Where a pod may be placed: one GPU type, in one data center (or any, when the backend
/// cannot tell them apart) and cloud, at a price for the whole pod.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuOffer {
    pub gpu_type_id: String,
    /// `None`: the backend reports stock per type only (seed).
    pub data_center_id: Option<String>,
    /// `Some(true)`: secure cloud; `Some(false)`: community; `None`: either.
    pub secure_cloud: Option<bool>,
    /// Hourly price of the whole pod (all its GPUs); `None` when not offered.
    pub price_per_hour: Option<f64>,
    pub in_stock: bool,
    /// GPU counts one machine can give right now.
    pub gpu_counts: Vec<i64>,
    pub cuda_versions: Vec<String>,
}

/// The placement a deploy is tried with.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Placement {
    pub gpu_type_id: String,
    pub data_center_id: Option<String>,
    pub secure_cloud: Option<bool>,
}

/// Everything of a deploy but its placement.
#[derive(Clone, Default, PartialEq)]
pub struct PodRequest {
    pub name: String,
    pub image: String,
    pub docker_args: Option<String>,
    /// `port/type` entries.
    pub ports: Vec<String>,
    /// Values may be secret: never logged (see the `Debug` impl).
    pub env: Vec<(String, String)>,
    pub container_disk_gb: i32,
    pub volume_gb: i32,
    pub volume_mount_path: Option<String>,
    pub min_vcpu_count: Option<i32>,
    pub min_memory_gb: Option<i32>,
    pub allowed_cuda_versions: Vec<String>,
    pub gpu_count: i32,
    pub network_volume_id: Option<String>,
    /// Template to deploy from.
    pub template_id: Option<String>,
    /// Registry credential to pull the image with (REST v2 only).
    pub registry_id: Option<String>,
    /// A private address on the cross-data-center network (REST v2 only).
    pub global_networking: bool,
}

impl std::fmt::Debug for PodRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("PodRequest")
            .field("name", &self.name)
            .field("image", &self.image)
            .field("env_keys", &env)
            .field("gpu_count", &self.gpu_count)
            .finish_non_exhaustive()
    }
}

/// Pod calls; obtained from [`PlatformClient::pods`].
#[derive(Clone, Debug)]
pub struct Pods {
    client: PlatformClient,
}

impl PlatformClient {
    /// GPU pods, on whichever backend the configuration chose.
    pub fn pods(&self) -> Pods {
        Pods::new(self.clone())
    }
}

impl Pods {
    pub(crate) fn new(client: PlatformClient) -> Self {
        Self { client }
    }

    /// Every pod of the account that is not terminated, in one call.
    pub async fn list(&self) -> Result<Vec<Pod>> {
        let mut pods = match self.client.api() {
            PlatformApi::Seed => self.client.graphql().my_pods().await?,
            PlatformApi::V2 => self
                .client
                .v2()
                .list_pods(&Default::default())
                .await?
                .into_iter()
                .map(from_v2)
                .collect(),
        };
        pods.retain(|p| p.desired_status != TERMINATED);
        Ok(pods)
    }

    /// Whether this backend deploys CPU pods and global networking (REST v2 only: the seed
    /// API's deploy takes neither).
    pub fn supports_cpu_and_global_networking(&self) -> bool {
        self.client.api() == PlatformApi::V2
    }

    /// Deploys on exactly `placement`. A capacity refusal is
    /// [`ErrorClass::Capacity`](crate::ErrorClass::Capacity); the caller tries its next
    /// placement.
    pub async fn deploy(&self, req: &PodRequest, placement: &Placement) -> Result<Pod> {
        match self.client.api() {
            PlatformApi::Seed => {
                if req.global_networking {
                    return Err(PlatformError::invalid_input(
                        "globalNetworking",
                        "the seed API deploys no pod on the global network; use the REST v2 backend",
                    ));
                }
                if req.registry_id.is_some() {
                    return Err(PlatformError::invalid_input(
                        "registryCredentialRef",
                        "the seed API deploys a pod with no registry credential of its own; give the pod a Template with registryCredentialRef instead",
                    ));
                }
                let input = seed_deploy_input(req, placement);
                let p = self.client.graphql().deploy_pod(&input).await?;
                let mut machine = p.machine.unwrap_or_default();
                machine
                    .gpu_type_id
                    .get_or_insert_with(|| placement.gpu_type_id.clone());
                Ok(Pod {
                    id: p.id,
                    name: req.name.clone(),
                    image_name: p.image_name,
                    env: p.env,
                    machine_id: p.machine_id,
                    machine: Some(machine),
                    desired_status: RUNNING.to_string(),
                    runtime: None,
                    gpu_count: Some(i64::from(req.gpu_count)),
                    vcpu_count: None,
                    memory_in_gb: None,
                    container_disk_in_gb: Some(i64::from(req.container_disk_gb)),
                    volume_in_gb: Some(i64::from(req.volume_gb)),
                    volume_mount_path: req.volume_mount_path.clone(),
                    docker_args: req.docker_args.clone(),
                    ports: Some(req.ports.join(",")),
                    cost_per_hr: None,
                    last_status_change: None,
                    network_volume_id: req.network_volume_id.clone(),
                    template_id: req.template_id.clone(),
                    cpu_flavor_id: None,
                    global_networking: None,
                })
            }
            PlatformApi::V2 => {
                let input = v2_create_request(req, placement);
                self.create_v2(&input).await
            }
        }
    }

    /// `POST /v2/pods`, a missing reference told in the domain's field names.
    pub(super) async fn create_v2(&self, input: &v2::CreatePod) -> Result<Pod> {
        let created = self.client.v2().create_pod(input).await.map_err(|e| {
            super::refers_to_missing(
                e,
                &[
                    ("template", "templateId"),
                    ("volume", "networkVolumeId"),
                    ("registry", "registry"),
                ],
            )
        })?;
        Ok(from_v2(created))
    }

    /// Stops a running pod; its GPUs go back to its host.
    pub async fn stop(&self, id: &str) -> Result<()> {
        match self.client.api() {
            PlatformApi::Seed => self.client.graphql().stop_pod(id).await.map(drop),
            PlatformApi::V2 => self
                .client
                .v2()
                .pod_action(id, v2::PodAction::Stop)
                .await
                .map(drop),
        }
    }

    /// Starts a stopped pod again on its host, with `gpu_count` GPUs.
    pub async fn start(&self, id: &str, gpu_count: Option<i32>) -> Result<()> {
        match self.client.api() {
            PlatformApi::Seed => {
                let input = ResumePodInput {
                    pod_id: id.to_string(),
                    gpu_count,
                    allowed_cuda_versions: None,
                };
                self.client.graphql().resume_pod(&input).await.map(drop)
            }
            PlatformApi::V2 => self
                .client
                .v2()
                .pod_action(id, v2::PodAction::Start)
                .await
                .map(drop),
        }
    }

    /// Removes a pod for good.
    pub async fn terminate(&self, id: &str) -> Result<()> {
        match self.client.api() {
            PlatformApi::Seed => self.client.graphql().terminate_pod(id).await.map(drop),
            PlatformApi::V2 => self.client.v2().delete_pod(id).await,
        }
    }
}

fn seed_cloud(secure: Option<bool>) -> CloudType {
    match secure {
        None => CloudType::All,
        Some(true) => CloudType::Secure,
        Some(false) => CloudType::Community,
    }
}

fn seed_deploy_input(req: &PodRequest, placement: &Placement) -> DeployPodInput {
    DeployPodInput {
        cloud_type: Some(seed_cloud(placement.secure_cloud)),
        gpu_count: Some(req.gpu_count),
        volume_in_gb: Some(req.volume_gb),
        container_disk_in_gb: Some(req.container_disk_gb),
        min_vcpu_count: req.min_vcpu_count,
        min_memory_in_gb: req.min_memory_gb,
        gpu_type_id: Some(placement.gpu_type_id.clone()),
        name: Some(req.name.clone()),
        image_name: Some(req.image.clone()),
        docker_args: req.docker_args.clone(),
        ports: (!req.ports.is_empty()).then(|| req.ports.join(",")),
        volume_mount_path: req.volume_mount_path.clone(),
        env: Some(
            req.env
                .iter()
                .map(|(k, v)| EnvVar {
                    key: k.clone(),
                    value: v.clone(),
                })
                .collect(),
        ),
        allowed_cuda_versions: (!req.allowed_cuda_versions.is_empty())
            .then(|| req.allowed_cuda_versions.clone()),
        data_center_id: placement.data_center_id.clone(),
        network_volume_id: req.network_volume_id.clone(),
        template_id: req.template_id.clone(),
        support_public_ip: None,
    }
}

fn v2_create_request(req: &PodRequest, placement: &Placement) -> v2::CreatePod {
    v2::CreatePod {
        cloud: placement.secure_cloud.map(|secure| {
            if secure {
                v2::Cloud::Secure
            } else {
                v2::Cloud::Community
            }
        }),
        gpu: Some(v2::CreateGpuConfig {
            id: placement.gpu_type_id.clone(),
            count: u32::try_from(req.gpu_count).ok(),
            cuda: v2::CudaVersions {
                allowed_cuda_versions: (!req.allowed_cuda_versions.is_empty())
                    .then(|| req.allowed_cuda_versions.clone()),
                ..Default::default()
            },
        }),
        ..v2_create_body(req, placement.data_center_id.as_deref())
    }
}

/// A REST v2 create of `req` in `data_center_id`, without its GPU or CPU and cloud.
pub(super) fn v2_create_body(req: &PodRequest, data_center_id: Option<&str>) -> v2::CreatePod {
    let mount_path = req
        .volume_mount_path
        .clone()
        .unwrap_or_else(|| "/workspace".to_string());
    // A network volume takes the pod's volume path; otherwise the pod gets its own disk
    // there. REST v2 mounts one or the other, as the seed API does.
    let mounts = match &req.network_volume_id {
        Some(volume) => Some(v2::Mounts {
            persistent: None,
            network: Some(vec![v2::NetworkMount {
                volume_id: volume.clone(),
                path: mount_path,
            }]),
        }),
        None if req.volume_gb > 0 => Some(v2::Mounts {
            persistent: Some(v2::PersistentMount {
                size: req.volume_gb.unsigned_abs(),
                path: mount_path,
            }),
            network: None,
        }),
        None => None,
    };
    v2::CreatePod {
        name: req.name.clone(),
        container: v2::CreateContainerConfig {
            image: Some(req.image.clone()),
            args: req.docker_args.clone(),
            disk: u32::try_from(req.container_disk_gb).ok().filter(|d| *d > 0),
            env: Some(req.env.iter().cloned().collect()),
            ports: (!req.ports.is_empty()).then(|| req.ports.clone()),
            registry: req.registry_id.clone(),
        },
        // With a network volume the volume decides the data center.
        data_center_ids: data_center_id
            .filter(|_| req.network_volume_id.is_none())
            .map(|dc| vec![dc.to_string()]),
        mounts,
        template_id: req.template_id.clone(),
        global_networking: req.global_networking.then_some(true),
        ..Default::default()
    }
}

/// A REST v2 pod in the shape the controllers read. A pod still provisioning or starting
/// reads as the seed API shows a booting pod: desired RUNNING, no runtime yet.
pub fn from_v2(p: v2::Pod) -> Pod {
    let desired_status = match &p.status {
        v2::PodStatus::Provisioning | v2::PodStatus::Starting | v2::PodStatus::Running => RUNNING,
        v2::PodStatus::Exited => EXITED,
        v2::PodStatus::Terminated => TERMINATED,
        v2::PodStatus::Error => "ERROR",
        v2::PodStatus::Other(s) => s.as_str(),
    }
    .to_string();
    let running = p.status == v2::PodStatus::Running;
    let runtime = p.runtime.filter(|_| running).map(|r| PodRuntime {
        uptime_in_seconds: i64::try_from(r.uptime).unwrap_or(i64::MAX),
        ports: r
            .ports
            .iter()
            .map(|port| PodRuntimePort {
                ip: port.ip.clone().unwrap_or_default(),
                is_ip_public: port.ip.is_some() && port.public.is_some(),
                private_port: i64::from(port.private),
                public_port: port.public.map(i64::from).unwrap_or_default(),
                kind: port.port_type.clone(),
            })
            .collect(),
        gpus: r
            .gpus
            .iter()
            .enumerate()
            .map(|(i, g)| PodRuntimeGpu {
                id: format!("gpu-{i}"),
                gpu_util_percent: g.util as f64,
                memory_util_percent: g.memory_util as f64,
            })
            .collect(),
        container: None,
    });
    let network = p.mounts.network.as_ref().and_then(|n| n.first()).cloned();
    let persistent = p.mounts.persistent.clone();
    Pod {
        machine: Some(PodMachine {
            pod_host_id: String::new(),
            gpu_type_id: p.gpu.as_ref().map(|g| g.id.clone()),
            gpu_display_name: None,
            data_center_id: p.data_center_id.clone(),
            secure_cloud: p.cloud.as_ref().map(|c| *c == v2::Cloud::Secure),
        }),
        id: p.id,
        name: p.name,
        image_name: p.container.image,
        env: p
            .container
            .env
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect(),
        machine_id: String::new(),
        desired_status,
        runtime,
        gpu_count: p.gpu.as_ref().and_then(|g| g.count).map(i64::from),
        vcpu_count: p.cpu.as_ref().map(|c| f64::from(c.vcpu_count)),
        memory_in_gb: p.cpu.as_ref().and_then(|c| c.memory).map(f64::from),
        container_disk_in_gb: p.container.disk.map(i64::from),
        volume_in_gb: Some(persistent.as_ref().map_or(0, |m| i64::from(m.size))),
        volume_mount_path: network
            .as_ref()
            .map(|n| n.path.clone())
            .or_else(|| persistent.map(|m| m.path)),
        docker_args: p.container.args,
        ports: Some(p.container.ports.join(",")),
        cost_per_hr: Some(p.cost),
        last_status_change: p.started_at,
        network_volume_id: network.map(|n| n.volume_id),
        template_id: p.template,
        cpu_flavor_id: p.cpu.map(|c| c.id),
        global_networking: p
            .global_networking
            .filter(|g| g.enabled)
            .map(|g| PodGlobalAddress {
                ip: g.ip,
                internal_dns: g.internal_dns,
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v2_pod(status: &str, runtime: serde_json::Value) -> v2::Pod {
        serde_json::from_value(json!({
            "id": "p1", "name": "team-dev-1234abcd", "status": status, "image": "img:1",
            "env": {"A": "1"}, "ports": ["8888/http"], "cost": 0.44, "disk": 20,
            "gpu": {"id": "NVIDIA A40", "count": 2}, "cloud": "COMMUNITY", "dataCenterId": "EU-RO-1",
            "mounts": {"network": [{"volumeId": "vol-1", "path": "/data"}]},
            "runtime": runtime,
        }))
        .unwrap()
    }

    #[test]
    fn a_booting_v2_pod_reads_as_running_without_runtime() {
        for status in ["PROVISIONING", "STARTING"] {
            let p = from_v2(v2_pod(status, json!({"uptime": 3})));
            assert_eq!(p.desired_status, RUNNING);
            assert!(p.runtime.is_none(), "{status}");
        }
        let p = from_v2(v2_pod(
            "RUNNING",
            json!({"uptime": 30, "gpus": [{"util": 80, "memoryUtil": 40}],
                   "ports": [{"private": 8888, "public": 40123, "type": "http", "ip": "203.0.113.9"}]}),
        ));
        let rt = p.runtime.as_ref().unwrap();
        assert_eq!(rt.uptime_in_seconds, 30);
        assert_eq!(rt.gpus[0].gpu_util_percent, 80.0);
        assert_eq!(rt.ports[0].public_port, 40123);
        assert!(rt.ports[0].is_ip_public);
        let m = p.machine.unwrap();
        assert_eq!(m.gpu_type_id.as_deref(), Some("NVIDIA A40"));
        assert_eq!(m.secure_cloud, Some(false));
        assert_eq!(p.env, vec!["A=1"]);
        assert_eq!(p.gpu_count, Some(2));
        assert_eq!(p.network_volume_id.as_deref(), Some("vol-1"));
        assert_eq!(p.volume_mount_path.as_deref(), Some("/data"));
        assert_eq!(
            from_v2(v2_pod("EXITED", json!(null))).desired_status,
            EXITED
        );
    }

    #[test]
    fn a_v2_cpu_pod_reads_with_its_flavor_vcpus_and_global_address() {
        let mut raw = serde_json::to_value(v2_pod("RUNNING", json!(null))).unwrap();
        raw.as_object_mut().unwrap().remove("gpu");
        raw["cpu"] = json!({"id": "cpu3c", "vcpuCount": 4, "memory": 8});
        raw["globalNetworking"] =
            json!({"enabled": true, "ip": "10.65.0.7", "internalDns": "p1.runpod.internal"});
        let p = from_v2(serde_json::from_value(raw).unwrap());
        assert_eq!(p.cpu_flavor_id.as_deref(), Some("cpu3c"));
        assert_eq!(p.vcpu_count, Some(4.0));
        assert_eq!(p.gpu_count, None);
        let g = p.global_networking.unwrap();
        assert_eq!(g.internal_dns.as_deref(), Some("p1.runpod.internal"));
        assert_eq!(g.ip.as_deref(), Some("10.65.0.7"));
        let off = from_v2(v2_pod("RUNNING", json!(null)));
        assert!(off.global_networking.is_none());
    }

    fn request() -> PodRequest {
        PodRequest {
            name: "n".into(),
            image: "img:1".into(),
            ports: vec!["22/tcp".into()],
            env: vec![("SECRET".into(), "s3cr3t".into())],
            container_disk_gb: 20,
            volume_gb: 30,
            gpu_count: 1,
            ..Default::default()
        }
    }

    #[test]
    fn a_v2_create_places_on_exactly_the_offer() {
        let at = Placement {
            gpu_type_id: "NVIDIA A40".into(),
            data_center_id: Some("US-TX-3".into()),
            secure_cloud: Some(true),
        };
        let body = serde_json::to_value(v2_create_request(&request(), &at)).unwrap();
        assert_eq!(body["gpu"], json!({"id": "NVIDIA A40", "count": 1}));
        assert_eq!(body["dataCenterIds"], json!(["US-TX-3"]));
        assert_eq!(body["cloud"], "SECURE");
        assert_eq!(
            body["mounts"],
            json!({"persistent": {"size": 30, "path": "/workspace"}})
        );
        // A network volume pins the data center: none is sent, the volume is mounted.
        let mut with_volume = request();
        with_volume.network_volume_id = Some("vol-1".into());
        let body = serde_json::to_value(v2_create_request(&with_volume, &at)).unwrap();
        assert!(body.get("dataCenterIds").is_none(), "{body}");
        assert_eq!(
            body["mounts"],
            json!({"network": [{"volumeId": "vol-1", "path": "/workspace"}]})
        );
    }

    #[test]
    fn debug_of_a_request_hides_env_values() {
        let text = format!("{:?}", request());
        assert!(!text.contains("s3cr3t"), "{text}");
        assert!(text.contains("SECRET"), "{text}");
    }
}
