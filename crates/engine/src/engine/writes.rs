//! The engine's writes to the object itself in the apiserver: its annotations and
//! finalizer (one merge patch), the finalizer's release, and status (server-side apply).
//!
//! The bodies are built by pure functions, tested below; the methods send them and note
//! the resourceVersion each write returns, so that the watch's echo of it is known for
//! what it is (see [`Engine::is_echo`] and [`Engine::caught_up`]). Whether to write at all
//! is the caller's: the stage that decided the write.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

use gpucloud_crd::ManagedKind;

use super::{Engine, EngineError};
use crate::adapter::Adapter;
use crate::annotations as ann;
use crate::context::{FIELD_MANAGER, FINALIZER};

/// An annotation to set (`Some`) or remove (`None`).
pub(super) type AnnotationChange = (&'static str, Option<String>);

/// The annotations that record an id the operator chose (written by earlier versions):
/// removed when that id is forgotten, in the same write as the next marker.
const LEGACY_ID_ANNOTATIONS: [&str; 2] = [ann::EXTERNAL_ID, ann::CREATE_SUCCEEDED];

/// Removal of the annotations that record an id the operator chose in earlier versions.
pub(super) fn legacy_id_removal() -> Vec<AnnotationChange> {
    LEGACY_ID_ANNOTATIONS.iter().map(|a| (*a, None)).collect()
}

/// Pure: the merge patch that sets or removes `changes` and adds `finalizer` to
/// `finalizers` if it is missing. With `resource_version` (a checked patch) the apiserver
/// refuses it with 409 if the object changed since it was read, which is also what makes
/// rewriting the whole finalizer list safe.
fn metadata_patch(
    changes: &[(&str, Option<String>)],
    finalizers: &[String],
    finalizer: Option<&str>,
    resource_version: Option<Option<String>>,
) -> Value {
    let annotations: BTreeMap<&str, Value> = changes
        .iter()
        .map(|(k, v)| {
            (
                *k,
                v.as_ref().map_or(Value::Null, |v| Value::String(v.clone())),
            )
        })
        .collect();
    let mut metadata = json!({ "annotations": annotations });
    if let Some(f) = finalizer
        && !finalizers.iter().any(|have| have == f)
    {
        debug_assert!(
            resource_version.is_some(),
            "a finalizer list is only rewritten conflict-checked"
        );
        let mut list = finalizers.to_vec();
        list.push(f.to_string());
        metadata["finalizers"] = json!(list);
    }
    if let Some(version) = resource_version {
        metadata["resourceVersion"] = json!(version);
    }
    json!({ "metadata": metadata })
}

/// Pure: the merge patch that drops the engine's finalizer from `finalizers`, checked
/// against `resource_version`.
fn finalizer_release(finalizers: &[String], resource_version: Option<String>) -> Value {
    let remaining: Vec<&String> = finalizers.iter().filter(|f| *f != FINALIZER).collect();
    json!({
        "metadata": {
            "resourceVersion": resource_version,
            "finalizers": remaining,
        }
    })
}

impl<A: Adapter> Engine<A> {
    /// Sets (`Some`) or removes (`None`) annotations, and adds `finalizer` if missing, in
    /// one merge patch. With `checked` the patch carries the object's resourceVersion, so
    /// it fails with 409 if the object changed since it was read.
    pub(super) async fn patch_metadata(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        changes: &[(&str, Option<String>)],
        finalizer: Option<&str>,
        checked: bool,
    ) -> Result<A::Kind, kube::Error> {
        let version = checked.then(|| obj.resource_version());
        let patch = metadata_patch(changes, obj.finalizers(), finalizer, version);
        let patched = api
            .patch(
                &obj.name_any(),
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await?;
        if let Some(rv) = patched.resource_version() {
            self.wrote_metadata(obj, &rv);
        }
        Ok(patched)
    }

    /// Removes the finalizer, checked against the version read. `false`: the object
    /// changed since (a 409), and the caller looks again soon (the change may be one the
    /// watch's filter lets pass without a reconcile, such as status).
    pub(super) async fn release_finalizer(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
    ) -> Result<bool, EngineError> {
        let patch = finalizer_release(obj.finalizers(), obj.resource_version());
        match api
            .patch(
                &obj.name_any(),
                &PatchParams::default(),
                &Patch::Merge(patch),
            )
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes `status` by server-side apply, stamped with the sync time, and keeps what the
    /// apiserver returned until the watch delivers it (see the record's `own_status`, `engine::records`).
    pub(super) async fn apply_status(
        &self,
        api: &Api<A::Kind>,
        obj: &A::Kind,
        mut status: <A::Kind as ManagedKind>::Status,
    ) -> Result<(), EngineError> {
        A::Kind::common_mut(&mut status).last_sync_time = Some(Time(Timestamp::now()));
        let body = json!({
            "apiVersion": gpucloud_crd::api_version(),
            "kind": A::KIND,
            "status": status,
        });
        let written = api
            .patch_status(
                &obj.name_any(),
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(body),
            )
            .await?;
        if let (Some(version), Some(status)) =
            (written.resource_version(), written.current_status())
        {
            self.wrote_status(obj, version, status.clone());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_create_marker_carries_the_finalizer_and_the_version_read() {
        let changes = [(
            ann::CREATE_PENDING,
            Some("2026-01-01T00:00:00Z".to_string()),
        )];
        let patch = metadata_patch(
            &changes,
            &strings(&["other/finalizer"]),
            Some(FINALIZER),
            Some(Some("42".to_string())),
        );
        assert_eq!(
            patch,
            json!({ "metadata": {
                "annotations": { (ann::CREATE_PENDING): "2026-01-01T00:00:00Z" },
                "finalizers": ["other/finalizer", FINALIZER],
                "resourceVersion": "42",
            }})
        );
    }

    #[test]
    fn a_finalizer_already_there_is_not_written_again() {
        let patch = metadata_patch(
            &[(ann::CREATE_PENDING, None)],
            &strings(&[FINALIZER]),
            Some(FINALIZER),
            Some(Some("7".to_string())),
        );
        assert_eq!(
            patch,
            json!({ "metadata": {
                "annotations": { (ann::CREATE_PENDING): null },
                "resourceVersion": "7",
            }})
        );
    }

    #[test]
    fn an_unchecked_patch_carries_no_version() {
        let patch = metadata_patch(&legacy_id_removal(), &[], None, None);
        assert_eq!(
            patch,
            json!({ "metadata": { "annotations": {
                (ann::EXTERNAL_ID): null,
                (ann::CREATE_SUCCEEDED): null,
            }}})
        );
    }

    #[test]
    fn releasing_keeps_the_other_finalizers() {
        let patch = finalizer_release(
            &strings(&["a/first", FINALIZER, "b/second"]),
            Some("9".to_string()),
        );
        assert_eq!(
            patch,
            json!({ "metadata": {
                "resourceVersion": "9",
                "finalizers": ["a/first", "b/second"],
            }})
        );
    }
}
