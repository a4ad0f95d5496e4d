//! The managed-resource engine: one reconcile for every kind.
//!
//! A pass gathers what it knows (the object's annotations and policies, its credentials,
//! the shared listing of remote objects, what this process remembers of earlier passes),
//! asks [`super::decide`] for one step, and carries it out: adopt, create, wait for a
//! create that may still land, recreate, change, replace, only report, or fail. The
//! protocol lives in `decide.rs` as pure functions with a test per row; this file is the
//! I/O around it: patches, status, Events, backoff and metrics.
//!
//! Writes per object, apply to Ready: the marker with the finalizer (one conflict-checked
//! patch), the platform create, status with the id, and the `Created` Event.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::{Api, Resource, ResourceExt};
use serde_json::{Value, json};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use crate::snapshot::{Freshness, Listing, Snapshots};
use gpucloud_crd::{DeletionPolicy, ManagementPolicy};
use gpucloud_platform::PlatformClient;

use super::adapter::{Adapter, PassContext, Plan, Readiness, Seen};
use super::annotations::{self as ann, Annotations};
use super::backoff::Backoffs;
use super::conditions::{self, Verdict, Verdicts};
use super::context::{FIELD_MANAGER, FINALIZER, Shared};
use super::credentials::{AccountId, Credentials};
use super::decide::{
    Cleanup, CleanupFacts, Facts, IdChosenBy, Marker, Step, decide, decide_cleanup,
};
use super::failure::{Applied, Failure, FailureClass};
use super::ownership::{self, Claim, Ownership};
use super::recent_writes::RecentWrites;
use gpucloud_crd::ManagedKind;

/// Errors that end a reconcile early; the controller's error policy requeues them. Platform
/// failures are not among them: they are reported in status and requeued by class.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
}

/// The engine for one kind.
pub struct Engine<A: Adapter> {
    pub shared: Arc<Shared>,
    pub adapter: A,
    snapshots: Snapshots<AccountId, A::Remote, Failure>,
    backoffs: Backoffs<String>,
    /// When this process last changed each object's remote object: a listing that started
    /// before that would show the old state and lead to the same change again.
    last_write: parking_lot::Mutex<RecentWrites>,
    /// Creates this process sent whose outcome it does not know (a 5xx or a timeout), by
    /// object: from when a listing can tell whether they happened.
    unsure_creates: parking_lot::Mutex<std::collections::HashMap<String, UnsureCreate>>,
    /// Creates the platform refused for good (a bad spec, a key without write access), by
    /// object: another trigger for the same generation and account (a finalizer event that
    /// arrives after the pass that added it) must not send the same create again. The
    /// Stalled recheck, a spec change or another key are let through.
    refused_creates: parking_lot::Mutex<std::collections::HashMap<String, RefusedCreate>>,
    /// When this engine started: a create marked pending by an earlier process (one that
    /// crashed with the create in flight) has landed or failed by `started + create_timeout`.
    started: Instant,
    /// The status this process last wrote, by object, with the resourceVersion the write
    /// returned: the next pass may start before the watch has delivered it, and must not
    /// take the older status it then sees for the current one (it would write the same
    /// status again, with new transition times). Dropped once the watch has caught up.
    own_status: parking_lot::Mutex<std::collections::HashMap<String, OwnStatus<A>>>,
    /// Which install claims which object, and whether the holder of a claim still runs.
    ownership: Ownership,
    /// Objects claimed by another install that this process has said so about once.
    told_claimed: parking_lot::Mutex<std::collections::HashSet<String>>,
    /// The key last read through each credentials reference (`None`: the default key), so
    /// that an object whose Secret went first (a namespace being deleted takes both) can
    /// still delete its remote object instead of leaking it. One entry per Secret, not
    /// per object.
    last_keys: parking_lot::Mutex<std::collections::HashMap<Option<SecretKeyRef>, Credentials>>,
    /// The resourceVersion of this process's last metadata patch of each object (the create
    /// marker with the finalizer and the claim, an adoption's claim) until the watch brings
    /// it back: that echo is not a reason for another pass (see [`Engine::is_echo`]).
    own_writes: parking_lot::Mutex<std::collections::HashMap<String, String>>,
}

/// A credentials reference: namespace, Secret name and key.
type SecretKeyRef = (String, String, String);

/// What a create was tried with: a different generation or key may succeed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CreateAttempt {
    generation: Option<i64>,
    account: AccountId,
}

/// A create the platform refused for good.
#[derive(Debug)]
struct RefusedCreate {
    attempt: CreateAttempt,
    at: Instant,
    failure: Failure,
}

type OwnStatus<A> = (String, <<A as Adapter>::Kind as ManagedKind>::Status);

/// Whether an object read at `seen` (from the watch cache) predates a write of ours that
/// returned `written`. resourceVersions are etcd revisions, comparable as integers
/// (Kubernetes 1.35 made that a guarantee); anything else counts as not behind, so the
/// object as seen is used.
pub(crate) fn seen_predates(seen: Option<&str>, written: &str) -> bool {
    match (seen.map(str::parse::<u64>), written.parse::<u64>()) {
        (Some(Ok(seen)), Ok(written)) => seen < written,
        _ => false,
    }
}

/// Pure: the listing a pass needs: no older than `max_age`, and started after `changed`
/// (when this process last changed the object's remote object), since a listing from
/// before the change would show the old state. A listing that started after a change
/// younger than `max_age` is itself young enough; one merely newer than an older change
/// is not (a listing taken just after a deploy shows the pod booting for as long as it is
/// reused).
pub(crate) fn listing_need(changed: Option<Instant>, max_age: Duration, now: Instant) -> Freshness {
    match changed {
        Some(changed) if now.saturating_duration_since(changed) < max_age => {
            Freshness::StartedAfter(changed)
        }
        _ => Freshness::MaxAge(max_age),
    }
}

/// A create whose answer said nothing certain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UnsureCreate {
    /// The pending marker written before it.
    pub marker: Timestamp,
    /// From this instant on, a new listing shows the object if the create made one.
    pub settled_at: Instant,
}

/// From when a listing can tell whether the create marked pending at `marker` made
/// something. A create this process sent and got an answer to (a 5xx) happened, if it
/// did, before the answer; one that got no answer (a timeout) may still be running at the
/// platform, until `create_timeout` after the call gave up (`unsure` holds both). A marker
/// this process knows nothing of was left by an earlier process, which sent nothing after
/// it died, so before this one started: its create is over by `started + create_timeout`.
pub(crate) fn pending_settles_at(
    marker: Timestamp,
    unsure: Option<UnsureCreate>,
    started: Instant,
    create_timeout: Duration,
) -> Instant {
    match unsure {
        Some(own) if own.marker == marker => own.settled_at,
        _ => started + create_timeout,
    }
}

/// What a pass decided, before status is written.
struct Outcome<R> {
    remote: Option<R>,
    verdicts: Verdicts,
    requeue: Requeue,
    /// An Event to publish when this outcome is new (reason, warning, message).
    event: Option<(String, bool, String)>,
    /// The failure this outcome reports, and the Ready it kept, if it is one.
    failure: Option<(Failure, Verdict)>,
    /// What the adapter's `status` should know besides the remote object.
    seen: Seen,
    /// The remote object the status names is gone: drop its id from status.
    forget_id: bool,
}

#[derive(Clone, Copy, Debug)]
enum Requeue {
    /// The next periodic drift check.
    Poll,
    /// Soon: something is still coming up.
    Progress,
    /// At once (the object changed under us, or the next step is ready).
    Now,
    /// After the object's backoff.
    Backoff(Option<Duration>),
    /// After this long.
    After(Duration),
    /// Only when something changes (or after the long stalled recheck).
    Stalled,
}

impl<R> Outcome<R> {
    fn new(remote: Option<R>, verdicts: Verdicts, requeue: Requeue) -> Self {
        Self {
            remote,
            verdicts,
            requeue,
            event: None,
            failure: None,
            seen: Seen::default(),
            forget_id: false,
        }
    }

    fn failed(failure: Failure, remote: Option<R>, last_ready: Verdict) -> Self {
        let requeue = match failure.class {
            FailureClass::Permanent => Requeue::Stalled,
            FailureClass::Retryable => Requeue::Backoff(failure.retry_after),
            // Waiting on another object in the cluster costs no platform call: look often,
            // unless whatever it waits for wakes it and asked for a later safety net.
            FailureClass::Waiting => failure
                .retry_after
                .map_or(Requeue::Progress, Requeue::After),
            FailureClass::Conflict => Requeue::Now,
        };
        let warning = failure.class != FailureClass::Waiting;
        Self {
            event: Some((failure.reason.clone(), warning, failure.message.clone())),
            failure: Some((failure.clone(), last_ready.clone())),
            ..Self::new(remote, failure.verdicts(last_ready), requeue)
        }
    }

    /// When the platform refused the key, says which key that was, so that the message
    /// names the Secret to fix.
    fn naming_credentials(self, creds: &Credentials) -> Self {
        match self.failure {
            Some((failure, last_ready)) if failure.is_about_credentials() => Self {
                seen: self.seen,
                forget_id: self.forget_id,
                ..Self::failed(
                    failure.with_credentials(&creds.source),
                    self.remote,
                    last_ready,
                )
            },
            failure => Self { failure, ..self },
        }
    }
}

/// The id an object is managed by, and who chose it: the external-id annotation (a
/// person's, or one written by an earlier version of the operator) wins over status.
fn known_id<K: ManagedKind>(obj: &K, annotations: &Annotations) -> Option<(String, IdChosenBy)> {
    let status_id = obj.current_status().and_then(|s| K::common(s).id.clone());
    match &annotations.external_id {
        Some(id) => {
            // Written by the operator after its own create, or already in status (managed
            // since): the operator's to recreate. Otherwise a person's choice, reported.
            let ours = annotations.create_succeeded.is_some() || status_id.as_deref() == Some(id);
            let by = if ours {
                IdChosenBy::Operator
            } else {
                IdChosenBy::Person
            };
            Some((id.clone(), by))
        }
        None => status_id.map(|id| (id, IdChosenBy::Operator)),
    }
}

/// The annotations that record an id the operator chose (written by earlier versions):
/// removed when that id is forgotten, in the same write as the next marker.
const LEGACY_ID_ANNOTATIONS: [&str; 2] = [ann::EXTERNAL_ID, ann::CREATE_SUCCEEDED];

impl<A: Adapter> Engine<A> {
    pub fn new(shared: Arc<Shared>, adapter: A) -> Self {
        let backoffs = Backoffs::new(shared.config.backoff);
        // The oldest listing a pass takes (see `listing_need`).
        let writes_matter_for = shared
            .config
            .poll_interval
            .max(shared.config.progress_interval);
        let ownership = Ownership::new(
            shared.kube.clone(),
            shared.config.install.clone(),
            shared.config.takeover_after,
        );
        Self {
            ownership,
            told_claimed: Default::default(),
            own_writes: Default::default(),
            last_keys: Default::default(),
            shared,
            adapter,
            snapshots: Snapshots::new(),
            backoffs,
            last_write: parking_lot::Mutex::new(RecentWrites::new(
                writes_matter_for,
                Instant::now(),
            )),
            unsure_creates: Default::default(),
            refused_creates: Default::default(),
            started: Instant::now(),
            own_status: Default::default(),
        }
    }

    /// `obj` with the status this process last wrote, if the watch has not delivered that
    /// write yet.
    fn with_own_status(&self, obj: Arc<A::Kind>) -> Arc<A::Kind> {
        let key = obj.key();
        let mut own = self.own_status.lock();
        match own.get(&key) {
            Some((written, status))
                if seen_predates(obj.resource_version().as_deref(), written) =>
            {
                let mut newer = (*obj).clone();
                *newer.status_mut() = Some(status.clone());
                Arc::new(newer)
            }
            Some(_) => {
                own.remove(&key);
                obj
            }
            None => obj,
        }
    }

    /// See [`pending_settles_at`].
    fn marker(&self, key: &str, marker: Timestamp) -> Marker {
        let unsure = self.unsure_creates.lock().get(key).copied();
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

    /// Drops everything this engine and its adapter keep about the object `key`: it is
    /// gone from the cluster.
    pub fn forget(&self, key: &str) {
        self.last_write.lock().forget(key);
        self.unsure_creates.lock().remove(key);
        self.refused_creates.lock().remove(key);
        self.own_status.lock().remove(key);
        self.told_claimed.lock().remove(key);
        self.own_writes.lock().remove(key);
        self.backoffs.succeed(&key.to_string());
        self.shared.metrics.set_ready(A::KIND, key, None);
        self.adapter.forget(key);
    }

    /// Whether `obj`, as the watch delivers it, is this process's own metadata patch coming
    /// back. The pass that wrote it has already decided what comes next; a pass for the echo
    /// (its finalizer and claim change the watch's hash) would only ask for a listing newer
    /// than the create, for every object created: while 10,000 volumes were created, a
    /// listing of up to 10,000 volumes back to back. The entry goes with its echo.
    pub fn is_echo(&self, obj: &A::Kind) -> bool {
        let key = obj.key();
        let mut own = self.own_writes.lock();
        let echo = own
            .get(&key)
            .is_some_and(|rv| obj.resource_version().as_ref() == Some(rv));
        if echo {
            own.remove(&key);
        }
        echo
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

    /// Drops the status this process last wrote for `obj` once the watch delivers that
    /// write (or a later one): from then on the store has it. Kept until the object's next
    /// pass otherwise, a copy of the whole status of every object written lately stayed in
    /// memory for up to a poll interval (about 1.5 KiB per object: 15 MB at 10,000).
    pub fn caught_up(&self, obj: &A::Kind) {
        let key = obj.key();
        let mut own = self.own_status.lock();
        if own
            .get(&key)
            .is_some_and(|(written, _)| !seen_predates(obj.resource_version().as_deref(), written))
        {
            own.remove(&key);
        }
    }

    /// The entry point the controller runs for every object.
    pub async fn reconcile(self: Arc<Self>, obj: Arc<A::Kind>) -> Result<Action, EngineError> {
        let started = std::time::Instant::now();
        self.shared.expire_event_cache();
        let api: Api<A::Kind> = Api::namespaced(
            self.shared.kube.clone(),
            &obj.namespace().unwrap_or_default(),
        );
        let obj = match self.claim(&api, obj).await {
            Ok(Some(obj)) => obj,
            Ok(None) => return Ok(self.left_alone()),
            Err(e) => return Err(e),
        };
        let result = if obj.meta().deletion_timestamp.is_some() {
            if obj.finalizers().iter().any(|f| f == FINALIZER) {
                self.cleanup(&api, obj).await
            } else {
                // Nothing of ours holds it: it goes without us.
                self.forget(&obj.key());
                Ok(Action::await_change())
            }
        } else {
            self.apply(&api, obj).await
        };
        let outcome = if result.is_ok() { "ok" } else { "error" };
        self.shared
            .metrics
            .reconciled(A::KIND, outcome, started.elapsed());
        if let Some(age) = self.snapshots.oldest_age() {
            self.shared.metrics.snapshot_age(A::KIND, age);
        }
        result
    }

    /// The object, if this install may act on it: claimed by it, by nobody yet (it claims
    /// it with its first write), or by an install whose Lease expired long ago (claimed
    /// here). `None`: another install holds it, and it is left alone.
    async fn claim(
        &self,
        api: &Api<A::Kind>,
        obj: Arc<A::Kind>,
    ) -> Result<Option<Arc<A::Kind>>, EngineError> {
        let claim = obj.annotations().get(ownership::OWNER).cloned();
        match self.ownership.claim(claim.as_deref()).await {
            Claim::Mine | Claim::Unclaimed => Ok(Some(obj)),
            Claim::Theirs(holder) => {
                let key = obj.key();
                if self.told_claimed.lock().insert(key.clone()) {
                    info!(kind = A::KIND, object = %key, holder = %holder, "claimed by another install; leaving it alone");
                    self.shared.metrics.claimed_elsewhere(A::KIND);
                    self.shared
                        .event(
                            obj.as_ref(),
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
                Ok(None)
            }
            Claim::TakeOver(holder) => {
                let me = Some(self.ownership.me.clone());
                match self
                    .patch_metadata(api, &obj, &[(ownership::OWNER, me)], None, true)
                    .await
                {
                    Ok(updated) => {
                        self.told_claimed.lock().remove(&obj.key());
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
        }
    }

    /// When to look again at an object another install holds: in case its Lease expires.
    fn left_alone(&self) -> Action {
        let recheck = self
            .ownership
            .takeover_after
            .clamp(Duration::from_secs(10), Duration::from_secs(300));
        Action::requeue(jitter(recheck, 0.1))
    }

    /// What the controller does when `reconcile` returned an error (a Kubernetes write failed).
    pub fn error_policy(&self, obj: &A::Kind, err: &EngineError) -> Action {
        let delay = self.backoffs.fail(&obj.key(), None);
        warn!(kind = A::KIND, object = %obj.key(), error = %err, retry_in = ?delay, "reconcile failed");
        Action::requeue(delay)
    }

    async fn apply(&self, api: &Api<A::Kind>, obj: Arc<A::Kind>) -> Result<Action, EngineError> {
        let obj = self.with_own_status(obj);
        let annotations = Annotations::read(obj.meta().annotations.as_ref());
        if annotations.paused {
            // Hands off: no platform call, only say so in status.
            let verdicts = Verdicts {
                ready: self.last_ready(&obj),
                synced: Verdict::no("Paused", format!("{} is \"true\"", ann::PAUSED)),
                reconciling: Verdict::no("Paused", "paused by annotation"),
                stalled: Verdict::no("Paused", "paused by annotation"),
            };
            let status = self.status_with(&obj, None, &verdicts, Seen::default(), false);
            self.write_status(api, &obj, status).await?;
            return Ok(Action::await_change());
        }
        // No status write before this point: until the first one, the CRD's status default
        // (observedGeneration 0) keeps kstatus and Argo CD from reading the object as done.
        let outcome = match self
            .shared
            .credentials
            .resolve(&obj.namespace().unwrap_or_default(), obj.credentials())
            .await
        {
            Ok(creds) => {
                self.remember_key(&obj, &creds);
                let client = self.client_for(&creds);
                let pass = PassContext {
                    shared: &self.shared,
                    credentials: &creds,
                    client: &client,
                };
                self.converge(api, &obj, &annotations, &pass)
                    .await?
                    .naming_credentials(&creds)
            }
            Err(failure) => Outcome::failed(failure, None, self.last_ready(&obj)),
        };
        self.finish(api, &obj, &annotations, outcome).await
    }

    fn client_for(&self, creds: &Credentials) -> PlatformClient {
        self.shared.platform.with_api_key(creds.key.clone())
    }

    async fn listing(
        &self,
        pass: &PassContext<'_>,
        need: Freshness,
    ) -> Result<Arc<Listing<A::Remote>>, Failure> {
        self.snapshots
            .get(&pass.credentials.account, need, || {
                self.adapter.list(pass.client)
            })
            .await
    }

    /// Freshness a pass needs: see [`listing_need`]; while the object is coming up, a
    /// listing no older than the progress interval, otherwise the poll interval.
    fn freshness(&self, obj: &A::Kind, annotations: &Annotations, progressing: bool) -> Freshness {
        let written = self.last_write.lock().get(&obj.key(), Instant::now());
        let created = annotations.create_succeeded.and_then(instant_of);
        let max_age = if progressing {
            self.shared.config.progress_interval
        } else {
            self.shared.config.poll_interval
        };
        listing_need(written.max(created), max_age, Instant::now())
    }

    /// Gathers the facts, asks [`decide`] for the step, and carries it out.
    async fn converge(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        annotations: &Annotations,
        pass: &PassContext<'_>,
    ) -> Result<Outcome<A::Remote>, EngineError> {
        let key = obj.key();
        let last_ready = self.last_ready(obj);
        let progressing = conditions::is_true(self.conditions(obj), conditions::RECONCILING);
        let observe_only = obj.management_policy() == ManagementPolicy::ObserveOnly;
        let known = known_id(obj, annotations);
        let marker = annotations.create_pending.map(|m| self.marker(&key, m));
        let attempt = CreateAttempt {
            generation: obj.meta().generation,
            account: pass.credentials.account,
        };
        let refused = self.refused_before(obj, attempt);
        let mut need = self.freshness(obj, annotations, progressing);
        let mut second_look = false;
        let step = loop {
            let listing = match self.listing(pass, need).await {
                Ok(l) => l,
                Err(f) => return Ok(Outcome::failed(f, None, last_ready)),
            };
            let by_id = known
                .as_ref()
                .and_then(|(id, _)| listing.items.iter().find(|r| A::id(r) == id));
            // Looking for the object by name or tag costs a pass over the whole listing:
            // only when its id is not known or not found (on every pass it would make a
            // resync of N objects cost N x N comparisons).
            let claimed: Vec<&A::Remote> = match by_id {
                Some(_) => Vec::new(),
                None => listing
                    .items
                    .iter()
                    .filter(|r| self.adapter.claims(obj, r))
                    .collect(),
            };
            let facts = Facts {
                now: Instant::now(),
                observe_only,
                id: known.as_ref().map(|(id, by)| (id.as_str(), *by)),
                marker,
                listing_started: listing.started_at,
                by_id,
                claimed: &claimed,
                second_look,
                refused_before: refused.as_ref(),
                when_gone: self.adapter.when_gone(obj),
            };
            match decide(&facts, A::NOUN) {
                Step::Relist(newer) => {
                    second_look = known.is_some();
                    need = newer;
                }
                step => break step,
            }
        };
        debug!(kind = A::KIND, object = %key, step = step_name(&step), "decided");
        match step {
            Step::Relist(_) => unreachable!("the loop above reads the listing it asks for"),
            Step::Fail(f) => Ok(Outcome::failed(f, None, last_ready)),
            Step::WaitForPendingCreate(wait) => {
                let mut outcome = Outcome::new(
                    None,
                    Verdicts::progressing(
                        "CreatePending",
                        format!(
                            "an earlier create of the {} may still be under way; looking for it again in {}s before creating",
                            A::NOUN,
                            wait.as_secs().max(1)
                        ),
                    ),
                    Requeue::After(wait + Duration::from_millis(100)),
                );
                outcome.seen.creating = true;
                Ok(outcome)
            }
            Step::Observe(remote) => {
                self.ensure_owned(api, obj, false).await?;
                Ok(self.observed(obj, remote))
            }
            Step::Adopt(remote, how) => {
                let id = A::id(&remote).to_string();
                self.ensure_owned(api, obj, !observe_only).await?;
                self.unsure_creates.lock().remove(&key);
                info!(kind = A::KIND, object = %key, id = %id, reason = how.reason(), "adopted");
                self.shared
                    .event(
                        obj,
                        false,
                        how.reason(),
                        "Adopt",
                        format!("adopted existing {} {id}", A::NOUN),
                    )
                    .await;
                match observe_only {
                    true => Ok(self.observed(obj, remote)),
                    false => {
                        self.manage(api, obj, annotations, pass, remote, last_ready)
                            .await
                    }
                }
            }
            Step::Manage(remote) => {
                self.ensure_owned(api, obj, true).await?;
                self.manage(api, obj, annotations, pass, remote, last_ready)
                    .await
            }
            Step::Recreate => {
                let id = known.map(|(id, _)| id).unwrap_or_default();
                let message = format!(
                    "{} {id} was deleted outside the operator; creating it again",
                    A::NOUN
                );
                warn!(kind = A::KIND, object = %key, id = %id, "deleted outside the operator");
                self.shared
                    .event(obj, true, "ExternalDeleted", "Create", message)
                    .await;
                self.create(api, obj, annotations, pass, last_ready, attempt)
                    .await
            }
            Step::Create => {
                self.create(api, obj, annotations, pass, last_ready, attempt)
                    .await
            }
        }
    }

    /// Brings an existing remote object in line with the spec.
    async fn manage(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        annotations: &Annotations,
        pass: &PassContext<'_>,
        mut remote: A::Remote,
        last_ready: Verdict,
    ) -> Result<Outcome<A::Remote>, EngineError> {
        let desired = match self.adapter.desired(pass, obj).await {
            Ok(d) => d,
            Err(f) => return Ok(Outcome::failed(f, Some(remote), last_ready)),
        };
        match self.adapter.plan(obj, &desired, &remote) {
            Plan::UpToDate => {
                if let Err(f) = self.after_sync_if_ready(pass, obj, &mut remote).await {
                    return Ok(Outcome::failed(f, Some(remote), last_ready));
                }
                Ok(self.observed(obj, remote))
            }
            Plan::Blocked(failure) => {
                let mut outcome = Outcome::failed(failure, Some(remote), last_ready);
                outcome.seen.blocked = true;
                Ok(outcome)
            }
            Plan::Update(changes) => {
                if let Err(f) = self
                    .adapter
                    .admit(pass, obj, &desired, Some(&remote), &changes)
                    .await
                {
                    return Ok(Outcome::failed(f, Some(remote), last_ready));
                }
                for change in &changes {
                    if let Err(f) = self.adapter.apply(pass.client, &mut remote, change).await {
                        // The remote object is known not to match the spec (a pod stopped
                        // out of band that cannot resume): not Ready, as a change that
                        // went through would not be either until the next listing.
                        let not_ready = Verdict::no(f.reason.clone(), f.message.clone());
                        return Ok(Outcome::failed(f, Some(remote), not_ready));
                    }
                    let note = self.adapter.describe(change);
                    info!(kind = A::KIND, object = %obj.key(), id = A::id(&remote), change = %note, "updated");
                    let reason = self.adapter.change_reason(change);
                    self.shared.event(obj, false, reason, "Update", note).await;
                }
                self.wrote(obj);
                // The listing predates the change: show the change as under way and
                // read a fresh listing on the next pass.
                Ok(Outcome::new(
                    Some(remote),
                    Verdicts::progressing("Updating", format!("updated the {}", A::NOUN)),
                    Requeue::Progress,
                ))
            }
            Plan::Replace { reason } => {
                let id = A::id(&remote).to_string();
                if let Err(f) = self.adapter.delete(pass.client, &id).await
                    && !f.is_not_found()
                {
                    return Ok(Outcome::failed(f, Some(remote), last_ready));
                }
                self.shared
                    .event(
                        obj,
                        false,
                        "Replacing",
                        "Delete",
                        format!("deleted {} {id}: {reason}", A::NOUN),
                    )
                    .await;
                self.wrote(obj);
                // An id the operator chose and recorded in an annotation (earlier versions)
                // must go with the object; one in status goes with the status below.
                if annotations.external_id.is_some() {
                    self.patch_metadata(api, obj, &legacy_id_removal(), None, false)
                        .await?;
                }
                let mut outcome = Outcome::new(
                    None,
                    Verdicts::progressing("Replacing", reason),
                    Requeue::Now,
                );
                outcome.forget_id = true;
                Ok(outcome)
            }
        }
    }

    /// Extra I/O of the kind once its remote object is Ready (see `Adapter::after_sync`).
    async fn after_sync_if_ready(
        &self,
        pass: &PassContext<'_>,
        obj: &A::Kind,
        remote: &mut A::Remote,
    ) -> Result<(), Failure> {
        match self.adapter.readiness(obj, remote) {
            Readiness::Ready { .. } => self.adapter.after_sync(pass, obj, remote).await,
            Readiness::Progressing { .. } => Ok(()),
        }
    }

    /// An up-to-date remote object: Ready, or still coming up.
    fn observed(&self, obj: &A::Kind, remote: A::Remote) -> Outcome<A::Remote> {
        match self.adapter.readiness(obj, &remote) {
            Readiness::Ready { message } => {
                Outcome::new(Some(remote), Verdicts::converged(message), Requeue::Poll)
            }
            Readiness::Progressing { reason, message } => Outcome::new(
                Some(remote),
                Verdicts::progressing(reason, message),
                Requeue::Progress,
            ),
        }
    }

    /// Creates the remote object: the marker (with the finalizer, conflict-checked) is in
    /// etcd before the platform hears of the create, and the id goes into status after.
    async fn create(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        annotations: &Annotations,
        pass: &PassContext<'_>,
        last_ready: Verdict,
        attempt: CreateAttempt,
    ) -> Result<Outcome<A::Remote>, EngineError> {
        let key = obj.key();
        let desired = match self.adapter.desired(pass, obj).await {
            Ok(d) => d,
            Err(f) => {
                let mut outcome = Outcome::failed(f, None, last_ready);
                outcome.forget_id = true;
                return Ok(outcome);
            }
        };
        // Nothing to create yet (a Pod outside its schedule): no marker, no call.
        if let Some(message) = self.adapter.hold_create(obj, &desired) {
            return Ok(Outcome::new(
                None,
                Verdicts::converged(message),
                Requeue::Poll,
            ));
        }
        // A hold is decided before the marker: it costs no write at all.
        if let Err(f) = self.adapter.admit(pass, obj, &desired, None, &[]).await {
            let mut outcome = Outcome::failed(f, None, last_ready);
            outcome.forget_id = true;
            return Ok(outcome);
        }
        let marker = Timestamp::now();
        let mut changes = vec![(ann::CREATE_PENDING, Some(marker.to_string()))];
        changes.extend(self.claim_change(obj));
        if annotations.external_id.is_some() {
            // Only reached when that id is gone and was the operator's (see `known_id`).
            changes.extend(legacy_id_removal());
        }
        match self
            .patch_metadata(api, obj, &changes, Some(FINALIZER), true)
            .await
        {
            Ok(_) => {}
            // Another pass (or replica) moved first.
            Err(kube::Error::Api(e)) if e.code == 409 => {
                return Ok(Outcome::new(
                    None,
                    Verdicts::progressing(
                        gpucloud_crd::condition::phrase::CREATING,
                        "the object changed; retrying",
                    ),
                    Requeue::Now,
                ));
            }
            Err(e) => return Err(e.into()),
        }
        match self.adapter.create(pass, obj, &desired).await {
            Ok(created) => {
                self.wrote(obj);
                let mut remote = created.remote;
                let id = A::id(&remote).to_string();
                info!(kind = A::KIND, object = %key, id = %id, "created");
                for note in created.notes {
                    self.shared
                        .event(obj, note.warning, &note.reason, note.action, note.message)
                        .await;
                }
                self.shared
                    .event(
                        obj,
                        false,
                        "Created",
                        "Create",
                        format!("created {} {id}", A::NOUN),
                    )
                    .await;
                // Ready at once (a volume): what the kind keeps beside a Ready object (an
                // endpoint's connection ConfigMap) must exist before status says Ready.
                if let Err(f) = self.after_sync_if_ready(pass, obj, &mut remote).await {
                    return Ok(Outcome::failed(f, Some(remote), last_ready));
                }
                let outcome = self.observed(obj, remote);
                Ok(Outcome {
                    requeue: Requeue::Progress,
                    ..outcome
                })
            }
            Err(failure) if failure.applied != Applied::No => {
                // Keep the marker: the next pass looks the object up before anything else,
                // in a listing that started after the create can have landed.
                let settled_at = match failure.applied {
                    Applied::MaybeAnswered => Instant::now(),
                    _ => Instant::now() + self.shared.config.create_timeout,
                };
                self.unsure_creates
                    .lock()
                    .insert(key.clone(), UnsureCreate { marker, settled_at });
                warn!(kind = A::KIND, object = %key, error = %failure, "create may have happened; will look it up");
                let mut outcome = Outcome::failed(failure, None, last_ready);
                outcome.seen.creating = true;
                outcome.forget_id = true;
                Ok(outcome)
            }
            Err(failure) => {
                // Nothing was made: the marker would only make the next pass wait.
                self.patch_metadata(api, obj, &[(ann::CREATE_PENDING, None)], None, false)
                    .await?;
                if failure.is_permanent() {
                    self.refused_creates.lock().insert(
                        key,
                        RefusedCreate {
                            attempt,
                            at: Instant::now(),
                            failure: failure.clone(),
                        },
                    );
                }
                let mut outcome = Outcome::failed(failure, None, last_ready);
                outcome.forget_id = true;
                Ok(outcome)
            }
        }
    }

    /// The failure of a create the platform refused for good for this same generation and
    /// account, unless the Stalled recheck is due.
    fn refused_before(&self, obj: &A::Kind, attempt: CreateAttempt) -> Option<Failure> {
        let mut refused = self.refused_creates.lock();
        let key = obj.key();
        let entry = refused.get(&key)?;
        let recheck_due = entry.at.elapsed() >= self.shared.config.stalled_recheck / 2;
        if entry.attempt != attempt || recheck_due {
            refused.remove(&key);
            return None;
        }
        Some(entry.failure.clone())
    }

    /// Deletes (or releases) the remote object, then lets the Kubernetes object go.
    async fn cleanup(&self, api: &Api<A::Kind>, obj: Arc<A::Kind>) -> Result<Action, EngineError> {
        let key = obj.key();
        let annotations = Annotations::read(obj.meta().annotations.as_ref());
        let keeps_remote = obj.deletion_policy() == DeletionPolicy::Orphan
            || obj.management_policy() == ManagementPolicy::ObserveOnly
            || annotations.paused;
        let known = known_id(obj.as_ref(), &annotations).map(|(id, _)| id);
        let marker = annotations.create_pending.map(|m| self.marker(&key, m));
        // Resolved only when the platform must be asked.
        let mut creds: Option<Credentials> = None;
        let mut listing: Option<Arc<Listing<A::Remote>>> = None;
        loop {
            let claimed: Option<(Instant, Vec<&str>)> = listing.as_ref().map(|l| {
                let ids = l
                    .items
                    .iter()
                    .filter(|r| self.adapter.claims(&obj, r))
                    .map(|r| A::id(r))
                    .collect();
                (l.started_at, ids)
            });
            let facts = CleanupFacts {
                now: Instant::now(),
                keeps_remote,
                id: known.as_deref(),
                marker,
                listing: claimed,
            };
            let ids = match decide_cleanup(&facts) {
                Cleanup::Release => {
                    if let Some(id) = &known {
                        // So that the orphan sweep leaves it alone. Best effort: a failed
                        // record must not keep the object (the sweep lists, it does not
                        // delete without a person's word).
                        if let Err(err) = crate::released::record(
                            &self.shared.kube,
                            &self.shared.config.operator_namespace,
                            FIELD_MANAGER,
                            A::KIND,
                            id,
                            &key,
                        )
                        .await
                        {
                            warn!(kind = A::KIND, object = %key, id = %id, error = %err, "could not record the release for the orphan sweep");
                        }
                        self.shared
                            .event(
                                obj.as_ref(),
                                false,
                                "Orphaned",
                                "Delete",
                                format!("left {} {id} on the platform", A::NOUN),
                            )
                            .await;
                    }
                    Vec::new()
                }
                Cleanup::WaitForPendingCreate(wait) => {
                    // A create that may still land would be left behind by a delete now.
                    return Ok(Action::requeue(wait + Duration::from_millis(100)));
                }
                Cleanup::Relist(need) => {
                    let creds = match self.cleanup_credentials(&obj, &mut creds).await {
                        Ok(c) => c,
                        Err(f) => return self.cleanup_failed(api, &obj, f).await,
                    };
                    let client = self.client_for(&creds);
                    let pass = PassContext {
                        shared: &self.shared,
                        credentials: &creds,
                        client: &client,
                    };
                    match self.listing(&pass, need).await {
                        Ok(l) => listing = Some(l),
                        Err(f) => {
                            let f = f.with_credentials(&creds.source);
                            return self.cleanup_failed(api, &obj, f).await;
                        }
                    }
                    continue;
                }
                Cleanup::Delete(ids) => ids,
            };
            if !ids.is_empty() {
                let creds = match self.cleanup_credentials(&obj, &mut creds).await {
                    Ok(c) => c,
                    Err(f) => return self.cleanup_failed(api, &obj, f).await,
                };
                let client = self.client_for(&creds);
                for id in ids {
                    match self.adapter.delete(&client, &id).await {
                        Ok(()) => {
                            info!(kind = A::KIND, object = %key, id = %id, "deleted");
                            self.shared
                                .event(
                                    obj.as_ref(),
                                    false,
                                    "Deleted",
                                    "Delete",
                                    format!("deleted {} {id}", A::NOUN),
                                )
                                .await;
                        }
                        Err(f) if f.is_not_found() => {
                            debug!(kind = A::KIND, object = %key, id = %id, "already gone");
                        }
                        Err(f) => {
                            let f = Failure {
                                message: format!("{} (deleting {} {id})", f.message, A::NOUN),
                                ..f
                            }
                            .with_credentials(&creds.source);
                            return self.cleanup_failed(api, &obj, f).await;
                        }
                    }
                }
            }
            if !self.release_finalizer(api, &obj).await? {
                debug!(kind = A::KIND, object = %key, "changed while deleting; looking again");
                return Ok(Action::requeue(Duration::from_millis(200)));
            }
            self.forget(&key);
            return Ok(Action::await_change());
        }
    }

    async fn cleanup_credentials(
        &self,
        obj: &A::Kind,
        cache: &mut Option<Credentials>,
    ) -> Result<Credentials, Failure> {
        if let Some(c) = cache {
            return Ok(c.clone());
        }
        let c = match self
            .shared
            .credentials
            .resolve(&obj.namespace().unwrap_or_default(), obj.credentials())
            .await
        {
            Ok(c) => c,
            // The Secret is gone (deleted with the namespace, say): the key it held last
            // still deletes what the object made.
            Err(f) if f.reason == "CredentialsNotFound" => {
                match self.last_keys.lock().get(&key_ref(obj)).cloned() {
                    Some(last) => {
                        info!(kind = A::KIND, object = %obj.key(), source = %last.source, "the Secret is gone; deleting with the key last read from it");
                        last
                    }
                    None => return Err(f),
                }
            }
            Err(f) => return Err(f),
        };
        *cache = Some(c.clone());
        Ok(c)
    }

    /// Keeps `creds` as the last key read through the object's credentials reference.
    fn remember_key(&self, obj: &A::Kind, creds: &Credentials) {
        let mut keys = self.last_keys.lock();
        let reference = key_ref(obj);
        if keys
            .get(&reference)
            .is_none_or(|k| k.account != creds.account)
        {
            keys.insert(reference, creds.clone());
        }
    }

    /// A delete that could not finish keeps the finalizer; say why (an Event, and the
    /// conditions, so that `kubectl get` shows what holds the object) and retry with backoff.
    async fn cleanup_failed(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        failure: Failure,
    ) -> Result<Action, EngineError> {
        let reason = format!("Delete{}", failure.reason);
        self.shared
            .event(obj, true, &reason, "Delete", failure.message.clone())
            .await;
        let told = Failure {
            reason: reason.clone(),
            ..failure.clone()
        };
        let verdicts = told.verdicts(self.last_ready(obj));
        let status = self.status_with(obj, None, &verdicts, Seen::default(), false);
        if let Err(err) = self.write_status(api, obj, status).await {
            // The Event said it already; the retry below writes again.
            debug!(kind = A::KIND, object = %obj.key(), error = %err, "could not write the delete's conditions");
        }
        // A Stalled delete still retries slowly so that a fixed key unblocks it without
        // anyone touching the object.
        let delay = if failure.is_permanent() {
            self.shared
                .config
                .stalled_recheck
                .min(Duration::from_secs(300))
        } else {
            self.backoffs.fail(&obj.key(), failure.retry_after)
        };
        Ok(Action::requeue(delay))
    }

    async fn finish(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        annotations: &Annotations,
        outcome: Outcome<A::Remote>,
    ) -> Result<Action, EngineError> {
        let key = obj.key();
        // Publish an Event only when the situation is new, so a failure repeated on every
        // backoff step is one Event, not a stream of them.
        if let Some((reason, warning, message)) = &outcome.event {
            // Ready keeps its reason through retryable failures; Synced carries theirs.
            let seen = [conditions::READY, conditions::SYNCED]
                .into_iter()
                .any(|t| {
                    conditions::find(self.conditions(obj), t)
                        .is_some_and(|c| c.reason == reason.as_str())
                });
            if !seen {
                self.shared
                    .event(obj, *warning, reason, "Reconcile", message.clone())
                    .await;
            }
        }
        let status = self.status_with(
            obj,
            outcome.remote.as_ref(),
            &outcome.verdicts,
            outcome.seen,
            outcome.forget_id,
        );
        self.write_status(api, obj, status).await?;
        self.shared
            .metrics
            .set_ready(A::KIND, &key, Some(outcome.verdicts.ready.status));

        let poll = match &annotations.poll_interval {
            Some(Ok(d)) => *d,
            _ => self.shared.config.poll_interval,
        };
        let policy = self.shared.config.backoff;
        // A time-driven change (a schedule boundary) due before the next regular pass.
        let due = |d: Duration| match self.adapter.due_in(obj, outcome.remote.as_ref()) {
            Some(due) => d.min(due),
            None => d,
        };
        let action = match outcome.requeue {
            Requeue::Poll => {
                self.backoffs.succeed(&key);
                Action::requeue(due(jitter(poll, 0.1)))
            }
            Requeue::Progress => {
                self.backoffs.succeed(&key);
                Action::requeue(due(jitter(
                    self.shared.config.progress_interval.min(poll),
                    0.1,
                )))
            }
            Requeue::Now => Action::requeue(Duration::from_millis(10)),
            Requeue::After(delay) => Action::requeue(delay),
            Requeue::Backoff(at_least) => Action::requeue(self.backoffs.fail(&key, at_least)),
            Requeue::Stalled => {
                Action::requeue(policy.jittered(self.shared.config.stalled_recheck))
            }
        };
        Ok(action)
    }

    fn wrote(&self, obj: &A::Kind) {
        self.last_write.lock().record(obj.key(), Instant::now());
    }

    fn conditions<'a>(&self, obj: &'a A::Kind) -> &'a [conditions::Condition] {
        obj.current_status()
            .map(|s| A::Kind::common(s).conditions.as_slice())
            .unwrap_or(&[])
    }

    fn last_ready(&self, obj: &A::Kind) -> Verdict {
        conditions::last_ready(self.conditions(obj), obj.meta().generation)
    }

    fn status_with(
        &self,
        obj: &A::Kind,
        remote: Option<&A::Remote>,
        verdicts: &Verdicts,
        seen: Seen,
        forget_id: bool,
    ) -> <A::Kind as ManagedKind>::Status {
        let mut status = self.adapter.status(obj, remote, seen);
        let previous = self.conditions(obj).to_vec();
        let generation = obj.meta().generation;
        let now = Time(Timestamp::now());
        let common = A::Kind::common_mut(&mut status);
        common.observed_generation = generation;
        common.conditions = conditions::apply(&previous, verdicts, generation, &now);
        for (type_, verdict) in self.adapter.extra_conditions(obj, remote) {
            let condition = conditions::one(&previous, type_, &verdict, generation, &now);
            common.conditions.push(condition);
        }
        if let Some(r) = remote {
            common.id = Some(A::id(r).to_string());
        } else if forget_id {
            common.id = None;
        } else if common.id.is_none() {
            common.id = Annotations::read(obj.meta().annotations.as_ref()).external_id;
        }
        status
    }

    /// Writes status by server-side apply, only when it changed (the sync time aside).
    async fn write_status(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        mut status: <A::Kind as ManagedKind>::Status,
    ) -> Result<(), EngineError> {
        if let Some(current) = obj.current_status() {
            let mut a = current.clone();
            A::Kind::common_mut(&mut a).last_sync_time = None;
            A::Kind::common_mut(&mut status).last_sync_time = None;
            if a == status {
                return Ok(());
            }
        }
        A::Kind::common_mut(&mut status).last_sync_time = Some(Time(Timestamp::now()));
        let body = json!({
            "apiVersion": gpucloud_crd::api_version(),
            "kind": A::KIND,
            "status": status,
        });
        let written = api
            .patch_status(
                &obj.name_any(),
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(body),
            )
            .await?;
        if let (Some(version), Some(status)) =
            (written.resource_version(), written.current_status())
        {
            self.own_status
                .lock()
                .insert(obj.key(), (version, status.clone()));
        }
        Ok(())
    }

    /// The claim annotation to write with the next write, unless the object is claimed
    /// by this install already.
    fn claim_change(&self, obj: &A::Kind) -> Option<(&'static str, Option<String>)> {
        let mine = obj.annotations().get(ownership::OWNER) == Some(&self.ownership.me);
        (!mine).then(|| (ownership::OWNER, Some(self.ownership.me.clone())))
    }

    /// Claims the object and, with `finalizer`, puts the finalizer on it (an object whose
    /// remote object the operator may delete), if either is missing. A create's marker
    /// carries both; this is for adoptions and ObserveOnly.
    async fn ensure_owned(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        finalizer: bool,
    ) -> Result<(), EngineError> {
        let has_finalizer = obj.finalizers().iter().any(|f| f == FINALIZER);
        let claim: Vec<_> = self.claim_change(obj).into_iter().collect();
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

    /// Removes the finalizer, checked against the version read. `false`: the object
    /// changed since (a 409), and the caller looks again soon (the change may be one the
    /// watch's filter lets pass without a reconcile, such as status).
    async fn release_finalizer(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
    ) -> Result<bool, EngineError> {
        let remaining: Vec<&String> = obj
            .finalizers()
            .iter()
            .filter(|f| *f != FINALIZER)
            .collect();
        let patch = json!({
            "metadata": {
                "resourceVersion": obj.resource_version(),
                "finalizers": remaining,
            }
        });
        match api
            .patch(
                &obj.name_any(),
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Sets (`Some`) or removes (`None`) annotations, and adds `finalizer` if missing, in
    /// one merge patch. With `checked` the patch carries the object's resourceVersion, so
    /// it fails with 409 if the object changed since it was read (which also makes
    /// rewriting the whole finalizer list safe).
    async fn patch_metadata(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        changes: &[(&str, Option<String>)],
        finalizer: Option<&str>,
        checked: bool,
    ) -> Result<A::Kind, kube::Error> {
        let annotations: BTreeMap<&str, Value> = changes
            .iter()
            .map(|(k, v)| {
                (
                    *k,
                    v.as_ref().map_or(Value::Null, |v| Value::String(v.clone())),
                )
            })
            .collect();
        let mut metadata = json!({ "annotations": annotations });
        if let Some(f) = finalizer
            && !obj.finalizers().iter().any(|have| have == f)
        {
            debug_assert!(
                checked,
                "a finalizer list is only rewritten conflict-checked"
            );
            let mut list = obj.finalizers().to_vec();
            list.push(f.to_string());
            metadata["finalizers"] = json!(list);
        }
        if checked {
            metadata["resourceVersion"] = json!(obj.resource_version());
        }
        let patched = api
            .patch(
                &obj.name_any(),
                &PatchParams::default(),
                &Patch::Merge(json!({ "metadata": metadata })),
            )
            .await?;
        if let Some(rv) = patched.resource_version() {
            self.own_writes.lock().insert(obj.key(), rv);
        }
        Ok(patched)
    }
}

/// The object's credentials reference, as a key of `Engine::last_keys`.
fn key_ref<K: ManagedKind>(obj: &K) -> Option<SecretKeyRef> {
    obj.credentials().map(|c| {
        (
            obj.namespace().unwrap_or_default(),
            c.name.clone(),
            c.key.clone(),
        )
    })
}

/// Removal of the annotations that record an id the operator chose in earlier versions.
fn legacy_id_removal() -> Vec<(&'static str, Option<String>)> {
    LEGACY_ID_ANNOTATIONS.iter().map(|a| (*a, None)).collect()
}

/// A short name of a step, for logs.
fn step_name<R>(step: &Step<R>) -> &'static str {
    match step {
        Step::Relist(_) => "relist",
        Step::Manage(_) => "manage",
        Step::Observe(_) => "observe",
        Step::Adopt(..) => "adopt",
        Step::Create => "create",
        Step::WaitForPendingCreate(_) => "wait-for-pending-create",
        Step::Recreate => "recreate",
        Step::Fail(_) => "fail",
    }
}

/// The monotonic instant of a wall-clock time in the past (now, if it is in the future).
fn instant_of(ts: Timestamp) -> Option<Instant> {
    let ago = Timestamp::now().duration_since(ts);
    let ago = Duration::try_from(ago).unwrap_or(Duration::ZERO);
    Instant::now().checked_sub(ago)
}

fn jitter(d: Duration, fraction: f64) -> Duration {
    super::backoff::BackoffPolicy {
        initial: d,
        max: d,
        jitter: fraction,
    }
    .jittered(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: Duration = Duration::from_secs(30);

    #[test]
    fn an_answered_create_of_this_process_settles_when_it_was_answered() {
        let started = Instant::now();
        let marker = Timestamp::now();
        let answered = started + Duration::from_secs(5);
        let own = UnsureCreate {
            marker,
            settled_at: answered,
        };
        assert_eq!(
            pending_settles_at(marker, Some(own), started, TIMEOUT),
            answered
        );
    }

    #[test]
    fn a_marker_left_by_an_earlier_process_waits_for_its_create_to_be_over() {
        let started = Instant::now();
        let marker = Timestamp::now();
        assert_eq!(
            pending_settles_at(marker, None, started, TIMEOUT),
            started + TIMEOUT
        );
        // A record of another create (an older marker) says nothing of this one.
        let older = UnsureCreate {
            marker: marker - jiff_seconds(60),
            settled_at: started,
        };
        assert_eq!(
            pending_settles_at(marker, Some(older), started, TIMEOUT),
            started + TIMEOUT
        );
    }

    fn jiff_seconds(n: i64) -> k8s_openapi::jiff::SignedDuration {
        k8s_openapi::jiff::SignedDuration::from_secs(n)
    }

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

    #[test]
    fn an_object_older_than_our_own_write_is_behind() {
        assert!(seen_predates(Some("100"), "105"));
        assert!(!seen_predates(Some("105"), "105"));
        assert!(!seen_predates(Some("110"), "105"));
        // Not comparable: use what the watch shows.
        assert!(!seen_predates(None, "105"));
        assert!(!seen_predates(Some("abc"), "105"));
        assert!(!seen_predates(Some("100"), "xyz"));
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
