//! Whether the apiserver answers, as the whole process sees it: fed by every watch
//! ([`crate::watch_health`]) and by the Lease's renewals. `/readyz` turns unready once an
//! outage lasts longer than its limit, `gpucloud_apiserver_unreachable` is 1 meanwhile,
//! and the log says when it begins, every [`REMIND_EVERY`] while it lasts, and when it ends.

use std::fmt::Display;
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use tokio::time::Instant;
use tracing::{info, warn};

use super::episode::Episode;

/// How often a lasting outage is said again in the log.
pub const REMIND_EVERY: Duration = Duration::from_secs(30);

/// The process's view of the apiserver: fed by every watch and by the Lease's renewals.
#[derive(Debug)]
pub struct ApiserverReach {
    /// The outage under way, if any: since when, and when it was last said.
    outage: parking_lot::Mutex<Episode>,
    /// `gpucloud_apiserver_unreachable`: 1 during an outage.
    gauge: Gauge,
}

impl ApiserverReach {
    pub fn new(gauge: Gauge) -> Self {
        Self {
            outage: parking_lot::Mutex::new(Episode::new(REMIND_EVERY)),
            gauge,
        }
    }

    /// Something the process asked was answered (any HTTP answer).
    pub fn answered(&self) {
        let ended = self.outage.lock().succeeded(Instant::now());
        if let Some(lasted) = ended {
            self.gauge.set(0);
            info!(
                unreachable_s = lasted.as_secs_f64(),
                "the apiserver answers again"
            );
        }
    }

    /// A request got no answer (`what` asked it).
    pub fn unanswered(&self, what: &str, error: &dyn Display) {
        let said = self.outage.lock().failed(Instant::now());
        match said {
            Some(lasted) if lasted.is_zero() => {
                self.gauge.set(1);
                warn!(request = what, %error, "the apiserver does not answer");
            }
            Some(lasted) => warn!(
                unreachable_s = lasted.as_secs(),
                request = what,
                %error,
                "the apiserver still does not answer"
            ),
            None => {}
        }
    }

    /// How long nothing has been answered; `None` while the apiserver answers.
    pub fn unreachable_for(&self) -> Option<Duration> {
        self.outage.lock().since().map(|since| since.elapsed())
    }
}
