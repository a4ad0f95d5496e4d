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
    /// How long the Event recorder is kept before a fresh one replaces it (see
    /// [`Shared::expire_event_cache`]). The default is kube's own window for counting
    /// repeats into a series; a test may shorten it.
    pub recorder_window: Duration,
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
            recorder_window: RECORDER_WINDOW,
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
    /// its entries are past `config.recorder_window` (by default the Recorder's own six
    /// minutes), so the cache stays small; a repeat after the swap starts a new Event
    /// instead of extending the series.
    recorder: parking_lot::Mutex<(RecorderAge, Recorder)>,
}

/// How long kube's Recorder keeps an Event to count repeats into its series: the default
/// of [`EngineConfig::recorder_window`].
pub const RECORDER_WINDOW: Duration = Duration::from_secs(6 * 60);

/// When the current Event recorder was made and how long it may serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RecorderAge {
    made: Instant,
    window: Duration,
}

impl RecorderAge {
    /// Whether a recorder of this age is to be replaced at `now`: only once more than its
    /// whole window has passed, so that no Event inside the window loses its series.
    fn expired(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.made) > self.window
    }
}

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
        let age = RecorderAge {
            made: Instant::now(),
            window: config.recorder_window,
        };
        Self {
            kube,
            platform,
            credentials,
            config,
            metrics,
            reporter,
            recorder: parking_lot::Mutex::new((age, recorder)),
        }
    }

    /// Replaces the Event recorder when its cache has outlived its window. Cheap (a lock
    /// and a clock read); every reconcile calls it, so a cache is let go of even when no
    /// Event follows.
    pub fn expire_event_cache(&self) {
        self.expire_event_cache_at(Instant::now());
    }

    /// [`Self::expire_event_cache`] as of `now`; whether the recorder was replaced.
    fn expire_event_cache_at(&self, now: Instant) -> bool {
        let mut current = self.recorder.lock();
        if !current.0.expired(now) {
            return false;
        }
        let age = RecorderAge {
            made: now,
            window: current.0.window,
        };
        *current = (age, Recorder::new(self.kube.clone(), self.reporter.clone()));
        true
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::credentials::DefaultKey;
    use crate::platform::{ApiKey, BaseUrls, PlatformConfig};

    #[test]
    fn a_recorder_serves_its_whole_window_and_not_longer() {
        let made = Instant::now();
        let age = RecorderAge {
            made,
            window: Duration::from_secs(60),
        };
        assert!(!age.expired(made));
        assert!(!age.expired(made + Duration::from_secs(59)));
        assert!(!age.expired(made + Duration::from_secs(60)));
        assert!(age.expired(made + Duration::from_secs(60) + Duration::from_millis(1)));
        // A clock read taken before the recorder was made (another thread) is no age at all.
        assert!(
            !RecorderAge {
                made: made + Duration::from_secs(1),
                ..age
            }
            .expired(made)
        );
    }

    #[test]
    fn the_default_window_is_kubes_six_minutes() {
        assert_eq!(
            EngineConfig::default().recorder_window,
            Duration::from_secs(360)
        );
    }

    /// A `Shared` whose clients point nowhere: nothing here calls them.
    fn shared(recorder_window: Duration) -> Shared {
        let unreachable = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        let kube = kube::Client::try_from(unreachable).unwrap();
        let key = ApiKey::new("not-a-real-key").unwrap();
        let platform =
            PlatformClient::new(PlatformConfig::new(BaseUrls::default(), key.clone())).unwrap();
        let credentials = CredentialResolver::new(
            kube.clone(),
            DefaultKey::Fixed(key),
            Duration::from_secs(60),
        );
        let config = EngineConfig {
            recorder_window,
            ..EngineConfig::default()
        };
        Shared::new(
            kube,
            platform,
            credentials,
            config,
            Arc::new(Metrics::new()),
            None,
        )
    }

    #[tokio::test]
    async fn the_recorder_is_replaced_after_the_configured_window_and_not_before() {
        let window = Duration::from_secs(90);
        let shared = shared(window);
        let made = shared.recorder.lock().0.made;
        assert_eq!(shared.recorder.lock().0.window, window);

        assert!(!shared.expire_event_cache_at(made + Duration::from_secs(30)));
        assert!(!shared.expire_event_cache_at(made + window));
        assert_eq!(
            shared.recorder.lock().0.made,
            made,
            "replaced inside its window"
        );

        let later = made + window + Duration::from_secs(1);
        assert!(shared.expire_event_cache_at(later));
        let renewed = shared.recorder.lock().0;
        assert_eq!(
            renewed,
            RecorderAge {
                made: later,
                window
            }
        );

        // The new recorder gets a whole window of its own.
        assert!(!shared.expire_event_cache_at(later + window));
        assert!(shared.expire_event_cache_at(later + window + Duration::from_secs(1)));
    }
}
