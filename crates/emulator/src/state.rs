//! The emulator's shared state: the control-plane records (endpoints, network volumes,
//! templates, delegations), the GPU cloud with its pods, and the run-time side of every
//! serverless endpoint.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use serde_json::{Value, json};

use super::EmulatorConfig;
use super::auth::KeyRing;
use super::clock::Clock;
use super::faults::Faults;
use super::fixtures::Fixtures;
use super::graphql::{self, PlatformSchema};
use super::jobs::runtime::EndpointRuntime;
use super::jobs::webhook::Webhooks;
use super::model::{
    DataCenter, Delegation, EndpointRecord, NetworkVolume, PublicTemplate, RegistryAuth, Template,
};
use super::pods::Cloud;
use super::ratelimit::Limiter;
use super::usage::UsageLedger;
use super::v2::limits::V2Limiter;
use super::workers::WorkerSettings;

/// Records and pods, behind one lock: every operation on them is short.
#[derive(Debug, Clone)]
pub struct World {
    pub user_id: String,
    pub data_centers: Vec<DataCenter>,
    pub cloud: Cloud,
    pub endpoints: BTreeMap<String, EndpointRecord>,
    pub volumes: BTreeMap<String, NetworkVolume>,
    pub templates: BTreeMap<String, Template>,
    pub delegations: Vec<Delegation>,
    /// The public template catalog (not the account's own templates).
    pub public_templates: Vec<PublicTemplate>,
    /// Volume and serverless usage over time, for billing.
    pub usage: UsageLedger,
    /// Container registry credentials (REST v2 `/v2/registries`).
    pub registries: BTreeMap<String, RegistryAuth>,
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
                .collect(),
            templates: f
                .templates
                .iter()
                .map(|t| (t.id.clone(), t.clone()))
                .collect(),
            delegations: f.delegations.clone(),
            registries: f
                .registries
                .iter()
                .map(|r| (r.id.clone(), r.clone()))
                .collect(),
            public_templates: f.public_templates.clone(),
            usage: UsageLedger::default(),
        };
        let mut endpoints = std::mem::take(&mut world.endpoints);
        for e in endpoints.values_mut() {
            super::endpoints::hydrate(e, &world, 0);
        }
        world.endpoints = endpoints;
        world.observe_volumes(0);
        Ok(world)
    }

    /// Records the network volumes as they are now in the usage ledger. Called after every
    /// successful write of any surface, so creates, resizes and deletes are stamped with
    /// the emulated time of the request that made them.
    pub fn observe_volumes(&mut self, now: super::clock::Millis) {
        let current = self.volumes.values().map(|v| {
            let hp = v.volume_type == super::model::VolumeType::HighPerformance;
            (v.id.as_str(), v.size, hp)
        });
        self.usage.observe_volumes(current, now);
    }

    pub fn dump(&self) -> Value {
        json!({
            "userId": self.user_id,
            "dataCenters": self.data_centers,
            "endpoints": self.endpoints.values().collect::<Vec<_>>(),
            "networkVolumes": self.volumes.values().collect::<Vec<_>>(),
            "templates": self.templates.values().collect::<Vec<_>>(),
            "delegations": self.delegations,
            "registries": self.registries.values().collect::<Vec<_>>(),
            "machines": self.cloud.machines().iter().map(|m| json!({
                "id": m.id, "gpuTypeId": m.gpu_type_id, "dataCenterId": m.data_center_id,
                "secureCloud": m.secure, "totalGpus": m.total, "freeGpus": m.free,
            })).collect::<Vec<_>>(),
            "pods": self.cloud.pods().map(|p| json!({
                "id": p.id, "name": p.name, "machineId": p.machine_id,
                "gpuTypeId": p.gpu_type_id, "gpuCount": p.gpu_count,
                "desiredStatus": match p.desired {
                    super::pods::DesiredStatus::Running => "RUNNING",
                    super::pods::DesiredStatus::Exited => "EXITED",
                },
            })).collect::<Vec<_>>(),
        })
    }
}

/// Worker settings of an endpoint record, in emulated milliseconds.
pub fn worker_settings(e: &EndpointRecord) -> WorkerSettings {
    WorkerSettings {
        min: e.workers_min,
        max: e.workers_max,
        idle_timeout_ms: u64::from(e.idle_timeout) * 1000,
        execution_timeout_ms: e.execution_timeout_ms,
        scaler_type: e.scaler_type,
        scaler_value: e.scaler_value,
    }
}

/// Everything a request handler needs.
pub struct Emulator {
    pub config: EmulatorConfig,
    pub fixtures: Fixtures,
    pub clock: Clock,
    pub keys: KeyRing,
    pub world: Mutex<World>,
    pub runtimes: RwLock<HashMap<String, Arc<EndpointRuntime>>>,
    pub limiter: Limiter,
    /// REST v2 windows per key and route group.
    pub v2_limits: V2Limiter,
    pub faults: Faults,
    pub webhooks: Webhooks,
    pub schema: PlatformSchema,
}

pub type App = Arc<Emulator>;

impl Emulator {
    pub fn new(config: EmulatorConfig) -> Result<App, String> {
        let clock = Clock::new(config.time_scale);
        let fixtures = config.fixtures.clone().unwrap_or_default();
        let world = World::from_fixtures(&fixtures)?;
        let app = Arc::new(Emulator {
            keys: KeyRing::new(config.api_keys.clone()),
            limiter: Limiter::new(clock.clone()),
            v2_limits: V2Limiter::new(clock.clone(), config.v2_quota),
            webhooks: Webhooks::new(clock.clone()),
            schema: graphql::build_schema(),
            faults: Faults::default(),
            world: Mutex::new(world),
            runtimes: RwLock::default(),
            fixtures,
            clock,
            config,
        });
        app.start_runtimes();
        Ok(app)
    }

    fn start_runtimes(&self) {
        let records: Vec<EndpointRecord> = self.world.lock().endpoints.values().cloned().collect();
        for e in records {
            self.add_runtime(&e);
        }
    }

    pub fn runtime(&self, endpoint_id: &str) -> Option<Arc<EndpointRuntime>> {
        self.runtimes.read().get(endpoint_id).cloned()
    }

    pub fn add_runtime(&self, e: &EndpointRecord) {
        let rt = EndpointRuntime::new(
            e.id.clone(),
            worker_settings(e),
            e.version(),
            self.clock.clone(),
            self.webhooks.clone(),
        );
        if let Some(old) = self.runtimes.write().insert(e.id.clone(), rt) {
            old.close();
        }
    }

    /// Removes a deleted endpoint's runtime; the worker time it ran stays in the usage
    /// ledger, so billing still charges it. Call without the world's lock held.
    pub fn retire_runtime(&self, record: &EndpointRecord) {
        let Some(rt) = self.runtimes.write().remove(&record.id) else {
            return;
        };
        rt.close();
        let spans = rt.machine_spans();
        let mut world = self.world.lock();
        for (from, to) in spans {
            world.usage.record_worker_span(super::usage::WorkerSpan {
                endpoint_id: record.id.clone(),
                gpu_type_id: record.gpu_type_ids.first().cloned(),
                gpu_count: record.gpu_count,
                vcpus: 0,
                from,
                to,
            });
        }
    }

    /// Back to the fixtures: records, pods, jobs, faults, counts, limits, webhook log.
    pub fn reset(&self) {
        let world = World::from_fixtures(&self.fixtures).expect("fixtures were valid at start");
        let old: Vec<Arc<EndpointRuntime>> =
            self.runtimes.write().drain().map(|(_, rt)| rt).collect();
        for rt in old {
            rt.close();
        }
        *self.world.lock() = world;
        self.faults.clear();
        self.faults.clear_calls();
        self.limiter.reset();
        self.v2_limits.reset();
        self.webhooks.clear();
        self.start_runtimes();
    }

    /// Drops expired jobs of every endpoint.
    pub fn sweep(&self) {
        let rts: Vec<Arc<EndpointRuntime>> = self.runtimes.read().values().cloned().collect();
        for rt in rts {
            rt.sweep();
        }
    }

    pub fn dump(&self) -> Value {
        let mut state = self.world.lock().dump();
        let rts: BTreeMap<String, Arc<EndpointRuntime>> = self
            .runtimes
            .read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        state["jobs"] = rts
            .iter()
            .map(|(id, rt)| (id.clone(), rt.dump()))
            .collect::<serde_json::Map<_, _>>()
            .into();
        state["webhookAttempts"] = json!(self.webhooks.attempts());
        state["faults"] = self.faults.dump();
        state["clock"] = json!({"now": self.clock.now(), "scale": self.clock.scale()});
        state
    }
}
