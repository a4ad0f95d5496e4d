//! The deterministic name of a remote object the spec does not name.

use kube::{Resource, ResourceExt};

/// Namespace, name and the first eight hex digits of the UID: readable on the platform's
/// console, and after a crash the operator finds its own object by it and never another
/// object's remote object of the same name (the UID differs).
pub fn default_remote_name<K: Resource>(obj: &K) -> String {
    let uid = obj.uid().unwrap_or_default();
    let suffix: String = uid.chars().filter(|c| *c != '-').take(8).collect();
    format!(
        "{}-{}-{}",
        obj.namespace().unwrap_or_default(),
        obj.name_any(),
        suffix
    )
}
