//! The Cluster's decisions, pure: the desired cluster from the spec, where it may go, the
//! plan against the remote cluster, readiness, the `maxRuntime` hold and status. The
//! adapter (`super::ClusterAdapter`) calls them with what it resolved and listed; they are
//! unit tested without a network.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use gpucloud_crd::Cluster;
use gpucloud_crd::cluster::{ClusterMemberStatus, ClusterPhase, ClusterStatus, PlacementRefusal};
use gpucloud_crd::guardrails::{Guardrail, GuardrailHold, GuardrailStatus};
use gpucloud_crd::pod::UpdateStrategy;
use gpucloud_engine::adapter::{Plan, Readiness, Seen};
use gpucloud_engine::credentials::AccountId;
use gpucloud_engine::failure::Failure;
use gpucloud_engine::marker::{InstallTag, TAG_ENV, is_mark_env, remote_name_of};
use gpucloud_platform::domain::{
    Cluster as RemoteCluster, ClusterOffer, ClusterRequest, NodeContainer,
};
use gpucloud_policy::guardrails::runtime::{self, Budget};

/// Where the network volume is mounted when the spec does not say.
pub const DEFAULT_MOUNT_PATH: &str = "/workspace";

/// The cluster as the spec wants it, Secrets, the Template and the network volume
/// resolved. `request` has no placement yet (its GPU type and data center are set per
/// candidate); its `Debug` hides env values.
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredCluster {
    pub account: AccountId,
    pub request: ClusterRequest,
    pub gpu_types: Vec<String>,
    /// Allowed data centers in order; empty: any. A mounted volume's alone when it has one.
    pub data_center_ids: Vec<String>,
    pub max_price_per_hour: Option<f64>,
    pub update_strategy: UpdateStrategy,
    /// A Budget's `StopNewest` chose this cluster, and its policy lets it be deleted.
    pub budget_stop: Option<String>,
}

/// The one change a live cluster takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClusterChange {
    Rename(String),
}

/// A placement to try: one GPU type in one data center, at the whole cluster's price.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub gpu_type_id: String,
    pub data_center_id: String,
    pub price_per_hour: f64,
}

impl Candidate {
    pub fn describe(&self) -> String {
        format!("{} in {}", self.gpu_type_id, self.data_center_id)
    }
}

/// The remote name: the spec's, else the one its remote cluster has, else namespace, name,
/// the first 8 hex digits of the UID and this install's tag.
pub fn remote_name(obj: &Cluster, tag: Option<&InstallTag>) -> String {
    let status_name = obj.status.as_ref().and_then(|s| s.remote_name.as_deref());
    remote_name_of(obj, obj.spec.name.as_deref(), status_name, tag)
}

/// Sorted, lower-case `port/type` entries.
fn normalise_ports(ports: &[String]) -> Vec<String> {
    let mut v: Vec<String> = ports
        .iter()
        .map(|p| p.trim().to_ascii_lowercase())
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Pure: the node container from the spec, with the env already resolved (the tag
/// added here) and the Template's settings under the spec's own.
pub fn container_of(
    obj: &Cluster,
    mut env: Vec<(String, String)>,
    template: Option<NodeContainer>,
    network_volume_id: Option<String>,
) -> NodeContainer {
    let s = &obj.spec;
    let base = template.unwrap_or_default();
    for (k, v) in base.env {
        if !env.iter().any(|(name, _)| *name == k) {
            env.push((k, v));
        }
    }
    env.retain(|(k, _)| k != TAG_ENV);
    env.push((TAG_ENV.to_string(), obj.uid().unwrap_or_default()));
    env.sort();
    let ports = if s.container.ports.is_empty() {
        base.ports
    } else {
        s.container.ports.clone()
    };
    NodeContainer {
        image: s.image.clone().unwrap_or(base.image),
        args: s.container.args.clone().or(base.args).filter(|a| !a.is_empty()),
        disk_gb: s
            .container_disk_gb
            .and_then(|d| u32::try_from(d).ok())
            .or(base.disk_gb),
        ports: normalise_ports(&ports),
        env,
        network_volume_id,
    }
}

/// Pure: where the cluster may go, in order (GPU types by priority, then data centers in
/// the spec's order or the catalog's), and why each offer left out was refused. Only
/// offers in stock are candidates: the catalog says no stock, and a create would only
/// hear the same.
pub fn candidates(
    desired: &DesiredCluster,
    offers: &[ClusterOffer],
) -> (Vec<Candidate>, Vec<PlacementRefusal>) {
    let gpus = desired.request.gpu_count_per_pod;
    let mut chosen = Vec::new();
    let mut refused = Vec::new();
    let refuse = |refused: &mut Vec<PlacementRefusal>, candidate: String, reason: String| {
        refused.push(PlacementRefusal { candidate, reason });
    };
    for gpu in &desired.gpu_types {
        let mut of_type: Vec<&ClusterOffer> =
            offers.iter().filter(|o| o.gpu_type_id == *gpu).collect();
        if of_type.is_empty() {
            refuse(
                &mut refused,
                gpu.clone(),
                "not a GPU type of the platform's catalog".into(),
            );
            continue;
        }
        let max = of_type[0].max_gpus_per_machine;
        if max > 0 && gpus > max {
            refuse(
                &mut refused,
                gpu.clone(),
                format!("gpuCountPerPod {gpus} is above its {max} GPUs per machine"),
            );
            continue;
        }
        if !desired.data_center_ids.is_empty() {
            of_type.retain(|o| desired.data_center_ids.contains(&o.data_center_id));
            of_type.sort_by_key(|o| {
                desired
                    .data_center_ids
                    .iter()
                    .position(|d| *d == o.data_center_id)
            });
            if of_type.is_empty() {
                refuse(
                    &mut refused,
                    gpu.clone(),
                    format!("not offered in {}", desired.data_center_ids.join(", ")),
                );
                continue;
            }
        }
        for offer in of_type {
            let at = format!("{gpu} in {}", offer.data_center_id);
            let Some(price) = offer.price_per_hour else {
                refuse(&mut refused, at, "not offered for clusters".into());
                continue;
            };
            if let Some(cap) = desired.max_price_per_hour
                && price > cap + 1e-9
            {
                refuse(
                    &mut refused,
                    at,
                    format!("{price:.4}/h for the whole cluster is above maxPricePerHour {cap:.4}"),
                );
                continue;
            }
            if !offer.in_stock {
                refuse(
                    &mut refused,
                    at,
                    format!("no stock for nodes of {gpus} GPUs"),
                );
                continue;
            }
            chosen.push(Candidate {
                gpu_type_id: gpu.clone(),
                data_center_id: offer.data_center_id.clone(),
                price_per_hour: price,
            });
        }
    }
    (chosen, refused)
}

/// Pure: the failure of a create with no candidate left: `PriceAboveCap` when the price
/// left out a placement and none was left out for stock, else `NoCapacity`. Both are
/// Stalled (a whole cluster's worth of machines, or a lower price, comes from outside)
/// and retried with backoff.
pub fn nothing_fits(refused: &[PlacementRefusal]) -> Failure {
    if refused.is_empty() {
        return Failure::stalled_retrying(
            "NoCapacity",
            "the catalog offers none of spec.compute.gpuTypes for clusters",
        );
    }
    let about = |word: &str| refused.iter().any(|r| r.reason.contains(word));
    let all_price = about("above maxPricePerHour") && !about("no stock") && !about("no room");
    let list = refused
        .iter()
        .map(|r| format!("{}: {}", r.candidate, r.reason))
        .collect::<Vec<_>>()
        .join("; ");
    if all_price {
        Failure::stalled_retrying(
            "PriceAboveCap",
            format!("every placement costs more than maxPricePerHour: {list}"),
        )
    } else {
        Failure::stalled_retrying(
            "NoCapacity",
            format!("no placement has room for the whole cluster: {list}"),
        )
    }
}

/// Pure: the fields of `desired` the live `remote` cluster cannot take, as spec paths.
pub fn immutable_changes(desired: &DesiredCluster, remote: &RemoteCluster) -> Vec<&'static str> {
    let r = &desired.request;
    let mut changed = Vec::new();
    if remote.cluster_type != r.cluster_type {
        changed.push("type");
    }
    if !desired.gpu_types.contains(&remote.gpu_type_id) {
        changed.push("compute.gpuTypes");
    }
    if remote.gpu_count_per_pod != r.gpu_count_per_pod {
        changed.push("compute.gpuCountPerPod");
    }
    if remote.pod_count != r.pod_count {
        changed.push("compute.podCount");
    }
    if let Some(dc) = &remote.data_center_id
        && !desired.data_center_ids.is_empty()
        && !desired.data_center_ids.contains(dc)
    {
        changed.push("dataCenterIds");
    }
    // The members carry the container settings; before any is listed there is nothing to
    // compare, and a fresh cluster is what the spec asked for.
    if let Some(have) = &remote.container {
        let want = &r.container;
        if have.image != want.image {
            changed.push("image");
        }
        if have.args != want.args {
            changed.push("args");
        }
        if want.disk_gb.is_some() && have.disk_gb != want.disk_gb {
            changed.push("containerDiskGb");
        }
        if normalise_ports(&have.ports) != want.ports {
            changed.push("ports");
        }
        let user_env = |env: &[(String, String)]| -> Vec<(String, String)> {
            let mut v: Vec<_> = env
                .iter()
                .filter(|(k, _)| !is_mark_env(k))
                .cloned()
                .collect();
            v.sort();
            v
        };
        if user_env(&have.env) != user_env(&want.env) {
            changed.push("env");
        }
        if have.network_volume_id != want.network_volume_id {
            changed.push("networkVolumeRef");
        }
    }
    changed
}

/// The Event of a cluster deleted because it ran for `maxRuntime`.
pub const DELETED_BY_MAX_RUNTIME: &str = "DeletedByMaxRuntime";
/// The Event of a cluster a Budget's `StopNewest` deleted (`budgetStopPolicy: Delete`).
pub const DELETED_BY_BUDGET: &str = "DeletedByBudget";

/// Pure: what to do to `remote` to match `desired`; `hold` is the `maxRuntime` hold
/// decided for this pass.
pub fn plan_cluster(
    desired: &DesiredCluster,
    remote: &RemoteCluster,
    hold: Option<&GuardrailHold>,
) -> Plan<ClusterChange> {
    // Deleted for good: the create that follows is held (`maxRuntime`'s hold, the
    // Budget's) until the spec changes or there is room.
    if let Some(h) = hold {
        return Plan::Remove {
            reason: DELETED_BY_MAX_RUNTIME,
            message: h.message.clone(),
        };
    }
    if let Some(why) = &desired.budget_stop {
        return Plan::Remove {
            reason: DELETED_BY_BUDGET,
            message: why.clone(),
        };
    }
    let changed = immutable_changes(desired, remote);
    if !changed.is_empty() {
        let fields = changed
            .iter()
            .map(|f| format!("spec.{f}"))
            .collect::<Vec<_>>()
            .join(", ");
        return match desired.update_strategy {
            UpdateStrategy::Recreate => Plan::Replace {
                reason: format!(
                    "{fields} changed, which a live cluster cannot take: replacing it (updateStrategy Recreate)"
                ),
            },
            UpdateStrategy::Never => Plan::Blocked(Failure::permanent(
                "ImmutableFieldChanged",
                format!(
                    "{fields} changed, which a live cluster cannot take; updateStrategy is Never: set it to Recreate to replace the cluster, or revert the change"
                ),
            )),
        };
    }
    if remote.name != desired.request.name {
        return Plan::Update(vec![ClusterChange::Rename(desired.request.name.clone())]);
    }
    Plan::UpToDate
}

/// Pure: Ready once every node the shape asks for runs.
pub fn readiness_of(remote: &RemoteCluster) -> Readiness {
    let running = remote.running_nodes();
    let wanted = remote.pod_count as usize;
    if running >= wanted && wanted > 0 {
        Readiness::Ready {
            message: format!(
                "{running}/{wanted} nodes of cluster {} run in {}",
                remote.id,
                remote
                    .data_center_id
                    .as_deref()
                    .unwrap_or("its data center")
            ),
        }
    } else {
        Readiness::Progressing {
            reason: "Provisioning".into(),
            message: format!("{running}/{wanted} nodes of cluster {} run", remote.id),
        }
    }
}

/// When the cluster started billing: the platform's creation time, else what status
/// last said.
pub fn started_at(obj: &Cluster, remote: Option<&RemoteCluster>) -> Option<Timestamp> {
    remote
        .and_then(|r| r.created_at.parse::<Timestamp>().ok())
        .or_else(|| {
            let s = obj.status.as_ref()?;
            s.common.id.as_ref()?;
            s.started_at.as_ref().map(|t| t.0)
        })
}

/// The `maxRuntime` decision of one pass.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RuntimeDecision {
    /// The cluster is (to be) deleted, and stays so until the spec is edited.
    pub hold: Option<GuardrailHold>,
    /// When the limit is reached, if it is not yet.
    pub due_in: Option<Duration>,
}

/// Pure: the `maxRuntime` hold. A hold stands while the generation it was decided on
/// does (any spec edit drops it, as for a Pod's guardrail stop); otherwise a cluster that
/// has run `limit` since `started` is held from `now`.
pub fn runtime_decision(
    limit: Option<Duration>,
    previous: Option<&GuardrailStatus>,
    generation: Option<i64>,
    started: Option<Timestamp>,
    now: Timestamp,
) -> RuntimeDecision {
    if let Some(h) = previous.and_then(|p| p.hold.as_ref())
        && h.generation == generation
    {
        return RuntimeDecision {
            hold: Some(h.clone()),
            due_in: None,
        };
    }
    let (Some(limit), Some(started)) = (limit, started) else {
        return RuntimeDecision::default();
    };
    let uptime = now.duration_since(started).as_secs();
    match runtime::check(limit, uptime) {
        Budget::Spent => RuntimeDecision {
            hold: Some(GuardrailHold {
                guardrail: Guardrail::MaxRuntime,
                since: Time(now),
                generation,
                message: format!(
                    "ran {uptime}s, reaching maxRuntime {}s: the cluster is deleted and stays so until the spec is edited",
                    limit.as_secs()
                ),
            }),
            due_in: None,
        },
        Budget::Left(left) => RuntimeDecision {
            hold: None,
            due_in: Some(left),
        },
    }
}

/// The role status reports for a node.
fn role_of(rank: Option<u32>, platform_role: Option<&str>) -> String {
    match (platform_role, rank) {
        (Some(role), _) => role.to_string(),
        (None, Some(0)) => "primary".into(),
        (None, _) => "worker".into(),
    }
}

/// Pure: the status from the remote cluster (the engine fills the common part).
/// `hold`: the `maxRuntime` hold of this pass; `refused`: the placements the create that
/// made `remote` refused, when it was made in this pass (else status keeps the last).
pub fn status_of(
    obj: &Cluster,
    remote: Option<&RemoteCluster>,
    refused: &[PlacementRefusal],
    seen: Seen,
    hold: Option<&GuardrailHold>,
) -> ClusterStatus {
    let current = obj.status.clone().unwrap_or_default();
    let guardrails = obj.spec.max_runtime.as_ref().map(|_| GuardrailStatus {
        hold: hold.cloned(),
        ..GuardrailStatus::default()
    });
    let Some(r) = remote else {
        if current.common.id.is_some() && !seen.creating && hold.is_none() {
            // Known cluster, not seen this pass (a listing failed): keep what was reported.
            return current;
        }
        let phase = match (hold, seen.creating) {
            (Some(_), _) => ClusterPhase::Held,
            (None, true) => ClusterPhase::Creating,
            (None, false) => ClusterPhase::Pending,
        };
        return ClusterStatus {
            common: current.common,
            phase: Some(phase),
            refusals: if refused.is_empty() {
                current.refusals
            } else {
                refused.to_vec()
            },
            guardrails,
            ..ClusterStatus::default()
        };
    };
    let running = r.running_nodes();
    let phase = if seen.blocked {
        ClusterPhase::Failed
    } else if running >= r.pod_count as usize {
        ClusterPhase::Running
    } else {
        ClusterPhase::Provisioning
    };
    let members = r
        .members
        .iter()
        .map(|m| ClusterMemberStatus {
            id: m.id.clone(),
            rank: m.rank.and_then(|x| i32::try_from(x).ok()),
            role: role_of(m.rank, m.role.as_deref()),
            address: m.address.clone(),
            status: m.status.clone(),
        })
        .collect();
    let primary = r
        .members
        .iter()
        .find(|m| Some(&m.id) == r.primary_pod_id.as_ref() || m.rank == Some(0));
    let pod_count = i32::try_from(r.pod_count).unwrap_or(i32::MAX);
    let ready = i32::try_from(running).unwrap_or(i32::MAX);
    ClusterStatus {
        common: current.common.clone(),
        phase: Some(phase),
        remote_name: Some(r.name.clone()),
        data_center_id: r.data_center_id.clone(),
        gpu_type_id: Some(r.gpu_type_id.clone()),
        nodes: Some(format!("{ready}/{pod_count}")),
        ready_nodes: Some(ready),
        pod_count: Some(pod_count),
        members,
        cidr: r.cidr.clone(),
        primary_address: primary.and_then(|p| p.address.clone()),
        ssh_endpoint: r.ssh_endpoint.clone(),
        cost_per_hour: Some((r.cost_per_hour() * 1e6).round() / 1e6),
        config_map: (phase == ClusterPhase::Running)
            .then(|| super::config_map::name_of(obj))
            .or(current.config_map.clone()),
        // The placements refused for this cluster's create stay until another create.
        refusals: if refused.is_empty() {
            current.refusals
        } else {
            refused.to_vec()
        },
        started_at: r
            .created_at
            .parse::<Timestamp>()
            .ok()
            .map(Time)
            .or(current.started_at),
        guardrails,
    }
}
