//! The world every surface shares: the account's records (endpoints, volumes, templates,
//! registries, delegations, clusters), its pods and GPU stock, and its usage for billing. The
//! surfaces read and write it behind one lock (`state::Emulator`); it imports no surface.

pub mod clusters;
pub mod endpoints;

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::fixtures::Fixtures;
use crate::model::{
    DataCenter, Delegation, EndpointRecord, NetworkVolume, PublicTemplate, RegistryAuth, Template,
};
use crate::pods::Cloud;
use crate::record_map::RecordMap;
use crate::usage::UsageLedger;

/// Records and pods, behind one lock: every operation on them is short.
#[derive(Debug, Clone)]
pub struct World {
    pub user_id: String,
    pub data_centers: Vec<DataCenter>,
    pub cloud: Cloud,
    pub endpoints: RecordMap<EndpointRecord>,
    /// Logs its writes: the usage ledger follows them (`observe_volumes`).
    pub volumes: RecordMap<NetworkVolume>,
    pub templates: RecordMap<Template>,
    /// In creation order, behind `Arc`s for the same reason as the records of a
    /// [`RecordMap`]: a listing copies pointers under the lock.
    pub delegations: Vec<Arc<Delegation>>,
    /// The public template catalog (not the account's own templates).
    pub public_templates: Vec<PublicTemplate>,
    /// Volume and serverless usage over time, for billing.
    pub usage: UsageLedger,
    /// Container registry credentials (REST v2 `/v2/registries`).
    pub registries: RecordMap<RegistryAuth>,
    /// Instant Clusters (REST v2 `/v2/clusters`); their members are pods of `cloud`.
    pub clusters: RecordMap<clusters::Cluster>,
    /// The VXLAN ids of `clusters`: a create takes the one past the highest without
    /// reading every cluster.
    pub cluster_vxlans: BTreeSet<u32>,
}

impl World {
    pub fn from_fixtures(f: &Fixtures) -> Result<Self, String> {
        f.check().map_err(|e| e.to_string())?;
        let mut cloud = Cloud::new(
            f.gpu_types.clone(),
            f.data_centers.iter().map(|d| d.id.clone()).collect(),
        )
        .with_cpu_types(f.cpu_types.clone());
        cloud.seed_pods(&f.pods, 0)?;
        let mut world = Self {
            user_id: f.user_id.clone(),
            data_centers: f.data_centers.clone(),
            cloud,
            endpoints: f
                .endpoints
                .iter()
                .map(|e| (e.id.clone(), e.clone()))
                .collect(),
            volumes: f
                .network_volumes
                .iter()
                .map(|v| (v.id.clone(), v.clone()))
                .collect::<RecordMap<_>>()
                .with_change_log(),
            templates: f
                .templates
                .iter()
                .map(|t| (t.id.clone(), t.clone()))
                .collect(),
            delegations: f.delegations.iter().cloned().map(Arc::new).collect(),
            registries: f
                .registries
                .iter()
                .map(|r| (r.id.clone(), r.clone()))
                .collect(),
            public_templates: f.public_templates.clone(),
            usage: UsageLedger::default(),
            clusters: RecordMap::default(),
            cluster_vxlans: BTreeSet::new(),
        };
        let mut endpoints = std::mem::take(&mut world.endpoints);
        for e in endpoints.values_mut() {
            endpoints::hydrate(e, &world, 0);
        }
        world.endpoints = endpoints;
        world.observe_volumes(0);
        Ok(world)
    }

    /// Records the network volumes written since the last call, as they are now, in the
    /// usage ledger. Called after every successful write of any surface, so creates,
    /// resizes and deletes are stamped with the emulated time of the request that made
    /// them. It costs the volumes written, not all of them: with 100,000 volumes, comparing
    /// them all on every write made each create cost milliseconds under the lock.
    pub fn observe_volumes(&mut self, now: crate::clock::Millis) {
        for id in self.volumes.take_changes() {
            let current = self.volumes.get(&id).map(|v| {
                let hp = v.volume_type == crate::model::VolumeType::HighPerformance;
                (v.size, hp)
            });
            self.usage.observe_volume(&id, current, now);
        }
    }

    pub fn dump(&self) -> Value {
        json!({
            "userId": self.user_id,
            "dataCenters": self.data_centers,
            "endpoints": self.endpoints.values().collect::<Vec<_>>(),
            "networkVolumes": self.volumes.values().collect::<Vec<_>>(),
            "templates": self.templates.values().collect::<Vec<_>>(),
            "delegations": self.delegations.iter().map(|d| &**d).collect::<Vec<_>>(),
            "registries": self.registries.values().collect::<Vec<_>>(),
            "clusters": self.clusters.values().collect::<Vec<_>>(),
            "machines": self.cloud.machines().iter().map(|m| json!({
                "id": m.id, "gpuTypeId": m.gpu_type_id, "dataCenterId": m.data_center_id,
                "secureCloud": m.secure, "totalGpus": m.total, "freeGpus": m.free,
            })).collect::<Vec<_>>(),
            "pods": self.cloud.pods().map(|p| json!({
                "id": p.id, "name": p.name, "machineId": p.machine_id,
                "gpuTypeId": p.gpu_type_id, "gpuCount": p.gpu_count,
                "clusterId": p.cluster.as_ref().map(|m| &m.cluster_id),
                "desiredStatus": match p.desired {
                    crate::pods::DesiredStatus::Running => "RUNNING",
                    crate::pods::DesiredStatus::Exited => "EXITED",
                },
            })).collect::<Vec<_>>(),
        })
    }
}
