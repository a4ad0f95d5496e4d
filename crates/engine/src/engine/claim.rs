//! Ownership, the gate before a pass: an object is acted on by one install only. The first
//! write of a pass carries this install's claim; an object another live install claims is
//! left alone (said once), and one whose holder's Lease expired long ago is taken over.
//!
//! The claim names the account too. An object claimed under this install's name but with
//! another account is either another install's of the same name (two `run` processes with
//! default flags and their own keys), which is left alone and said so, or this install's
//! after its key was rotated, which the new key proves by seeing the object's remote
//! object; then the claim is rewritten.
//!
//! Which annotation and finalizer a write must add is decided by pure functions, tested
//! below; [`crate::ownership`] tells whether a holder still runs.

use gpucloud_platform::domain::Identified;
use std::sync::Arc;
use std::time::Duration;

use crate::action::Action;
use kube::{Api, ResourceExt};
use tracing::{info, warn};

use gpucloud_crd::ManagedKind;

use super::observe::annotations_and_id;
use super::writes::AnnotationChange;
use super::{Engine, EngineError};
use crate::adapter::Adapter;
use crate::backoff::jitter;
use crate::context::FINALIZER;
use crate::credentials::{AccountId, Credentials};
use crate::ownership::{self, Claim, claim_value};
use crate::snapshot::Freshness;

/// Pure: the claim annotation to write with the next write, unless the object (claimed
/// by `current`) is this install's (`me`) with `account` already.
fn claim_change(
    current: Option<&String>,
    me: &str,
    account: AccountId,
) -> Option<AnnotationChange> {
    let want = claim_value(me, account);
    (current.map(String::as_str) != Some(want.as_str())).then_some((ownership::OWNER, Some(want)))
}

/// What an object claimed under this install's name with another account turned out to be.
#[derive(Debug, PartialEq, Eq)]
enum OtherAccount {
    /// This install's own, under a rotated key: the new key sees its remote object, or it
    /// has none that a create may still be making.
    Rotated,
    /// Another install of the same name, with another account.
    Foreign,
}

/// Pure: whose an object claimed with another account is, from its known id (and whether
/// the listing of this install's account shows it) and its create marker.
fn other_account(known_visible: Option<bool>, create_pending: bool) -> OtherAccount {
    match known_visible {
        Some(true) => OtherAccount::Rotated,
        Some(false) => OtherAccount::Foreign,
        // No remote object known: nothing can be made twice unless a create is in flight.
        None if create_pending => OtherAccount::Foreign,
        None => OtherAccount::Rotated,
    }
}

/// Pure: when to look again at an object another install holds, before jitter: in case
/// its Lease expires.
fn recheck_after(takeover_after: Duration) -> Duration {
    takeover_after.clamp(Duration::from_secs(10), Duration::from_secs(300))
}

impl<A: Adapter> Engine<A> {
    /// The object, if this install may act on it: claimed by it, by nobody yet (it claims
    /// it with its first write), or by an install whose Lease expired long ago (claimed
    /// here). `None`: another install holds it, and it is left alone.
    pub(super) async fn claim(
        &self,
        api: &Api<A::Kind>,
        obj: Arc<A::Kind>,
    ) -> Result<Option<Arc<A::Kind>>, EngineError> {
        let claim = obj.annotations().get(ownership::OWNER).cloned();
        let value = ownership::parse_claim(claim.as_deref());
        match self.ownership.claim(value.map(|v| v.install)).await {
            Claim::Unclaimed => Ok(Some(obj)),
            Claim::Mine => match value.and_then(|v| v.account) {
                Some(theirs) => self.check_account(api, obj, theirs).await,
                None => Ok(Some(obj)),
            },
            Claim::Theirs(holder) => {
                self.leave_alone(&obj, &holder).await;
                Ok(None)
            }
            Claim::TakeOver(holder) => self.take_over(api, &obj, &holder).await,
        }
    }

    /// An object claimed under this install's name: acted on when its account is the one
    /// this install manages it with (or when that cannot be told yet: a key that cannot be
    /// read fails the pass before any platform call); rewritten after a key rotation;
    /// otherwise left alone as another install's.
    async fn check_account(
        &self,
        api: &Api<A::Kind>,
        obj: Arc<A::Kind>,
        theirs: &str,
    ) -> Result<Option<Arc<A::Kind>>, EngineError> {
        let Ok(creds) = self.resolve_credentials(&obj).await else {
            return Ok(Some(obj));
        };
        if creds.account.to_string() == theirs {
            return Ok(Some(obj));
        }
        let (annotations, known) = annotations_and_id(obj.as_ref());
        let visible = match known.map(|(id, _)| id) {
            Some(id) => match self.sees(&creds, &id).await {
                Some(seen) => Some(seen),
                // The listing failed: decide on a later pass.
                None => return Ok(None),
            },
            None => None,
        };
        match other_account(visible, annotations.create_pending.is_some()) {
            OtherAccount::Rotated => self.reclaim(api, &obj, theirs, &creds).await,
            OtherAccount::Foreign => {
                self.same_name_other_account(&obj, theirs, creds.account)
                    .await;
                Ok(None)
            }
        }
    }

    /// Whether the listing of `creds`' account shows remote object `id`; `None` when it
    /// cannot be read.
    async fn sees(&self, creds: &Credentials, id: &str) -> Option<bool> {
        let client = self.client_for(creds);
        let fresh = Freshness::MaxAge(self.shared.config.poll_interval);
        let listing = self.listing(&client, creds, fresh).await.ok()?;
        Some(super::observe::by_id(&listing.items, id, Identified::id).is_some())
    }

    /// Rewrites the claim with the account of this install's (rotated) key.
    async fn reclaim(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        old: &str,
        creds: &Credentials,
    ) -> Result<Option<Arc<A::Kind>>, EngineError> {
        let claim = Some(claim_value(&self.ownership.me, creds.account));
        match self
            .patch_metadata(api, obj, &[(ownership::OWNER, claim)], None, true)
            .await
        {
            Ok(updated) => {
                info!(kind = A::KIND, object = %obj.key(), old_account = %old, account = %creds.account, "claim moved to the account of the current key");
                self.shared
                    .event(
                        &updated,
                        false,
                        "ClaimAccountUpdated",
                        "Claim",
                        format!(
                            "claimed with account {old}; the key from {} (account {}) sees the object's remote object, so it is the same account under a new key",
                            creds.source, creds.account
                        ),
                    )
                    .await;
                Ok(Some(Arc::new(updated)))
            }
            // Someone moved first: the watch brings the object back.
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether this process has yet to say that another install holds the object `key`;
    /// from now on it has.
    fn tell_claimed_once(&self, key: &str) -> bool {
        self.records
            .update(key, |r| !std::mem::replace(&mut r.told_claimed, true))
    }

    /// Says once that an install of this install's name, with another account, holds the
    /// object.
    async fn same_name_other_account(&self, obj: &A::Kind, theirs: &str, mine: AccountId) {
        let key = obj.key();
        if !self.tell_claimed_once(&key) {
            return;
        }
        let me = &self.ownership.me;
        warn!(kind = A::KIND, object = %key, install = %me, claimed_account = %theirs, account = %mine, "install name conflict: claimed under this install's name with another platform account; leaving it alone");
        self.shared.metrics.claimed_elsewhere(A::KIND);
        self.shared
            .event(
                obj,
                true,
                "InstallNameConflict",
                "Claim",
                format!(
                    "claimed by install {me} with platform account {theirs}, but this install of the same name manages it with account {mine}, which does not see its remote object: two installs share the name {me}. Give each its own --install (or --leader-election-lease), or enable --leader-election; remove the {} annotation only if this install should manage it",
                    ownership::OWNER
                ),
            )
            .await;
    }

    /// Says once that another install holds the object.
    async fn leave_alone(&self, obj: &A::Kind, holder: &str) {
        let key = obj.key();
        if !self.tell_claimed_once(&key) {
            return;
        }
        info!(kind = A::KIND, object = %key, holder = %holder, "claimed by another install; leaving it alone");
        self.shared.metrics.claimed_elsewhere(A::KIND);
        self.shared
            .event(
                obj,
                false,
                "ClaimedByAnotherInstall",
                "Claim",
                format!(
                    "managed by install {holder} ({}); install {} leaves it alone",
                    ownership::OWNER,
                    self.ownership.me
                ),
            )
            .await;
    }

    /// Claims the object of an install whose Lease expired long ago.
    async fn take_over(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        holder: &str,
    ) -> Result<Option<Arc<A::Kind>>, EngineError> {
        // The taker's account is written with its first write of the pass.
        let me = Some(self.ownership.me.clone());
        match self
            .patch_metadata(api, obj, &[(ownership::OWNER, me)], None, true)
            .await
        {
            Ok(updated) => {
                self.records.update(&obj.key(), |r| r.told_claimed = false);
                warn!(kind = A::KIND, object = %obj.key(), holder = %holder, "took over from an install whose Lease expired");
                self.shared
                    .event(
                        &updated,
                        true,
                        "TakenOver",
                        "Claim",
                        format!(
                            "install {holder} has not renewed its Lease for over {}s; install {} manages the object now",
                            self.ownership.takeover_after.as_secs(),
                            self.ownership.me
                        ),
                    )
                    .await;
                Ok(Some(Arc::new(updated)))
            }
            // Someone moved first: the watch brings the object back.
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// When to look again at an object another install holds: in case its Lease expires.
    pub(super) fn left_alone(&self) -> Action {
        Action::requeue(jitter(recheck_after(self.ownership.takeover_after), 0.1))
    }

    /// The claim annotation to write with the next write, unless the object is claimed
    /// by this install, with `account`, already.
    pub(super) fn claim_change(
        &self,
        obj: &A::Kind,
        account: AccountId,
    ) -> Option<AnnotationChange> {
        claim_change(
            obj.annotations().get(ownership::OWNER),
            &self.ownership.me,
            account,
        )
    }

    /// Claims the object and, with `finalizer`, puts the finalizer on it (an object whose
    /// remote object the operator may delete), if either is missing. A create's marker
    /// carries both; this is for adoptions and ObserveOnly.
    pub(super) async fn ensure_owned(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        account: AccountId,
        finalizer: bool,
    ) -> Result<(), EngineError> {
        let has_finalizer = obj.finalizers().iter().any(|f| f == FINALIZER);
        let claim: Vec<_> = self.claim_change(obj, account).into_iter().collect();
        let add_finalizer = (finalizer && !has_finalizer).then_some(FINALIZER);
        if claim.is_empty() && add_finalizer.is_none() {
            return Ok(());
        }
        match self
            .patch_metadata(api, obj, &claim, add_finalizer, true)
            .await
        {
            Ok(_) => Ok(()),
            // Changed meanwhile: the next pass (the watch brings it) tries again.
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "ops/gpucloud-operator";

    #[test]
    fn an_object_claimed_by_this_install_and_account_needs_no_claim() {
        let claimed = claim_value(ME, AccountId::any());
        assert_eq!(claim_change(Some(&claimed), ME, AccountId::any()), None);
    }

    #[test]
    fn an_unclaimed_taken_over_or_accountless_object_is_claimed_with_the_next_write() {
        let want = Some((ownership::OWNER, Some(claim_value(ME, AccountId::any()))));
        assert_eq!(claim_change(None, ME, AccountId::any()), want);
        assert_eq!(
            claim_change(Some(&"old/install".to_string()), ME, AccountId::any()),
            want
        );
        // A claim of this install written before claims named the account gets it.
        assert_eq!(
            claim_change(Some(&ME.to_string()), ME, AccountId::any()),
            want
        );
    }

    #[test]
    fn another_account_under_this_name_is_this_install_only_if_its_key_sees_the_object() {
        assert_eq!(other_account(Some(true), false), OtherAccount::Rotated);
        assert_eq!(other_account(Some(false), false), OtherAccount::Foreign);
        assert_eq!(other_account(Some(false), true), OtherAccount::Foreign);
        // Nothing on the platform yet, and no create in flight: nothing to make twice.
        assert_eq!(other_account(None, false), OtherAccount::Rotated);
        // A create in flight in the other account: its remote object may be landing.
        assert_eq!(other_account(None, true), OtherAccount::Foreign);
    }

    #[test]
    fn another_installs_object_is_looked_at_between_ten_seconds_and_five_minutes() {
        let secs = |s| Duration::from_secs(s);
        assert_eq!(recheck_after(secs(1)), secs(10));
        assert_eq!(recheck_after(secs(60)), secs(60));
        assert_eq!(recheck_after(secs(3600)), secs(300));
    }
}
