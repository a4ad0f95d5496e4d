//! Who holds a remote object (see [`crate::tenancy`], pure): the facts gathered here, from
//! the remote object's marker, this kind's watch cache, the released record and this
//! process's claims table, and the gate a pass goes through before it acts on a remote
//! object it did not make.
//!
//! The steady cost is nothing: a remote object with this object's marker, or whose id its
//! status records, is its own without a look elsewhere. Only an adoption, or an object
//! acting on a remote object marked by another, reads the cache (one pass over it) and,
//! for a marker not found there, the released record; an owner once proven gone is
//! remembered for good (a UID never comes back).

use gpucloud_platform::domain::Identified;
use std::collections::{HashMap, HashSet};

use kube::ResourceExt;
use tracing::{debug, warn};

use gpucloud_crd::ManagedKind;

use super::{Engine, Observed};
use crate::adapter::Adapter;
use crate::credentials::Credentials;
use crate::failure::Failure;
use crate::marker::Marker;
use crate::snapshot::Freshness;
use crate::tenancy::{self, Holder, HolderFacts, MarkedOwner, names_uid};

use super::outcome::Outcome;

/// What this process knows of remote objects' holders between passes.
#[derive(Default)]
pub(super) struct Holders {
    /// Remote ids claimed by a pass of this process, and the object that claimed each: the
    /// claim stands from the adoption's check until the object goes, so that of two
    /// objects adopting one id at once the first checked wins even before either status
    /// records the id. The index of the objects' records' `claimed_id`.
    claims: HashMap<Box<str>, String>,
    /// Markers (UIDs, UID prefixes) whose object is proven gone.
    gone: HashSet<String>,
}

impl Holders {
    /// Drops the claim of `id` by the object `key`: it is gone.
    pub(super) fn unclaim(&mut self, id: &str, key: &str) {
        if self.claims.get(id).is_some_and(|holder| holder == key) {
            self.claims.remove(id);
            crate::shrink_after_burst(&mut self.claims);
        }
    }
}

impl<A: Adapter> Engine<A> {
    /// The gate before a pass acts on `remote`: `None` when the object holds it or may take
    /// it (then it is claimed for the object), else the refusal to report.
    pub(super) async fn refusal(
        &self,
        seen: &Observed<A::Kind>,
        remote: &A::Remote,
    ) -> Option<Outcome<A::Remote>> {
        let id = Identified::id(remote);
        match self.holder(seen.obj.as_ref(), remote, true).await {
            Ok(holder) if holder.allows() => None,
            Ok(holder) => {
                warn!(kind = A::KIND, object = %seen.key, id = %id, holder = ?holder, "adoption refused: another object holds the remote object");
                let failure = tenancy::adoption_refused(A::NOUN, id, &holder);
                Some(Outcome::failed_forgetting_id(
                    failure,
                    seen.last_ready.clone(),
                ))
            }
            Err(failure) => Some(Outcome::failed(failure, None, seen.last_ready.clone())),
        }
    }

    /// Who holds `remote` for `obj`; with `claim`, a free remote object is claimed for
    /// `obj` in the same step as the check.
    pub(super) async fn holder(
        &self,
        obj: &A::Kind,
        remote: &A::Remote,
        claim: bool,
    ) -> Result<Holder, Failure> {
        let uid = obj.uid().unwrap_or_default();
        let id = Identified::id(remote);
        let marker = A::owner_marker(remote);
        let marked_owner = match &marker {
            Some(m) if !names_uid(m, &uid) => self.marked_owner(m, id).await?,
            // Unused: the marker is the object's own, or there is none.
            _ => MarkedOwner::Gone,
        };
        let recorded_id = obj
            .current_status()
            .and_then(|s| A::Kind::common(s).id.clone());
        let mut facts = HolderFacts {
            uid: &uid,
            marker: marker.as_ref(),
            marked_owner,
            recorded_id: recorded_id.as_deref(),
            id,
            claimed_by: None,
        };
        let decided = tenancy::holder(&facts);
        // Decided by the marker, or by the object's own record: nothing else to look up.
        if decided != Holder::Free {
            return Ok(decided);
        }
        let key = obj.key();
        let claimed_by = self.claim_of(id, &key, claim);
        facts.claimed_by = claimed_by.as_deref();
        Ok(tenancy::holder(&facts))
    }

    /// The object other than `key` that recorded `id` first: a claim of this process for a
    /// live object, else a status that names it. With `claim` and none, `key` claims it.
    fn claim_of(&self, id: &str, key: &str, claim: bool) -> Option<String> {
        // One lock around the look and the claim: two passes cannot both find it free.
        let mut holders = self.holders.lock();
        if let Some(holder) = holders.claims.get(id)
            && holder != key
            && self.cache().contains(holder)
        {
            return Some(holder.clone());
        }
        let recorded = self
            .cache()
            .objects(&|k| k != key)
            .find(|o| {
                o.current_status()
                    .and_then(|s| A::Kind::common(s).id.as_deref())
                    == Some(id)
            })
            .map(|o| o.key());
        match recorded {
            Some(other) => Some(other),
            None => {
                if claim {
                    // An object holds one remote object: a claim it took before (its
                    // annotation since pointed elsewhere) is let go of.
                    let before = self
                        .records
                        .update(key, |r| r.claimed_id.replace(id.into()));
                    if let Some(before) = before {
                        holders.unclaim(&before, key);
                    }
                    holders.claims.insert(id.into(), key.to_string());
                }
                None
            }
        }
    }

    /// What the object `marker` names is: alive in this install's cache, gone, or unknown.
    async fn marked_owner(&self, marker: &Marker, id: &str) -> Result<MarkedOwner, Failure> {
        if self.holders.lock().gone.contains(marker.uid()) {
            return Ok(MarkedOwner::Gone);
        }
        let found = self
            .cache()
            .objects(&|_| true)
            .find(|o| o.uid().is_some_and(|uid| names_uid(marker, &uid)))
            .map(|o| o.key());
        let sees_every_object = self.shared.config.sees_every_object;
        let released = match found {
            None if !sees_every_object => self.is_released(id).await?,
            _ => false,
        };
        let owner = tenancy::marked_owner(found, released, sees_every_object);
        if owner == MarkedOwner::Gone {
            self.holders.lock().gone.insert(marker.uid().to_string());
        }
        Ok(owner)
    }

    /// Whether the released record has remote object `id` of this kind: its object let it
    /// go on purpose (`deletionPolicy: Orphan`) and is gone.
    async fn is_released(&self, id: &str) -> Result<bool, Failure> {
        let namespace = &self.shared.config.operator_namespace;
        match crate::released::read_record(&self.shared.kube, namespace).await {
            Ok(record) => Ok(record.owner_of(A::KIND, id).is_some()),
            Err(err) => {
                debug!(kind = A::KIND, id = %id, error = %err, "could not read the released record");
                Err(Failure::retryable(
                    "ReleasedRecordUnreadable",
                    format!(
                        "could not read the released record in namespace {namespace} to tell whether {} {id} is free: {err}",
                        A::NOUN
                    ),
                ))
            }
        }
    }
}

impl<A: Adapter> Engine<A> {
    /// Of `ids`, the remote objects that deleting `obj` may delete: those it holds, and
    /// those no object holds unless a person named them (`by_person`: the external-id
    /// annotation of an object that never recorded it). Any other is left alone, said once
    /// in an Event: deleting an object never deletes another object's remote object.
    pub(super) async fn deletable(
        &self,
        obj: &A::Kind,
        creds: &Credentials,
        ids: Vec<String>,
        by_person: Option<&str>,
    ) -> Result<Vec<String>, Failure> {
        let need = Freshness::MaxAge(self.shared.config.poll_interval);
        let listing = self
            .shared_listing(creds, need)
            .await
            .map_err(|f| f.with_credentials(&creds.source))?;
        let mut deletable = Vec::with_capacity(ids.len());
        for id in ids {
            let holder = match super::observe::by_id(&listing.items, &id, Identified::id) {
                Some(remote) => self.holder(obj, remote, false).await?,
                // Gone already, or not listed yet: the delete finds out.
                None => Holder::Mine,
            };
            let named_by_person = by_person == Some(id.as_str());
            if holder == Holder::Mine || (holder == Holder::Free && !named_by_person) {
                deletable.push(id);
                continue;
            }
            warn!(kind = A::KIND, object = %obj.key(), id = %id, holder = ?holder, "not deleting a remote object this object does not hold");
            let message = match &holder {
                Holder::Free => format!(
                    "left {} {id} on the platform: this object never adopted it",
                    A::NOUN
                ),
                _ => tenancy::adoption_refused(A::NOUN, &id, &holder).message,
            };
            self.shared
                .event(obj, true, tenancy::ADOPTION_REFUSED, "Delete", message)
                .await;
        }
        Ok(deletable)
    }
}
