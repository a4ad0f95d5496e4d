//! The Lease a `run` process holds before it acts: the leader-election Lease of an install
//! with replicas, or, without leader election, the install's own Lease (named by its install
//! name), so that a second process started with the same install name (two `run` processes
//! with default flags) says so at start-up and waits rather than fighting the first over
//! every object. The same Lease tells other installs whether a claim's holder still runs
//! (`gpucloud_engine::ownership`).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::PostParams;
use tokio::sync::watch;
use tracing::{error, info, warn};

use super::election::calls::{ElectionError, LeaseCalls};
use super::election::{Elector, Reachable, Running, TIMING};

use gpucloud_engine::context::Shared;
use gpucloud_engine::marker::InstallTag;
use gpucloud_engine::ownership::{Holder, holder_from_lease};

/// Which Lease, and why it is held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaseRef {
    pub namespace: String,
    pub name: String,
    /// Leader election among replicas (a follower waiting is normal), rather than one
    /// process's hold on its install name (another holder is a misconfiguration).
    pub electing: bool,
}

/// Pure: the Lease a process holds. With leader election, the election's. Without it, the
/// one its install name names (`namespace/name`), or the default Lease when the name is not
/// of that form.
pub fn lease_for(
    install: &str,
    electing: bool,
    default_namespace: &str,
    default_name: &str,
) -> LeaseRef {
    let named = (!electing)
        .then(|| install.split_once('/'))
        .flatten()
        .filter(|(ns, name)| is_dns_label(ns) && is_dns_subdomain(name));
    let (namespace, name) = match named {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (default_namespace.to_string(), default_name.to_string()),
    };
    LeaseRef {
        namespace,
        name,
        electing,
    }
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// Pure: the line that says the install name is in use, and what to do about it.
pub fn in_use_message(install: &str, lease: &LeaseRef, holder: &str) -> String {
    format!(
        "install name {install} is in use by another running process ({holder} holds Lease {}/{}); \
         this process does not act until that Lease is free. Give each install its own \
         --install (or --leader-election-lease), or run replicas with --leader-election",
        lease.namespace, lease.name
    )
}

/// Starts holding `lease` as `identity`: an elector (`super::election`) takes it when it is
/// free and keeps it while it can renew it, and says whether this process leads; told,
/// after each of its requests, whether the apiserver answered (`reachable`). Without
/// leader election, says at once when another live process holds the install's Lease,
/// and the Lease that may not be held (RBAC) is said and left unchecked: the process acts
/// anyway as before, since it cannot tell.
pub async fn hold(
    shared: &Arc<Shared>,
    install: &str,
    lease: &LeaseRef,
    identity: &str,
    reachable: Reachable,
) -> Result<Hold, ElectionError> {
    let named = format!("{}/{}", lease.namespace, lease.name);
    // A Lease that may be made but not renewed would keep the holder waiting for good: ask
    // first. (Leader election without that right is a broken install, and says so below.)
    if !lease.electing && !may_renew(shared, lease).await {
        warn!(install, lease = %named,
            "may not renew the install's Lease (RBAC): this process cannot tell whether another process uses the same install name");
        return Ok(Hold::Unchecked);
    }
    // A refusal (RBAC) is an install to mend; an apiserver that does not answer is waited
    // for by the elector, which tries again every second.
    let leases: Api<Lease> = Api::namespaced(shared.kube.clone(), &lease.namespace);
    let probe = LeaseCalls::new(leases, &lease.name, reachable.clone());
    match probe.read(TIMING.request_timeout).await {
        Err(e) if e.answered() && !lease.electing => {
            warn!(install, lease = %named, error = %e,
                "could not hold the install's Lease: this process cannot tell whether another process uses the same install name");
            return Ok(Hold::Unchecked);
        }
        Err(e) if e.answered() => return Err(e),
        Err(e) => warn!(lease = %named, error = %e, "could not read the Lease yet: trying again"),
        Ok(_) => {}
    }
    let elector = Elector::new(
        shared.kube.clone(),
        &lease.namespace,
        &lease.name,
        identity,
        reachable,
    );
    let running = elector.start();
    if !lease.electing {
        say_if_in_use(shared, install, lease, identity).await;
    }
    info!(identity, lease = %named, "waiting for the Lease");
    Ok(Hold::Electing(Holding { running }))
}

/// A Lease this process holds while it can, through its elector.
pub struct Holding {
    running: Running,
}

impl Holding {
    /// Whether this process leads, as it changes: true while it holds the Lease and renews
    /// it in time; false at once when it could not renew it within the renew deadline or
    /// another process took it.
    pub fn leading(&self) -> watch::Receiver<bool> {
        self.running.leading()
    }

    /// The UID of the Lease this process leads with, set before it leads (`None` until
    /// then): the install's tag, known without another request.
    pub fn lease_uid(&self) -> watch::Receiver<Option<String>> {
        self.running.lease_uid()
    }

    /// Lets go of the Lease and waits, at most `within`, until it is released, so that the
    /// next process leads at once rather than when the term would have expired.
    pub async fn release(self, within: Duration) {
        self.running.release(within).await;
    }
}

/// The tag (see `gpucloud_engine::marker::InstallTag`) of the install holding Lease
/// `namespace/name`, from the Lease's UID; `None` when there is no such Lease. The operator
/// reads its own at start-up, `orphans` the one of the install it judges for.
pub async fn read_install_tag(
    kube: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<Option<InstallTag>, kube::Error> {
    let leases: Api<Lease> = Api::namespaced(kube.clone(), namespace);
    let lease = leases.get_opt(name).await?;
    Ok(lease
        .and_then(|l| l.metadata.uid)
        .and_then(|uid| InstallTag::from_uid(&uid)))
}

/// This install's tag, from the Lease it holds; `None` (said) when that cannot be read.
pub async fn install_tag(shared: &Shared, lease: &LeaseRef) -> Option<InstallTag> {
    read_install_tag(&shared.kube, &lease.namespace, &lease.name)
        .await
        .unwrap_or_else(|e| {
            warn!(lease = %lease.name, error = %e, "could not read the install's Lease");
            None
        })
}

/// Whether this process may read and renew `lease` (a SelfSubjectAccessReview, which every
/// authenticated user may ask). An answer that cannot be had counts as yes: the elector
/// then says what fails.
async fn may_renew(shared: &Shared, lease: &LeaseRef) -> bool {
    let reviews: Api<SelfSubjectAccessReview> = Api::all(shared.kube.clone());
    for verb in ["get", "patch"] {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    group: Some("coordination.k8s.io".into()),
                    resource: Some("leases".into()),
                    namespace: Some(lease.namespace.clone()),
                    name: Some(lease.name.clone()),
                    verb: Some(verb.into()),
                    ..ResourceAttributes::default()
                }),
                ..SelfSubjectAccessReviewSpec::default()
            },
            ..SelfSubjectAccessReview::default()
        };
        match reviews.create(&PostParams::default(), &review).await {
            Ok(answer) if answer.status.as_ref().is_some_and(|s| !s.allowed) => return false,
            _ => {}
        }
    }
    true
}

/// What [`hold`] started.
pub enum Hold {
    /// The Lease is held whenever it can be (see [`Holding::leading`]).
    Electing(Holding),
    /// Not held, and not checked (no permission).
    Unchecked,
}

/// When another live process holds the install's Lease: an error line and a Warning Event
/// on the Lease, both naming the conflict.
async fn say_if_in_use(shared: &Arc<Shared>, install: &str, lease: &LeaseRef, identity: &str) {
    let leases: Api<Lease> = Api::namespaced(shared.kube.clone(), &lease.namespace);
    let read = tokio::time::timeout(TIMING.request_timeout, leases.get_opt(&lease.name));
    let Ok(Ok(Some(current))) = read.await else {
        return;
    };
    let spec = current.spec.clone().unwrap_or_default();
    let Some(holder) = spec.holder_identity.clone().filter(|h| h != identity) else {
        return;
    };
    let alive = holder_from_lease(
        spec.renew_time.map(|t| t.0),
        spec.lease_duration_seconds,
        Timestamp::now(),
    ) == Holder::Alive;
    if !alive {
        return;
    }
    let message = in_use_message(install, lease, &holder);
    error!(install, holder = %holder, identity, "{message}");
    shared
        .event(&current, true, "InstallNameInUse", "Start", message)
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_election_the_install_name_names_the_lease() {
        let lease = lease_for("team-a/ops", false, "default", "gpucloud-operator");
        assert_eq!(
            (lease.namespace.as_str(), lease.name.as_str()),
            ("team-a", "ops")
        );
        // Not a namespace/name: the default Lease.
        for install in ["staging", "a/b/c", "Team/x", "ns/"] {
            let lease = lease_for(install, false, "ops", "gpucloud-operator");
            assert_eq!(
                (lease.namespace.as_str(), lease.name.as_str()),
                ("ops", "gpucloud-operator"),
                "{install}"
            );
        }
    }

    #[test]
    fn with_election_the_replicas_share_the_election_lease() {
        let lease = lease_for("team-a/ops", true, "gpucloud-system", "gpucloud-operator");
        assert_eq!(
            (lease.namespace.as_str(), lease.name.as_str()),
            ("gpucloud-system", "gpucloud-operator")
        );
        assert!(lease.electing);
    }

    #[test]
    fn the_conflict_names_the_install_the_holder_and_the_fix() {
        let lease = lease_for("default/gpucloud-operator", false, "default", "x");
        let text = in_use_message("default/gpucloud-operator", &lease, "host-1a2b");
        assert!(text.contains("install name default/gpucloud-operator"));
        assert!(text.contains("host-1a2b holds Lease default/gpucloud-operator"));
        assert!(text.contains("--install"));
    }
}
