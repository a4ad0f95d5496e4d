//! What every reconcile of every kind shares: clients, credentials, configuration,
//! Events and metrics.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use tracing::warn;

use crate::metrics::Metrics;
use crate::platform::PlatformClient;

use super::backoff::BackoffPolicy;
use super::credentials::CredentialResolver;

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
    /// How long the Lease of an install holding a claim must have been expired before
    /// this install takes the object over.
    pub takeover_after: Duration,
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
            takeover_after: Duration::from_secs(600),
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
    reporter: Reporter,
    /// kube's Recorder keeps every Event it published (to count repeats into a series) and
    /// prunes that cache only when it publishes again: after a burst (10,000 objects
    /// created) it would hold thousands of Events for good. Replaced by a fresh one once
    /// its entries are past the Recorder's own six-minute window, so the cache stays small;
    /// a repeat after the swap starts a new Event instead of extending the series.
    recorder: parking_lot::Mutex<(Instant, Recorder)>,
}

/// How long kube's Recorder keeps an Event to count repeats into its series.
const RECORDER_WINDOW: Duration = Duration::from_secs(6 * 60);

impl Shared {
    pub fn new(
        kube: kube::Client,
        platform: PlatformClient,
        credentials: CredentialResolver,
        config: EngineConfig,
        metrics: Arc<Metrics>,
        instance: Option<String>,
    ) -> Self {
        let reporter = Reporter {
            controller: FIELD_MANAGER.to_string(),
            instance,
        };
        let recorder = Recorder::new(kube.clone(), reporter.clone());
        Self {
            kube,
            platform,
            credentials,
            config,
            metrics,
            reporter,
            recorder: parking_lot::Mutex::new((Instant::now(), recorder)),
        }
    }

    /// Replaces the Event recorder when its cache has outlived its window. Cheap (a lock
    /// and a clock read); every reconcile calls it, so a cache is let go of even when no
    /// Event follows.
    pub fn expire_event_cache(&self) {
        let mut current = self.recorder.lock();
        if current.0.elapsed() > RECORDER_WINDOW {
            *current = (
                Instant::now(),
                Recorder::new(self.kube.clone(), self.reporter.clone()),
            );
        }
    }

    fn recorder(&self) -> Recorder {
        self.expire_event_cache();
        self.recorder.lock().1.clone()
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
        let event = Event {
            type_: if warning {
                EventType::Warning
            } else {
                EventType::Normal
            },
            reason: reason.to_string(),
            note: Some(note),
            action: action.to_string(),
            secondary: None,
        };
        if let Err(err) = self.recorder().publish(&event, &reference).await {
            warn!(reason, error = %err, "could not publish an Event");
        }
    }
}
