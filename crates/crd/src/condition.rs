//! The status condition of the managed kinds: Kubernetes' `metav1.Condition` on the wire
//! and in the CRD schema, kept small in the operator's memory.
//!
//! Every object reports four conditions, and the watch cache holds every object. Most of
//! their words are the same few in every object (`Ready`, `True`, `ReconcileSuccess`, "the
//! platform matches the spec"). Kept as `String`s they cost an allocation each: sixteen
//! per object. Here a word from [`PHRASES`] is not allocated at all, and only what is
//! particular to the object (the message that names the remote volume) is.

use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, LazyLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The condition types every kind reports.
pub const READY: &str = "Ready";
pub const SYNCED: &str = "Synced";
pub const RECONCILING: &str = "Reconciling";
pub const STALLED: &str = "Stalled";

/// The fixed reasons and messages of the conditions (`gpucloud_engine::conditions::Verdicts`
/// builds them from these), so that the table below cannot drift from what is written.
pub mod phrase {
    // Reasons.
    pub const AVAILABLE: &str = "Available";
    pub const RECONCILE_SUCCESS: &str = "ReconcileSuccess";
    pub const CONVERGED: &str = "Converged";
    pub const PROGRESSING: &str = "Progressing";
    pub const RETRYING: &str = "Retrying";
    pub const CREATING: &str = "Creating";
    // Messages.
    pub const SPEC_MATCHED: &str = "the platform matches the spec";
    pub const LAST_CALL_WORKED: &str = "the last platform call worked";
    pub const NOTHING_LEFT: &str = "nothing left to do";
    pub const NOTHING_BLOCKED: &str = "nothing is blocked";
    pub const RETRY_SCHEDULED: &str = "a retry is scheduled";
    pub const WAITING_FOR_A_CHANGE: &str = "waiting for a change to the spec or the account";
}

/// The words that most conditions are made of, kept once for the whole process. A text
/// equal to one of them borrows it instead of holding a copy. (Add a phrase here when a
/// new one shows up in every object; anything else still works, at the cost of its
/// allocation.)
pub const PHRASES: &[&str] = &[
    READY,
    SYNCED,
    RECONCILING,
    STALLED,
    "True",
    "False",
    "Unknown",
    phrase::AVAILABLE,
    phrase::RECONCILE_SUCCESS,
    phrase::CONVERGED,
    phrase::PROGRESSING,
    phrase::RETRYING,
    phrase::CREATING,
    phrase::SPEC_MATCHED,
    phrase::LAST_CALL_WORKED,
    phrase::NOTHING_LEFT,
    phrase::NOTHING_BLOCKED,
    phrase::RETRY_SCHEDULED,
    phrase::WAITING_FOR_A_CHANGE,
];

/// The phrases (and the empty text), each allocated once for the whole process and shared
/// by every text equal to it.
static SHARED: LazyLock<Vec<Arc<str>>> =
    LazyLock::new(|| PHRASES.iter().chain(&[""]).map(|p| Arc::from(*p)).collect());

/// A text of a condition: a shared phrase of [`PHRASES`], or its own string.
///
/// An `Arc<str>` rather than a `Cow<'static, str>`: 16 bytes rather than 24, so that the
/// four conditions of an object fit in 384 bytes rather than 512, and a phrase costs a
/// count rather than a copy either way.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Text(Arc<str>);

impl Text {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn phrase(s: &str) -> Option<Arc<str>> {
        SHARED.iter().find(|p| ***p == *s).cloned()
    }

    /// Whether this text shares a phrase rather than holding its own copy.
    pub fn is_shared(&self) -> bool {
        SHARED.iter().any(|p| Arc::ptr_eq(p, &self.0))
    }
}

impl Default for Text {
    fn default() -> Self {
        Self::from("")
    }
}

impl From<String> for Text {
    fn from(s: String) -> Self {
        Self::phrase(&s).map_or_else(|| Self(Arc::from(s)), Self)
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Self {
        Self::phrase(s).map_or_else(|| Self(Arc::from(s)), Self)
    }
}

impl std::ops::Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // A borrowed `&str` where the input allows it, so a phrase costs no allocation
        // even on the way in.
        let s: Cow<'de, str> = Deserialize::deserialize(deserializer)?;
        Ok(match s {
            Cow::Borrowed(s) => Self::from(s),
            Cow::Owned(s) => Self::from(s),
        })
    }
}

/// One condition, as `metav1.Condition`: the same fields, names and schema.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: Text,
    pub status: Text,
    pub reason: Text,
    pub message: Text,
    pub last_transition_time: Time,
    pub observed_generation: Option<i64>,
}

/// The schema is `metav1.Condition`'s own, so the CRDs say exactly what they said before.
impl JsonSchema for Condition {
    fn schema_name() -> Cow<'static, str> {
        <k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition as JsonSchema>::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        <k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition as JsonSchema>::schema_id()
    }

    fn inline_schema() -> bool {
        <k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition as JsonSchema>::inline_schema()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition as JsonSchema>::json_schema(
            generator,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition as K8sCondition;

    fn wire() -> serde_json::Value {
        serde_json::json!({
            "type": "Ready",
            "status": "True",
            "reason": "Available",
            "message": "volume abc has 10 GB in EU-RO-1",
            "lastTransitionTime": "2026-11-23T10:00:00Z",
            "observedGeneration": 3
        })
    }

    #[test]
    fn reads_and_writes_what_metav1_condition_does() {
        let ours: Condition = serde_json::from_value(wire()).unwrap();
        let theirs: K8sCondition = serde_json::from_value(wire()).unwrap();
        assert_eq!(
            serde_json::to_value(&ours).unwrap(),
            serde_json::to_value(&theirs).unwrap()
        );
        let mut no_generation = wire();
        no_generation
            .as_object_mut()
            .unwrap()
            .remove("observedGeneration");
        let ours: Condition = serde_json::from_value(no_generation.clone()).unwrap();
        assert_eq!(serde_json::to_value(&ours).unwrap(), no_generation);
    }

    #[test]
    fn a_missing_field_is_refused_as_metav1_condition_refuses_it() {
        let mut no_reason = wire();
        no_reason.as_object_mut().unwrap().remove("reason");
        let err = serde_json::from_value::<Condition>(no_reason).unwrap_err();
        assert!(err.to_string().contains("reason"), "{err}");
    }

    #[test]
    fn common_words_are_shared_and_the_rest_is_owned() {
        let c: Condition = serde_json::from_str(&wire().to_string()).unwrap();
        assert!(c.type_.is_shared() && c.status.is_shared() && c.reason.is_shared());
        assert!(!c.message.is_shared());
        assert_eq!(c.message, "volume abc has 10 GB in EU-RO-1");
        assert!(Text::from(String::from("nothing left to do")).is_shared());
        assert!(!Text::from("RateLimited").is_shared());
    }

    #[test]
    fn the_schema_is_metav1_conditions() {
        let ours = schemars::SchemaGenerator::default().into_root_schema_for::<Condition>();
        let theirs = schemars::SchemaGenerator::default().into_root_schema_for::<K8sCondition>();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn a_condition_is_no_larger_than_metav1s() {
        assert!(std::mem::size_of::<Condition>() <= std::mem::size_of::<K8sCondition>());
        // Four texts of 16 bytes, the time and the generation: four conditions fit the
        // allocator's 384-byte class.
        assert!(4 * std::mem::size_of::<Condition>() <= 384);
    }
}
