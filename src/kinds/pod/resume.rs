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
//! [`assess`] decides purely; [`PodState`] is this process's memory of refusals between
//! the failing call and the next status write.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;
use tracing::{info, warn};

use gpucloud_crd::pod::{PodReplacement, ResumePolicy, ResumeStatus};
use gpucloud_engine::adapter::{KindState, PassContext};
use gpucloud_engine::failure::{Applied, Failure};
use gpucloud_engine::marker::TAG_ENV;
use gpucloud_platform::PlatformError;
use gpucloud_platform::domain::{EXITED, Pod as RemotePod, RUNNING};

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

/// What the Pod kind keeps of one object between its passes: the resume the platform
/// refuses, and the relocation made, until status has them.
#[derive(Debug, Default)]
pub struct PodState {
    /// The pod whose resume the platform refused first, and when.
    refused: Option<(String, Timestamp)>,
    /// The replacement made, until status has it.
    replaced: Option<PodReplacement>,
    /// When a replacement deploy that may have happened went unanswered.
    unanswered: Option<Instant>,
}

impl KindState for PodState {
    fn is_empty(&self) -> bool {
        self.refused.is_none() && self.replaced.is_none() && self.unanswered.is_none()
    }
}

impl PodState {
    /// The platform refused to resume pod `pod_id`: the first refusal counts.
    pub fn refused(&mut self, pod_id: &str) {
        if self.refused.as_ref().is_none_or(|(id, _)| id != pod_id) {
            self.refused = Some((pod_id.to_string(), Timestamp::now()));
        }
    }

    /// Since when resumes of pod `pod_id` have been refused.
    pub fn refused_since(&self, pod_id: &str) -> Option<Timestamp> {
        self.refused
            .as_ref()
            .filter(|(id, _)| id == pod_id)
            .map(|(_, since)| *since)
    }

    pub fn replaced(&self) -> Option<PodReplacement> {
        self.replaced.clone()
    }

    /// Whether neither a refusal nor a relocation is remembered.
    pub fn is_quiet(&self) -> bool {
        self.refused.is_none() && self.replaced.is_none()
    }

    /// What is left once the pod runs with `status` written: its refusals are over, and
    /// a replacement that status records is remembered there.
    pub fn settle(&mut self, running: bool, status: Option<&ResumeStatus>) {
        if running {
            self.refused = None;
        }
        if self.replaced.is_some()
            && status.and_then(|s| s.replaced.as_ref()) == self.replaced.as_ref()
        {
            self.replaced = None;
        }
    }
}

impl PodAdapter {
    /// Makes `r` one step further: deploy the replacement, wait for it to run, then
    /// terminate the old pod (see the module's documentation). `Ok` once the old pod is
    /// terminated; a `Waiting` failure while the replacement comes up.
    pub(super) async fn relocate(
        &self,
        pass: &PassContext<'_, PodState>,
        r: &Relocation,
    ) -> Result<(), Failure> {
        let client = pass.client;
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
            return Err(self.deploy_replacement(pass, r).await);
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
        let replaced = PodReplacement {
            from: r.old_id.clone(),
            to: keep.id.clone(),
            at: Time(Timestamp::now()),
        };
        pass.state.update(|s| {
            s.replaced = Some(replaced);
            s.unanswered = None;
        });
        Ok(())
    }

    /// Deploys the replacement; always a failure to report: `Waiting` once it is asked
    /// for, the deploy's own otherwise.
    async fn deploy_replacement(
        &self,
        pass: &PassContext<'_, PodState>,
        r: &Relocation,
    ) -> Failure {
        let client = pass.client;
        let pending = pass.state.read(|s| s.unanswered);
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
                    pass.state.update(|s| s.unanswered = Some(Instant::now()));
                }
                f
            }
        }
    }
}

#[cfg(test)]
#[path = "resume_tests.rs"]
mod tests;
