//! The operator's notion of "now" for the guardrails, injectable.
//!
//! Schedules compare wall-clock time with windows; production reads the system clock.
//! Unit tests never read a clock at all (the pure functions take `now` as an argument),
//! and the end-to-end tests give the operator the emulator's clock (which `--time-scale`
//! speeds up and `/_emulator/clock/advance` moves forward), so that a window boundary or
//! an eight-hour `maxRuntime` can be crossed in seconds. `maxRuntime` and `idleStop`
//! count on the platform's own uptime instead, which follows the emulator's clock by
//! itself.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;

/// A source of wall-clock time.
pub trait WallClock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;

    /// Real time that `d` of this clock takes: a clock running N times faster than real
    /// time says `d / N`, so that a requeue meant for a boundary lands on it.
    fn real(&self, d: Duration) -> Duration {
        d
    }
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl WallClock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// The clock the operator runs on; cheap to clone.
#[derive(Clone)]
pub struct Clock(Arc<dyn WallClock>);

impl Clock {
    pub fn new(clock: impl WallClock) -> Self {
        Self(Arc::new(clock))
    }

    pub fn now(&self) -> Timestamp {
        self.0.now()
    }

    pub fn real(&self, d: Duration) -> Duration {
        self.0.real(d)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::new(SystemClock)
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Clock")
    }
}
