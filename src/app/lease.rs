//! The Lease a `run` process holds before it acts: the leader-election Lease of an install
//! with replicas, or, without leader election, the install's own Lease (named by its install
//! name), so that a second process started with the same install name (two `run` processes
//! with default flags) says so at start-up and waits rather than fighting the first over
//! every object. The same Lease tells other installs whether a claim's holder still runs
//! (`gpucloud_engine::ownership`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::PostParams;
use kube_lease_manager::LeaseManagerBuilder;
use tokio::sync::watch;
use tracing::{error, info, warn};

use gpucloud_engine::context::Shared;
use gpucloud_engine::marker::InstallTag;
use gpucloud_engine::ownership::{Holder, holder_from_lease};

/// How long a holder's Lease lasts without renewal, in seconds.
const DURATION_S: u64 = 15;
/// How long before expiry the holder renews it, in seconds.
const GRACE_S: u64 = 5;

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

/// How often a follower reads the Lease to see whether its holder released it. The Lease
/// manager itself looks again only when the holder's term would expire (up to
/// [`DURATION_S`] later); a holder that stops releases the Lease at once, and the follower
/// should lead within a second of that, not at the end of a term nobody renews.
const FOLLOWER_POLL: Duration = Duration::from_secs(1);

/// Holds `lease` as `identity`, waiting while another live process holds it. Returns the
/// hold, or says it was stopped while waiting, or, without leader election, that the Lease
/// may not be held (said, and the process acts anyway as before, since it cannot tell).
pub async fn hold(
    shared: &Arc<Shared>,
    install: &str,
    lease: &LeaseRef,
    identity: &str,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<Hold> {
    // A Lease that may be made but not renewed would keep the holder waiting for good: ask
    // first. (Leader election without that right is a broken install, and says so below.)
    if !lease.electing && !may_renew(shared, lease).await {
        warn!(install, lease = %format!("{}/{}", lease.namespace, lease.name),
            "may not renew the install's Lease (RBAC): this process cannot tell whether another process uses the same install name");
        return Ok(Hold::Unchecked);
    }
    let (mut leading, mut task) = match manage(shared, lease, identity).await {
        Ok(managed) => managed,
        Err(e) if !lease.electing => {
            warn!(install, lease = %format!("{}/{}", lease.namespace, lease.name), error = %e,
                "could not hold the install's Lease: this process cannot tell whether another process uses the same install name");
            return Ok(Hold::Unchecked);
        }
        Err(e) => return Err(e).context("could not set up leader election"),
    };
    if !lease.electing {
        say_if_in_use(shared, install, lease, identity).await;
    }
    info!(identity, lease = %lease.name, "waiting for the Lease");
    let leases: Api<Lease> = Api::namespaced(shared.kube.clone(), &lease.namespace);
    let mut poll = tokio::time::interval(FOLLOWER_POLL);
    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !*leading.borrow_and_update() {
        tokio::select! {
            changed = leading.changed() => changed.context("the Lease's holder task stopped")?,
            _ = stop.changed() => {
                drop(leading);
                let _ = task.await;
                return Ok(Hold::Stopped);
            }
            _ = poll.tick() => {
                if !is_released(&leases, &lease.name).await {
                    continue;
                }
                // A new manager reads the Lease at once and takes it; the old one would
                // sleep until the released term's end. Dropping its receiver ends it (its
                // release of a Lease it does not hold changes nothing).
                drop(leading);
                let _ = task.await;
                (leading, task) = manage(shared, lease, identity)
                    .await
                    .context("could not set up leader election")?;
            }
        }
    }
    info!(identity, lease = %lease.name, "leading: this process holds the Lease");
    Ok(Hold::Held(Holding { leading, task }))
}

/// A Lease manager for `lease` under `identity`, started: its receiver says whether this
/// process holds the Lease.
async fn manage(
    shared: &Shared,
    lease: &LeaseRef,
    identity: &str,
) -> Result<(watch::Receiver<bool>, HolderTask), kube_lease_manager::LeaseManagerError> {
    let manager = LeaseManagerBuilder::new(shared.kube.clone(), &lease.name)
        .with_namespace(&lease.namespace)
        .with_identity(identity)
        .with_duration(DURATION_S)
        .with_grace(GRACE_S)
        .build()
        .await?;
    Ok(manager.watch().await)
}

/// Whether Lease `name` exists and nobody holds it (its holder released it). A read that
/// fails counts as no: the Lease manager's own schedule still applies.
async fn is_released(leases: &Api<Lease>, name: &str) -> bool {
    match leases.get_opt(name).await {
        Ok(Some(current)) => lease_is_free(current.spec.as_ref()),
        _ => false,
    }
}

/// Pure: whether a Lease's spec names no holder.
fn lease_is_free(spec: Option<&k8s_openapi::api::coordination::v1::LeaseSpec>) -> bool {
    spec.and_then(|s| s.holder_identity.as_deref())
        .is_none_or(str::is_empty)
}

/// A Lease this process holds.
pub struct Holding {
    /// Turns false when the hold is lost.
    leading: watch::Receiver<bool>,
    /// Renews the Lease; releases it once every receiver is dropped.
    task: HolderTask,
}

impl Holding {
    /// Resolves when the hold is lost (another process took the Lease, or it could not be
    /// renewed in time), or never.
    pub fn lost(&self) -> impl std::future::Future<Output = ()> + use<> {
        let mut leading = self.leading.clone();
        async move {
            if leading.wait_for(|held| !*held).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Lets go of the Lease and waits, at most `within`, until it is released, so that the
    /// next process leads at once rather than when the term would have expired. Every
    /// future of [`Self::lost`] must be gone first: each holds a receiver.
    pub async fn release(self, within: Duration) {
        drop(self.leading);
        match tokio::time::timeout(within, self.task).await {
            Ok(_) => info!("released the Lease"),
            Err(_) => warn!(
                within_s = within.as_secs(),
                "could not release the Lease in time: the next process leads when it expires"
            ),
        }
    }
}

/// The task that keeps a Lease renewed; it releases the Lease once its receiver is dropped.
pub type HolderTask = tokio::task::JoinHandle<
    Result<kube_lease_manager::LeaseManager, kube_lease_manager::LeaseManagerError>,
>;

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
            warn!(lease = %lease.name, error = %e, "could not read the install's Lease: the remote objects made now carry no install tag");
            None
        })
}

/// Whether this process may read and renew `lease` (a SelfSubjectAccessReview, which every
/// authenticated user may ask). An answer that cannot be had counts as yes: the Lease
/// manager then says what fails.
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

/// What [`hold`] got.
pub enum Hold {
    /// The Lease is held.
    Held(Holding),
    /// Stopped while waiting.
    Stopped,
    /// Not held, and not checked (no permission).
    Unchecked,
}

/// When another live process holds the install's Lease: an error line and a Warning Event
/// on the Lease, both naming the conflict.
async fn say_if_in_use(shared: &Arc<Shared>, install: &str, lease: &LeaseRef, identity: &str) {
    let leases: Api<Lease> = Api::namespaced(shared.kube.clone(), &lease.namespace);
    let Ok(Some(current)) = leases.get_opt(&lease.name).await else {
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
    fn a_lease_is_free_once_its_holder_is_cleared() {
        use k8s_openapi::api::coordination::v1::LeaseSpec;
        let held = LeaseSpec {
            holder_identity: Some("replica-a".into()),
            ..LeaseSpec::default()
        };
        assert!(!lease_is_free(Some(&held)));
        // What a holder's release leaves: no holder (an empty one counts as none).
        assert!(lease_is_free(Some(&LeaseSpec::default())));
        let empty = LeaseSpec {
            holder_identity: Some(String::new()),
            ..LeaseSpec::default()
        };
        assert!(lease_is_free(Some(&empty)));
        assert!(lease_is_free(None));
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
