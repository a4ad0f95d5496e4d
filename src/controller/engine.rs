//! The managed-resource engine: one reconcile for every kind.
//!
//! A pass reads the object's annotations and policies, the shared listing of remote
//! objects, and decides: adopt, create, change, delete or only report. Creates are
//! crash-safe: a conflict-checked `external-create-pending` annotation is written before
//! the call, and while it stands (after a crash, a timeout or a 5xx) the engine looks the
//! object up by its deterministic name or tag in a listing newer than the marker and
//! adopts it instead of creating a second one.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::{Api, Resource, ResourceExt};
use serde_json::{Value, json};
use tokio::time::Instant;
use tracing::{debug, info, warn};

use crate::crd::{DeletionPolicy, ManagementPolicy};
use crate::observe::snapshot::{Freshness, Listing, Snapshots};
use crate::platform::PlatformClient;

use super::adapter::{Adapter, Plan, Readiness, WhenGone};
use super::annotations::{self as ann, Annotations};
use super::backoff::Backoffs;
use super::conditions::{self, Verdict, Verdicts};
use super::context::{FIELD_MANAGER, FINALIZER, Shared};
use super::credentials::{AccountId, Credentials};
use super::failure::{Failure, FailureClass};
use super::kind::ManagedKind;

/// Errors that end a reconcile early; the controller's error policy requeues them. Platform
/// failures are not among them: they are reported in status and requeued by class.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("Kubernetes API: {0}")]
    Kube(#[from] kube::Error),
    #[error("finalizer: {0}")]
    Finalizer(String),
}

/// The engine for one kind.
pub struct Engine<A: Adapter> {
    pub shared: Arc<Shared>,
    pub adapter: A,
    snapshots: Snapshots<AccountId, A::Remote, crate::platform::PlatformError>,
    backoffs: Backoffs<String>,
    /// When this process last changed each object's remote object: a listing that started
    /// before that would show the old state and lead to the same change again.
    last_write: parking_lot::Mutex<std::collections::HashMap<String, Instant>>,
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
}

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

/// What [`Engine::recover_pending`] found.
enum Recovery<K, R> {
    /// The pass ends with this outcome (adopted, waiting, failed).
    Decided(Box<Outcome<R>>),
    /// The interrupted create made nothing and the marker is gone: create, with the object
    /// as it is now.
    NothingCreated(K),
}

impl<R> Outcome<R> {
    fn failed(failure: Failure, remote: Option<R>, last_ready: Verdict) -> Self {
        let requeue = match failure.class {
            FailureClass::Permanent => Requeue::Stalled,
            FailureClass::Retryable => Requeue::Backoff(failure.retry_after),
            // Waiting on another object in the cluster costs no platform call: look often.
            FailureClass::Waiting => Requeue::Progress,
            FailureClass::Conflict => Requeue::Now,
        };
        let warning = failure.class != FailureClass::Waiting;
        Self {
            remote,
            verdicts: failure.verdicts(last_ready.clone()),
            requeue,
            event: Some((failure.reason.clone(), warning, failure.message.clone())),
            failure: Some((failure, last_ready)),
        }
    }

    /// When the platform refused the key, says which key that was, so that the message
    /// names the Secret to fix.
    fn naming_credentials(self, creds: &Credentials) -> Self {
        match self.failure {
            Some((failure, last_ready)) if failure.is_about_credentials() => Self::failed(
                failure.with_credentials(&creds.source),
                self.remote,
                last_ready,
            ),
            failure => Self { failure, ..self },
        }
    }
}

impl<A: Adapter> Engine<A> {
    pub fn new(shared: Arc<Shared>, adapter: A) -> Self {
        let backoffs = Backoffs::new(shared.config.backoff);
        Self {
            shared,
            adapter,
            snapshots: Snapshots::new(),
            backoffs,
            last_write: Default::default(),
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
    fn settles_at(&self, key: &str, marker: Timestamp) -> Instant {
        let unsure = self.unsure_creates.lock().get(key).copied();
        pending_settles_at(
            marker,
            unsure,
            self.started,
            self.shared.config.create_timeout,
        )
    }

    /// The entry point the controller runs for every object.
    pub async fn reconcile(self: Arc<Self>, obj: Arc<A::Kind>) -> Result<Action, EngineError> {
        let started = std::time::Instant::now();
        self.shared.expire_event_cache();
        let api: Api<A::Kind> = Api::namespaced(
            self.shared.kube.clone(),
            &obj.namespace().unwrap_or_default(),
        );
        let this = self.clone();
        let for_apply = api.clone();
        let result = finalizer(&api, FINALIZER, obj, |event| async move {
            match event {
                FinalizerEvent::Apply(obj) => this.apply(&for_apply, obj).await,
                FinalizerEvent::Cleanup(obj) => this.cleanup(obj).await,
            }
        })
        .await
        .map_err(|e| match e {
            kube::runtime::finalizer::Error::ApplyFailed(e)
            | kube::runtime::finalizer::Error::CleanupFailed(e) => e,
            other => EngineError::Finalizer(other.to_string()),
        });
        let outcome = if result.is_ok() { "ok" } else { "error" };
        self.shared
            .metrics
            .reconciled(A::KIND, outcome, started.elapsed());
        if let Some(age) = self.snapshots.oldest_age() {
            self.shared.metrics.snapshot_age(A::KIND, age);
        }
        result
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
            let status = self.status_with(&obj, None, &verdicts, None);
            self.write_status(api, &obj, status).await?;
            return Ok(Action::await_change());
        }
        // kstatus reads an object without conditions as Current: before anything that may
        // take a while, say that it is not Ready yet.
        let obj = if self.conditions(&obj).is_empty() {
            let verdicts = Verdicts::progressing(
                "Reconciling",
                format!("looking for the {} on the platform", A::NOUN),
            );
            let status = self.status_with(&obj, None, &verdicts, None);
            match self.write_status(api, &obj, status).await? {
                Some(written) => Arc::new(written),
                None => obj,
            }
        } else {
            obj
        };
        let outcome = match self
            .shared
            .credentials
            .resolve(&obj.namespace().unwrap_or_default(), obj.credentials())
            .await
        {
            Ok(creds) => self
                .converge(api, &obj, &annotations, &creds)
                .await?
                .naming_credentials(&creds),
            Err(failure) => Outcome::failed(failure, None, self.last_ready(&obj)),
        };
        self.finish(api, &obj, &annotations, outcome).await
    }

    fn client_for(&self, creds: &Credentials) -> PlatformClient {
        self.shared.platform.with_api_key(creds.key.clone())
    }

    async fn listing(
        &self,
        creds: &Credentials,
        need: Freshness,
    ) -> Result<Arc<Listing<A::Remote>>, Failure> {
        let client = self.client_for(creds);
        self.snapshots
            .get(&creds.account, need, || self.adapter.list(&client))
            .await
            .map_err(|e| Failure::from_platform(&format!("list {}s", A::NOUN), &e))
    }

    /// Freshness a pass needs: see [`listing_need`]; while the object is coming up, a
    /// listing no older than the progress interval, otherwise the poll interval.
    fn freshness(&self, obj: &A::Kind, annotations: &Annotations, progressing: bool) -> Freshness {
        let written = self.last_write.lock().get(&obj.key()).copied();
        let created = annotations.create_succeeded.and_then(instant_of);
        let max_age = if progressing {
            self.shared.config.progress_interval
        } else {
            self.shared.config.poll_interval
        };
        listing_need(written.max(created), max_age, Instant::now())
    }

    async fn converge(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        annotations: &Annotations,
        creds: &Credentials,
    ) -> Result<Outcome<A::Remote>, EngineError> {
        let last_ready = self.last_ready(obj);
        let progressing = conditions::is_true(self.conditions(obj), conditions::RECONCILING);
        let listing = match self
            .listing(creds, self.freshness(obj, annotations, progressing))
            .await
        {
            Ok(l) => l,
            Err(f) => return Ok(Outcome::failed(f, None, last_ready)),
        };
        let observe_only = obj.management_policy() == ManagementPolicy::ObserveOnly;
        // The object as last written, when this pass changed it before creating.
        let mut updated: Option<A::Kind> = None;

        // 1. Find the remote object: by id, or (after a crash) by its name or tag.
        let remote = match &annotations.external_id {
            Some(id) => match listing.items.iter().find(|r| A::id(r) == id) {
                Some(r) => Some(r.clone()),
                None => {
                    // Make sure with a listing newer than this one before calling it gone.
                    let newer = match self
                        .listing(creds, Freshness::StartedAfter(listing.started_at))
                        .await
                    {
                        Ok(l) => l,
                        Err(f) => return Ok(Outcome::failed(f, None, last_ready)),
                    };
                    match newer.items.iter().find(|r| A::id(r) == id) {
                        Some(r) => Some(r.clone()),
                        None => return self.gone(api, obj, id, observe_only, last_ready).await,
                    }
                }
            },
            None => {
                if let Some(marker) = annotations.create_pending {
                    match self
                        .recover_pending(api, obj, creds, marker, last_ready.clone())
                        .await?
                    {
                        Recovery::Decided(outcome) => return Ok(*outcome),
                        Recovery::NothingCreated(obj) => updated = Some(obj),
                    }
                }
                let claimed: Vec<_> = listing
                    .items
                    .iter()
                    .filter(|r| self.adapter.claims(obj, r))
                    .collect();
                match claimed.as_slice() {
                    // A listing newer than this one showed nothing: create.
                    _ if updated.is_some() => None,
                    [] => None,
                    [one] => {
                        let one = (*one).clone();
                        self.record_external_id(api, obj, A::id(&one), "Adopted")
                            .await?;
                        return Ok(Outcome {
                            remote: Some(one),
                            verdicts: Verdicts::progressing(
                                "Adopted",
                                format!("adopted the existing {}", A::NOUN),
                            ),
                            requeue: Requeue::Now,
                            event: None,
                            failure: None,
                        });
                    }
                    many => return Ok(self.ambiguous(many.len(), last_ready)),
                }
            }
        };

        if observe_only {
            return Ok(match remote {
                Some(remote) => self.observed(obj, remote),
                None => Outcome::failed(
                    Failure::permanent(
                        "ExternalNotFound",
                        format!(
                            "managementPolicy is ObserveOnly: set the {} annotation to the id of an existing {}",
                            ann::EXTERNAL_ID,
                            A::NOUN
                        ),
                    ),
                    None,
                    last_ready,
                ),
            });
        }

        let obj = updated.as_ref().unwrap_or(obj);

        // 2. Resolve the spec (Secrets, dependencies).
        let desired = match self.adapter.desired(&self.shared, obj).await {
            Ok(d) => d,
            Err(f) => return Ok(Outcome::failed(f, remote, last_ready)),
        };

        // 3. Create, or bring the existing object in line.
        let client = self.client_for(creds);
        let Some(remote) = remote else {
            let attempt = CreateAttempt {
                generation: obj.meta().generation,
                account: creds.account,
            };
            if let Some(failure) = self.refused_before(obj, attempt) {
                return Ok(Outcome::failed(failure, None, last_ready));
            }
            return self
                .create(api, obj, &client, &desired, last_ready, attempt)
                .await;
        };
        match self.adapter.plan(obj, &desired, &remote) {
            Plan::UpToDate => {
                let mut remote = remote;
                let ready = matches!(
                    self.adapter.readiness(obj, &remote),
                    Readiness::Ready { .. }
                );
                let synced = match ready {
                    true => {
                        self.adapter
                            .after_sync(&self.shared, &client, obj, &mut remote)
                            .await
                    }
                    false => Ok(()),
                };
                if let Err(f) = synced {
                    return Ok(Outcome::failed(f, Some(remote), last_ready));
                }
                Ok(self.observed(obj, remote))
            }
            Plan::Blocked(failure) => Ok(Outcome::failed(failure, Some(remote), last_ready)),
            Plan::Update(changes) => {
                for change in &changes {
                    if let Err(f) = self.adapter.apply(&client, &remote, change).await {
                        // The remote object is known not to match the spec (a pod stopped
                        // out of band that cannot resume): not Ready, as a change that
                        // went through would not be either until the next listing.
                        let not_ready = Verdict::no(f.reason.clone(), f.message.clone());
                        return Ok(Outcome::failed(f, Some(remote), not_ready));
                    }
                    let note = self.adapter.describe(change);
                    info!(kind = A::KIND, object = %obj.key(), id = A::id(&remote), change = %note, "updated");
                    self.shared
                        .event(obj, false, "Updated", "Update", note)
                        .await;
                }
                self.wrote(obj);
                // The listing predates the change: show the change as under way and
                // read a fresh listing on the next pass.
                Ok(Outcome {
                    remote: Some(remote),
                    verdicts: Verdicts::progressing("Updating", format!("updated the {}", A::NOUN)),
                    requeue: Requeue::Progress,
                    event: None,
                    failure: None,
                })
            }
            Plan::Replace { reason } => {
                let id = A::id(&remote).to_string();
                if let Err(e) = self.adapter.delete(&client, &id).await {
                    let f = Failure::from_platform(
                        &format!("delete the {} to replace it", A::NOUN),
                        &e,
                    );
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
                self.patch_annotations(
                    api,
                    obj,
                    &[(ann::EXTERNAL_ID, None), (ann::CREATE_SUCCEEDED, None)],
                    false,
                )
                .await?;
                Ok(Outcome {
                    remote: None,
                    verdicts: Verdicts::progressing("Replacing", reason),
                    requeue: Requeue::Now,
                    event: None,
                    failure: None,
                })
            }
        }
    }

    /// An up-to-date remote object: Ready, or still coming up.
    fn observed(&self, obj: &A::Kind, remote: A::Remote) -> Outcome<A::Remote> {
        match self.adapter.readiness(obj, &remote) {
            Readiness::Ready { message } => Outcome {
                remote: Some(remote),
                verdicts: Verdicts::converged(message),
                requeue: Requeue::Poll,
                event: None,
                failure: None,
            },
            Readiness::Progressing { reason, message } => Outcome {
                remote: Some(remote),
                verdicts: Verdicts::progressing(reason, message),
                requeue: Requeue::Progress,
                event: None,
                failure: None,
            },
        }
    }

    fn ambiguous(&self, count: usize, last_ready: Verdict) -> Outcome<A::Remote> {
        let f = Failure::permanent(
            "AmbiguousExternalObject",
            format!(
                "{count} {}s carry this object's name; set the {} annotation to the one to manage",
                A::NOUN,
                ann::EXTERNAL_ID
            ),
        );
        Outcome::failed(f, None, last_ready)
    }

    async fn gone(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        id: &str,
        observe_only: bool,
        last_ready: Verdict,
    ) -> Result<Outcome<A::Remote>, EngineError> {
        let adopted_by_user = Annotations::read(obj.meta().annotations.as_ref())
            .create_succeeded
            .is_none()
            && self.status_id(obj).as_deref() != Some(id);
        if observe_only || adopted_by_user || self.adapter.when_gone(obj) == WhenGone::Report {
            let f = Failure::permanent(
                "ExternalNotFound",
                format!(
                    "{} {id} named by {} does not exist on the platform",
                    A::NOUN,
                    ann::EXTERNAL_ID
                ),
            );
            return Ok(Outcome::failed(f, None, last_ready));
        }
        // Deleted out of band: forget it, and the next pass creates it again.
        self.patch_annotations(
            api,
            obj,
            &[(ann::EXTERNAL_ID, None), (ann::CREATE_SUCCEEDED, None)],
            false,
        )
        .await?;
        let message = format!(
            "{} {id} was deleted outside the operator; creating it again",
            A::NOUN
        );
        Ok(Outcome {
            remote: None,
            verdicts: Verdicts::progressing("Recreating", message.clone()),
            requeue: Requeue::Now,
            event: Some(("ExternalDeleted".to_string(), true, message)),
            failure: None,
        })
    }

    /// After an interrupted create (a crash, a timeout, a 5xx): adopt what the create made,
    /// or, once a listing newer than anything the create can have done shows nothing, clear
    /// the marker so that this pass creates.
    async fn recover_pending(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        creds: &Credentials,
        marker: Timestamp,
        last_ready: Verdict,
    ) -> Result<Recovery<A::Kind, A::Remote>, EngineError> {
        let key = obj.key();
        let settled_at = self.settles_at(&key, marker);
        let now = Instant::now();
        // Anything the create made is in a listing newer than the marker; only its absence
        // must wait until the create can no longer land.
        let need = if settled_at <= now {
            Freshness::StartedAfter(settled_at)
        } else {
            Freshness::StartedAfter(instant_of(marker).unwrap_or(now))
        };
        let listing = match self.listing(creds, need).await {
            Ok(l) => l,
            Err(f) => {
                return Ok(Recovery::Decided(Box::new(Outcome::failed(
                    f, None, last_ready,
                ))));
            }
        };
        let claimed: Vec<_> = listing
            .items
            .iter()
            .filter(|r| self.adapter.claims(obj, r))
            .collect();
        match claimed.as_slice() {
            [] if settled_at > now => {
                let wait = settled_at - now;
                Ok(Recovery::Decided(Box::new(Outcome {
                    remote: None,
                    verdicts: Verdicts::progressing(
                        "CreatePending",
                        format!(
                            "an earlier create of the {} may still be under way; looking for it again in {}s before creating",
                            A::NOUN,
                            wait.as_secs().max(1)
                        ),
                    ),
                    requeue: Requeue::After(wait + Duration::from_millis(100)),
                    event: None,
                    failure: None,
                })))
            }
            [] => {
                // Nothing was created: this pass may create, with the object as updated.
                let updated = self
                    .patch_annotations(api, obj, &[(ann::CREATE_PENDING, None)], true)
                    .await?;
                self.unsure_creates.lock().remove(&key);
                info!(kind = A::KIND, object = %key, "an earlier create made nothing; creating");
                Ok(Recovery::NothingCreated(updated))
            }
            [one] => {
                let one = (*one).clone();
                self.record_external_id(api, obj, A::id(&one), "AdoptedAfterInterruptedCreate")
                    .await?;
                self.unsure_creates.lock().remove(&key);
                Ok(Recovery::Decided(Box::new(Outcome {
                    remote: Some(one),
                    verdicts: Verdicts::progressing(
                        "Adopted",
                        format!("found the {} an interrupted create made", A::NOUN),
                    ),
                    requeue: Requeue::Now,
                    event: None,
                    failure: None,
                })))
            }
            many => Ok(Recovery::Decided(Box::new(
                self.ambiguous(many.len(), last_ready),
            ))),
        }
    }

    async fn create(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        client: &PlatformClient,
        desired: &A::Desired,
        last_ready: Verdict,
        attempt: CreateAttempt,
    ) -> Result<Outcome<A::Remote>, EngineError> {
        // The marker must be in etcd before the platform hears of the create; a conflict
        // means another pass (or replica) moved first.
        let marker = Timestamp::now();
        match self
            .patch_annotations(
                api,
                obj,
                &[(ann::CREATE_PENDING, Some(marker.to_string()))],
                true,
            )
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {
                return Ok(Outcome {
                    remote: None,
                    verdicts: Verdicts::progressing("Creating", "the object changed; retrying"),
                    requeue: Requeue::Now,
                    event: None,
                    failure: None,
                });
            }
            Err(e) => return Err(e.into()),
        }
        match self.adapter.create(client, obj, desired).await {
            Ok(remote) => {
                self.wrote(obj);
                let id = A::id(&remote).to_string();
                info!(kind = A::KIND, object = %obj.key(), id = %id, "created");
                self.patch_annotations(
                    api,
                    obj,
                    &[
                        (ann::EXTERNAL_ID, Some(id.clone())),
                        (ann::CREATE_SUCCEEDED, Some(Timestamp::now().to_string())),
                        (ann::CREATE_PENDING, None),
                    ],
                    false,
                )
                .await?;
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
                let mut remote = remote;
                if matches!(
                    self.adapter.readiness(obj, &remote),
                    Readiness::Ready { .. }
                ) && let Err(f) = self
                    .adapter
                    .after_sync(&self.shared, client, obj, &mut remote)
                    .await
                {
                    return Ok(Outcome::failed(f, Some(remote), last_ready));
                }
                let outcome = self.observed(obj, remote);
                Ok(Outcome {
                    requeue: Requeue::Progress,
                    ..outcome
                })
            }
            Err(failed) if failed.maybe_created => {
                // Keep the marker: the next pass looks the object up before anything else,
                // in a listing that started after the create can have landed.
                let settled_at = if failed.answered {
                    Instant::now()
                } else {
                    Instant::now() + self.shared.config.create_timeout
                };
                self.unsure_creates
                    .lock()
                    .insert(obj.key(), UnsureCreate { marker, settled_at });
                warn!(kind = A::KIND, object = %obj.key(), error = %failed.failure, "create may have happened; will look it up");
                Ok(Outcome::failed(failed.failure, None, last_ready))
            }
            Err(failed) => {
                self.patch_annotations(api, obj, &[(ann::CREATE_PENDING, None)], false)
                    .await?;
                if failed.failure.is_permanent() {
                    self.refused_creates.lock().insert(
                        obj.key(),
                        RefusedCreate {
                            attempt,
                            at: Instant::now(),
                            failure: failed.failure.clone(),
                        },
                    );
                }
                Ok(Outcome::failed(failed.failure, None, last_ready))
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

    async fn cleanup(&self, obj: Arc<A::Kind>) -> Result<Action, EngineError> {
        let key = obj.key();
        self.last_write.lock().remove(&key);
        self.refused_creates.lock().remove(&key);
        self.own_status.lock().remove(&key);
        self.shared.metrics.set_ready(A::KIND, &key, None);
        self.backoffs.succeed(&key);
        let annotations = Annotations::read(obj.meta().annotations.as_ref());
        let keep = obj.deletion_policy() == DeletionPolicy::Orphan
            || obj.management_policy() == ManagementPolicy::ObserveOnly
            || annotations.paused;
        if keep {
            if let Some(id) = annotations.external_id.as_deref() {
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
            return Ok(Action::await_change());
        }
        let creds = match self
            .shared
            .credentials
            .resolve(&obj.namespace().unwrap_or_default(), obj.credentials())
            .await
        {
            Ok(c) => c,
            Err(f) => return self.cleanup_failed(&obj, f).await,
        };
        let client = self.client_for(&creds);
        // Every id this object may own: the recorded one and, after an interrupted create,
        // any object carrying its name or tag.
        let mut ids: Vec<String> = annotations.external_id.iter().cloned().collect();
        if let Some(pending) = annotations.create_pending {
            // A create that may still land would be left behind by a delete now.
            let settled_at = self.settles_at(&key, pending);
            let now = Instant::now();
            if settled_at > now {
                return Ok(Action::requeue(
                    settled_at - now + Duration::from_millis(100),
                ));
            }
            match self
                .listing(&creds, Freshness::StartedAfter(settled_at))
                .await
            {
                Ok(listing) => ids.extend(
                    listing
                        .items
                        .iter()
                        .filter(|r| self.adapter.claims(&obj, r))
                        .map(|r| A::id(r).to_string()),
                ),
                Err(f) => {
                    return self
                        .cleanup_failed(&obj, f.with_credentials(&creds.source))
                        .await;
                }
            }
        }
        ids.sort();
        ids.dedup();
        self.unsure_creates.lock().remove(&key);
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
                Err(e) if e.class() == crate::platform::ErrorClass::NotFound => {
                    debug!(kind = A::KIND, object = %key, id = %id, "already gone");
                }
                Err(e) => {
                    let f = Failure::from_platform(&format!("delete {} {id}", A::NOUN), &e)
                        .with_credentials(&creds.source);
                    return self.cleanup_failed(&obj, f).await;
                }
            }
        }
        Ok(Action::await_change())
    }

    /// A delete that could not finish keeps the finalizer; say why and retry with backoff.
    async fn cleanup_failed(&self, obj: &A::Kind, failure: Failure) -> Result<Action, EngineError> {
        let reason = format!("Delete{}", failure.reason);
        self.shared
            .event(obj, true, &reason, "Delete", failure.message.clone())
            .await;
        // Finalizer errors requeue through the error policy; a Stalled delete still retries
        // slowly so that a fixed key unblocks it without anyone touching the object.
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
                    conditions::find(self.conditions(obj), t).is_some_and(|c| c.reason == *reason)
                });
            if !seen {
                self.shared
                    .event(obj, *warning, reason, "Reconcile", message.clone())
                    .await;
            }
        }
        let status = self.status_with(obj, outcome.remote.as_ref(), &outcome.verdicts, None);
        self.write_status(api, obj, status).await?;
        self.shared
            .metrics
            .set_ready(A::KIND, &key, Some(outcome.verdicts.ready.status));

        let poll = match &annotations.poll_interval {
            Some(Ok(d)) => *d,
            _ => self.shared.config.poll_interval,
        };
        let policy = self.shared.config.backoff;
        let action = match outcome.requeue {
            Requeue::Poll => {
                self.backoffs.succeed(&key);
                Action::requeue(jitter(poll, 0.1))
            }
            Requeue::Progress => {
                self.backoffs.succeed(&key);
                Action::requeue(jitter(self.shared.config.progress_interval.min(poll), 0.1))
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
        self.last_write.lock().insert(obj.key(), Instant::now());
    }

    fn conditions<'a>(
        &self,
        obj: &'a A::Kind,
    ) -> &'a [k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition] {
        obj.current_status()
            .map(|s| A::Kind::common(s).conditions.as_slice())
            .unwrap_or(&[])
    }

    fn last_ready(&self, obj: &A::Kind) -> Verdict {
        conditions::last_ready(self.conditions(obj), obj.meta().generation)
    }

    fn status_id(&self, obj: &A::Kind) -> Option<String> {
        obj.current_status()
            .and_then(|s| A::Kind::common(s).id.clone())
    }

    fn status_with(
        &self,
        obj: &A::Kind,
        remote: Option<&A::Remote>,
        verdicts: &Verdicts,
        now: Option<Time>,
    ) -> <A::Kind as ManagedKind>::Status {
        // Without a remote object the adapter decides what to keep of what was last
        // reported (the trait's contract: `status` takes an `Option`).
        let mut status = self.adapter.status(&self.shared, obj, remote);
        let previous = self.conditions(obj).to_vec();
        let generation = obj.meta().generation;
        let now = now.unwrap_or_else(|| Time(Timestamp::now()));
        let common = A::Kind::common_mut(&mut status);
        common.observed_generation = generation;
        common.conditions = conditions::apply(&previous, verdicts, generation, &now);
        if let Some(r) = remote {
            common.id = Some(A::id(r).to_string());
        } else if common.id.is_none() {
            common.id = Annotations::read(obj.meta().annotations.as_ref()).external_id;
        }
        status
    }

    /// Writes status by server-side apply, only when it changed (the sync time aside).
    /// Returns the object as written, or `None` when nothing needed writing.
    async fn write_status(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        mut status: <A::Kind as ManagedKind>::Status,
    ) -> Result<Option<A::Kind>, EngineError> {
        if let Some(current) = obj.current_status() {
            let mut a = current.clone();
            A::Kind::common_mut(&mut a).last_sync_time = None;
            A::Kind::common_mut(&mut status).last_sync_time = None;
            if a == status {
                return Ok(None);
            }
        }
        A::Kind::common_mut(&mut status).last_sync_time = Some(Time(Timestamp::now()));
        let body = json!({
            "apiVersion": crate::crd::api_version(),
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
        Ok(Some(written))
    }

    async fn record_external_id(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        id: &str,
        reason: &str,
    ) -> Result<(), EngineError> {
        self.patch_annotations(
            api,
            obj,
            &[
                (ann::EXTERNAL_ID, Some(id.to_string())),
                (ann::CREATE_PENDING, None),
            ],
            false,
        )
        .await?;
        info!(kind = A::KIND, object = %obj.key(), id, reason, "adopted");
        self.shared
            .event(
                obj,
                false,
                reason,
                "Adopt",
                format!("adopted existing {} {id}", A::NOUN),
            )
            .await;
        Ok(())
    }

    /// Sets (`Some`) or removes (`None`) annotations by merge patch. With `checked` the
    /// patch carries the object's resourceVersion, so it fails with 409 if the object
    /// changed since it was read.
    async fn patch_annotations(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        changes: &[(&str, Option<String>)],
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
        if checked {
            metadata["resourceVersion"] = json!(obj.resource_version());
        }
        api.patch(
            &obj.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": metadata })),
        )
        .await
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
