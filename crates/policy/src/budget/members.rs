//! What a Budget counts of each kind it selects: one trait, implemented here for the CRD
//! types of those kinds, so that the ledger takes any member alike.

use kube::ResourceExt;

use gpucloud_crd::cluster::{BudgetStopPolicy, ClusterPhase};
use gpucloud_crd::pod::{DesiredState, PodPhase};
use gpucloud_crd::{Cluster, Endpoint, Pod};
use gpucloud_platform::domain::RUNNING;

use super::ledger::{Facts, Member, MemberKind};

/// An object a Budget counts.
pub trait BudgetMember: kube::Resource<DynamicType = ()> + Sized {
    const KIND: MemberKind;

    /// Pure: what the ledger needs of the object.
    fn facts(&self) -> Facts;

    /// Whether the object asks for no room at all (a Pod whose spec says Stopped): a hold
    /// of it is called off, since no pass of its own would admit anything for it.
    fn asks_no_room(&self) -> bool {
        false
    }

    /// The object as a member of the ledger.
    fn member(&self) -> Member {
        Member::new(Self::KIND, self.name_any())
    }
}

impl BudgetMember for Pod {
    const KIND: MemberKind = MemberKind::Pod;

    fn facts(&self) -> Facts {
        pod_facts(self)
    }

    fn asks_no_room(&self) -> bool {
        self.spec.desired_state == DesiredState::Stopped
    }
}

impl BudgetMember for Endpoint {
    const KIND: MemberKind = MemberKind::Endpoint;

    fn facts(&self) -> Facts {
        endpoint_facts(self)
    }
}

impl BudgetMember for Cluster {
    const KIND: MemberKind = MemberKind::Cluster;

    fn facts(&self) -> Facts {
        cluster_facts(self)
    }
}

/// Pure: what the ledger needs of a Pod object. A Pod being deployed, or one the platform
/// reports running (deploying, starting, running or stopping before it knows), is billed; its start is when it last started (its uptime before its last
/// status write), else when the object was made.
fn pod_facts(pod: &Pod) -> Facts {
    let status = pod.status.as_ref();
    // The platform's own state decides when it is known: the phase follows the spec's
    // desired state, which says `Starting` for a pod a Budget stopped.
    let phase = status.and_then(|s| s.phase);
    let running = match (phase, status.and_then(|s| s.desired_status.as_deref())) {
        (Some(PodPhase::Deploying), _) => true,
        (_, Some(platform_state)) => platform_state == RUNNING,
        (phase, None) => matches!(
            phase,
            Some(PodPhase::Starting | PodPhase::Running | PodPhase::Stopping)
        ),
    };
    let started = status
        .and_then(|s| {
            let synced = s.common.last_sync_time.as_ref()?.0;
            let uptime = s.uptime_seconds?;
            synced
                .checked_sub(k8s_openapi::jiff::SignedDuration::from_secs(uptime))
                .ok()
        })
        .or_else(|| pod.metadata.creation_timestamp.as_ref().map(|t| t.0));
    Facts {
        labels: pod.labels().clone(),
        running,
        cost_per_hour: status.and_then(|s| s.cost_per_hour),
        started,
        platform_id: status.and_then(|s| s.common.id.clone()),
        stoppable: true,
    }
}

/// Pure: what the ledger needs of an Endpoint object. An endpoint the operator has made
/// (its status has the platform's id) is billed at the workers it runs (at least its
/// minimum workers), at the catalog price its status reports; until the workers have
/// been counted, at its minimum workers. One being deleted still is, until it goes.
fn endpoint_facts(endpoint: &Endpoint) -> Facts {
    let status = endpoint.status.as_ref();
    Facts {
        labels: endpoint.labels().clone(),
        running: status.is_some_and(|s| s.common.id.is_some()),
        cost_per_hour: status.and_then(|s| s.workers_cost_per_hour.or(s.min_workers_cost_per_hour)),
        started: endpoint.metadata.creation_timestamp.as_ref().map(|t| t.0),
        platform_id: status.and_then(|s| s.common.id.clone()),
        stoppable: false,
    }
}

/// Pure: what the ledger needs of a Cluster object. A cluster the operator has made (its
/// status has the platform's id) is billed at what its nodes cost (its status says it);
/// it started when the platform created it. `StopNewest` may delete it only when its
/// `budgetStopPolicy` is `Delete`.
fn cluster_facts(cluster: &Cluster) -> Facts {
    let status = cluster.status.as_ref();
    let phase = status.and_then(|s| s.phase);
    let running = status.is_some_and(|s| s.common.id.is_some())
        && !matches!(phase, Some(ClusterPhase::Held | ClusterPhase::Pending));
    Facts {
        labels: cluster.labels().clone(),
        running,
        cost_per_hour: status.and_then(|s| s.cost_per_hour),
        started: status
            .and_then(|s| s.started_at.as_ref().map(|t| t.0))
            .or_else(|| cluster.metadata.creation_timestamp.as_ref().map(|t| t.0)),
        platform_id: status.and_then(|s| s.common.id.clone()),
        stoppable: cluster.spec.budget_stop_policy == BudgetStopPolicy::Delete,
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::pod;
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    #[test]
    fn facts_say_whether_a_pod_is_billed_and_when_it_started() {
        let f = pod_facts(&pod(Some(PodPhase::Running), Some(0.3)));
        assert!(f.running);
        assert_eq!(f.cost_per_hour, Some(0.3));
        assert_eq!(f.started, Some(Timestamp::from_second(940).unwrap()));
        for billed in [PodPhase::Deploying, PodPhase::Starting, PodPhase::Stopping] {
            assert!(pod_facts(&pod(Some(billed), None)).running, "{billed:?}");
        }
        for idle in [PodPhase::Pending, PodPhase::Stopped, PodPhase::Failed] {
            assert!(!pod_facts(&pod(Some(idle), None)).running, "{idle:?}");
        }
        // The platform's state wins over the phase: a pod a Budget stopped reads
        // `Starting` (its spec wants it running) but is EXITED.
        let mut stopped = pod(Some(PodPhase::Starting), Some(0.3));
        stopped.status.as_mut().unwrap().desired_status = Some("EXITED".into());
        assert!(!pod_facts(&stopped).running);
        stopped.status.as_mut().unwrap().desired_status = Some("RUNNING".into());
        assert!(pod_facts(&stopped).running);
        assert!(!pod_facts(&pod(None, None)).running);
    }

    #[test]
    fn an_endpoint_made_on_the_platform_is_billed_at_its_status_cost() {
        let spec: gpucloud_crd::endpoint::EndpointSpec = serde_json::from_value(
            serde_json::json!({"templateId": "t", "gpuTypeIds": ["A"], "workersMin": 2}),
        )
        .unwrap();
        let mut e = Endpoint::new("api", spec);
        e.metadata.labels = Some([("team".to_string(), "ml".to_string())].into());
        // Held before its create: not on the platform, nothing billed.
        let f = endpoint_facts(&e);
        assert!(!f.running);
        assert_eq!(f.labels.get("team").map(String::as_str), Some("ml"));
        e.status = Some(gpucloud_crd::EndpointStatus {
            common: gpucloud_crd::CommonStatus {
                id: Some("ep-1".into()),
                ..Default::default()
            },
            min_workers_cost_per_hour: Some(0.96),
            ..Default::default()
        });
        let f = endpoint_facts(&e);
        assert!(f.running);
        assert_eq!(f.cost_per_hour, Some(0.96));
        // Once its workers are counted, it is billed at every one that runs, not only at
        // the minimum.
        e.status.as_mut().unwrap().workers_cost_per_hour = Some(2.4);
        assert_eq!(endpoint_facts(&e).cost_per_hour, Some(2.4));
    }
}
