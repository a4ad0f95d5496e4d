//! Pods that do not start: the platform reports such a pod as starting, and
//! bills it, for as long as it fails; only its system log says why.
//!
//! - [`StartupWatches`] reads the system log of the operator's pods that are starting, and
//!   only those: after each pod listing ([`StartupWatches::follow`]) it opens a stream for
//!   each tagged pod that is starting and not watched yet, and closes the streams of pods
//!   the listing shows running, stopped or gone. A stream also ends at the first known
//!   failure line, or after [`WATCH_LIMIT`] in all. What it read waits in memory for the
//!   next pass ([`StartupWatches::detected`]).
//! - [`classify`] tells the known failure lines (an image that cannot be pulled, a
//!   registry login refused, a host whose CUDA is older than the image needs); pure.
//! - [`assess`] decides, purely, from the spec, what status kept, the pod as listed and
//!   what the log said: the `status.startup` block, whether the pod is `Stalled` with the
//!   log line, and whether `startupTimeout` has passed, so that `onStartupFailure` stops or
//!   terminates it. That decision is a hold recorded with the spec generation: it stands
//!   until the spec is edited, across operator restarts.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;
use tokio::task::AbortHandle;
use tokio::time::Instant;
use tracing::{debug, info};

use gpucloud_crd::pod::{OnStartupFailure, StartFailure, StartupHold, StartupStatus};
use gpucloud_engine::marker::TAG_ENV;
use gpucloud_engine::metrics::Metrics;
use gpucloud_platform::PlatformClient;
use gpucloud_platform::domain::{Pod as RemotePod, RUNNING};

/// Longest a pod's system log is read, from its first opening: a pod that has neither
/// started nor said why by then is left to `startupTimeout`.
pub const WATCH_LIMIT: Duration = Duration::from_secs(30 * 60);

/// Past lines read when a stream opens: a failure already told is not missed.
const BACKFILL_LINES: u32 = 50;

/// Reason of an image the registry does not have.
pub const IMAGE_PULL_FAILED: &str = "ImagePullFailed";
/// Reason of a registry that refused the pod's login.
pub const REGISTRY_AUTH_FAILED: &str = "RegistryAuthFailed";
/// Reason of a host whose driver is older than the CUDA the image needs.
pub const CUDA_TOO_OLD: &str = "CudaVersionTooOld";
/// Reason of a pod not running at `startupTimeout`, with nothing known about why.
pub const STARTUP_TIMEOUT: &str = "StartupTimeout";

/// Pure: the reason of a system log line that says the pod cannot start, if it is one.
/// The texts are the container runtime's (a pull refused as unauthorized or denied, a
/// manifest unknown or not found, the NVIDIA runtime's unsatisfied `cuda>=` condition).
pub fn classify(line: &str) -> Option<&'static str> {
    let l = line.to_ascii_lowercase();
    if l.contains("unsatisfied condition: cuda")
        || (l.contains("cuda") && l.contains("update your driver"))
    {
        return Some(CUDA_TOO_OLD);
    }
    let pulling = l.contains("pull") || l.contains("manifest");
    if pulling
        && (l.contains("unauthorized")
            || l.contains("authentication required")
            || l.contains("denied"))
    {
        return Some(REGISTRY_AUTH_FAILED);
    }
    if pulling
        && (l.contains("manifest unknown")
            || l.contains("not found")
            || l.contains("no such image"))
    {
        return Some(IMAGE_PULL_FAILED);
    }
    None
}

/// A failure line read from a pod's system log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Detected {
    pub reason: &'static str,
    pub line: String,
    pub at: Timestamp,
}

/// Pure: whether `p` is one of the operator's pods on its way up: tagged, meant to run,
/// and with no runtime yet.
pub fn is_starting(p: &RemotePod) -> bool {
    p.desired_status == RUNNING && p.runtime.is_none() && p.env_value(TAG_ENV).is_some()
}

#[derive(Default)]
struct Watched {
    /// Open streams, by pod id.
    open: HashMap<String, AbortHandle>,
    /// When each pod's log was first opened: it is read for [`WATCH_LIMIT`] in all.
    first_opened: HashMap<String, Instant>,
    detected: HashMap<String, Detected>,
    /// Holds decided this process, by object key, until status has them: a pod removed
    /// for good leaves no listing to decide them again from.
    holds: HashMap<String, StartupStatus>,
    metrics: Option<Arc<Metrics>>,
}

impl Watched {
    /// Says how many streams are open.
    fn count(&self) {
        if let Some(m) = &self.metrics {
            m.set_log_streams("Pod", self.open.len());
        }
    }
}

/// The log streams of starting pods, and what they said.
#[derive(Clone, Default)]
pub struct StartupWatches {
    inner: Arc<Mutex<Watched>>,
}

impl StartupWatches {
    /// Counts open streams in `metrics`.
    pub fn count_in(&self, metrics: Arc<Metrics>) {
        let mut w = self.inner.lock();
        w.metrics = Some(metrics);
        w.count();
    }

    /// Streams open right now.
    pub fn open(&self) -> usize {
        self.inner.lock().open.len()
    }

    /// Remembers the hold `status` carries for the object `key`.
    pub fn remember_hold(&self, key: &str, status: StartupStatus) {
        self.inner.lock().holds.insert(key.to_string(), status);
    }

    /// The hold decided for the object `key`, if any.
    pub fn hold_of(&self, key: &str) -> Option<StartupStatus> {
        self.inner.lock().holds.get(key).cloned()
    }

    /// Drops what is kept about the object `key`.
    pub fn forget(&self, key: &str) {
        self.inner.lock().holds.remove(key);
    }

    /// The failure line read for `pod_id`, if any.
    pub fn detected(&self, pod_id: &str) -> Option<Detected> {
        self.inner.lock().detected.get(pod_id).cloned()
    }

    /// After a pod listing with `client`'s key: watch its starting pods, stop watching
    /// the ones it shows otherwise. Pods absent from the listing (another account's) keep
    /// their streams, which end by themselves.
    pub fn follow(&self, client: &PlatformClient, pods: &[RemotePod]) {
        if !client.pod_logs().supported() {
            return;
        }
        let mut w = self.inner.lock();
        let now = Instant::now();
        w.first_opened
            .retain(|_, at| now.saturating_duration_since(*at) < WATCH_LIMIT * 2);
        for p in pods {
            if !is_starting(p) {
                // Every watched pod has a first opening (or a failure read): with neither,
                // the steady listing of running pods costs no lookup here.
                if w.first_opened.is_empty() && w.detected.is_empty() {
                    continue;
                }
                if let Some(handle) = w.open.remove(&p.id) {
                    handle.abort();
                    debug!(pod = %p.id, "pod no longer starting; its log is closed");
                }
                w.detected.remove(&p.id);
                w.first_opened.remove(&p.id);
                continue;
            }
            if w.open.contains_key(&p.id) || w.detected.contains_key(&p.id) {
                continue;
            }
            let first = *w.first_opened.entry(p.id.clone()).or_insert(now);
            let left = WATCH_LIMIT.saturating_sub(now.saturating_duration_since(first));
            if left.is_zero() {
                continue;
            }
            let task = tokio::spawn(read_until_failure(
                self.inner.clone(),
                client.clone(),
                p.id.clone(),
                left,
            ));
            w.open.insert(p.id.clone(), task.abort_handle());
        }
        w.count();
    }
}

/// Reads `pod_id`'s system log for at most `left`, until a known failure line (recorded)
/// or the end of the stream; then says it is no longer open.
async fn read_until_failure(
    inner: Arc<Mutex<Watched>>,
    client: PlatformClient,
    pod_id: String,
    left: Duration,
) {
    let read = async {
        let mut lines = match client.pod_logs().system(&pod_id, BACKFILL_LINES).await {
            Ok(lines) => lines,
            Err(e) => {
                debug!(pod = %pod_id, error = %e, "could not open the pod's system log");
                return None;
            }
        };
        while let Some(next) = lines.next().await {
            let Ok(l) = next else { return None };
            if let Some(reason) = classify(&l.line) {
                return Some(Detected {
                    reason,
                    line: l.line,
                    at: Timestamp::now(),
                });
            }
        }
        None
    };
    let found = tokio::time::timeout(left, read).await.ok().flatten();
    let mut w = inner.lock();
    w.open.remove(&pod_id);
    w.count();
    if let Some(d) = found {
        info!(pod = %pod_id, reason = d.reason, "pod cannot start, says its system log");
        w.detected.insert(pod_id, d);
    }
}

/// What [`assess`] reads.
#[derive(Clone, Copy, Debug)]
pub struct StartupFacts<'a> {
    pub timeout: Option<Duration>,
    pub action: OnStartupFailure,
    pub generation: Option<i64>,
    pub previous: Option<&'a StartupStatus>,
    /// The pod as listed; `None` when there is none.
    pub remote: Option<&'a RemotePod>,
    /// The pod should run (spec, guardrails and Budgets agree).
    pub wants_running: bool,
    pub detected: Option<&'a Detected>,
    pub now: Timestamp,
}

/// What [`assess`] decides.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StartupAssessment {
    /// `status.startup`.
    pub status: Option<StartupStatus>,
    /// Stop or terminate the pod now, with why.
    pub give_up: Option<(OnStartupFailure, String)>,
    /// Stalled with this reason and message (the pod stays as it is).
    pub stalled: Option<(String, String)>,
    /// When `startupTimeout` passes.
    pub due_in: Option<Duration>,
}

fn secs(d: Duration) -> String {
    format!("{}s", d.as_secs())
}

/// Pure: see the module's documentation.
pub fn assess(f: &StartupFacts<'_>) -> StartupAssessment {
    let previous = f.previous;
    // A hold stands while the spec it was decided on does.
    if let Some(hold) = previous.and_then(|p| p.hold.as_ref())
        && hold.generation == f.generation
    {
        let reason = previous
            .and_then(|p| p.failure.as_ref())
            .map_or(STARTUP_TIMEOUT.to_string(), |x| x.reason.clone());
        let undone = match (hold.action, f.remote) {
            (_, None) => false,
            (OnStartupFailure::Terminate, Some(_)) => true,
            (OnStartupFailure::Stop, Some(r)) => r.desired_status == RUNNING,
        };
        return StartupAssessment {
            status: previous.cloned(),
            give_up: undone.then(|| (hold.action, hold.message.clone())),
            stalled: Some((reason, hold.message.clone())),
            due_in: None,
        };
    }
    let Some(remote) = f.remote.filter(|r| f.wants_running && is_starting(r)) else {
        return StartupAssessment::default();
    };
    let same_pod = previous.filter(|p| p.pod_id == remote.id);
    let since = same_pod.map_or(f.now, |p| p.since.0);
    let failure = match f.detected {
        Some(d) => Some(StartFailure {
            reason: d.reason.to_string(),
            line: d.line.clone(),
            seen_at: Time(d.at),
        }),
        None => same_pod.and_then(|p| p.failure.clone()),
    };
    let waited = Duration::try_from(f.now.duration_since(since)).unwrap_or(Duration::ZERO);
    let mut status = StartupStatus {
        pod_id: remote.id.clone(),
        since: Time(since),
        failure: failure.clone(),
        hold: None,
    };
    if let Some(limit) = f.timeout
        && waited >= limit
    {
        let done = match f.action {
            OnStartupFailure::Stop => "stopped",
            OnStartupFailure::Terminate => "terminated",
        };
        let why = failure.as_ref().map_or_else(
            || "its system log told no reason".to_string(),
            |x| format!("{}: {}", x.reason, x.line),
        );
        let message = format!(
            "pod {} was not running {} after it started (startupTimeout {}; {why}); it is {done} (onStartupFailure {:?}) and stays so until the spec is edited",
            remote.id,
            secs(waited),
            secs(limit),
            f.action
        );
        status.hold = Some(StartupHold {
            action: f.action,
            generation: f.generation,
            since: Time(f.now),
            message: message.clone(),
        });
        let reason = failure.map_or(STARTUP_TIMEOUT.to_string(), |x| x.reason);
        return StartupAssessment {
            status: Some(status),
            give_up: Some((f.action, message.clone())),
            stalled: Some((reason, message)),
            due_in: None,
        };
    }
    let due_in = f.timeout.map(|limit| limit.saturating_sub(waited));
    let stalled = failure.map(|x| {
        let then = match f.timeout {
            Some(limit) => format!(
                "; it will be {} at startupTimeout ({} after it started)",
                match f.action {
                    OnStartupFailure::Stop => "stopped",
                    OnStartupFailure::Terminate => "terminated",
                },
                secs(limit)
            ),
            None => {
                "; it bills until it is fixed or deleted (set startupTimeout to stop it by itself)"
                    .to_string()
            }
        };
        (
            x.reason.clone(),
            format!(
                "pod {} cannot start, its system log says: {}{then}",
                remote.id, x.line
            ),
        )
    });
    StartupAssessment {
        status: Some(status),
        give_up: None,
        stalled,
        due_in,
    }
}

#[cfg(test)]
#[path = "startup_tests.rs"]
mod tests;
