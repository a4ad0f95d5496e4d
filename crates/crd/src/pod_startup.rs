//! A Pod's start and resume, when they go wrong: what to do with a pod that
//! does not come up (`startupTimeout`, `onStartupFailure`) or cannot resume because its
//! host has no free GPU any more (`resumePolicy`, `resumeTimeout`), and what status says
//! about either.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What to do when the platform refuses to resume a stopped pod because the machine it
/// is tied to has no free GPU.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum ResumePolicy {
    /// Keep asking the same host, and say so in the `Ready` condition.
    #[default]
    Wait,
    /// After `resumeTimeout`, deploy a new pod with the same spec (and network volume)
    /// elsewhere, and terminate the old one once the new one runs.
    Recreate,
}

/// What happens to a pod that is not running `startupTimeout` after it was deployed or
/// resumed.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum OnStartupFailure {
    /// Stop it: it bills for its disk only, and keeps its volume.
    #[default]
    Stop,
    /// Terminate it: nothing is left to bill.
    Terminate,
}

/// Why a pod does not start, as read from its system log.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct StartFailure {
    /// `ImagePullFailed`, `RegistryAuthFailed` or `CudaVersionTooOld`.
    pub reason: String,
    /// The log line that said so.
    pub line: String,
    /// When the operator read it.
    pub seen_at: Time,
}

/// A start the operator gave up on, and what it did; it stands until the spec is edited.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct StartupHold {
    /// What was done to the pod.
    pub action: OnStartupFailure,
    /// The spec generation it was decided on: any edit of the spec ends it.
    pub generation: Option<i64>,
    pub since: Time,
    pub message: String,
}

/// A pod on its way up: since when, and what its system log said went wrong.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct StartupStatus {
    /// The pod this is about.
    pub pod_id: String,
    /// When the operator first saw it starting.
    pub since: Time,
    pub failure: Option<StartFailure>,
    pub hold: Option<StartupHold>,
}

/// A pod that replaced one whose resume was refused.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PodReplacement {
    /// The pod that could not resume (terminated).
    pub from: String,
    /// The pod deployed in its place.
    pub to: String,
    pub at: Time,
}

/// Resumes the platform refused for lack of a free GPU on the pod's host.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ResumeStatus {
    /// The pod whose resume is refused.
    pub pod_id: Option<String>,
    /// When the first refusal of this pod was seen.
    pub refused_since: Option<Time>,
    /// The pod deployed in place of the last one that could not resume, if any.
    pub replaced: Option<PodReplacement>,
}
