//! One owner per object: when two installs of the operator watch the same namespace
//! (two Helm releases, a cluster-wide and a single-namespace overlay, a staging and a
//! production key), only one acts on each object.
//!
//! An install claims an object with the `gpucloud.io/owner` annotation, naming itself,
//! in the first conflict-checked write it makes to the object (the create marker, or the
//! finalizer of an adoption), so two installs racing for a new object cannot both win. An
//! install that finds another's claim leaves the object alone: no platform call, no write,
//! one Event. It takes over only when the claim is removed (`kubectl annotate ...
//! gpucloud.io/owner-`) or when the holder's Lease (the install names its leader-election
//! Lease, `namespace/name`) has not been renewed for the takeover time. A Lease that cannot
//! be read or does not exist proves nothing, and the claim stands.
//!
//! The claim also names the platform account the object's remote object lives in
//! (`namespace/name@<account fingerprint>`, see [`AccountId`]): two installs that share a
//! name (two `run` processes with default flags, each with its own key) are told apart by
//! it, and the second leaves the object alone instead of creating it again in its account.
//! A claim without an account (written by an earlier version, or by hand) names the
//! install only.

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use tokio::time::Instant;
use tracing::debug;

use crate::credentials::AccountId;

/// The claim annotation: the name of the install that manages the object, and the account.
pub const OWNER: &str = "gpucloud.io/owner";

/// A claim as the annotation carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClaimValue<'a> {
    /// The install's name (`namespace/name` of its Lease).
    pub install: &'a str,
    /// The fingerprint of the account the object is managed with; `None` in a claim
    /// written before claims carried it, or by hand.
    pub account: Option<&'a str>,
}

/// Pure: reads a claim (`install` or `install@account`); `None` when there is none.
pub fn parse_claim(value: Option<&str>) -> Option<ClaimValue<'_>> {
    let value = value.map(str::trim).filter(|c| !c.is_empty())?;
    Some(match value.rsplit_once('@') {
        Some((install, account)) if !account.is_empty() => ClaimValue {
            install: install.trim(),
            account: Some(account.trim()),
        },
        _ => ClaimValue {
            install: value.trim_end_matches('@'),
            account: None,
        },
    })
}

/// Pure: the claim `install` writes on an object it manages with `account`'s key.
pub fn claim_value(install: &str, account: AccountId) -> String {
    format!("{install}@{account}")
}

/// What an install may do with an object, given its claim.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Claimed by this install.
    Mine,
    /// Claimed by nobody: this install claims it with its first write.
    Unclaimed,
    /// Claimed by the install named, which may still be alive: hands off.
    Theirs(String),
    /// Claimed by the install named, whose Lease expired long ago: claim it.
    TakeOver(String),
}

/// What is known of whether the install holding a claim still runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// Its Lease was renewed within its duration.
    Alive,
    /// Its Lease ran out this long ago.
    ExpiredFor(Duration),
    /// No Lease could be read (none, or no permission): nothing is proven.
    Unknown,
}

/// Pure: what this install (`me`) may do with an object whose claim is `claim`.
pub fn claim_of(claim: Option<&str>, me: &str, holder: Holder, takeover_after: Duration) -> Claim {
    match claim.map(str::trim).filter(|c| !c.is_empty()) {
        None => Claim::Unclaimed,
        Some(c) if c == me => Claim::Mine,
        Some(c) => match holder {
            Holder::ExpiredFor(d) if d >= takeover_after => Claim::TakeOver(c.to_string()),
            _ => Claim::Theirs(c.to_string()),
        },
    }
}

/// Pure: the state of a holder from its Lease's last renewal and duration, at `now`.
pub fn holder_from_lease(
    renewed: Option<Timestamp>,
    duration_s: Option<i32>,
    now: Timestamp,
) -> Holder {
    let Some(renewed) = renewed else {
        return Holder::Unknown;
    };
    let lasts = Duration::from_secs(u64::try_from(duration_s.unwrap_or(15)).unwrap_or(15));
    let since = Duration::try_from(now.duration_since(renewed)).unwrap_or(Duration::ZERO);
    match since.checked_sub(lasts) {
        Some(expired) if !expired.is_zero() => Holder::ExpiredFor(expired),
        _ => Holder::Alive,
    }
}

/// How long what is learnt of a holder is reused: a thousand objects of one other install
/// cost one Lease read per interval, not a thousand.
const HOLDER_CACHE: Duration = Duration::from_secs(10);

/// This install's identity and what it has learnt of the others.
pub struct Ownership {
    /// `namespace/name` of this install's Lease.
    pub me: String,
    pub takeover_after: Duration,
    kube: kube::Client,
    holders: parking_lot::Mutex<HashMap<String, (Instant, Holder)>>,
}

impl Ownership {
    pub fn new(kube: kube::Client, me: String, takeover_after: Duration) -> Self {
        Self {
            me,
            takeover_after,
            kube,
            holders: parking_lot::Mutex::new(HashMap::new()),
        }
    }

    /// What this install may do with an object claimed by install `claim` (the install's
    /// part of the claim: see [`parse_claim`]).
    pub async fn claim(&self, claim: Option<&str>) -> Claim {
        let holder = match claim {
            Some(c) if !c.trim().is_empty() && c.trim() != self.me => self.holder(c.trim()).await,
            _ => Holder::Unknown,
        };
        claim_of(claim, &self.me, holder, self.takeover_after)
    }

    async fn holder(&self, name: &str) -> Holder {
        if let Some((at, known)) = self.holders.lock().get(name).copied()
            && at.elapsed() < HOLDER_CACHE
        {
            return known;
        }
        let holder = match name.split_once('/') {
            Some((namespace, lease)) => {
                let leases: Api<Lease> = Api::namespaced(self.kube.clone(), namespace);
                match leases.get_opt(lease).await {
                    Ok(Some(l)) => {
                        let spec = l.spec.unwrap_or_default();
                        holder_from_lease(
                            spec.renew_time.map(|t| t.0),
                            spec.lease_duration_seconds,
                            Timestamp::now(),
                        )
                    }
                    Ok(None) => Holder::Unknown,
                    Err(e) => {
                        debug!(holder = name, error = %e, "could not read the holder's Lease");
                        Holder::Unknown
                    }
                }
            }
            None => Holder::Unknown,
        };
        self.holders
            .lock()
            .insert(name.to_string(), (Instant::now(), holder));
        holder
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "gpucloud-system/gpucloud-operator";
    const OTHER: &str = "team-a/gpucloud-operator";
    const TAKEOVER: Duration = Duration::from_secs(600);

    #[test]
    fn a_claim_names_the_install_and_the_account() {
        let with = parse_claim(Some("ops/gpucloud-operator@0a1b2c3d4e5f")).unwrap();
        assert_eq!(with.install, "ops/gpucloud-operator");
        assert_eq!(with.account, Some("0a1b2c3d4e5f"));
        // Written before claims carried the account, or by hand.
        let without = parse_claim(Some(" ops/gpucloud-operator ")).unwrap();
        assert_eq!(without.install, "ops/gpucloud-operator");
        assert_eq!(without.account, None);
        assert_eq!(parse_claim(Some("ops/x@")).unwrap().install, "ops/x");
        assert_eq!(parse_claim(Some("  ")), None);
        assert_eq!(parse_claim(None), None);
        let written = claim_value("ops/gpucloud-operator", AccountId::any());
        assert_eq!(written, "ops/gpucloud-operator@000000000000");
        let read = parse_claim(Some(&written)).unwrap();
        assert_eq!(read.account, Some(AccountId::any().to_string().as_str()));
    }

    #[test]
    fn an_unclaimed_object_is_claimed_by_whoever_writes_first() {
        assert_eq!(
            claim_of(None, ME, Holder::Unknown, TAKEOVER),
            Claim::Unclaimed
        );
        assert_eq!(
            claim_of(Some(" "), ME, Holder::Unknown, TAKEOVER),
            Claim::Unclaimed
        );
    }

    #[test]
    fn an_object_this_install_claimed_is_its_own() {
        assert_eq!(
            claim_of(Some(ME), ME, Holder::Unknown, TAKEOVER),
            Claim::Mine
        );
    }

    #[test]
    fn another_installs_claim_stands_while_it_may_be_alive() {
        for holder in [
            Holder::Alive,
            Holder::Unknown,
            Holder::ExpiredFor(Duration::from_secs(599)),
        ] {
            assert_eq!(
                claim_of(Some(OTHER), ME, holder, TAKEOVER),
                Claim::Theirs(OTHER.into()),
                "{holder:?}"
            );
        }
    }

    #[test]
    fn a_claim_whose_holders_lease_expired_long_ago_is_taken_over() {
        assert_eq!(
            claim_of(Some(OTHER), ME, Holder::ExpiredFor(TAKEOVER), TAKEOVER),
            Claim::TakeOver(OTHER.into())
        );
    }

    #[test]
    fn a_lease_is_alive_for_its_duration_after_renewal() {
        let now: Timestamp = "2026-11-23T12:00:00Z".parse().unwrap();
        let ago = |s: i64| Some(now - k8s_openapi::jiff::SignedDuration::from_secs(s));
        assert_eq!(holder_from_lease(ago(10), Some(15), now), Holder::Alive);
        assert_eq!(holder_from_lease(ago(15), Some(15), now), Holder::Alive);
        assert_eq!(
            holder_from_lease(ago(75), Some(15), now),
            Holder::ExpiredFor(Duration::from_secs(60))
        );
        assert_eq!(holder_from_lease(None, Some(15), now), Holder::Unknown);
    }
}
