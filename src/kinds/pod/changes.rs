//! The Pod's plan from its spec and cost guardrails, and how each change is made on the
//! platform (stop, resume, a guardrail's stop, a start given up on, a relocation).

use gpucloud_crd::Pod;
use gpucloud_crd::pod::DesiredState;
use gpucloud_engine::adapter::{PassContext, Plan};
use gpucloud_engine::failure::Failure;
use gpucloud_platform::PlatformClient;
use gpucloud_platform::domain::Pod as RemotePod;
use gpucloud_policy::guardrails;

use super::resume::{PodState, host_full_failure};
use super::{DesiredPod, PodAdapter, PodChange, ResolvedPod, plan_pod};

impl PodAdapter {
    /// What the spec, a Budget and the cost guardrails ask of `remote`.
    pub(super) fn plan_by_spec(
        &self,
        obj: &Pod,
        desired: &ResolvedPod,
        remote: &RemotePod,
    ) -> Plan<PodChange> {
        let decision = self.guardrails(obj, Some(remote));
        // Stopped wins, whoever wants it: the spec, or a Budget (StopNewest) in `desired`.
        // The guardrails start from the spec's state, so they only ever add a stop.
        if decision.state == desired.pod.desired_state
            || desired.pod.desired_state == DesiredState::Stopped
        {
            return plan_pod(&desired.pod, remote);
        }
        let want = DesiredPod {
            desired_state: decision.state,
            ..desired.pod.clone()
        };
        match (plan_pod(&want, remote), decision.stop) {
            (Plan::Update(changes), Some(stop)) if changes == [PodChange::Stop] => {
                Plan::Update(vec![PodChange::StopBy(stop.guardrail, stop.message)])
            }
            (plan, _) => plan,
        }
    }

    /// Makes `change` on the platform.
    pub(super) async fn apply_change(
        &self,
        pass: &PassContext<'_, PodState>,
        remote: &mut RemotePod,
        change: &PodChange,
    ) -> Result<(), Failure> {
        let client = pass.client;
        match change {
            PodChange::Resume => {
                let gpus = remote.gpu_count.and_then(|n| i32::try_from(n).ok());
                match client.pods().start(&remote.id, gpus).await {
                    Ok(()) => Ok(()),
                    Err(e) if e.is_host_full() => {
                        pass.state.update(|s| s.refused(&remote.id));
                        Err(host_full_failure(&remote.id, &e))
                    }
                    Err(e) => Err(Failure::from_platform("resume the pod", &e)),
                }
            }
            PodChange::Stop => stop(client, &remote.id, "stop the pod").await,
            PodChange::StopBy(guardrail, _) => {
                stop(client, &remote.id, "stop the pod").await?;
                if let Some(m) = &self.metrics {
                    m.guardrail_stop(guardrails::label_of(*guardrail));
                }
                Ok(())
            }
            PodChange::GiveUpStart(_) => {
                stop(client, &remote.id, "stop the pod that does not start").await
            }
            PodChange::Relocate(r) => self.relocate(pass, r).await,
        }
    }
}

/// Stops the pod `id`; `what` names the call in the failure.
async fn stop(client: &PlatformClient, id: &str, what: &str) -> Result<(), Failure> {
    client
        .pods()
        .stop(id)
        .await
        .map_err(|e| Failure::from_platform(what, &e))
}

/// Reason of the Event of a pod stopped because it did not start.
pub const STARTUP_STOPPED: &str = "StartupFailedStopped";

/// The Event's line for a change.
pub(super) fn describe(change: &PodChange) -> String {
    match change {
        PodChange::Resume => "resumed the pod".into(),
        PodChange::Stop => "stopped the pod".into(),
        PodChange::StopBy(_, why) => format!("stopped the pod: {why}"),
        PodChange::GiveUpStart(why) => why.clone(),
        PodChange::Relocate(r) => format!(
            "pod {} could not resume on its host since {} (resumePolicy Recreate): it is terminated, and the pod deployed in its place with the same spec runs",
            r.old_id, r.refused_since
        ),
    }
}

/// The Event's reason for a change.
pub(super) fn reason(change: &PodChange) -> &'static str {
    match change {
        PodChange::StopBy(guardrail, _) => guardrails::reason_of(*guardrail),
        PodChange::GiveUpStart(_) => STARTUP_STOPPED,
        PodChange::Relocate(_) => "Relocated",
        _ => "Updated",
    }
}
