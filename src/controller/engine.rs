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
    snapshots: Snapshots<AccountId, A::Remote>,
    backoffs: Backoffs<String>,
    /// When this process last changed each object's remote object: a listing that started
    /// before that would show the old state and lead to the same change again.
    last_write: parking_lot::Mutex<std::collections::HashMap<String, Instant>>,
    /// Writes the platform refused for good, by object: not sent again until the spec,
    /// the annotations or the key change (or the stalled recheck passes). Without this,
    /// the annotation churn of a failed create would trigger the same create forever.
    refused: parking_lot::Mutex<std::collections::HashMap<String, Refusal>>,
}

/// A permanent refusal and what it was a refusal of.
struct Refusal {
    fingerprint: u64,
    at: Instant,
    failure: Failure,
}

/// What a pass decided, before status is written.
struct Outcome<R> {
    remote: Option<R>,
    /// The failure behind this outcome, if it is one.
    failure: Option<Failure>,
    verdicts: Verdicts,
    requeue: Requeue,
    /// An Event to publish when this outcome is new (reason, warning, message).
    event: Option<(String, bool, String)>,
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
    /// Only when something changes (or after the long stalled recheck).
    Stalled,
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
            verdicts: failure.verdicts(last_ready),
            requeue,
            event: Some((failure.reason.clone(), warning, failure.message.clone())),
            failure: Some(failure),
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
            refused: Default::default(),
        }
    }

    /// The entry point the controller runs for every object.
    pub async fn reconcile(self: Arc<Self>, obj: Arc<A::Kind>) -> Result<Action, EngineError> {
        let started = std::time::Instant::now();
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
        let outcome = match self
            .shared
            .credentials
            .resolve(&obj.namespace().unwrap_or_default(), obj.credentials())
            .await
        {
            Ok(creds) => self.converge(api, &obj, &annotations, &creds).await?,
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

    /// Freshness a pass needs: a listing no older than the poll interval, and newer than
    /// this object's last confirmed create (a listing from before it would not show it).
    fn freshness(&self, obj: &A::Kind, annotations: &Annotations, progressing: bool) -> Freshness {
        let written = self.last_write.lock().get(&obj.key()).copied();
        let created = annotations.create_succeeded.and_then(instant_of);
        if let Some(after) = written
            .max(created)
            .filter(|after| after.elapsed() < self.shared.config.poll_interval)
        {
            return Freshness::StartedAfter(after);
        }
        let max_age = if progressing {
            self.shared.config.progress_interval
        } else {
            self.shared.config.poll_interval
        };
        Freshness::MaxAge(max_age)
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
                if annotations.create_pending.is_some() {
                    // A create may have happened without us learning its id: only a
                    // listing that started after the marker can tell.
                    let after = annotations
                        .create_pending
                        .and_then(instant_of)
                        .unwrap_or_else(Instant::now);
                    let fresh = match self.listing(creds, Freshness::StartedAfter(after)).await {
                        Ok(l) => l,
                        Err(f) => return Ok(Outcome::failed(f, None, last_ready)),
                    };
                    return self.recover_pending(api, obj, &fresh, last_ready).await;
                }
                let claimed: Vec<_> = listing
                    .items
                    .iter()
                    .filter(|r| self.adapter.claims(obj, r))
                    .collect();
                match claimed.as_slice() {
                    [] => None,
                    [one] => {
                        let one = (*one).clone();
                        self.record_external_id(api, obj, A::id(&one), "Adopted")
                            .await?;
                        return Ok(Outcome {
                            failure: None,
                            remote: Some(one),
                            verdicts: Verdicts::progressing(
                                "Adopted",
                                format!("adopted the existing {}", A::NOUN),
                            ),
                            requeue: Requeue::Now,
                            event: None,
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

        // 2. Resolve the spec (Secrets, dependencies).
        let desired = match self.adapter.desired(&self.shared, obj).await {
            Ok(d) => d,
            Err(f) => return Ok(Outcome::failed(f, remote, last_ready)),
        };

        // 3. Create, or bring the existing object in line.
        let client = self.client_for(creds);
        let fingerprint = write_fingerprint(obj, creds.account);
        if let Some(failure) = self.still_refused(obj, fingerprint) {
            return Ok(Outcome::failed(failure, remote, last_ready));
        }
        let Some(remote) = remote else {
            let outcome = self.create(api, obj, &client, &desired, last_ready).await?;
            self.remember_refusal(obj, fingerprint, &outcome);
            return Ok(outcome);
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
                        let outcome = Outcome::failed(f, Some(remote), last_ready);
                        self.remember_refusal(obj, fingerprint, &outcome);
                        return Ok(outcome);
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
                    failure: None,
                    remote: Some(remote),
                    verdicts: Verdicts::progressing("Updating", format!("updated the {}", A::NOUN)),
                    requeue: Requeue::Progress,
                    event: None,
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
                    failure: None,
                    remote: None,
                    verdicts: Verdicts::progressing("Replacing", reason),
                    requeue: Requeue::Now,
                    event: None,
                })
            }
        }
    }

    /// An up-to-date remote object: Ready, or still coming up.
    fn observed(&self, obj: &A::Kind, remote: A::Remote) -> Outcome<A::Remote> {
        match self.adapter.readiness(obj, &remote) {
            Readiness::Ready { message } => Outcome {
                failure: None,
                remote: Some(remote),
                verdicts: Verdicts::converged(message),
                requeue: Requeue::Poll,
                event: None,
            },
            Readiness::Progressing { reason, message } => Outcome {
                failure: None,
                remote: Some(remote),
                verdicts: Verdicts::progressing(reason, message),
                requeue: Requeue::Progress,
                event: None,
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
            failure: None,
            remote: None,
            verdicts: Verdicts::progressing("Recreating", message.clone()),
            requeue: Requeue::Now,
            event: Some(("ExternalDeleted".to_string(), true, message)),
        })
    }

    /// After an interrupted create: adopt what the create made, or clear the marker.
    async fn recover_pending(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        listing: &Listing<A::Remote>,
        last_ready: Verdict,
    ) -> Result<Outcome<A::Remote>, EngineError> {
        let claimed: Vec<_> = listing
            .items
            .iter()
            .filter(|r| self.adapter.claims(obj, r))
            .collect();
        match claimed.as_slice() {
            [] => {
                // Nothing was created: the next pass may create.
                self.patch_annotations(api, obj, &[(ann::CREATE_PENDING, None)], true)
                    .await?;
                Ok(Outcome {
                    failure: None,
                    remote: None,
                    verdicts: Verdicts::progressing(
                        "Creating",
                        format!(
                            "an earlier create of the {} did not happen; trying again",
                            A::NOUN
                        ),
                    ),
                    requeue: Requeue::Now,
                    event: None,
                })
            }
            [one] => {
                let one = (*one).clone();
                self.record_external_id(api, obj, A::id(&one), "AdoptedAfterInterruptedCreate")
                    .await?;
                Ok(Outcome {
                    failure: None,
                    remote: Some(one),
                    verdicts: Verdicts::progressing(
                        "Adopted",
                        format!("found the {} an interrupted create made", A::NOUN),
                    ),
                    requeue: Requeue::Now,
                    event: None,
                })
            }
            many => Ok(self.ambiguous(many.len(), last_ready)),
        }
    }

    async fn create(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        client: &PlatformClient,
        desired: &A::Desired,
        last_ready: Verdict,
    ) -> Result<Outcome<A::Remote>, EngineError> {
        // The marker must be in etcd before the platform hears of the create; a conflict
        // means another pass (or replica) moved first.
        let now = Timestamp::now().to_string();
        match self
            .patch_annotations(api, obj, &[(ann::CREATE_PENDING, Some(now))], true)
            .await
        {
            Ok(()) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {
                return Ok(Outcome {
                    failure: None,
                    remote: None,
                    verdicts: Verdicts::progressing("Creating", "the object changed; retrying"),
                    requeue: Requeue::Now,
                    event: None,
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
                let outcome = self.observed(obj, remote);
                Ok(Outcome {
                    requeue: Requeue::Progress,
                    ..outcome
                })
            }
            Err(failed) if failed.maybe_created => {
                // Keep the marker: the next pass looks the object up before anything else.
                warn!(kind = A::KIND, object = %obj.key(), error = %failed.failure, "create may have happened; will look it up");
                Ok(Outcome::failed(failed.failure, None, last_ready))
            }
            Err(failed) => {
                self.patch_annotations(api, obj, &[(ann::CREATE_PENDING, None)], false)
                    .await?;
                Ok(Outcome::failed(failed.failure, None, last_ready))
            }
        }
    }

    async fn cleanup(&self, obj: Arc<A::Kind>) -> Result<Action, EngineError> {
        let key = obj.key();
        self.last_write.lock().remove(&key);
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
            let after = instant_of(pending).unwrap_or_else(Instant::now);
            match self.listing(&creds, Freshness::StartedAfter(after)).await {
                Ok(listing) => ids.extend(
                    listing
                        .items
                        .iter()
                        .filter(|r| self.adapter.claims(&obj, r))
                        .map(|r| A::id(r).to_string()),
                ),
                Err(f) => return self.cleanup_failed(&obj, f).await,
            }
        }
        ids.sort();
        ids.dedup();
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
                    let f = Failure::from_platform(&format!("delete {} {id}", A::NOUN), &e);
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
            Requeue::Backoff(at_least) => Action::requeue(self.backoffs.fail(&key, at_least)),
            Requeue::Stalled => {
                Action::requeue(policy.jittered(self.shared.config.stalled_recheck))
            }
        };
        Ok(action)
    }

    /// The refusal still standing for this object, if nothing it depended on changed.
    fn still_refused(&self, obj: &A::Kind, fingerprint: u64) -> Option<Failure> {
        let mut refused = self.refused.lock();
        let key = obj.key();
        match refused.get(&key) {
            Some(r)
                if r.fingerprint == fingerprint
                    && r.at.elapsed() < self.shared.config.stalled_recheck =>
            {
                Some(r.failure.clone())
            }
            Some(_) => {
                refused.remove(&key);
                None
            }
            None => None,
        }
    }

    fn remember_refusal(&self, obj: &A::Kind, fingerprint: u64, outcome: &Outcome<A::Remote>) {
        let mut refused = self.refused.lock();
        match &outcome.failure {
            Some(f) if f.is_permanent() => {
                refused.insert(
                    obj.key(),
                    Refusal {
                        fingerprint,
                        at: Instant::now(),
                        failure: f.clone(),
                    },
                );
            }
            _ => {
                refused.remove(&obj.key());
            }
        }
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
        conditions::last_ready(self.conditions(obj))
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
            "apiVersion": crate::crd::api_version(),
            "kind": A::KIND,
            "status": status,
        });
        api.patch_status(
            &obj.name_any(),
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(body),
        )
        .await?;
        Ok(())
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
    ) -> Result<(), kube::Error> {
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
        .await?;
        Ok(())
    }
}

/// What a refused write depended on: the spec (generation), the annotations and the key.
fn write_fingerprint<K: ManagedKind>(obj: &K, account: AccountId) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    obj.meta().generation.hash(&mut h);
    let mut annotations: Vec<_> = obj
        .annotations()
        .iter()
        .filter(|(k, _)| k.as_str() != ann::CREATE_PENDING && k.as_str() != ann::CREATE_SUCCEEDED)
        .collect();
    annotations.sort();
    annotations.hash(&mut h);
    account.hash(&mut h);
    h.finish()
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
