//! What every kind's conversion uses: the annotation that keeps what the other version
//! cannot hold, and durations written as strings (`1h30m`) or counted in seconds.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

use super::ConversionError;

/// The annotation that keeps, on an object of one version, the values of the other version
/// it cannot hold, so that converting back gives them again.
pub const ANNOTATION: &str = "gpucloud.io/conversion";

/// What the annotation holds: a small JSON object with only the keys that are needed. On a
/// `v1beta1` object it keeps what `v1alpha1` said (`gpuShorthand`, `executionTimeoutMs`); on a `v1alpha1` object, how `v1beta1` spelled a duration (`idleTimeout`,
/// `executionTimeout`).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Kept {
    /// A `v1alpha1` Endpoint's GPUs were written in the shorthand `gpuTypeIds`.
    pub gpu_shorthand: Option<Shorthand>,
    /// A `v1alpha1` Endpoint's `executionTimeoutMs` that is not whole seconds.
    pub execution_timeout_ms: Option<i64>,
    /// A `v1beta1` Endpoint's `idleTimeout` as written, when not in the shortest form.
    pub idle_timeout: Option<String>,
    /// A `v1beta1` Endpoint's `executionTimeout` as written, when not in the shortest form.
    pub execution_timeout: Option<String>,
}

/// The shorthand's `gpuCount` as written: absent when it was unset.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Shorthand {
    pub gpu_count: Option<i32>,
}

impl Kept {
    /// Takes the annotation off `meta` (it is consumed by this conversion) and reads it. An
    /// annotation that is not the conversion's JSON is dropped as if absent: it cannot have
    /// been written by a conversion, and refusing it would make the object unreadable in
    /// the other version.
    pub fn take(meta: &mut ObjectMeta) -> Kept {
        let Some(annotations) = meta.annotations.as_mut() else {
            return Kept::default();
        };
        let kept = annotations
            .remove(ANNOTATION)
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        // Kubernetes writes no empty map (`omitempty`): none is what it reads back.
        if annotations.is_empty() {
            meta.annotations = None;
        }
        kept
    }

    /// Writes the annotation on `meta` when it keeps anything.
    pub fn put(&self, meta: &mut ObjectMeta) {
        if *self == Kept::default() {
            return;
        }
        let text = serde_json::to_string(self).expect("a Kept is strings and numbers");
        meta.annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(ANNOTATION.to_string(), text);
    }
}

/// `seconds` as a duration in its shortest form: `5s`, `10m`, `1h30m`, `0s`.
pub fn duration_of(seconds: i64) -> String {
    let (h, m, s) = (seconds / 3600, seconds % 3600 / 60, seconds % 60);
    let mut out = String::new();
    for (n, unit) in [(h, 'h'), (m, 'm'), (s, 's')] {
        if n != 0 {
            out.push_str(&format!("{n}{unit}"));
        }
    }
    if out.is_empty() {
        out.push_str("0s");
    }
    out
}

/// The seconds of a duration of hours, minutes and seconds (`90s`, `1h30m`, `1h90s`), as
/// CEL's `duration()` reads it. `field` and `rule` name what is wrong when it is not one.
pub fn seconds_of(text: &str, field: &str, rule: &str) -> Result<i64, ConversionError> {
    let invalid = || ConversionError::invalid(field, rule);
    let mut total: i64 = 0;
    let mut digits = String::new();
    for c in text.chars() {
        match c {
            '0'..='9' => digits.push(c),
            'h' | 'm' | 's' if !digits.is_empty() => {
                let unit = match c {
                    'h' => 3600,
                    'm' => 60,
                    _ => 1,
                };
                let part = digits
                    .parse::<i64>()
                    .ok()
                    .and_then(|n| n.checked_mul(unit))
                    .ok_or_else(invalid)?;
                total = total.checked_add(part).ok_or_else(invalid)?;
                digits.clear();
            }
            _ => return Err(invalid()),
        }
    }
    if text.is_empty() || !digits.is_empty() {
        return Err(invalid());
    }
    Ok(total)
}

/// The spelling to give `seconds`: the one the other version kept, when it still says the
/// same duration (the field was not edited since), else the shortest.
pub fn spelled(seconds: i64, kept: Option<String>) -> String {
    kept.filter(|text| seconds_of(text, "", "").ok() == Some(seconds))
        .unwrap_or_else(|| duration_of(seconds))
}

/// Moves the fields of a struct of one version into the struct of the other: those bound
/// after `bind` are used by the expressions after `set`, and those after `same` move under
/// their own names. The source is destructured without `..`, and the target is a struct
/// literal, so a field added to either version and not said here does not compile. A kind
/// wraps it in a macro of its own that adds its `same` list, written once for both ways.
macro_rules! carry {
    ($value:expr => $from:path, $to:path;
     bind: $($bind:ident),* $(,)?;
     set: $($field:ident: $expr:expr),* $(,)?;
     same: $($same:ident),* $(,)?) => {{
        let $from { $($same,)* $($bind,)* } = $value;
        $to { $($same,)* $($field: $expr,)* }
    }};
}

pub(crate) use carry;
