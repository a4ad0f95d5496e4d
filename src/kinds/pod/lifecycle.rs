//! The Pod adapter's glue to [`super::startup`] and [`super::resume`]: what they decide,
//! read with the object, the listing's pod and this process's memory, and turned into the
//! adapter's plan, admission, status and next due time.

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use gpucloud_crd::Pod;
use gpucloud_crd::pod::{DesiredState, OnStartupFailure, PodStatus};
use gpucloud_engine::adapter::Plan;
use gpucloud_engine::annotations::parse_duration;
use gpucloud_engine::failure::Failure;
use gpucloud_platform::domain::Pod as RemotePod;

use super::decide::Relocation;
use super::resume::{self, DEFAULT_RESUME_TIMEOUT, PodState, ResumeAssessment};
use super::startup::{self, StartupAssessment, StartupFacts};
use super::{PodAdapter, PodChange, ResolvedPod};

/// Reason of the Event and condition of a pod terminated because it did not start.
pub const STARTUP_TERMINATED: &str = "StartupFailedTerminated";

fn key_of(obj: &Pod) -> String {
    format!("{}/{}", obj.namespace().unwrap_or_default(), obj.name_any())
}

fn duration(text: Option<&String>) -> Option<Duration> {
    text.and_then(|t| parse_duration(t))
}

impl PodAdapter {
    /// Whether the pod should run now: the spec and the cost guardrails agree.
    fn wants_running(&self, obj: &Pod, remote: Option<&RemotePod>) -> bool {
        obj.spec.desired_state == DesiredState::Running
            && self.guardrails(obj, remote).state == DesiredState::Running
    }

    pub(super) fn startup_assessment(
        &self,
        obj: &Pod,
        remote: Option<&RemotePod>,
    ) -> StartupAssessment {
        let timeout = duration(obj.spec.startup_timeout.as_ref());
        let in_status = obj.status.as_ref().and_then(|s| s.startup.as_ref());
        let detected = remote.and_then(|r| self.startups.detected(&r.id));
        if timeout.is_none() && in_status.is_none() && detected.is_none() {
            // Nothing was seen starting, no timeout is set and the log told nothing: the
            // common case, without reading the clock or the guardrails.
            return StartupAssessment::default();
        }
        // A hold decided by this process that status does not have yet; holds are only
        // decided under a `startupTimeout`.
        let remembered = timeout
            .and_then(|_| self.startups.hold_of(&key_of(obj)))
            .filter(|s| {
                s.hold
                    .as_ref()
                    .is_some_and(|h| h.generation == obj.metadata.generation)
            });
        startup::assess(&StartupFacts {
            timeout,
            action: obj.spec.on_startup_failure,
            generation: obj.metadata.generation,
            previous: remembered.as_ref().or(in_status),
            remote,
            wants_running: self.wants_running(obj, remote),
            detected: detected.as_ref(),
            now: Timestamp::now(),
        })
    }

    pub(super) fn resume_assessment(
        &self,
        obj: &Pod,
        remote: Option<&RemotePod>,
        state: &PodState,
    ) -> ResumeAssessment {
        let previous = obj.status.as_ref().and_then(|s| s.resume.as_ref());
        if previous.is_none() && state.is_quiet() {
            // No refusal seen here or in status, no relocation: the common case.
            return ResumeAssessment::default();
        }
        resume::assess(
            obj.spec.resume_policy,
            duration(obj.spec.resume_timeout.as_ref()).unwrap_or(DEFAULT_RESUME_TIMEOUT),
            previous,
            remote,
            self.wants_running(obj, remote),
            remote.and_then(|r| state.refused_since(&r.id)),
            state.replaced(),
            Timestamp::now(),
        )
    }

    /// The plan after `base` (the spec's and the guardrails'): a pod that does not start
    /// is stalled, or stopped or terminated at `startupTimeout`; a pod whose resumes have
    /// been refused for `resumeTimeout` is relocated under `resumePolicy: Recreate`. A
    /// change the spec asks for that needs a new pod comes first: it may be the fix.
    pub(super) fn plan_lifecycle(
        &self,
        obj: &Pod,
        desired: &ResolvedPod,
        remote: &RemotePod,
        base: Plan<PodChange>,
        state: &PodState,
    ) -> Plan<PodChange> {
        if matches!(base, Plan::Replace { .. } | Plan::Blocked(_)) {
            return base;
        }
        let startup = self.startup_assessment(obj, Some(remote));
        if let (Some(_), Some(status)) = (&startup.give_up, &startup.status) {
            // Kept until status has it: after a terminate no listing decides it again.
            self.startups.remember_hold(&key_of(obj), status.clone());
        }
        match (startup.give_up, startup.stalled) {
            (Some((OnStartupFailure::Stop, why)), _) => {
                return Plan::Update(vec![PodChange::GiveUpStart(why)]);
            }
            (Some((OnStartupFailure::Terminate, why)), _) => {
                return Plan::Remove {
                    reason: STARTUP_TERMINATED,
                    message: why,
                };
            }
            (None, Some((reason, message))) => {
                return Plan::Blocked(Failure::permanent(&reason, message));
            }
            (None, None) => {}
        }
        let resume = self.resume_assessment(obj, Some(remote), state);
        if let (true, Some(since)) = (resume.relocate, resume.refused_since) {
            let relocation = Relocation {
                key: key_of(obj),
                budget: super::BudgetSlot::of(obj),
                uid: obj.uid().unwrap_or_default(),
                old_id: remote.id.clone(),
                refused_since: since,
                resolved: desired.clone(),
            };
            return Plan::Update(vec![PodChange::Relocate(Box::new(relocation))]);
        }
        base
    }

    /// A create held by a start given up on (a terminated pod is not deployed again
    /// until the spec is edited).
    pub(super) fn startup_hold(&self, obj: &Pod) -> Result<(), Failure> {
        match self.startup_assessment(obj, None).stalled {
            Some((reason, message)) => Err(Failure::permanent(&reason, message)),
            None => Ok(()),
        }
    }

    /// `status.startup` and `status.resume` onto `status`.
    pub(super) fn lifecycle_status(
        &self,
        obj: &Pod,
        remote: Option<&RemotePod>,
        mut status: PodStatus,
        state: &PodState,
    ) -> PodStatus {
        status.startup = self.startup_assessment(obj, remote).status;
        status.resume = self.resume_assessment(obj, remote, state).status;
        status
    }

    /// When a start or resume timeout passes.
    pub(super) fn lifecycle_due_in(
        &self,
        obj: &Pod,
        remote: Option<&RemotePod>,
        state: &PodState,
    ) -> Option<Duration> {
        let startup = self.startup_assessment(obj, remote).due_in;
        let resume = self.resume_assessment(obj, remote, state).due_in;
        match (startup, resume) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}
