//! Whether the apiserver answers, as the whole process sees it: fed by every watch
//! ([`crate::watch_health`]) and by the Lease's renewals. `/readyz` turns unready once an
//! outage lasts longer than its limit, `gpucloud_apiserver_unreachable` is 1 meanwhile,
//! and the log says when it begins, every [`REMIND_EVERY`] while it lasts, and when it ends.

use std::fmt::Display;
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use tokio::time::Instant;
use tracing::{info, warn};

/// How often a lasting outage is said again in the log.
pub const REMIND_EVERY: Duration = Duration::from_secs(30);

/// Pure: since when the apiserver has not answered, and when that was last said.
#[derive(Debug, Default)]
struct Outage {
    since: Option<Instant>,
    said: Option<Instant>,
}

/// What a change of [`Outage`] asks to say.
#[derive(Debug, PartialEq, Eq)]
enum Say {
    Nothing,
    Began,
    Lasts(Duration),
    Ended(Duration),
}

impl Outage {
    fn answered(&mut self, now: Instant) -> Say {
        self.said = None;
        match self.since.take() {
            Some(since) => Say::Ended(now - since),
            None => Say::Nothing,
        }
    }

    fn unanswered(&mut self, now: Instant) -> Say {
        let Some(since) = self.since else {
            self.since = Some(now);
            self.said = Some(now);
            return Say::Began;
        };
        match self.said {
            Some(said) if now - said < REMIND_EVERY => Say::Nothing,
            _ => {
                self.said = Some(now);
                Say::Lasts(now - since)
            }
        }
    }
}

/// The process's view of the apiserver: fed by every watch and by the Lease's renewals.
#[derive(Debug)]
pub struct ApiserverReach {
    outage: parking_lot::Mutex<Outage>,
    /// `gpucloud_apiserver_unreachable`: 1 during an outage.
    gauge: Gauge,
}

impl ApiserverReach {
    pub fn new(gauge: Gauge) -> Self {
        Self {
            outage: parking_lot::Mutex::new(Outage::default()),
            gauge,
        }
    }

    /// Something the process asked was answered (any HTTP answer).
    pub fn answered(&self) {
        let said = self.outage.lock().answered(Instant::now());
        if let Say::Ended(lasted) = said {
            self.gauge.set(0);
            info!(
                unreachable_s = lasted.as_secs_f64(),
                "the apiserver answers again"
            );
        }
    }

    /// A request got no answer (`what` asked it).
    pub fn unanswered(&self, what: &str, error: &dyn Display) {
        let said = self.outage.lock().unanswered(Instant::now());
        match said {
            Say::Began => {
                self.gauge.set(1);
                warn!(request = what, %error, "the apiserver does not answer");
            }
            Say::Lasts(lasted) => warn!(
                unreachable_s = lasted.as_secs(),
                request = what,
                %error,
                "the apiserver still does not answer"
            ),
            Say::Nothing | Say::Ended(_) => {}
        }
    }

    /// How long nothing has been answered; `None` while the apiserver answers.
    pub fn unreachable_for(&self) -> Option<Duration> {
        self.outage.lock().since.map(|since| since.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outage_is_said_when_it_begins_every_30s_and_when_it_ends() {
        let t0 = Instant::now();
        let mut outage = Outage::default();
        assert_eq!(outage.answered(t0), Say::Nothing);
        assert_eq!(outage.unanswered(t0), Say::Began);
        assert_eq!(outage.unanswered(t0 + Duration::from_secs(3)), Say::Nothing);
        assert_eq!(
            outage.unanswered(t0 + Duration::from_secs(31)),
            Say::Lasts(Duration::from_secs(31))
        );
        assert_eq!(
            outage.unanswered(t0 + Duration::from_secs(40)),
            Say::Nothing
        );
        assert_eq!(
            outage.answered(t0 + Duration::from_secs(45)),
            Say::Ended(Duration::from_secs(45))
        );
        // A new outage starts its own count.
        assert_eq!(outage.unanswered(t0 + Duration::from_secs(50)), Say::Began);
    }
}
