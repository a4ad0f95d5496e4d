//! The elector: one task that takes a Lease when it is free, expired or its own, renews it
//! while it leads, stops leading when it cannot renew in time, and releases it when told
//! to stop. It does what [`Election`] says, and says who leads through a watch channel.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, error, info, warn};

use super::calls::{ElectionError, LeaseCalls, Reachable};
use super::record::{self, Known, Record, TIMING, Timing};
use super::state::{Change, Election, Step};
use crate::app::stop::stopped;
use gpucloud_engine::episode::Episode;

/// How often a run of failed Lease requests is said again.
const REMIND_EVERY: Duration = Duration::from_secs(10);

/// Takes, holds and releases one Lease under one identity.
pub struct Elector {
    calls: LeaseCalls,
    /// `namespace/name`, for the logs.
    lease: String,
    identity: String,
    timing: Timing,
}

/// A started elector.
pub struct Running {
    leading: watch::Receiver<bool>,
    lease_uid: watch::Receiver<Option<String>>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

/// What the elector tells the process: whether it leads, and the UID of the Lease it
/// leads with (sent before `leading` turns true).
struct Signals {
    leading: watch::Sender<bool>,
    lease_uid: watch::Sender<Option<String>>,
}

/// What one turn of the loop came to.
enum Outcome {
    Waited,
    Read(Result<Option<Record>, ElectionError>),
    Wrote {
        result: Result<Record, ElectionError>,
        sent: Instant,
    },
}

impl Elector {
    /// An elector of Lease `namespace/name` for `identity`, telling `reachable` after each
    /// request whether the apiserver answered.
    pub fn new(
        kube: kube::Client,
        namespace: &str,
        name: &str,
        identity: &str,
        reachable: Reachable,
    ) -> Self {
        let leases: Api<Lease> = Api::namespaced(kube, namespace);
        Self {
            calls: LeaseCalls::new(leases, name, reachable),
            lease: format!("{namespace}/{name}"),
            identity: identity.to_string(),
            timing: TIMING,
        }
    }

    /// Starts the elector's task.
    pub fn start(self) -> Running {
        let (leading_tx, leading) = watch::channel(false);
        let (lease_uid_tx, lease_uid) = watch::channel(None);
        let (stop, stop_rx) = watch::channel(false);
        let signals = Signals {
            leading: leading_tx,
            lease_uid: lease_uid_tx,
        };
        let task = tokio::spawn(self.run(signals, stop_rx));
        Running {
            leading,
            lease_uid,
            stop,
            task,
        }
    }

    async fn run(self, signals: Signals, stop: watch::Receiver<bool>) {
        let mut election = Election::new(&self.identity, self.timing, Instant::now());
        let mut failures = Episode::new(REMIND_EVERY);
        let mut terms = 0u64;
        loop {
            let now = Instant::now();
            if let Some(change) = election.tick(now) {
                self.tell(&change, election.known(), &signals, &mut terms);
            }
            let step = election.step(now, Timestamp::now());
            let within = election.request_budget(now);
            let outcome = tokio::select! {
                biased;
                () = stopped(stop.clone()) => break,
                outcome = self.act(step, within) => outcome,
            };
            let now = Instant::now();
            let change = match outcome {
                Outcome::Waited => None,
                Outcome::Read(Ok(read)) => {
                    self.answered(&mut failures, now);
                    election.read(read, now)
                }
                Outcome::Wrote {
                    result: Ok(written),
                    sent,
                } => {
                    self.answered(&mut failures, now);
                    election.wrote(written, sent)
                }
                Outcome::Read(Err(e)) | Outcome::Wrote { result: Err(e), .. } => {
                    if e.changed_under() {
                        debug!(lease = %self.lease, error = %e, "the Lease changed under a write: reading it again");
                        election.refused(now);
                    } else {
                        self.failed(&e, &mut failures, now, election.is_leading());
                        election.failed(now);
                    }
                    None
                }
            };
            if let Some(change) = change {
                self.tell(&change, election.known(), &signals, &mut terms);
            }
        }
        signals.leading.send_replace(false);
        self.release(election.known().clone()).await;
    }

    /// Carries out `step`, each request within `within`.
    async fn act(&self, step: Step, within: Duration) -> Outcome {
        let sent = Instant::now();
        match step {
            Step::Wait(until) => {
                tokio::time::sleep_until(until).await;
                Outcome::Waited
            }
            Step::Read => Outcome::Read(self.calls.read(within).await),
            Step::Create(spec) => Outcome::Wrote {
                result: self.calls.create(spec, within).await,
                sent,
            },
            Step::Write {
                spec,
                resource_version,
            } => Outcome::Wrote {
                result: self
                    .calls
                    .write(&spec, resource_version.as_deref(), within)
                    .await,
                sent,
            },
        }
    }

    /// Says `change`; on leading, first the UID of the Lease as `known` after the write
    /// that took it.
    fn tell(&self, change: &Change, known: &Known, signals: &Signals, terms: &mut u64) {
        let lease = &self.lease;
        let leading = &signals.leading;
        match change {
            Change::Leading => {
                *terms += 1;
                if let Known::Seen { record, .. } = known {
                    signals.lease_uid.send_replace(record.uid.clone());
                }
                leading.send_replace(true);
                if *terms == 1 {
                    info!(identity = %self.identity, %lease, "leading: this process holds the Lease");
                } else {
                    info!(identity = %self.identity, %lease, term = *terms, "leading again: this process holds the Lease");
                }
            }
            Change::SteppedDown { unrenewed_for } => {
                leading.send_replace(false);
                let unrenewed_s = unrenewed_for.as_secs();
                error!(identity = %self.identity, %lease, unrenewed_s,
                    "could not renew the Lease for {unrenewed_s} s: stopped acting, before the Lease can expire for another process");
            }
            Change::Lost { holder } => {
                leading.send_replace(false);
                warn!(identity = %self.identity, %lease, %holder,
                    "another process holds the Lease now: stopped acting");
            }
        }
    }

    fn answered(&self, failures: &mut Episode, now: Instant) {
        if let Some(lasted) = failures.succeeded(now) {
            info!(lease = %self.lease, failed_for_s = lasted.as_secs(), "the apiserver answers about the Lease again");
        }
    }

    fn failed(&self, e: &ElectionError, failures: &mut Episode, now: Instant, leading: bool) {
        let Some(failing_for) = failures.failed(now) else {
            return;
        };
        let failing_for_s = failing_for.as_secs();
        if leading {
            warn!(lease = %self.lease, error = %e, failing_for_s,
                "could not renew the Lease: still leading until the renew deadline");
        } else {
            warn!(lease = %self.lease, error = %e, failing_for_s, "could not read or take the Lease");
        }
    }

    /// Lets go of the Lease if it still names this process (`known`, read again when a
    /// write came between), so that the next process leads at once rather than when the
    /// term would have expired.
    async fn release(&self, mut known: Known) {
        let within = self.timing.request_timeout;
        for _ in 0..2 {
            if known == Known::Unread {
                match self.calls.read(within).await {
                    Ok(read) => known = record::observe(&known, read, Instant::now()),
                    Err(e) => return self.not_released(&e),
                }
            }
            if !record::holds(&known, &self.identity) {
                return;
            }
            let Known::Seen { record, .. } = &known else {
                return;
            };
            let released = record::released(&record.spec);
            let version = record.resource_version.as_deref();
            match self.calls.write(&released, version, within).await {
                Ok(_) => {
                    info!(lease = %self.lease, "released the Lease");
                    return;
                }
                Err(e) if e.changed_under() => known = Known::Unread,
                Err(e) => return self.not_released(&e),
            }
        }
    }

    fn not_released(&self, e: &ElectionError) {
        warn!(lease = %self.lease, error = %e,
            "could not release the Lease: the next process leads when it expires");
    }
}

impl Running {
    /// Whether this process leads, as it changes.
    pub fn leading(&self) -> watch::Receiver<bool> {
        self.leading.clone()
    }

    /// The UID of the Lease this process leads with, known from the write that took it;
    /// `None` before it first leads.
    pub fn lease_uid(&self) -> watch::Receiver<Option<String>> {
        self.lease_uid.clone()
    }

    /// Stops the elector and waits, at most `within`, while it releases the Lease.
    pub async fn release(self, within: Duration) {
        let _ = self.stop.send(true);
        let abort = self.task.abort_handle();
        if tokio::time::timeout(within, self.task).await.is_err() {
            abort.abort();
            warn!(
                within_s = within.as_secs(),
                "could not release the Lease in time: the next process leads when it expires"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::record::Record;
    use super::*;
    use k8s_openapi::api::coordination::v1::LeaseSpec;

    fn elector() -> Elector {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a valid URL"));
        let kube = kube::Client::try_from(config).expect("a client of a static config");
        Elector::new(
            kube,
            "ops",
            "gpucloud-operator",
            "me",
            std::sync::Arc::new(|_| ()),
        )
    }

    #[tokio::test]
    async fn the_leases_uid_is_told_before_leading_is() {
        let elector = elector();
        let (leading_tx, mut leading) = watch::channel(false);
        let (lease_uid_tx, lease_uid) = watch::channel(None);
        let signals = Signals {
            leading: leading_tx,
            lease_uid: lease_uid_tx,
        };
        let known = Known::Seen {
            record: Record {
                spec: LeaseSpec {
                    holder_identity: Some("me".into()),
                    ..LeaseSpec::default()
                },
                resource_version: Some("5".into()),
                uid: Some("0f9a3c2e-1b4e-11d2-883f-0016d3cca427".into()),
            },
            since: Instant::now(),
        };
        let mut terms = 0;
        elector.tell(&Change::Leading, &known, &signals, &mut terms);
        assert!(*leading.borrow_and_update());
        assert_eq!(
            lease_uid.borrow().as_deref(),
            Some("0f9a3c2e-1b4e-11d2-883f-0016d3cca427")
        );
        elector.tell(
            &Change::Lost {
                holder: "other".into(),
            },
            &Known::Unread,
            &signals,
            &mut terms,
        );
        assert!(!*leading.borrow());
        assert_eq!(terms, 1);
    }
}
