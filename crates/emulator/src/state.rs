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
use super::jobs::runtime::EndpointRuntime;
use super::jobs::webhook::Webhooks;
use super::model::EndpointRecord;
use super::quota::V2Limiter;
use super::ratelimit::Limiter;
pub use super::world::World;
use super::world::endpoints::{ROLLOVER_INTERVAL_MS, worker_settings};

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
}

pub type App = Arc<Emulator>;

impl Emulator {
    /// Brings the runtime of an endpoint in line with its updated record: worker settings
    /// at once, and a rollover of the workers when a release was made.
    pub fn update_runtime(&self, e: &EndpointRecord, released: bool) {
        if let Some(rt) = self.runtime(&e.id) {
            rt.update_settings(worker_settings(e));
            if released {
                rt.release(e.version(), ROLLOVER_INTERVAL_MS);
            }
        }
        self.refresh_failures_of(Some(&e.id));
    }

    /// Tells every endpoint's runtime whether its workers can start: the start failure
    /// rules (`/_emulator/fail-image`, `/_emulator/fail-registry-login`) against the image
    /// and registry its current configuration runs. Call without the world's lock held.
    pub fn refresh_worker_failures(&self) {
        self.refresh_failures_of(None);
    }

    /// The same for one endpoint (`Some`), or for all of them.
    fn refresh_failures_of(&self, only: Option<&str>) {
        let failures: Vec<(String, Option<crate::StartFailure>)> = {
            let world = self.world.lock();
            let rules = world.cloud.start_rules();
            if rules.is_empty() {
                // No rule was ever set since the last reset: every runtime is clear.
                return;
            }
            let records: Vec<&EndpointRecord> = match only {
                Some(id) => world.endpoints.get(id).into_iter().collect(),
                None => world.endpoints.values().collect(),
            };
            records
                .into_iter()
                .map(|e| {
                    let c = &e.container;
                    (
                        e.id.clone(),
                        rules.failure_for(&c.image, c.registry.as_deref()),
                    )
                })
                .collect()
        };
        for (id, failure) in failures {
            if let Some(rt) = self.runtime(&id) {
                rt.set_start_failure(failure);
            }
        }
    }
}

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
        self.refresh_failures_of(Some(&e.id));
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
            world
                .usage
                .record_worker_span(super::usage::WorkerSpan::of(record, from, to));
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
