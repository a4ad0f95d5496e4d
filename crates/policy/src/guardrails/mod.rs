//! Cost guardrails of a Pod: `spec.schedule`, `spec.maxRuntime` and
//! `spec.idleStop` decide whether a pod whose spec says Running is held stopped.
//!
//! - [`schedule`]: pure window arithmetic (time zones and DST through `jiff`'s bundled tz
//!   database); [`runtime`] and [`idle`]: pure checks on the listing's runtime figures;
//!   [`clock`]: the injectable "now" schedules are evaluated at.
//! - [`evaluate`] puts them together, purely: from the spec's rules, what status kept, the
//!   pod's runtime and `now`, the state the pod should be in, why, the status block to
//!   keep, and when to look again. The Pod kind calls it in `plan` (what to do), `report`
//!   (what to show) and `policy` (what to hold, when the next pass must come).
//! - Precedence: `desiredState: Stopped` always wins (and drops any hold); then a closed
//!   schedule window; then a hold left by `maxRuntime`/`idleStop`; then those two checks.
//! - "Resuming is the user's move": a `maxRuntime`/`idleStop` stop is recorded in
//!   `status.guardrails.hold` with the spec generation it was decided on. It lasts until
//!   `desiredState` is seen `Stopped`, the generation moves (any spec edit, which
//!   toggling `desiredState` is), or a schedule window opens after it. Status keeps it, so
//!   an operator restart does not resume the pod.

pub use gpucloud_engine::clock;
pub mod idle;
pub mod runtime;
pub mod schedule;

use std::time::Duration;

use jiff::Timestamp;
use jiff::civil::Weekday;
use jiff::tz::TimeZone;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use gpucloud_crd::guardrails::{
    Day, Guardrail, GuardrailHold, GuardrailStatus, ScheduleStatus, WindowPhase,
};
use gpucloud_crd::pod::{DesiredState, PodSpec};
use gpucloud_engine::annotations::parse_duration;
use gpucloud_engine::failure::Failure;

use self::idle::IdleRule;
use self::runtime::Budget;
use self::schedule::{Schedule, Window, WindowState, parse_hhmm};

/// The guardrails of a spec, parsed.
#[derive(Clone, Debug, Default)]
pub struct Rules {
    pub schedule: Option<Schedule>,
    pub max_runtime: Option<Duration>,
    pub idle: Option<IdleRule>,
}

impl Rules {
    pub fn is_empty(&self) -> bool {
        self.schedule.is_none() && self.max_runtime.is_none() && self.idle.is_none()
    }
}

/// Reason of the failure a guardrail the schema could not check reports.
pub const INVALID: &str = "InvalidGuardrail";

fn invalid(field: &str, rule: &str) -> Failure {
    Failure::permanent(INVALID, format!("{field}: {rule}"))
}

fn weekday(d: Day) -> Weekday {
    match d {
        Day::Mon => Weekday::Monday,
        Day::Tue => Weekday::Tuesday,
        Day::Wed => Weekday::Wednesday,
        Day::Thu => Weekday::Thursday,
        Day::Fri => Weekday::Friday,
        Day::Sat => Weekday::Saturday,
        Day::Sun => Weekday::Sunday,
    }
}

/// The guardrails of `spec`, or a permanent failure naming the field and the rule. The
/// schema refuses most bad input at admission; what it cannot check (a time zone name
/// unknown to the tz database, an object stored before the schema) ends here.
pub fn rules_of(spec: &PodSpec) -> Result<Rules, Failure> {
    let schedule = match &spec.schedule {
        None => None,
        Some(s) => {
            let time_zone = TimeZone::get(&s.time_zone).map_err(|_| {
                invalid(
                    "spec.schedule.timeZone",
                    &format!(
                        "{:?} is not a time zone of the IANA database (such as Europe/Paris or UTC)",
                        s.time_zone
                    ),
                )
            })?;
            let mut windows = Vec::new();
            for (i, w) in s.windows.iter().enumerate() {
                let field = |f: &str| format!("spec.schedule.windows[{i}].{f}");
                let from = parse_hhmm(&w.from, false)
                    .map_err(|e| invalid(&field("from"), &e))?
                    .unwrap_or_default();
                let to = parse_hhmm(&w.to, true).map_err(|e| invalid(&field("to"), &e))?;
                windows.push(Window {
                    days: w.days.iter().copied().map(weekday).collect(),
                    from,
                    to,
                });
            }
            Some(Schedule { time_zone, windows })
        }
    };
    let duration = |field: &str, text: &str| {
        parse_duration(text).ok_or_else(|| {
            invalid(
                field,
                &format!("{text:?} is not a duration longer than zero such as 8h or 1h30m"),
            )
        })
    };
    let max_runtime = spec
        .max_runtime
        .as_deref()
        .map(|t| duration("spec.maxRuntime", t))
        .transpose()?;
    let idle = match &spec.idle_stop {
        None => None,
        Some(rule) => {
            if !(rule.threshold_percent > 0.0 && rule.threshold_percent <= 100.0) {
                return Err(invalid(
                    "spec.idleStop.thresholdPercent",
                    "must be above 0 and at most 100",
                ));
            }
            Some(IdleRule {
                threshold_percent: rule.threshold_percent,
                duration: duration("spec.idleStop.duration", &rule.duration)?,
            })
        }
    };
    Ok(Rules {
        schedule,
        max_runtime,
        idle,
    })
}

/// What the guardrails need to know of a pass.
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    pub spec_state: DesiredState,
    pub generation: Option<i64>,
    /// What status kept from the last pass.
    pub previous: Option<&'a GuardrailStatus>,
    /// The pod's uptime and each GPU's utilisation, while it runs and has booted.
    pub running: Option<Running<'a>>,
    pub now: Timestamp,
}

/// Live figures of a running pod, from the listing.
#[derive(Clone, Copy, Debug)]
pub struct Running<'a> {
    pub uptime_seconds: i64,
    pub gpu_util_percent: &'a [f64],
}

/// Why a pod whose spec says Running is stopped.
#[derive(Clone, Debug, PartialEq)]
pub struct Stop {
    pub guardrail: Guardrail,
    pub message: String,
}

impl Stop {
    /// The Event's and the condition's reason.
    pub fn reason(&self) -> &'static str {
        reason_of(self.guardrail)
    }
}

/// `StoppedBySchedule`, `StoppedByMaxRuntime`, `StoppedByIdleStop`.
pub fn reason_of(g: Guardrail) -> &'static str {
    match g {
        Guardrail::Schedule => "StoppedBySchedule",
        Guardrail::MaxRuntime => "StoppedByMaxRuntime",
        Guardrail::IdleStop => "StoppedByIdleStop",
    }
}

/// The metric label of a guardrail.
pub fn label_of(g: Guardrail) -> &'static str {
    match g {
        Guardrail::Schedule => "schedule",
        Guardrail::MaxRuntime => "maxRuntime",
        Guardrail::IdleStop => "idleStop",
    }
}

/// What the guardrails decided.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The state the pod should be in.
    pub state: DesiredState,
    /// Why it is stopped although the spec says Running.
    pub stop: Option<Stop>,
    /// The status block to keep (`None` when the spec has no guardrail and none is held).
    pub status: Option<GuardrailStatus>,
    /// When a guardrail is due to change its mind next, on the guardrails' clock.
    pub due_in: Option<Duration>,
}

fn time(t: Timestamp) -> Time {
    Time(t)
}

fn until(now: Timestamp, at: Timestamp) -> Duration {
    Duration::try_from(at.duration_since(now)).unwrap_or(Duration::ZERO)
}

fn human(d: Duration) -> String {
    let s = d.as_secs();
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, sec) => format!("{m}m{sec}s"),
        (h, 0, 0) => format!("{h}h"),
        (h, m, _) => format!("{h}h{m}m"),
    }
}

const RESUME_HOW: &str = "it stays stopped until desiredState is set to Stopped and back to Running (or the spec is edited), or the next schedule window opens";

/// Pure: the guardrails' decision for one pass.
pub fn evaluate(rules: &Rules, f: &Facts<'_>) -> Decision {
    let window: Option<WindowState> = rules.schedule.as_ref().map(|s| s.state_at(f.now));
    let schedule_status = window.map(|w| ScheduleStatus {
        window: if w.open {
            WindowPhase::Open
        } else {
            WindowPhase::Closed
        },
        next_transition: w.next_transition.map(time),
    });
    let schedule_due = window
        .and_then(|w| w.next_transition)
        .map(|t| until(f.now, t));
    let mut status = GuardrailStatus {
        schedule: schedule_status,
        hold: None,
        idle_since_uptime_seconds: None,
    };
    let finish = |state, stop, status: GuardrailStatus, due: Option<Duration>| Decision {
        state,
        stop,
        status: (status != GuardrailStatus::default() || !rules.is_empty()).then_some(status),
        due_in: due,
    };

    // 1. The user's Stopped wins, and is the user's move that drops a hold.
    if f.spec_state == DesiredState::Stopped {
        return finish(DesiredState::Stopped, None, status, schedule_due);
    }

    // 2. A hold stands until the user's move or a window opening after it.
    let hold = f.previous.and_then(|p| p.hold.clone()).filter(|h| {
        let edited = h.generation != f.generation;
        let reopened = window
            .and_then(|w| w.open_since)
            .is_some_and(|opened| opened > h.since.0);
        !edited && !reopened
    });

    // 3. Outside the windows: stopped by the schedule (a hold is kept for later).
    if let Some(w) = window.filter(|w| !w.open) {
        status.hold = hold;
        let next = w
            .next_transition
            .map(|t| format!("; the next window opens at {t}"))
            .unwrap_or_default();
        let stop = Stop {
            guardrail: Guardrail::Schedule,
            message: format!("outside its schedule windows{next}"),
        };
        return finish(DesiredState::Stopped, Some(stop), status, schedule_due);
    }
    if let Some(h) = hold {
        let stop = Stop {
            guardrail: h.guardrail,
            message: h.message.clone(),
        };
        status.hold = Some(h);
        return finish(DesiredState::Stopped, Some(stop), status, schedule_due);
    }

    // 4. Running: maxRuntime and idleStop, on the listing's figures.
    let mut due = schedule_due;
    let mut sooner = |d: Duration| due = Some(due.map_or(d, |x| x.min(d)));
    let mut spent: Option<(Guardrail, String)> = None;
    if let Some(run) = f.running {
        if let Some(limit) = rules.max_runtime {
            match runtime::check(limit, run.uptime_seconds) {
                Budget::Spent => {
                    spent = Some((
                        Guardrail::MaxRuntime,
                        format!(
                            "ran {} since its last start, reaching maxRuntime {}; {RESUME_HOW}",
                            human(Duration::from_secs(run.uptime_seconds.max(0) as u64)),
                            human(limit)
                        ),
                    ))
                }
                Budget::Left(left) => sooner(left),
            }
        }
        if let Some(rule) = rules.idle {
            let previous = f.previous.and_then(|p| p.idle_since_uptime_seconds);
            let since = idle::idle_since(&rule, previous, run.uptime_seconds, run.gpu_util_percent);
            status.idle_since_uptime_seconds = since;
            if let Some(since) = since {
                match idle::check(&rule, since, run.uptime_seconds) {
                    Budget::Spent if spent.is_none() => {
                        spent = Some((
                            Guardrail::IdleStop,
                            format!(
                                "every GPU stayed below {}% utilisation for {} (idleStop); {RESUME_HOW}",
                                rule.threshold_percent,
                                human(Duration::from_secs(
                                    (run.uptime_seconds - since).max(0) as u64
                                ))
                            ),
                        ))
                    }
                    Budget::Spent => {}
                    Budget::Left(left) => sooner(left),
                }
            }
        }
    }
    match spent {
        Some((guardrail, message)) => {
            status.idle_since_uptime_seconds = None;
            status.hold = Some(GuardrailHold {
                guardrail,
                since: time(f.now),
                generation: f.generation,
                message: message.clone(),
            });
            let stop = Stop { guardrail, message };
            finish(DesiredState::Stopped, Some(stop), status, schedule_due)
        }
        None => finish(DesiredState::Running, None, status, due),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpucloud_crd::pod::PodSpec;
    use serde_json::json;

    fn spec(extra: serde_json::Value) -> PodSpec {
        let mut base = json!({"image": "img:1", "gpu": {"types": ["A"]}});
        base.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        serde_json::from_value(base).unwrap()
    }

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn facts<'a>(
        previous: Option<&'a GuardrailStatus>,
        running: Option<Running<'a>>,
        now: &str,
    ) -> Facts<'a> {
        Facts {
            spec_state: DesiredState::Running,
            generation: Some(1),
            previous,
            running,
            now: at(now),
        }
    }

    const IDLE_GPU: &[f64] = &[1.0];
    const BUSY_GPU: &[f64] = &[90.0];

    fn running(uptime_seconds: i64, gpus: &[f64]) -> Option<Running<'_>> {
        Some(Running {
            uptime_seconds,
            gpu_util_percent: gpus,
        })
    }

    #[test]
    fn fields_the_schema_cannot_check_are_named() {
        let bad_zone = spec(json!({"schedule": {"timeZone": "Mars/Olympus_Mons",
            "windows": [{"from": "08:00", "to": "18:00"}]}}));
        let err = rules_of(&bad_zone).unwrap_err();
        assert_eq!(err.reason, INVALID);
        assert!(err.is_permanent());
        assert!(
            err.message.starts_with("spec.schedule.timeZone:")
                && err.message.contains("Mars/Olympus_Mons"),
            "{}",
            err.message
        );
        let bad_time = spec(json!({"schedule": {"windows": [{"from": "08:00", "to": "25:00"}]}}));
        let err = rules_of(&bad_time).unwrap_err();
        assert!(
            err.message.starts_with("spec.schedule.windows[0].to:"),
            "{}",
            err.message
        );
        let bad_duration = spec(json!({"maxRuntime": "0h"}));
        let err = rules_of(&bad_duration).unwrap_err();
        assert!(
            err.message.starts_with("spec.maxRuntime:"),
            "{}",
            err.message
        );
        let ok = rules_of(&spec(json!({"maxRuntime": "1h30m",
            "idleStop": {"thresholdPercent": 5, "duration": "30m"}})))
        .unwrap();
        assert_eq!(ok.max_runtime, Some(Duration::from_secs(5400)));
        assert_eq!(ok.idle.unwrap().duration, Duration::from_secs(1800));
        assert!(rules_of(&spec(json!({}))).unwrap().is_empty());
    }

    fn office() -> Rules {
        rules_of(&spec(json!({"schedule": {"timeZone": "Europe/Paris",
            "windows": [{"days": ["Mon", "Tue", "Wed", "Thu", "Fri"], "from": "08:00", "to": "19:00"}]}})))
        .unwrap()
    }

    #[test]
    fn a_closed_window_stops_and_says_when_it_opens() {
        // Wednesday 2026-01-14 20:00 in Paris.
        let d = evaluate(
            &office(),
            &facts(None, running(60, BUSY_GPU), "2026-01-14T19:00:00Z"),
        );
        assert_eq!(d.state, DesiredState::Stopped);
        let stop = d.stop.unwrap();
        assert_eq!(stop.reason(), "StoppedBySchedule");
        assert!(
            stop.message.contains("2026-01-15T07:00:00Z"),
            "{}",
            stop.message
        );
        let s = d.status.unwrap().schedule.unwrap();
        assert_eq!(s.window, WindowPhase::Closed);
        assert_eq!(s.next_transition, Some(Time(at("2026-01-15T07:00:00Z"))));
        assert_eq!(d.due_in, Some(Duration::from_secs(12 * 3600)));
        // Inside the window: running, due at the close.
        let d = evaluate(&office(), &facts(None, None, "2026-01-14T17:00:00Z"));
        assert_eq!(d.state, DesiredState::Running);
        assert_eq!(d.due_in, Some(Duration::from_secs(3600)));
    }

    #[test]
    fn desired_state_stopped_always_wins_and_drops_a_hold() {
        let held = evaluate(
            &rules_of(&spec(json!({"maxRuntime": "1h"}))).unwrap(),
            &facts(None, running(3600, BUSY_GPU), "2026-01-14T10:00:00Z"),
        );
        let kept = held.status.unwrap();
        assert!(kept.hold.is_some());
        let mut f = facts(Some(&kept), None, "2026-01-14T09:00:00Z");
        f.spec_state = DesiredState::Stopped;
        let d = evaluate(&office(), &f);
        assert_eq!(d.state, DesiredState::Stopped);
        assert_eq!(d.stop, None, "the user's stop, not a guardrail's");
        assert_eq!(d.status.unwrap().hold, None);
    }

    #[test]
    fn max_runtime_stops_and_holds_until_the_users_move() {
        let rules = rules_of(&spec(json!({"maxRuntime": "2h"}))).unwrap();
        let d = evaluate(
            &rules,
            &facts(None, running(3600, BUSY_GPU), "2026-01-14T10:00:00Z"),
        );
        assert_eq!(d.state, DesiredState::Running);
        assert_eq!(d.due_in, Some(Duration::from_secs(3600)));
        let d = evaluate(
            &rules,
            &facts(None, running(7200, BUSY_GPU), "2026-01-14T11:00:00Z"),
        );
        assert_eq!(d.state, DesiredState::Stopped);
        assert_eq!(d.stop.as_ref().unwrap().reason(), "StoppedByMaxRuntime");
        assert!(
            d.stop.as_ref().unwrap().message.contains("ran 2h"),
            "{:?}",
            d.stop
        );
        let kept = d.status.unwrap();
        let hold = kept.hold.clone().unwrap();
        assert_eq!(hold.generation, Some(1));
        assert_eq!(hold.since, Time(at("2026-01-14T11:00:00Z")));
        // Stopped (no runtime), spec still Running, same generation: held.
        let d = evaluate(&rules, &facts(Some(&kept), None, "2026-01-14T12:00:00Z"));
        assert_eq!(d.state, DesiredState::Stopped);
        assert_eq!(d.status.unwrap().hold, Some(hold));
        // The user edited the spec (toggled desiredState): released.
        let mut f = facts(Some(&kept), None, "2026-01-14T12:00:00Z");
        f.generation = Some(3);
        let d = evaluate(&rules, &f);
        assert_eq!(d.state, DesiredState::Running);
        assert_eq!(d.status.unwrap().hold, None);
    }

    #[test]
    fn a_window_opening_after_a_hold_releases_it() {
        let rules = rules_of(&spec(
            json!({"maxRuntime": "1h", "schedule": {"timeZone": "UTC",
            "windows": [{"from": "08:00", "to": "18:00"}]}}),
        ))
        .unwrap();
        // Stopped by maxRuntime at 10:00, inside Wednesday's window.
        let d = evaluate(
            &rules,
            &facts(None, running(3600, BUSY_GPU), "2026-01-14T10:00:00Z"),
        );
        assert_eq!(d.stop.as_ref().unwrap().guardrail, Guardrail::MaxRuntime);
        let kept = d.status.unwrap();
        // Later the same window: still held.
        let d = evaluate(&rules, &facts(Some(&kept), None, "2026-01-14T15:00:00Z"));
        assert_eq!(d.stop.as_ref().unwrap().guardrail, Guardrail::MaxRuntime);
        let kept = d.status.unwrap();
        // At night: the schedule's stop, the hold kept.
        let d = evaluate(&rules, &facts(Some(&kept), None, "2026-01-14T20:00:00Z"));
        assert_eq!(d.stop.as_ref().unwrap().guardrail, Guardrail::Schedule);
        let kept = d.status.unwrap();
        assert!(kept.hold.is_some());
        // Next morning's window opened after the hold: running again.
        let d = evaluate(&rules, &facts(Some(&kept), None, "2026-01-15T08:00:01Z"));
        assert_eq!(d.state, DesiredState::Running);
        assert_eq!(d.status.unwrap().hold, None);
    }

    #[test]
    fn idle_stop_counts_on_the_pods_uptime() {
        let rules = rules_of(&spec(
            json!({"idleStop": {"thresholdPercent": 5, "duration": "30m"}}),
        ))
        .unwrap();
        let now = "2026-01-14T10:00:00Z";
        let d = evaluate(&rules, &facts(None, running(600, IDLE_GPU), now));
        assert_eq!(d.state, DesiredState::Running);
        let kept = d.status.unwrap();
        assert_eq!(kept.idle_since_uptime_seconds, Some(600));
        assert_eq!(d.due_in, Some(Duration::from_secs(1800)));
        // 29 minutes later, still idle: not yet.
        let d = evaluate(
            &rules,
            &facts(Some(&kept), running(600 + 29 * 60, IDLE_GPU), now),
        );
        assert_eq!(d.state, DesiredState::Running);
        assert_eq!(d.due_in, Some(Duration::from_secs(60)));
        // Busy in between: the count starts again.
        let busy = evaluate(&rules, &facts(Some(&kept), running(1500, BUSY_GPU), now));
        assert_eq!(busy.status.unwrap().idle_since_uptime_seconds, None);
        // 30 minutes idle: stopped, held.
        let d = evaluate(
            &rules,
            &facts(Some(&kept), running(600 + 30 * 60, IDLE_GPU), now),
        );
        assert_eq!(d.state, DesiredState::Stopped);
        let stop = d.stop.unwrap();
        assert_eq!(stop.reason(), "StoppedByIdleStop");
        assert!(
            stop.message.contains("below 5%") && stop.message.contains("30m"),
            "{}",
            stop.message
        );
        let kept = d.status.unwrap();
        assert_eq!(kept.hold.unwrap().guardrail, Guardrail::IdleStop);
        assert_eq!(kept.idle_since_uptime_seconds, None);
    }

    #[test]
    fn no_guardrail_no_status_block() {
        let d = evaluate(
            &Rules::default(),
            &facts(None, running(60, IDLE_GPU), "2026-01-14T10:00:00Z"),
        );
        assert_eq!(d.state, DesiredState::Running);
        assert_eq!(d.status, None);
        assert_eq!(d.due_in, None);
    }
}
