//! What every reconcile of every kind shares: clients, credentials, configuration,
//! Events and metrics.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::jiff::Timestamp;
use kube::Resource;
use tracing::warn;

use crate::metrics::Metrics;
use gpucloud_platform::PlatformClient;

use super::backoff::BackoffPolicy;
use super::credentials::CredentialResolver;
use super::events::{self, EventLog, EventSpec};

/// The field manager of every write the operator makes.
pub const FIELD_MANAGER: &str = "gpucloud-operator";
/// The finalizer that keeps an object until its remote object is dealt with.
pub const FINALIZER: &str = "gpucloud.io/finalizer";

/// Timing of the engine.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// How often every object is compared with the platform (drift), before jitter.
    pub poll_interval: Duration,
    /// How soon to look again while something is still coming up (a pod booting).
    pub progress_interval: Duration,
    /// How soon a Stalled object is looked at again even if nothing changes, in case the
    /// account was fixed on the platform's side.
    pub stalled_recheck: Duration,
    /// The longest a create may keep running at the platform after it was sent (the
    /// client's per-attempt time limit). Until then, not finding the object it may have
    /// made proves nothing.
    pub create_timeout: Duration,
    pub backoff: BackoffPolicy,
    /// This install's name in the claims it writes (`namespace/name` of its Lease).
    pub install: String,
    /// The operator's own namespace (its Lease's), where it records the remote objects it
    /// released on purpose ([`crate::released`]).
    pub operator_namespace: String,
    /// How long the Lease of an install holding a claim must have been expired before
    /// this install takes the object over.
    pub takeover_after: Duration,
    /// This install watches every object of its kinds (every namespace, no label
    /// selector): an object its cache lacks does not exist, so a remote object marked by
    /// such an object is free (see [`crate::tenancy`]). Otherwise only the released record
    /// proves that.
    pub sees_every_object: bool,
    /// How often the orphan census runs (`crate::orphan_census`); zero: never.
    pub orphan_census_interval: Duration,
    /// How often each kind reads again the Secrets its objects name, to notice a rotated
    /// key (see [`crate::secret_recheck`]). Not zero.
    pub secret_recheck_interval: Duration,
    /// "Now" for time-driven decisions (a Pod's schedule); tests give the emulator's.
    pub clock: crate::clock::Clock,
    /// The longest one watch request lasts before the apiserver ends it and the watch goes
    /// on from the last version it saw (see [`crate::watch_loop`]).
    pub watch_timeout: Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            poll_interval: Duration::from_secs(60),
            progress_interval: Duration::from_secs(5),
            stalled_recheck: Duration::from_secs(1800),
            create_timeout: Duration::from_secs(30),
            backoff: BackoffPolicy::default(),
            install: "default/gpucloud-operator".to_string(),
            operator_namespace: "default".to_string(),
            takeover_after: Duration::from_secs(600),
            orphan_census_interval: Duration::from_secs(600),
            sees_every_object: false,
            secret_recheck_interval: Duration::from_secs(30),
            clock: Default::default(),
            watch_timeout: crate::watch_loop::WATCH_TIMEOUT,
        }
    }
}

/// Process-wide state of the operator.
pub struct Shared {
    pub kube: kube::Client,
    /// A client with the default key; per-object keys are swapped in with
    /// `with_api_key`, sharing its pool and limiters.
    pub platform: PlatformClient,
    pub credentials: CredentialResolver,
    pub config: EngineConfig,
    pub metrics: Arc<Metrics>,
    /// The record of remote objects released on purpose, in the operator's namespace.
    pub released: crate::released::Writer,
    /// This install's tag on the remote objects it makes (see [`crate::marker::InstallTag`]),
    /// set once its Lease is held; unset when it cannot read its Lease.
    pub install_tag: std::sync::OnceLock<crate::marker::InstallTag>,
    /// Every kind's controller and its passes under way, which the liveness probe reads.
    pub progress: Arc<crate::progress::Progress>,
    /// The `reportingInstance` of Events.
    instance: Option<String>,
    /// The Events published lately, so that a repeat extends its series; with when they
    /// were last let go of.
    events: parking_lot::Mutex<(Instant, EventLog)>,
}

/// How often the Event log is swept of what no repeat can extend any more.
const EVENT_SWEEP: Duration = Duration::from_secs(10);

impl Shared {
    pub fn new(
        kube: kube::Client,
        platform: PlatformClient,
        credentials: CredentialResolver,
        config: EngineConfig,
        metrics: Arc<Metrics>,
        instance: Option<String>,
    ) -> Self {
        let released =
            crate::released::Writer::new(kube.clone(), &config.operator_namespace, FIELD_MANAGER);
        Self {
            kube,
            platform,
            credentials,
            config,
            metrics,
            install_tag: std::sync::OnceLock::new(),
            progress: Default::default(),
            released,
            instance,
            events: parking_lot::Mutex::new((Instant::now(), EventLog::default())),
        }
    }

    /// Lets go of the Events that a repeat can no longer extend, at most every
    /// [`EVENT_SWEEP`]. Cheap (a lock and a clock read) between sweeps; every reconcile
    /// calls it, so the log shrinks even when no Event follows.
    pub fn expire_event_cache(&self) {
        let mut events = self.events.lock();
        if events.0.elapsed() > EVENT_SWEEP {
            events.0 = Instant::now();
            events.1.expire(Timestamp::now());
        }
    }

    /// Publishes an Event about `obj`. Best effort: a failed Event is logged, not fatal.
    pub async fn event<K: Resource<DynamicType = ()>>(
        &self,
        obj: &K,
        warning: bool,
        reason: &str,
        action: &str,
        note: String,
    ) {
        let reference: ObjectReference = obj.object_ref(&());
        let event = EventSpec {
            warning,
            reason,
            action,
            note,
        };
        let now = Timestamp::now();
        let publish = self.events.lock().1.decide(&event, &reference, now);
        if let Err(err) = events::send(
            &self.kube,
            FIELD_MANAGER,
            self.instance.as_deref(),
            &event,
            &reference,
            now,
            publish,
        )
        .await
        {
            warn!(reason, error = %err, "could not publish an Event");
        }
    }
}
