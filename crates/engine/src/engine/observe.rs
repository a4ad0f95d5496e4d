//! The first stage of a pass: gather the facts. First the object's own ([`Observed`]: its
//! annotations, policies, the id and create marker it carries, what this process remembers
//! of it), then its key, then the platform's: its slice of the shared listing, read again
//! while [`decide`] asks for a newer one. The stage ends with decide's step.
//!
//! Which listing a pass needs and which id an object is managed by are pure functions,
//! tested below.

use gpucloud_platform::domain::Identified;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::{Resource, ResourceExt};
use tokio::time::Instant;
use tracing::{debug, info};

use gpucloud_crd::{ManagedKind, ManagementPolicy};
use gpucloud_platform::PlatformClient;

use super::Engine;
use crate::adapter::{Adapter, PassContext};
use crate::annotations::Annotations;
use crate::conditions::{self, Condition, Verdict};
use crate::credentials::{AccountId, Credentials, SECRET_NOT_FOUND};
use crate::decide::{Facts, IdChosenBy, Look, Marker, Step, decide, pending_settles_at};
use crate::failure::Failure;
use crate::snapshot::{Freshness, Listing};

/// What a pass knows of the object before it asks the platform: read once, from the
/// object as the watch delivered it (with this process's latest status write, if the watch
/// has not brought it yet) and from what this process remembers of it.
pub(super) struct Observed<K> {
    pub obj: Arc<K>,
    /// `namespace/name`.
    pub key: String,
    pub annotations: Annotations,
    /// Ready as last written, carried through a transient failure.
    pub last_ready: Verdict,
    /// Reconciling=True: the object is coming up, and a pass wants a younger listing.
    pub progressing: bool,
    pub observe_only: bool,
    /// The id the object is managed by, and who chose it.
    pub known: Option<(String, IdChosenBy)>,
    /// The create marker, and when the create it marks can no longer land.
    pub marker: Option<Marker>,
}

impl<K: ManagedKind> Observed<K> {
    /// The conditions the object carries in status.
    pub fn conditions(&self) -> &[Condition] {
        conditions_of(self.obj.as_ref())
    }

    /// A create of this object with `account`'s key, as it is now.
    pub fn attempt(&self, account: AccountId) -> CreateAttempt {
        CreateAttempt {
            generation: self.obj.meta().generation,
            account,
        }
    }
}

/// Pure: the id an object is managed by, and who chose it: the external-id annotation (a
/// person's, or one written by an earlier version of the operator) wins over status.
pub(super) fn known_id(
    annotations: &Annotations,
    status_id: Option<&str>,
) -> Option<(String, IdChosenBy)> {
    match &annotations.external_id {
        Some(id) => {
            // Written by the operator after its own create, or already in status (managed
            // since): the operator's to recreate. Otherwise a person's choice, reported.
            let ours = annotations.create_succeeded.is_some() || status_id == Some(id.as_str());
            let by = if ours {
                IdChosenBy::Operator
            } else {
                IdChosenBy::Person
            };
            Some((id.clone(), by))
        }
        None => status_id.map(|id| (id.to_string(), IdChosenBy::Operator)),
    }
}

/// Pure: the listing a pass needs: no older than `max_age`, and started after `changed`
/// (when this process last changed the object's remote object), since a listing from
/// before the change would show the old state. A listing that started after a change
/// younger than `max_age` is itself young enough; one merely newer than an older change
/// is not (a listing taken just after a deploy shows the pod booting for as long as it is
/// reused).
fn listing_need(changed: Option<Instant>, max_age: Duration, now: Instant) -> Freshness {
    match changed {
        Some(changed) if now.saturating_duration_since(changed) < max_age => {
            Freshness::StartedAfter(changed)
        }
        _ => Freshness::MaxAge(max_age),
    }
}

/// Pure: the remote object with id `id` in `items`, which are sorted by id (as
/// [`Engine::listing`] keeps them). Found by a pass over the listing instead, a resync of N
/// objects made about N x N / 2 comparisons: 5 billion at 100,000.
pub(super) fn by_id<'l, R>(items: &'l [R], id: &str, id_of: impl Fn(&R) -> &str) -> Option<&'l R> {
    items
        .binary_search_by(|r| id_of(r).cmp(id))
        .ok()
        .map(|i| &items[i])
}

/// The monotonic instant of a wall-clock time in the past (now, if it is in the future).
fn instant_of(ts: Timestamp) -> Option<Instant> {
    let ago = Timestamp::now().duration_since(ts);
    let ago = Duration::try_from(ago).unwrap_or(Duration::ZERO);
    Instant::now().checked_sub(ago)
}

/// The object's annotations, and the id it is managed by (see [`known_id`]), as the object
/// itself carries them.
pub(super) fn annotations_and_id<K: ManagedKind>(
    obj: &K,
) -> (Annotations, Option<(String, IdChosenBy)>) {
    let annotations = Annotations::read(obj.meta().annotations.as_ref());
    let status_id = obj
        .current_status()
        .and_then(|s| K::common(s).id.as_deref());
    let known = known_id(&annotations, status_id);
    (annotations, known)
}

impl<A: Adapter> Engine<A> {
    /// The object's own facts.
    pub(super) fn observe(&self, obj: Arc<A::Kind>) -> Observed<A::Kind> {
        let obj = self.newest(obj);
        let key = obj.key();
        let (annotations, known) = annotations_and_id(obj.as_ref());
        let previous = conditions_of(obj.as_ref());
        Observed {
            last_ready: conditions::last_ready(previous, obj.meta().generation),
            progressing: conditions::is_true(previous, conditions::RECONCILING),
            observe_only: obj.management_policy() == ManagementPolicy::ObserveOnly,
            known,
            marker: annotations.create_pending.map(|m| self.marker(&key, m)),
            obj,
            key,
            annotations,
        }
    }

    /// The key the object is managed with, kept as the last one read through its
    /// credentials reference.
    pub(super) async fn credentials(&self, obj: &A::Kind) -> Result<Credentials, Failure> {
        let creds = self.resolve_credentials(obj).await?;
        self.remember_key(obj, &creds);
        Ok(creds)
    }

    pub(super) async fn resolve_credentials(&self, obj: &A::Kind) -> Result<Credentials, Failure> {
        self.shared
            .credentials
            .resolve(&obj.namespace().unwrap_or_default(), obj.credentials())
            .await
    }

    /// The key to delete the object's remote object with: the one its Secret holds or,
    /// when the Secret is gone (deleted with the namespace, say), the one last read from
    /// it, which still deletes what the object made.
    pub(super) async fn credentials_to_delete(
        &self,
        obj: &A::Kind,
    ) -> Result<Credentials, Failure> {
        match self.resolve_credentials(obj).await {
            Err(f) if f.reason == SECRET_NOT_FOUND => match self.last_key(obj) {
                Some(last) => {
                    info!(kind = A::KIND, object = %obj.key(), source = %last.source, "the Secret is gone; deleting with the key last read from it");
                    Ok(last)
                }
                None => Err(f),
            },
            result => result,
        }
    }

    /// The platform's side, read until [`decide`] has a step: the object's slice of the
    /// shared listing, looked up by id, or else by the adapter's name or tag.
    pub(super) async fn observe_platform(
        &self,
        seen: &Observed<A::Kind>,
        pass: &PassContext<'_, A::State>,
        attempt: CreateAttempt,
    ) -> Result<Step<A::Remote>, Failure> {
        let refused = self.refused_before(&seen.key, attempt);
        let mut need = self.freshness(seen);
        let mut second_look = false;
        loop {
            let listing = self.listing(pass.client, pass.credentials, need).await?;
            let by_id = seen
                .known
                .as_ref()
                .and_then(|(id, _)| by_id(&listing.items, id, Identified::id));
            // Looking for the object by name or tag costs a pass over the whole listing:
            // only when its id is not known or not found (on every pass it would make a
            // resync of N objects cost N x N comparisons).
            let claimed: Vec<&A::Remote> = match by_id {
                Some(_) => Vec::new(),
                None => listing
                    .items
                    .iter()
                    .filter(|r| self.adapter.claims(&seen.obj, r))
                    .collect(),
            };
            let facts = Facts {
                now: Instant::now(),
                observe_only: seen.observe_only,
                id: seen.known.as_ref().map(|(id, by)| (id.as_str(), *by)),
                marker: seen.marker,
                listing_started: listing.started_at,
                by_id,
                claimed: &claimed,
                second_look,
                refused_before: refused.as_ref(),
                when_gone: self.policy(&seen.key, &seen.obj, None).when_gone,
            };
            match decide(&facts, A::NOUN) {
                Look::Relist(newer) => {
                    second_look = seen.known.is_some();
                    need = newer;
                }
                Look::Take(step) => {
                    debug!(kind = A::KIND, object = %seen.key, step = step.name(), "decided");
                    return Ok(step);
                }
            }
        }
    }

    pub(super) fn client_for(&self, creds: &Credentials) -> PlatformClient {
        self.shared.platform.with_api_key(creds.key.clone())
    }

    /// The listing of the account of `creds`, read through `client`, at least as fresh as
    /// `need`.
    pub(super) async fn listing(
        &self,
        client: &PlatformClient,
        creds: &Credentials,
        need: Freshness,
    ) -> Result<Arc<Listing<A::Remote>>, Failure> {
        self.snapshots
            .get(&creds.account, need, || async {
                let mut items = self.adapter.list(client).await?;
                // Sorted by id once per refresh, so that every pass finds its object by
                // a binary search (see `by_id`).
                items.sort_unstable_by(|a, b| Identified::id(a).cmp(Identified::id(b)));
                Ok(items)
            })
            .await
    }

    /// Freshness a pass needs: see [`listing_need`]; while the object is coming up, a
    /// listing no older than the progress interval, otherwise the poll interval.
    fn freshness(&self, seen: &Observed<A::Kind>) -> Freshness {
        let written = self.records.last_write(&seen.key, Instant::now());
        let created = seen.annotations.create_succeeded.and_then(instant_of);
        let max_age = if seen.progressing {
            self.shared.config.progress_interval
        } else {
            self.shared.config.poll_interval
        };
        listing_need(written.max(created), max_age, Instant::now())
    }

    /// The create marker written at `marker`, on this process's clock: see
    /// [`pending_settles_at`].
    pub(super) fn marker(&self, key: &str, marker: Timestamp) -> Marker {
        let unsure = self.records.read(key, |r| r.unsure_create).flatten();
        Marker {
            at: instant_of(marker).unwrap_or_else(Instant::now),
            settles_at: pending_settles_at(
                marker,
                unsure,
                self.started,
                self.shared.config.create_timeout,
            ),
        }
    }

    /// The accounts this engine works with: the operator's default key (when it has one)
    /// and every key an object of this kind was last reconciled with, once each. For the
    /// orphan census.
    pub async fn accounts(&self) -> Vec<Credentials> {
        let mut out: Vec<Credentials> = self.last_keys.lock().values().cloned().collect();
        if let Ok(default) = self.shared.credentials.resolve("", None).await {
            out.push(default);
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|c| seen.insert(c.account));
        out
    }

    /// The shared listing of `credentials`' account, as fresh as `need` says: the census
    /// reads the listing the passes read, and refreshes it only when no pass did.
    pub async fn shared_listing(
        &self,
        credentials: &Credentials,
        need: Freshness,
    ) -> Result<Arc<Listing<A::Remote>>, Failure> {
        let client = self.client_for(credentials);
        self.snapshots
            .get(&credentials.account, need, || self.adapter.list(&client))
            .await
    }
}

/// What a create was tried with: a different generation or key may succeed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CreateAttempt {
    pub generation: Option<i64>,
    pub account: AccountId,
}

/// The conditions `obj` carries in status.
pub(super) fn conditions_of<K: ManagedKind>(obj: &K) -> &[Condition] {
    obj.current_status()
        .map(|s| K::common(s).conditions.as_slice())
        .unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_must_follow_a_recent_change_and_stay_young() {
        let now = Instant::now() + Duration::from_secs(120);
        let second = Duration::from_secs(1);
        // Just changed: only a listing started after the change shows it.
        let changed = now - Duration::from_millis(200);
        assert!(matches!(
            listing_need(Some(changed), second, now),
            Freshness::StartedAfter(at) if at == changed
        ));
        // Changed 30 s ago while coming up (progress every second): a listing newer than
        // the change but 29 s old must not do.
        let changed = now - Duration::from_secs(30);
        assert!(matches!(
            listing_need(Some(changed), second, now),
            Freshness::MaxAge(d) if d == second
        ));
        assert!(matches!(
            listing_need(None, Duration::from_secs(60), now),
            Freshness::MaxAge(d) if d == Duration::from_secs(60)
        ));
    }

    fn annotated(id: Option<&str>, create_succeeded: bool) -> Annotations {
        Annotations {
            external_id: id.map(str::to_string),
            create_succeeded: create_succeeded.then(Timestamp::now),
            ..Default::default()
        }
    }

    #[test]
    fn an_id_in_status_is_the_operators() {
        assert_eq!(
            known_id(&annotated(None, false), Some("vol-1")),
            Some(("vol-1".to_string(), IdChosenBy::Operator))
        );
        assert_eq!(known_id(&annotated(None, false), None), None);
    }

    #[test]
    fn an_annotated_id_is_a_persons_unless_the_operator_wrote_or_reported_it() {
        let id = Some("vol-1");
        let by = |a: Annotations, status: Option<&str>| known_id(&a, status).map(|(_, by)| by);
        assert_eq!(by(annotated(id, false), None), Some(IdChosenBy::Person));
        assert_eq!(
            by(annotated(id, false), Some("vol-2")),
            Some(IdChosenBy::Person)
        );
        assert_eq!(by(annotated(id, true), None), Some(IdChosenBy::Operator));
        assert_eq!(
            by(annotated(id, false), Some("vol-1")),
            Some(IdChosenBy::Operator)
        );
        // The annotation wins over status.
        assert_eq!(
            known_id(&annotated(id, false), Some("vol-2")).map(|(id, _)| id),
            Some("vol-1".to_string())
        );
    }

    #[test]
    fn an_object_is_found_by_its_id_in_a_listing_sorted_by_id() {
        fn id_of(r: &String) -> &str {
            r
        }
        let mut items: Vec<String> = ["vol-c", "vol-a", "vol-d", "vol-b"]
            .map(String::from)
            .to_vec();
        items.sort_unstable();
        assert_eq!(
            by_id(&items, "vol-d", id_of).map(String::as_str),
            Some("vol-d")
        );
        assert_eq!(
            by_id(&items, "vol-a", id_of).map(String::as_str),
            Some("vol-a")
        );
        assert_eq!(by_id(&items, "vol-x", id_of), None);
        assert_eq!(by_id(&[], "vol-a", id_of), None);
    }

    #[test]
    fn markers_survive_the_annotation_round_trip() {
        // The engine recognises its own marker by comparing the parsed annotation with
        // the instant it wrote.
        let marker = Timestamp::now();
        let parsed: Timestamp = marker.to_string().parse().unwrap();
        assert_eq!(parsed, marker);
    }
}
