//! The elector's state between requests, and what it does next: pure, so that the whole
//! course of an election (take, renew, lose, step down, take back) is unit tested without
//! an apiserver. The I/O loop (`super::elector`) asks [`Election::step`], makes the
//! request, and hands the answer back.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::LeaseSpec;
use k8s_openapi::jiff::Timestamp;
use tokio::time::Instant;

use super::record::{self, Known, Record, Timing, Verdict};

/// The next request, or the wait before it.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Nothing to do before this.
    Wait(Instant),
    /// Read the Lease.
    Read,
    /// Make the Lease with this record.
    Create(LeaseSpec),
    /// Write this record over the version read.
    Write {
        spec: LeaseSpec,
        resource_version: Option<String>,
    },
}

/// A change of who leads, to be told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// This process holds the Lease now.
    Leading,
    /// This process could not renew within the renew deadline and stops leading.
    SteppedDown { unrenewed_for: Duration },
    /// Another process holds the Lease now.
    Lost { holder: String },
}

/// One process's view of the election.
#[derive(Clone, Debug)]
pub struct Election {
    identity: String,
    timing: Timing,
    known: Known,
    /// Whether `known` was read in this round, so that a follower may act on it; otherwise
    /// it reads first.
    fresh: bool,
    /// While leading: when the last successful renew (or the take) was sent.
    renew_sent: Option<Instant>,
    /// No request before this.
    next_at: Instant,
}

impl Election {
    pub fn new(identity: &str, timing: Timing, now: Instant) -> Self {
        Self {
            identity: identity.to_string(),
            timing,
            known: Known::Unread,
            fresh: false,
            renew_sent: None,
            next_at: now,
        }
    }

    pub fn is_leading(&self) -> bool {
        self.renew_sent.is_some()
    }

    /// What is known of the Lease.
    pub fn known(&self) -> &Known {
        &self.known
    }

    /// At `now`: a leader whose renew deadline passed stops leading.
    pub fn tick(&mut self, now: Instant) -> Option<Change> {
        let sent = self.renew_sent?;
        if !record::must_step_down(sent, now, &self.timing) {
            return None;
        }
        self.renew_sent = None;
        self.fresh = false;
        self.next_at = self.next_at.min(now);
        Some(Change::SteppedDown {
            unrenewed_for: now.saturating_duration_since(sent),
        })
    }

    /// What to do at `now` (after [`Self::tick`]), writing `wall` as the time in the
    /// record. A leader's wait ends at its renew deadline at the latest.
    pub fn step(&self, now: Instant, wall: Timestamp) -> Step {
        if now < self.next_at {
            let deadline = self
                .renew_sent
                .map(|sent| sent + self.timing.renew_deadline);
            return Step::Wait(deadline.map_or(self.next_at, |d| d.min(self.next_at)));
        }
        let leading = self.is_leading();
        match &self.known {
            Known::Unread => Step::Read,
            _ if !leading && !self.fresh => Step::Read,
            Known::Absent => Step::Create(record::claim(None, &self.identity, &self.timing, wall)),
            Known::Seen { record, since } => {
                let verdict = record::verdict(record, *since, &self.identity, now, &self.timing);
                if verdict.may_take() {
                    Step::Write {
                        spec: record::claim(Some(&record.spec), &self.identity, &self.timing, wall),
                        resource_version: record.resource_version.clone(),
                    }
                } else {
                    // A read that finds another live holder leaves the record not fresh, so
                    // this is not reached; reading again is the safe answer anyway.
                    Step::Read
                }
            }
        }
    }

    /// How long the request about to be made may take at `now`.
    pub fn request_budget(&self, now: Instant) -> Duration {
        record::request_budget(self.renew_sent, now, &self.timing)
    }

    /// A read answered `read` (`None`: no such Lease) at `now`. Another live holder: wait and
    /// read again (a leader has lost); else act at once.
    pub fn read(&mut self, read: Option<Record>, now: Instant) -> Option<Change> {
        self.known = record::observe(&self.known, read, now);
        let held = match &self.known {
            Known::Seen { record, since } => {
                match record::verdict(record, *since, &self.identity, now, &self.timing) {
                    Verdict::Held { holder, until } => Some((holder, until)),
                    _ => None,
                }
            }
            _ => None,
        };
        let Some((holder, until)) = held else {
            self.fresh = true;
            self.next_at = now;
            return None;
        };
        self.fresh = false;
        self.next_at = until.min(now + self.timing.retry_every);
        self.renew_sent.take().map(|_| Change::Lost { holder })
    }

    /// A create or write of `record`, sent at `sent`, succeeded: this process leads, its
    /// term renewed as of `sent`.
    pub fn wrote(&mut self, record: Record, sent: Instant) -> Option<Change> {
        self.known = Known::Seen {
            record,
            since: sent,
        };
        self.fresh = false;
        self.next_at = sent + self.timing.renew_every;
        let was_leading = self.renew_sent.replace(sent).is_some();
        (!was_leading).then_some(Change::Leading)
    }

    /// A write was refused because someone else wrote first (409) or the Lease went (404):
    /// read again at once, and decide on what is there now.
    pub fn refused(&mut self, now: Instant) {
        self.known = Known::Unread;
        self.fresh = false;
        self.next_at = now;
    }

    /// A request got no answer in time, or one that says nothing of the Lease: try again
    /// after the retry interval (a leader's deadline still runs).
    pub fn failed(&mut self, now: Instant) {
        self.fresh = false;
        self.next_at = now + self.timing.retry_every;
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
