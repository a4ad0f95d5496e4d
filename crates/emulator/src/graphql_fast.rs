//! `myself { pods }` written straight from the query's selection set, instead of resolving
//! ~25 fields per pod through async resolvers: listing is what the operator does every
//! resync, for every pod at once.
//!
//! A [`Plan`] is the selection worked out once (response keys, the field each one selects,
//! sub-selections) and [`PlannedPod`] writes one pod as it asks, through serde: straight
//! into the answer's bytes on the handler's fast path ([`crate::graphql_my_pods`]), or into
//! a GraphQL value for [`PodList`], which async-graphql resolves for the shapes the fast
//! path leaves to it. The schema is unchanged: [`PodList`] declares itself as `[Pod!]!`,
//! and the document has been validated against that type before it runs. Tests compare
//! both with the ordinary resolvers of `pod(input:)` for the same selection.

use std::borrow::Cow;

use async_graphql::registry::Registry;
use async_graphql::{ContextSelectionSet, Name, OutputType, SelectionField, ServerResult, Value};
use parking_lot::Mutex;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::clock::Millis;
use super::graphql_pod::{
    CONTAINER_LOAD, POD_TYPE, Pod, PodHost, PodStatus, gpu_id, last_status_change_at, status_of,
    uptime_of,
};
use super::pods;
use super::state::App;

/// A pre-built `[Pod!]!` value.
pub struct PodList(Mutex<Option<Value>>);

impl PodList {
    pub fn new(value: Value) -> Self {
        Self(Mutex::new(Some(value)))
    }
}

impl OutputType for PodList {
    fn type_name() -> Cow<'static, str> {
        <Vec<Pod> as OutputType>::type_name()
    }

    fn qualified_type_name() -> String {
        <Vec<Pod> as OutputType>::qualified_type_name()
    }

    fn create_type_info(registry: &mut Registry) -> String {
        <Vec<Pod> as OutputType>::create_type_info(registry)
    }

    async fn resolve(
        &self,
        _ctx: &ContextSelectionSet<'_>,
        _field: &async_graphql::Positioned<async_graphql::parser::types::Field>,
    ) -> ServerResult<Value> {
        Ok(self.0.lock().take().unwrap_or(Value::List(Vec::new())))
    }
}

/// A field of the object types a pod listing selects from, told apart once per query
/// rather than by name for every pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Typename,
    // Pod
    Id,
    Name,
    ImageName,
    Env,
    MachineId,
    Machine,
    DesiredStatus,
    Runtime,
    GpuCount,
    VcpuCount,
    MemoryInGb,
    ContainerDiskInGb,
    VolumeInGb,
    VolumeMountPath,
    DockerArgs,
    DockerId,
    Ports,
    Port,
    CostPerHr,
    PodType,
    UptimeSeconds,
    LastStatusChange,
    NetworkVolumeId,
    TemplateId,
    // PodMachineInfo
    PodHostId,
    GpuDisplayName,
    GpuTypeId,
    DataCenterId,
    SecureCloud,
    // PodRuntime
    UptimeInSeconds,
    RuntimePorts,
    RuntimeGpus,
    RuntimeContainer,
    // PodRuntimePort
    Ip,
    IsIpPublic,
    PrivatePort,
    PublicPort,
    PortType,
    // PodRuntimeGpu
    GpuId,
    GpuUtilPercent,
    MemoryUtilPercent,
    // PodRuntimeContainer
    CpuPercent,
    MemoryPercent,
    /// Not a field of the type: answered null, as the value-building resolver did.
    Unknown,
}

/// A GraphQL object type of the schema's `Pod` tree: its name and fields, each with the
/// type of its sub-selection when it is an object (or a list of objects).
pub struct ObjectType {
    pub name: &'static str,
    fields: &'static [(&'static str, Field, Option<&'static ObjectType>)],
}

impl ObjectType {
    /// The field `name` selects and its sub-selection's type; `None` if the type has none
    /// such (the document is not valid).
    pub fn field(&self, name: &str) -> Option<(Field, Option<&'static ObjectType>)> {
        if name == "__typename" {
            return Some((Field::Typename, None));
        }
        self.fields
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|&(_, f, ty)| (f, ty))
    }
}

pub static POD: ObjectType = ObjectType {
    name: "Pod",
    fields: &[
        ("id", Field::Id, None),
        ("name", Field::Name, None),
        ("imageName", Field::ImageName, None),
        ("env", Field::Env, None),
        ("machineId", Field::MachineId, None),
        ("machine", Field::Machine, Some(&MACHINE)),
        ("desiredStatus", Field::DesiredStatus, None),
        ("runtime", Field::Runtime, Some(&RUNTIME)),
        ("gpuCount", Field::GpuCount, None),
        ("vcpuCount", Field::VcpuCount, None),
        ("memoryInGb", Field::MemoryInGb, None),
        ("containerDiskInGb", Field::ContainerDiskInGb, None),
        ("volumeInGb", Field::VolumeInGb, None),
        ("volumeMountPath", Field::VolumeMountPath, None),
        ("dockerArgs", Field::DockerArgs, None),
        ("dockerId", Field::DockerId, None),
        ("ports", Field::Ports, None),
        ("port", Field::Port, None),
        ("costPerHr", Field::CostPerHr, None),
        ("podType", Field::PodType, None),
        ("uptimeSeconds", Field::UptimeSeconds, None),
        ("lastStatusChange", Field::LastStatusChange, None),
        ("networkVolumeId", Field::NetworkVolumeId, None),
        ("templateId", Field::TemplateId, None),
    ],
};

static MACHINE: ObjectType = ObjectType {
    name: "PodMachineInfo",
    fields: &[
        ("podHostId", Field::PodHostId, None),
        ("gpuDisplayName", Field::GpuDisplayName, None),
        ("gpuTypeId", Field::GpuTypeId, None),
        ("dataCenterId", Field::DataCenterId, None),
        ("secureCloud", Field::SecureCloud, None),
    ],
};

static RUNTIME: ObjectType = ObjectType {
    name: "PodRuntime",
    fields: &[
        ("uptimeInSeconds", Field::UptimeInSeconds, None),
        ("ports", Field::RuntimePorts, Some(&RUNTIME_PORT)),
        ("gpus", Field::RuntimeGpus, Some(&RUNTIME_GPU)),
        (
            "container",
            Field::RuntimeContainer,
            Some(&RUNTIME_CONTAINER),
        ),
    ],
};

static RUNTIME_PORT: ObjectType = ObjectType {
    name: "PodRuntimePort",
    fields: &[
        ("ip", Field::Ip, None),
        ("isIpPublic", Field::IsIpPublic, None),
        ("privatePort", Field::PrivatePort, None),
        ("publicPort", Field::PublicPort, None),
        ("type", Field::PortType, None),
    ],
};

static RUNTIME_GPU: ObjectType = ObjectType {
    name: "PodRuntimeGpu",
    fields: &[
        ("id", Field::GpuId, None),
        ("gpuUtilPercent", Field::GpuUtilPercent, None),
        ("memoryUtilPercent", Field::MemoryUtilPercent, None),
    ],
};

static RUNTIME_CONTAINER: ObjectType = ObjectType {
    name: "PodRuntimeContainer",
    fields: &[
        ("cpuPercent", Field::CpuPercent, None),
        ("memoryPercent", Field::MemoryPercent, None),
    ],
};

/// A selection set worked out once and applied to every pod: response keys, the field
/// each selects and its sub-selection, in the order the answer lists them.
#[derive(Debug)]
pub struct Plan {
    typename: &'static str,
    entries: Vec<(Name, Field, Option<Plan>)>,
}

impl Plan {
    /// An empty selection on `ty`.
    pub fn new(ty: &ObjectType) -> Self {
        Self {
            typename: ty.name,
            entries: Vec::new(),
        }
    }

    /// The selection of `field`, a `Pod` list, as async-graphql hands it to a resolver
    /// (fragments spread, repeated keys merged).
    pub fn of(field: &SelectionField<'_>) -> Self {
        let mut plan = Plan::new(&POD);
        plan.add(field, &POD);
        plan
    }

    fn add(&mut self, field: &SelectionField<'_>, ty: &ObjectType) {
        for child in field.selection_set().filter(included) {
            let key = child.alias().unwrap_or(child.name());
            let (selects, sub_ty) = ty.field(child.name()).unwrap_or((Field::Unknown, None));
            match self.entries.iter().position(|(k, _, _)| k.as_str() == key) {
                Some(i) => {
                    if let (Some(sub), Some(sub_ty)) = (&mut self.entries[i].2, sub_ty) {
                        sub.add(&child, sub_ty);
                    }
                }
                None => {
                    let sub = sub_ty.map(|t| {
                        let mut sub = Plan::new(t);
                        sub.add(&child, t);
                        sub
                    });
                    self.entries.push((Name::new(key), selects, sub));
                }
            }
        }
    }

    /// Whether the selection already answers `key`.
    pub fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _, _)| k.as_str() == key)
    }

    /// Adds `key`, answered by `field`, with the sub-selection `sub` when it has one.
    pub fn push(&mut self, key: &str, field: Field, sub: Option<Plan>) {
        self.entries.push((Name::new(key), field, sub));
    }

    /// An object of this selection: `__typename` here, every other field by `entry`.
    fn object<S: Serializer>(
        &self,
        serializer: S,
        mut entry: impl FnMut(&mut S::SerializeMap, &str, Field, &Plan) -> Result<(), S::Error>,
    ) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.entries.len()))?;
        for (key, field, sub) in &self.entries {
            match (field, sub) {
                (Field::Typename, _) => map.serialize_entry(key.as_str(), self.typename)?,
                (_, Some(sub)) => entry(&mut map, key.as_str(), *field, sub)?,
                (_, None) => entry(&mut map, key.as_str(), *field, &NO_SELECTION)?,
            }
        }
        map.end()
    }
}

/// The sub-selection of a leaf field.
static NO_SELECTION: Plan = Plan {
    typename: "",
    entries: Vec::new(),
};

/// Whether `@skip` / `@include` keep this field.
fn included(field: &SelectionField<'_>) -> bool {
    let Ok(directives) = field.directives() else {
        return true;
    };
    directives.iter().all(|d| {
        let arg = d
            .arguments
            .iter()
            .find(|(n, _)| n.node.as_str() == "if")
            .map(|(_, v)| v.node == Value::Boolean(true));
        match d.name.node.as_str() {
            "skip" => arg != Some(true),
            "include" => arg != Some(false),
            _ => true,
        }
    })
}

fn status_name(s: PodStatus) -> &'static str {
    match s {
        PodStatus::Created => "CREATED",
        PodStatus::Running => "RUNNING",
        PodStatus::Restarting => "RESTARTING",
        PodStatus::Exited => "EXITED",
        PodStatus::Paused => "PAUSED",
        PodStatus::Dead => "DEAD",
        PodStatus::Terminated => "TERMINATED",
    }
}

/// A pod with what its fields show of its host: a listing copies these under the lock.
pub type Listed = (std::sync::Arc<pods::Pod>, PodHost);

/// One pod as `plan` selects it, at `now`: only the selected fields are computed.
pub struct PlannedPod<'a> {
    pub pod: &'a pods::Pod,
    pub host: &'a PodHost,
    pub app: &'a App,
    pub now: Millis,
    pub plan: &'a Plan,
}

/// A value written through its `Display` (no string built first).
struct Shown<T>(T);

impl<T: std::fmt::Display> Serialize for Shown<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

/// Null: a field the emulator never sets, or one the type does not have.
const NULL: () = ();

impl Serialize for PlannedPod<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Self {
            pod: p,
            host,
            app,
            now,
            plan,
        } = *self;
        plan.object(serializer, |map, key, field, sub| match field {
            Field::Id => map.serialize_entry(key, &p.id),
            Field::Name => map.serialize_entry(key, &p.name),
            Field::ImageName => map.serialize_entry(key, &p.image_name),
            Field::Env => map.serialize_entry(key, &p.env),
            Field::MachineId => map.serialize_entry(key, &p.machine_id),
            Field::Machine => map.serialize_entry(key, &Machine { p, host, plan: sub }),
            Field::DesiredStatus => map.serialize_entry(key, status_name(status_of(p))),
            Field::Runtime => match uptime_of(p, app, now) {
                (true, uptime) => map.serialize_entry(
                    key,
                    &Runtime {
                        p,
                        host,
                        uptime,
                        plan: sub,
                    },
                ),
                (false, _) => map.serialize_entry(key, &NULL),
            },
            Field::GpuCount => map.serialize_entry(key, &(p.gpu_count as i32)),
            Field::VcpuCount => map.serialize_entry(key, &p.vcpu_count),
            Field::MemoryInGb => map.serialize_entry(key, &p.memory_in_gb),
            // GraphQL's Int is 32-bit: a larger size (REST v2 takes any) shows as its largest.
            Field::ContainerDiskInGb => {
                map.serialize_entry(key, &crate::graphql_pod::int32(p.container_disk_in_gb))
            }
            Field::VolumeInGb => {
                map.serialize_entry(key, &crate::graphql_pod::int32(p.volume_in_gb))
            }
            Field::VolumeMountPath => map.serialize_entry(key, &p.volume_mount_path),
            Field::DockerArgs => map.serialize_entry(key, &p.docker_args),
            Field::Ports => map.serialize_entry(key, &p.ports),
            Field::CostPerHr => map.serialize_entry(key, &p.cost_per_hr),
            Field::PodType => map.serialize_entry(key, POD_TYPE),
            Field::UptimeSeconds => map.serialize_entry(key, &uptime_of(p, app, now).1),
            Field::LastStatusChange => {
                map.serialize_entry(key, &Shown(last_status_change_at(p, app)))
            }
            Field::NetworkVolumeId => map.serialize_entry(key, &p.network_volume_id),
            Field::TemplateId => map.serialize_entry(key, &p.template_id),
            _ => map.serialize_entry(key, &NULL),
        })
    }
}

struct Machine<'a> {
    p: &'a pods::Pod,
    host: &'a PodHost,
    plan: &'a Plan,
}

impl Serialize for Machine<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (p, host) = (self.p, self.host);
        self.plan
            .object(serializer, |map, key, field, _| match field {
                Field::PodHostId => map.serialize_entry(key, &p.pod_host_id),
                Field::GpuDisplayName => map.serialize_entry(key, host.gpu_display_name()),
                Field::GpuTypeId => map.serialize_entry(key, &p.gpu_type_id),
                Field::DataCenterId => map.serialize_entry(key, host.data_center_id()),
                Field::SecureCloud => map.serialize_entry(key, &host.secure()),
                _ => map.serialize_entry(key, &NULL),
            })
    }
}

struct Runtime<'a> {
    p: &'a pods::Pod,
    host: &'a PodHost,
    uptime: i32,
    plan: &'a Plan,
}

impl Serialize for Runtime<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (p, host) = (self.p, self.host);
        self.plan
            .object(serializer, |map, key, field, sub| match field {
                Field::UptimeInSeconds => map.serialize_entry(key, &self.uptime),
                Field::RuntimePorts => {
                    map.serialize_entry(key, &RuntimePorts { p, host, plan: sub })
                }
                Field::RuntimeGpus => map.serialize_entry(key, &RuntimeGpus { p, plan: sub }),
                Field::RuntimeContainer => map.serialize_entry(key, &RuntimeContainer(sub)),
                _ => map.serialize_entry(key, &NULL),
            })
    }
}

struct RuntimePorts<'a> {
    p: &'a pods::Pod,
    host: &'a PodHost,
    plan: &'a Plan,
}

impl Serialize for RuntimePorts<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Port<'a>(&'a RuntimePorts<'a>, &'a (u32, u32, String));
        impl Serialize for Port<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let (ports, (private, public, kind)) = (self.0, self.1);
                ports
                    .plan
                    .object(serializer, |map, key, field, _| match field {
                        Field::Ip => map.serialize_entry(key, ports.host.public_ip()),
                        Field::IsIpPublic => map.serialize_entry(key, &ports.p.support_public_ip),
                        Field::PrivatePort => map.serialize_entry(key, &(*private as i32)),
                        Field::PublicPort => map.serialize_entry(key, &(*public as i32)),
                        Field::PortType => map.serialize_entry(key, kind),
                        _ => map.serialize_entry(key, &NULL),
                    })
            }
        }
        serializer.collect_seq(self.p.port_map.iter().map(|port| Port(self, port)))
    }
}

struct RuntimeGpus<'a> {
    p: &'a pods::Pod,
    plan: &'a Plan,
}

impl Serialize for RuntimeGpus<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        struct Gpu<'a>(&'a RuntimeGpus<'a>, u32);
        impl Serialize for Gpu<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let (gpus, i) = (self.0, self.1);
                gpus.plan
                    .object(serializer, |map, key, field, _| match field {
                        Field::GpuId => map.serialize_entry(key, &Shown(gpu_id(gpus.p, i))),
                        Field::GpuUtilPercent => {
                            map.serialize_entry(key, &gpus.p.gpu_util_percent.unwrap_or(0.0))
                        }
                        Field::MemoryUtilPercent => map.serialize_entry(key, &0.0),
                        _ => map.serialize_entry(key, &NULL),
                    })
            }
        }
        serializer.collect_seq((0..self.p.gpu_count).map(|i| Gpu(self, i)))
    }
}

struct RuntimeContainer<'a>(&'a Plan);

impl Serialize for RuntimeContainer<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.object(serializer, |map, key, field, _| match field {
            Field::CpuPercent => map.serialize_entry(key, &CONTAINER_LOAD.0),
            Field::MemoryPercent => map.serialize_entry(key, &CONTAINER_LOAD.1),
            _ => map.serialize_entry(key, &NULL),
        })
    }
}

/// The standalone pods of the world and their hosts' facts, copied under its lock (the
/// seed surface does not show cluster members).
pub fn listed_pods(app: &App) -> Vec<Listed> {
    let world = app.world.lock();
    world
        .cloud
        .shared_pods()
        .filter(|p| p.cluster.is_none())
        .map(|p| (p.clone(), PodHost::of(p, &world.cloud)))
        .collect()
}

/// The `[Pod!]!` value of `myself { pods }` for async-graphql, which resolves the shapes
/// the handler's fast path leaves to it.
pub fn pods_value(app: &App, plan: &Plan) -> Value {
    let now = app.clock.now();
    let pods = listed_pods(app);
    let pods = pods
        .iter()
        .map(|(pod, host)| {
            let planned = PlannedPod {
                pod,
                host,
                app,
                now,
                plan,
            };
            async_graphql::to_value(planned).expect("a pod serialises")
        })
        .collect();
    Value::List(pods)
}
