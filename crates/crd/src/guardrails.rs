//! The cost guardrails of a `Pod`: `spec.schedule`, `spec.maxRuntime`,
//! `spec.idleStop`, and what status shows of them. The decisions are in
//! `gpucloud_policy::guardrails`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::KubeSchema;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A duration is longer than zero (the pattern checks the `1h30m` shape; CEL reads it as
/// a Go duration, which that shape is).
pub const DURATION_RULE: &str = "duration(self) > duration('0s')";
pub const DURATION_MESSAGE: &str =
    "must be a duration longer than zero with units h, m and s, such as 8h or 1h30m";

/// A day of the week.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum Day {
    Mon,
    Tue,
    Wed,
    Thu,
    Fri,
    Sat,
    Sun,
}

/// A weekly window in which the pod runs.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleWindow {
    /// Days the window starts on; every day when empty. A window crossing midnight
    /// belongs to the day it starts on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 7))]
    pub days: Vec<Day>,
    /// Local start time, `HH:MM`.
    #[schemars(regex(pattern = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"))]
    pub from: String,
    /// Local end time, `HH:MM` or `24:00`. At or before `from`: the window ends the next
    /// day (`22:00` to `06:00`); equal to `from`: 24 hours.
    #[schemars(regex(pattern = r"^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$"))]
    pub to: String,
}

/// When the pod runs.
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PodSchedule {
    /// IANA time zone of the windows, such as `Europe/Paris`; DST is followed.
    #[serde(default = "utc")]
    #[schemars(
        regex(pattern = r"^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$"),
        length(max = 64)
    )]
    pub time_zone: String,
    /// Windows in which the pod runs; outside all of them it is stopped.
    #[schemars(length(min = 1, max = 32))]
    pub windows: Vec<ScheduleWindow>,
}

fn utc() -> String {
    "UTC".into()
}

/// Stop the pod when its GPUs sit idle.
#[derive(Clone, Debug, Deserialize, Serialize, KubeSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct IdleStop {
    /// A GPU is idle while its utilisation is below this percentage.
    #[schemars(range(min = 0.0, max = 100.0))]
    #[x_kube(validation = Rule::new("self > 0.0").message("thresholdPercent must be above 0"))]
    pub threshold_percent: f64,
    /// How long every GPU must have stayed idle, such as `30m`.
    #[schemars(regex(pattern = r"^([0-9]+[hms])+$"), length(max = 32))]
    #[x_kube(validation = Rule::new(DURATION_RULE).message(DURATION_MESSAGE))]
    pub duration: String,
}

/// Whether the pod is inside one of its schedule windows.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum WindowPhase {
    Open,
    Closed,
}

/// The schedule as the operator last evaluated it.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleStatus {
    pub window: WindowPhase,
    /// When the window opens or closes next; absent when it never does.
    pub next_transition: Option<Time>,
}

/// The guardrail that stopped a pod whose spec says Running.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum Guardrail {
    Schedule,
    MaxRuntime,
    IdleStop,
}

/// A stop by `maxRuntime` or `idleStop`, kept until the user's move: `desiredState`
/// toggled, any other spec edit (the generation moves), or a schedule window opening
/// after `since`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GuardrailHold {
    pub guardrail: Guardrail,
    pub since: Time,
    /// The spec generation the stop was decided on.
    pub generation: Option<i64>,
    pub message: String,
}

/// What the guardrails see and hold; kept in status so an operator restart loses nothing.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GuardrailStatus {
    pub schedule: Option<ScheduleStatus>,
    /// The stop that holds the pod stopped until the user's move.
    pub hold: Option<GuardrailHold>,
    /// idleStop: the pod's uptime (in seconds, the platform's own count) at which every
    /// GPU was first seen below the threshold, in listings since without a break.
    pub idle_since_uptime_seconds: Option<i64>,
}
