//! How a pod reads in REST v2: its JSON view (env, mounts, ports, SSH, global networking).
//!
//! An answer is written in two steps. Under the world's lock, [`PodSnapshot::take`] copies
//! what the answer needs: a pointer to the pod and the few facts of its machine and
//! cluster. After the lock, [`PodView`] writes the document's `Pod` from them at the
//! instant of the call, so a listing of 10,000 pods holds the lock for a copy of pointers,
//! not for 7 MB of JSON. The view's fields are in alphabetical order, the order the
//! answers had when they were built as `serde_json::Value`s (whose maps sort their keys),
//! so the bytes of every answer are what they were.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::*;
use crate::clock::Clock;

pub(super) const SSH_PROXY_HOST: &str = "ssh.emulator.localhost";
pub(super) const DEFAULT_MOUNT_PATH: &str = "/workspace";

/// What an answer shows of the machine a pod runs on.
#[derive(Debug, Clone)]
struct MachineFacts {
    public_ip: String,
    data_center_id: String,
    secure: bool,
}

/// A pod and what its answer needs from the rest of the world, copied under the lock.
#[derive(Debug, Clone)]
pub struct PodSnapshot {
    pod: Arc<Pod>,
    machine: Option<MachineFacts>,
    /// The member's role in its cluster, for the cluster kinds that assign one.
    cluster_role: Option<&'static str>,
}

impl PodSnapshot {
    pub fn take(world: &World, pod: &Arc<Pod>) -> Self {
        let machine = world.cloud.machine(&pod.machine_id).map(|m| MachineFacts {
            public_ip: m.public_ip.clone(),
            data_center_id: m.data_center_id.clone(),
            secure: m.secure,
        });
        let cluster_role = pod.cluster.as_ref().and_then(|m| {
            world
                .clusters
                .get(&m.cluster_id)
                .and_then(|c| c.kind.role(m.rank))
        });
        Self {
            pod: pod.clone(),
            machine,
            cluster_role,
        }
    }

    /// The pod as it reads at `now`.
    pub fn view<'a>(&'a self, app: &'a App, now: Millis) -> PodView<'a> {
        PodView {
            snapshot: self,
            clock: &app.clock,
            boot_ms: app.config.pod_boot_ms,
            now,
        }
    }
}

/// The answer to `GET /v2/pods`: `{"pods": [...]}`, from snapshots taken under the lock.
pub struct PodsListing {
    app: App,
    now: Millis,
    pods: Vec<PodSnapshot>,
}

impl PodsListing {
    /// The answer's JSON, written in two halves at once (`v2::listing`).
    pub fn to_json(&self) -> Vec<u8> {
        // A pod is about 720 bytes of JSON.
        crate::v2::listing::list_json(Some("pods"), &self.pods, 768, |p, out| {
            serde_json::to_writer(out, &p.view(&self.app, self.now))
        })
    }
}

impl Serialize for PodsListing {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Pods<'a>(&'a PodsListing);
        impl Serialize for Pods<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let l = self.0;
                serializer.collect_seq(l.pods.iter().map(|p| p.view(&l.app, l.now)))
            }
        }
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("pods", &Pods(self))?;
        map.end()
    }
}

/// The answer to `GET /v2/pods`: every standalone pod of the world.
/// Public so that the emulator benchmark times exactly what the handler does.
pub fn pods_listing(app: &App) -> PodsListing {
    pods_listing_with(app, false)
}

/// `GET /v2/pods`, with the cluster members too when `include_cluster_pods`. The clock is
/// read before the lock, as for every answer, so that the pods' status is the status at
/// the moment of the call.
pub fn pods_listing_with(app: &App, include_cluster_pods: bool) -> PodsListing {
    let now = app.clock.now();
    let pods = {
        let world = app.world.lock();
        world
            .cloud
            .shared_pods()
            .filter(|p| include_cluster_pods || p.cluster.is_none())
            .map(|p| PodSnapshot::take(&world, p))
            .collect()
    };
    PodsListing {
        app: app.clone(),
        now,
        pods,
    }
}

/// The document's `Pod` object, as a JSON value.
pub fn pod_json(app: &App, world: &World, p: &Pod, now: Millis) -> Value {
    let snapshot = PodSnapshot::take(world, &Arc::new(p.clone()));
    serde_json::to_value(snapshot.view(app, now)).expect("a pod view serialises")
}

/// The document's `Pod` at one instant; written field by field, in alphabetical order.
pub struct PodView<'a> {
    snapshot: &'a PodSnapshot,
    clock: &'a Clock,
    boot_ms: u64,
    now: Millis,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PodFields<'a> {
    actions: &'static [&'static str],
    args: &'a str,
    cloud: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    cluster: Option<ClusterView<'a>>,
    cost: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    cpu: Option<CpuView<'a>>,
    created_at: String,
    cuda_version: Option<&'a str>,
    data_center_id: Option<&'a str>,
    disk: u64,
    env: EnvView<'a>,
    global_networking: GlobalNetworkingView,
    #[serde(skip_serializing_if = "Option::is_none")]
    gpu: Option<GpuView<'a>>,
    id: &'a str,
    image: &'a str,
    locked: bool,
    mounts: MountsView<'a>,
    name: &'a str,
    ports: PortsView<'a>,
    registry: Option<&'a str>,
    runtime: Option<RuntimeView<'a>>,
    ssh: SshView<'a>,
    started_at: Option<String>,
    status: &'static str,
    /// Always null: the document's pods name no template.
    template: Option<()>,
}

#[derive(Serialize)]
struct ClusterView<'a> {
    id: &'a str,
    ip: &'a str,
    rank: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CpuView<'a> {
    id: &'a str,
    memory: u64,
    vcpu_count: u32,
}

#[derive(Serialize)]
struct GpuView<'a> {
    count: u32,
    id: &'a str,
}

/// The comma-separated `8888/http,22/tcp` as a list, written without collecting it.
struct PortsView<'a>(&'a str);

impl Serialize for PortsView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.split(',').map(str::trim).filter(|s| !s.is_empty()))
    }
}

/// `KEY=VALUE` pairs as an object, sorted by key; of a key given twice, the last value.
pub(super) struct EnvView<'a>(pub(super) &'a [String]);

impl Serialize for EnvView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let pairs: BTreeMap<&str, &str> = self
            .0
            .iter()
            .map(|kv| kv.split_once('=').unwrap_or((kv.as_str(), "")))
            .collect();
        serializer.collect_map(pairs)
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GlobalNetworkingView {
    enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    internal_dns: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ip: Option<String>,
}

#[derive(Serialize)]
struct MountsView<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    network: Option<[NetworkMountView<'a>; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    persistent: Option<PersistentMountView<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NetworkMountView<'a> {
    path: &'a str,
    volume_id: &'a str,
}

#[derive(Serialize)]
struct PersistentMountView<'a> {
    path: &'a str,
    size: u64,
}

#[derive(Serialize)]
struct RuntimeView<'a> {
    cpu: Util,
    gpus: Vec<GpuUtil>,
    memory: Util,
    ports: Vec<PortView<'a>>,
    uptime: u64,
}

#[derive(Serialize)]
struct Util {
    util: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GpuUtil {
    memory_util: u32,
    util: u32,
}

#[derive(Serialize)]
struct PortView<'a> {
    ip: Option<&'a str>,
    private: u32,
    public: u32,
    #[serde(rename = "type")]
    kind: &'a str,
}

#[derive(Serialize)]
struct SshView<'a> {
    direct: Option<SshDirectView<'a>>,
    proxy: SshProxyView<'a>,
}

#[derive(Serialize)]
struct SshDirectView<'a> {
    command: String,
    host: &'a str,
    port: u32,
    username: &'static str,
}

#[derive(Serialize)]
struct SshProxyView<'a> {
    command: String,
    host: &'static str,
    port: u32,
    username: &'a str,
}

fn mounts_view(p: &Pod) -> MountsView<'_> {
    let path = p.volume_mount_path.as_deref().unwrap_or(DEFAULT_MOUNT_PATH);
    match &p.network_volume_id {
        Some(volume) => MountsView {
            network: Some([NetworkMountView {
                path,
                volume_id: volume,
            }]),
            persistent: None,
        },
        None if p.volume_in_gb > 0 => MountsView {
            network: None,
            persistent: Some(PersistentMountView {
                path,
                size: p.volume_in_gb,
            }),
        },
        None => MountsView {
            network: None,
            persistent: None,
        },
    }
}

impl Serialize for PodView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let PodSnapshot {
            pod: p,
            machine,
            cluster_role,
        } = self.snapshot;
        let now = self.now;
        let status = status_of(p, now, self.boot_ms);
        let ip = machine.as_ref().map(|m| m.public_ip.as_str());
        let running = status == PodStatus::Running;
        let booted_at = p.started_at.map(|s| s + self.boot_ms);
        let direct = if running {
            p.port_map
                .iter()
                .find(|(private, _, kind)| *private == 22 && kind == "tcp")
                .map(|&(_, public, _)| {
                    let host = ip.unwrap_or_default();
                    SshDirectView {
                        command: format!("ssh root@{host} -p {public}"),
                        host,
                        port: public,
                        username: "root",
                    }
                })
        } else {
            None
        };
        let runtime = running.then(|| RuntimeView {
            cpu: Util { util: 12 },
            gpus: (0..p.gpu_count)
                .map(|i| GpuUtil {
                    memory_util: (21 + 7 * i) % 100,
                    util: p
                        .gpu_util_percent
                        .map_or((37 + 11 * i) % 100, |u| u.round() as u32),
                })
                .collect(),
            memory: Util { util: 34 },
            ports: p
                .port_map
                .iter()
                .map(|(private, public, kind)| PortView {
                    ip,
                    private: *private,
                    public: *public,
                    kind,
                })
                .collect(),
            uptime: booted_at.map_or(0, |b| now.saturating_sub(b) / 1000),
        });
        PodFields {
            actions: status.actions(p.locked),
            args: &p.docker_args,
            cloud: if machine.as_ref().is_none_or(|m| m.secure) {
                "SECURE"
            } else {
                "COMMUNITY"
            },
            cluster: p.cluster.as_ref().map(|m| ClusterView {
                id: &m.cluster_id,
                ip: &m.ip,
                rank: m.rank,
                role: *cluster_role,
            }),
            cost: if status == PodStatus::Exited {
                0.0
            } else {
                p.cost_per_hr
            },
            cpu: p.cpu.as_ref().map(|cpu| CpuView {
                id: &cpu.flavor_id,
                memory: (p.memory_in_gb as u64).max(1),
                vcpu_count: cpu.vcpus,
            }),
            created_at: timestamp(self.clock, p.created_at),
            cuda_version: p.cuda_version.as_deref(),
            data_center_id: machine.as_ref().map(|m| m.data_center_id.as_str()),
            disk: p.container_disk_in_gb,
            env: EnvView(&p.env),
            global_networking: if p.global_networking {
                GlobalNetworkingView {
                    enabled: true,
                    internal_dns: Some(format!("{}.runpod.internal", p.id)),
                    ip: Some(global_ip(&p.id)),
                }
            } else {
                GlobalNetworkingView {
                    enabled: false,
                    internal_dns: None,
                    ip: None,
                }
            },
            gpu: p.cpu.is_none().then_some(GpuView {
                count: p.gpu_count,
                id: &p.gpu_type_id,
            }),
            id: &p.id,
            image: &p.image_name,
            locked: p.locked,
            mounts: mounts_view(p),
            name: &p.name,
            ports: PortsView(&p.ports),
            registry: p.registry.as_deref(),
            runtime,
            ssh: SshView {
                direct,
                proxy: SshProxyView {
                    command: format!("ssh {}@{SSH_PROXY_HOST}", p.pod_host_id),
                    host: SSH_PROXY_HOST,
                    port: 22,
                    username: &p.pod_host_id,
                },
            },
            started_at: if running {
                booted_at.map(|b| timestamp(self.clock, b))
            } else {
                None
            },
            status: status.as_str(),
            template: None,
        }
        .serialize(serializer)
    }
}

/// The host and public port of a pod's published `22/tcp`, if it publishes one.
pub fn public_ssh(cloud: &Cloud, p: &Pod) -> Option<(String, u32)> {
    let (_, public, _) = p
        .port_map
        .iter()
        .find(|(private, _, kind)| *private == 22 && kind == "tcp")?;
    let host = cloud
        .machine(&p.machine_id)
        .map(|m| m.public_ip.clone())
        .unwrap_or_default();
    Some((host, *public))
}

/// A stable private address on the global network, derived from the pod id.
pub(super) fn global_ip(id: &str) -> String {
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
