//! Resumes the platform refuses: a stopped pod is tied to its machine, and
//! when that machine has no free GPU any more, the platform answers "There are not enough
//! free GPUs on the host machine to start this pod" for as long as it stays so.
//!
//! - `resumePolicy: Wait` (the default): the resume is retried with backoff, and the
//!   `Ready` condition says why it waits and what the user can do.
//! - `resumePolicy: Recreate`: once refusals have gone on for `resumeTimeout`, the pod is
//!   relocated, make before break: a new pod with the same spec (and so the same network
//!   volume) is deployed wherever the placement rules allow; the old one is terminated
//!   only once the new one runs. The engine then finds the old id gone and adopts the new
//!   pod by its tag, so both the old and the new id end up in `status.resume.replaced`
//!   and in Events.
//! - Crash safety: the relocation looks for a pod carrying the object's tag before it
//!   deploys one, so a relocation interrupted anywhere deploys nothing twice; should two
//!   successors exist anyway, all but one are terminated. The refusal's start is kept in
//!   status, so an operator restart does not start the wait over.
//!
//! [`assess`] decides purely; [`RefusedResumes`] is this process's memory of refusals
//! between the failing call and the next status write.

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;
use tokio::time::Instant;
use tracing::{info, warn};

use gpucloud_crd::pod::{PodReplacement, ResumePolicy, ResumeStatus};
use gpucloud_engine::failure::{Applied, Failure};
use gpucloud_engine::marker::TAG_ENV;
use gpucloud_platform::domain::{EXITED, Pod as RemotePod, RUNNING};
use gpucloud_platform::{PlatformClient, PlatformError};

use super::PodAdapter;
use super::decide::Relocation;

/// `resumeTimeout` when the spec gives none.
pub const DEFAULT_RESUME_TIMEOUT: Duration = Duration::from_secs(600);

/// Reason of a resume refused for lack of a free GPU on the host.
pub const HOST_HAS_NO_FREE_GPU: &str = "HostHasNoFreeGpu";
/// Reason while a replacement pod comes up.
pub const RELOCATING: &str = "Relocating";

/// After a deploy of a replacement that may have happened unanswered, how long to look for
/// it before deploying another.
const UNANSWERED_DEPLOY_SETTLES: Duration = Duration::from_secs(60);

/// Pure: the failure of a resume the host cannot take.
pub fn host_full_failure(pod_id: &str, err: &PlatformError) -> Failure {
    Failure::retryable(
        HOST_HAS_NO_FREE_GPU,
        format!(
            "the platform cannot resume pod {pod_id}: its host has no free GPU ({err}), and a stopped pod only resumes on its own host. It is asked again with backoff (resumePolicy Wait); with resumePolicy Recreate a new pod with the same spec and network volume is deployed elsewhere after resumeTimeout; or delete the Pod"
        ),
    )
}

/// What [`assess`] decides.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResumeAssessment {
    pub status: Option<ResumeStatus>,
    /// Deploy a replacement now.
    pub relocate: bool,
    /// When `resumeTimeout` passes.
    pub due_in: Option<Duration>,
    /// When refusals began, if they go on.
    pub refused_since: Option<Timestamp>,
}

/// Pure: the `status.resume` block and whether to relocate `remote`: it is stopped, the
/// pod should run, and its resumes have been refused since `refused_since` (status's, for
/// the same pod, else this process's memory).
pub fn assess(
    policy: ResumePolicy,
    timeout: Duration,
    previous: Option<&ResumeStatus>,
    remote: Option<&RemotePod>,
    wants_running: bool,
    remembered: Option<Timestamp>,
    replaced: Option<PodReplacement>,
    now: Timestamp,
) -> ResumeAssessment {
    let replaced = replaced.or_else(|| previous.and_then(|p| p.replaced.clone()));
    let stopped = remote.filter(|r| wants_running && r.desired_status == EXITED);
    let since = stopped.and_then(|r| {
        previous
            .filter(|p| p.pod_id.as_deref() == Some(r.id.as_str()))
            .and_then(|p| p.refused_since.as_ref().map(|t| t.0))
            .or(remembered)
    });
    let status = match (stopped, since) {
        (Some(r), Some(since)) => Some(ResumeStatus {
            pod_id: Some(r.id.clone()),
            refused_since: Some(Time(since)),
            replaced,
        }),
        _ => replaced.map(|replaced| ResumeStatus {
            replaced: Some(replaced),
            ..ResumeStatus::default()
        }),
    };
    let Some(since) = since.filter(|_| policy == ResumePolicy::Recreate) else {
        return ResumeAssessment {
            status,
            refused_since: since,
            ..Default::default()
        };
    };
    let waited = Duration::try_from(now.duration_since(since)).unwrap_or(Duration::ZERO);
    ResumeAssessment {
        status,
        relocate: waited >= timeout,
        due_in: (waited < timeout).then(|| timeout - waited),
        refused_since: Some(since),
    }
}

/// This process's memory of refused resumes and relocations.
#[derive(Default)]
pub struct RefusedResumes {
    /// First refusal seen, by pod id.
    refused: Mutex<HashMap<String, Timestamp>>,
    /// Replacements made, by object key, until status has them.
    replaced: Mutex<HashMap<String, PodReplacement>>,
    /// Replacement deploys that may have happened unanswered, by object key.
    unanswered: Mutex<HashMap<String, Instant>>,
}

impl RefusedResumes {
    /// Whether nothing is remembered: no refusal and no relocation.
    pub fn is_empty(&self) -> bool {
        self.refused.lock().is_empty() && self.replaced.lock().is_empty()
    }

    pub fn refused(&self, pod_id: &str) {
        self.refused
            .lock()
            .entry(pod_id.to_string())
            .or_insert_with(Timestamp::now);
    }

    pub fn refused_since(&self, pod_id: &str) -> Option<Timestamp> {
        self.refused.lock().get(pod_id).copied()
    }

    pub fn replaced(&self, key: &str) -> Option<PodReplacement> {
        self.replaced.lock().get(key).cloned()
    }

    /// After a listing: pods it shows running resume fine.
    pub fn follow(&self, pods: &[RemotePod]) {
        let mut refused = self.refused.lock();
        if refused.is_empty() {
            return;
        }
        for p in pods.iter().filter(|p| p.desired_status == RUNNING) {
            refused.remove(&p.id);
        }
    }

    pub fn forget(&self, key: &str) {
        self.replaced.lock().remove(key);
        self.unanswered.lock().remove(key);
    }
}

impl PodAdapter {
    /// Makes `r` one step further: deploy the replacement, wait for it to run, then
    /// terminate the old pod (see the module's documentation). `Ok` once the old pod is
    /// terminated; a `Waiting` failure while the replacement comes up.
    pub(super) async fn relocate(
        &self,
        client: &PlatformClient,
        r: &Relocation,
    ) -> Result<(), Failure> {
        let pods = client
            .pods()
            .list()
            .await
            .map_err(|e| Failure::from_platform("list pods to find the replacement", &e))?;
        let mut successors: Vec<&RemotePod> = pods
            .iter()
            .filter(|p| p.id != r.old_id && p.env_value(TAG_ENV) == Some(r.uid.as_str()))
            .collect();
        let since = r.refused_since;
        if successors.is_empty() {
            return Err(self.deploy_replacement(client, r).await);
        }
        // Running ones first: the one kept is the one furthest along.
        successors.sort_by_key(|p| (p.runtime.is_none(), p.id.clone()));
        let keep = successors[0];
        for extra in &successors[1..] {
            warn!(object = %r.key, pod = %extra.id, "a second replacement pod exists; terminating it");
            if let Err(e) = client.pods().terminate(&extra.id).await {
                return Err(Failure::from_platform(
                    "terminate a second replacement pod",
                    &e,
                ));
            }
        }
        if keep.desired_status != RUNNING || keep.runtime.is_none() {
            return Err(Failure::waiting(
                RELOCATING,
                format!(
                    "pod {} has been unable to resume on its host since {since}; pod {} was deployed to replace it and is starting; {} is terminated once it runs",
                    r.old_id, keep.id, r.old_id
                ),
            ));
        }
        client
            .pods()
            .terminate(&r.old_id)
            .await
            .or_else(|e| match e.class() {
                gpucloud_platform::ErrorClass::NotFound => Ok(()),
                _ => Err(e),
            })
            .map_err(|e| Failure::from_platform("terminate the pod that could not resume", &e))?;
        info!(object = %r.key, from = %r.old_id, to = %keep.id, "relocated a pod that could not resume");
        self.resumes.replaced.lock().insert(
            r.key.clone(),
            PodReplacement {
                from: r.old_id.clone(),
                to: keep.id.clone(),
                at: Time(Timestamp::now()),
            },
        );
        self.resumes.unanswered.lock().remove(&r.key);
        Ok(())
    }

    /// Deploys the replacement; always a failure to report: `Waiting` once it is asked
    /// for, the deploy's own otherwise.
    async fn deploy_replacement(&self, client: &PlatformClient, r: &Relocation) -> Failure {
        let pending = self.resumes.unanswered.lock().get(&r.key).copied();
        if pending.is_some_and(|at| at.elapsed() < UNANSWERED_DEPLOY_SETTLES) {
            return Failure::waiting(
                RELOCATING,
                format!(
                    "a replacement for pod {} was asked for and the platform did not answer; looking for it before asking again",
                    r.old_id
                ),
            );
        }
        let candidates = match self.candidates(client, &r.resolved).await {
            Ok(c) => c,
            Err(f) => return f,
        };
        match self
            .deploy(client, &r.budget, &r.resolved, &candidates)
            .await
        {
            Ok(created) => {
                let new = &created.remote.id;
                info!(object = %r.key, from = %r.old_id, to = %new, "deployed a pod to replace one that cannot resume");
                Failure::waiting(
                    RELOCATING,
                    format!(
                        "pod {} has been unable to resume on its host since {}; deployed pod {new} with the same spec to replace it; {} is terminated once {new} runs",
                        r.old_id, r.refused_since, r.old_id
                    ),
                )
            }
            Err(f) => {
                if f.applied != Applied::No {
                    self.resumes
                        .unanswered
                        .lock()
                        .insert(r.key.clone(), Instant::now());
                }
                f
            }
        }
    }
}

#[cfg(test)]
#[path = "resume_tests.rs"]
mod tests;
