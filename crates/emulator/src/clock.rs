//! The emulator's clock.
//!
//! Every duration of the spec (TTL, retention, execution timeout, webhook retry spacing,
//! rate-limit windows, worker idle timeout, pod boot) is measured on this clock, never on the
//! wall clock, so that `--time-scale N` makes all of them pass N times sooner while requests
//! are still validated in the spec's units. Tests can also jump the clock forward
//! ([`Clock::advance`]); sleepers wake up and re-check their deadline when that happens.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use jiff::{SignedDuration, Timestamp};
use tokio::sync::Notify;

/// Emulated milliseconds since the emulator started.
pub type Millis = u64;

/// A scalable, advanceable clock. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Clock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    started: Instant,
    started_wall: Timestamp,
    scale: f64,
    /// Milliseconds added by [`Clock::advance`].
    offset_ms: AtomicU64,
    advanced: Notify,
}

impl Clock {
    /// A clock running `scale` times faster than real time (values <= 0 are treated as 1).
    pub fn new(scale: f64) -> Self {
        let scale = if scale.is_finite() && scale > 0.0 {
            scale
        } else {
            1.0
        };
        Self {
            inner: Arc::new(Inner {
                started: Instant::now(),
                started_wall: Timestamp::now(),
                scale,
                offset_ms: AtomicU64::new(0),
                advanced: Notify::new(),
            }),
        }
    }

    pub fn scale(&self) -> f64 {
        self.inner.scale
    }

    /// Emulated milliseconds since start.
    pub fn now(&self) -> Millis {
        let real = self.inner.started.elapsed().as_secs_f64() * 1000.0;
        (real * self.inner.scale) as u64 + self.inner.offset_ms.load(Ordering::Relaxed)
    }

    /// Emulated wall-clock time, for timestamps shown to clients.
    pub fn wall(&self) -> Timestamp {
        self.wall_at(self.now())
    }

    /// Emulated wall-clock time of an emulated instant.
    pub fn wall_at(&self, at: Millis) -> Timestamp {
        self.inner
            .started_wall
            .saturating_add(SignedDuration::from_millis(at as i64))
            .expect("a duration without calendar units")
    }

    /// Emulated milliseconds of a wall-clock instant (negative: before the emulator ran).
    pub fn emulated_at(&self, t: Timestamp) -> i64 {
        t.duration_since(self.inner.started_wall).as_millis() as i64
    }

    /// Jumps the clock forward and wakes every sleeper so it re-checks its deadline.
    pub fn advance(&self, ms: Millis) {
        self.inner.offset_ms.fetch_add(ms, Ordering::Relaxed);
        self.inner.advanced.notify_waiters();
    }

    /// Real time that `ms` emulated milliseconds take.
    pub fn real_duration(&self, ms: Millis) -> Duration {
        Duration::from_secs_f64(ms as f64 / 1000.0 / self.inner.scale)
    }

    /// Sleeps until the emulated instant `deadline`.
    pub async fn sleep_until(&self, deadline: Millis) {
        loop {
            // Register for advance notifications before reading the time, so an advance
            // between the read and the sleep is not missed.
            let advanced = self.inner.advanced.notified();
            tokio::pin!(advanced);
            advanced.as_mut().enable();
            let now = self.now();
            if now >= deadline {
                return;
            }
            // Round up so a sleeper never wakes a hair early and spins.
            let wait = self.real_duration(deadline - now) + Duration::from_micros(50);
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = &mut advanced => {}
            }
        }
    }

    /// Sleeps for `ms` emulated milliseconds.
    pub async fn sleep(&self, ms: Millis) {
        let deadline = self.now().saturating_add(ms);
        self.sleep_until(deadline).await;
    }
}

/// `t` as RFC 3339 in UTC to the second (`2026-06-01T12:00:00Z`), as the platform writes
/// its timestamps.
pub fn rfc3339_secs(t: Timestamp) -> String {
    Rfc3339Secs(t).to_string()
}

/// [`rfc3339_secs`] as a value that writes itself: a view serialises it straight into the
/// answer, with no `String` per record.
#[derive(Clone, Copy, Debug)]
pub struct Rfc3339Secs(pub Timestamp);

impl std::fmt::Display for Rfc3339Secs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Written field by field rather than through `strftime`, which reads its format
        // string on every call: a listing of 10,000 pods writes 20,000 of these.
        let d = jiff::tz::TimeZone::UTC.to_datetime(self.0);
        write!(
            f,
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
            d.year(),
            d.month(),
            d.day(),
            d.hour(),
            d.minute(),
            d.second()
        )
    }
}

impl serde::Serialize for Rfc3339Secs {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// `t` as RFC 3339 in UTC to the millisecond (`2026-06-01T12:00:00.250Z`).
pub fn rfc3339_millis(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wall_times_are_written_in_utc_to_the_second_or_the_millisecond() {
        let t: Timestamp = "2026-06-01T12:00:00.25+02:00".parse().unwrap();
        assert_eq!(rfc3339_secs(t), "2026-06-01T10:00:00Z");
        for written in ["1999-12-31T23:59:59Z", "2028-02-29T00:00:01Z"] {
            let t: Timestamp = written.parse().unwrap();
            assert_eq!(rfc3339_secs(t), written);
            assert_eq!(
                rfc3339_secs(t),
                t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
            );
        }
        assert_eq!(rfc3339_millis(t), "2026-06-01T10:00:00.250Z");
        let clock = Clock::new(1.0);
        assert_eq!(clock.emulated_at(clock.wall_at(90_000)), 90_000);
    }

    #[test]
    fn scale_makes_time_pass_faster() {
        let clock = Clock::new(1000.0);
        std::thread::sleep(Duration::from_millis(20));
        // 20 ms real is 20 s emulated at 1000x.
        assert!(clock.now() >= 20_000, "now = {}", clock.now());
        assert_eq!(clock.real_duration(10_000), Duration::from_millis(10));
    }

    #[test]
    fn advance_moves_now() {
        let clock = Clock::new(1.0);
        let before = clock.now();
        clock.advance(60_000);
        assert!(clock.now() >= before + 60_000);
    }

    #[test]
    fn nonsense_scale_falls_back_to_one() {
        assert_eq!(Clock::new(0.0).scale(), 1.0);
        assert_eq!(Clock::new(f64::NAN).scale(), 1.0);
    }

    #[tokio::test]
    async fn advance_wakes_sleepers() {
        let clock = Clock::new(1.0);
        let c2 = clock.clone();
        let sleeper = tokio::spawn(async move { c2.sleep(3_600_000).await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        clock.advance(3_600_000);
        tokio::time::timeout(Duration::from_secs(2), sleeper)
            .await
            .expect("sleeper woke up")
            .unwrap();
    }
}
