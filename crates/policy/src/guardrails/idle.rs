//! `Pod.spec.idleStop`: stop a pod whose every GPU stayed below a utilisation threshold
//! for a duration.
//!
//! The utilisation comes from the pod's runtime in the listing the operator reads once
//! per interval anyway (no extra call), so idleness is sampled: a burst of work between
//! two listings is not seen. The start of idleness is kept as the pod's uptime at that
//! moment (`status.guardrails.idleSinceUptimeSeconds`), so that the idle time is
//! measured on the platform's own clock and survives an operator restart; a restart of
//! the pod (its uptime goes down) starts the count again.

use std::time::Duration;

use super::runtime::{self, Budget};

/// The rule of `spec.idleStop`, parsed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IdleRule {
    pub threshold_percent: f64,
    pub duration: Duration,
}

/// Pure: since when (in uptime seconds) every GPU has been idle, given what was known
/// (`previous`) and the utilisation of each GPU now. `None`: not idle, or no GPU reported
/// (a pod with no GPU figure is never called idle).
pub fn idle_since(
    rule: &IdleRule,
    previous: Option<i64>,
    uptime_seconds: i64,
    gpu_util_percent: &[f64],
) -> Option<i64> {
    let idle = !gpu_util_percent.is_empty()
        && gpu_util_percent.iter().all(|u| *u < rule.threshold_percent);
    if !idle {
        return None;
    }
    match previous {
        Some(since) if since <= uptime_seconds => Some(since),
        _ => Some(uptime_seconds),
    }
}

/// Pure: how the idle time since `since` stands against the rule's duration.
pub fn check(rule: &IdleRule, since: i64, uptime_seconds: i64) -> Budget {
    runtime::check(rule.duration, uptime_seconds - since)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: IdleRule = IdleRule {
        threshold_percent: 5.0,
        duration: Duration::from_secs(1800),
    };

    #[test]
    fn every_gpu_must_be_below_the_threshold() {
        assert_eq!(idle_since(&RULE, None, 100, &[1.0, 4.9]), Some(100));
        assert_eq!(idle_since(&RULE, None, 100, &[1.0, 5.0]), None);
        assert_eq!(
            idle_since(&RULE, None, 100, &[]),
            None,
            "no figure, no verdict"
        );
    }

    #[test]
    fn idleness_is_counted_from_its_first_sighting_and_restarts_with_the_pod() {
        assert_eq!(idle_since(&RULE, Some(100), 400, &[0.0]), Some(100));
        // Busy once: the count starts again at the next idle sighting.
        assert_eq!(idle_since(&RULE, Some(100), 500, &[80.0]), None);
        assert_eq!(idle_since(&RULE, None, 600, &[0.0]), Some(600));
        // The pod restarted (uptime went down): the old start means nothing.
        assert_eq!(idle_since(&RULE, Some(600), 30, &[0.0]), Some(30));
    }

    #[test]
    fn the_stop_is_due_after_the_duration() {
        assert_eq!(
            check(&RULE, 100, 1000),
            Budget::Left(Duration::from_secs(900))
        );
        assert_eq!(check(&RULE, 100, 1900), Budget::Spent);
    }
}
