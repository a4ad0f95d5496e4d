//! `Pod.spec.maxRuntime`: stop a pod that has run this long since its last start.
//!
//! The run time is the platform's uptime of the pod from the listing the operator reads
//! anyway (no call of its own, and no clock of the operator's: it follows the platform's
//! time, the emulator's fast clock included). Uptime starts again at zero on every start,
//! which is what "counted from the last start" means; it is counted from the container's
//! boot, so the few seconds of a boot are not billed against the limit.

use std::time::Duration;

/// How a running pod stands against a limit of time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// The limit is reached.
    Spent,
    /// This much is left.
    Left(Duration),
}

/// Pure: `uptime_seconds` against `limit`.
pub fn check(limit: Duration, uptime_seconds: i64) -> Budget {
    let ran = Duration::from_secs(u64::try_from(uptime_seconds).unwrap_or(0));
    match limit.checked_sub(ran) {
        Some(left) if !left.is_zero() => Budget::Left(left),
        _ => Budget::Spent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_reached_at_the_second() {
        let eight_hours = Duration::from_secs(8 * 3600);
        assert_eq!(
            check(eight_hours, 0),
            Budget::Left(eight_hours),
            "a fresh start has the whole limit"
        );
        assert_eq!(
            check(eight_hours, 8 * 3600 - 1),
            Budget::Left(Duration::from_secs(1))
        );
        assert_eq!(check(eight_hours, 8 * 3600), Budget::Spent);
        assert_eq!(check(eight_hours, 9 * 3600), Budget::Spent);
        // A nonsense negative uptime counts as a fresh start, not as spent.
        assert_eq!(check(eight_hours, -5), Budget::Left(eight_hours));
    }
}
