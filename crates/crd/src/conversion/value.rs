//! A whole object as JSON, converted to the version asked for: what a `ConversionReview`
//! webhook does with each of its objects.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::same_spec::{budget, network_volume, registry_credential};
use super::{ConversionError, cluster, endpoint, pod, template};
use crate::common::{GROUP, VERSION as V1BETA1};
use crate::v1alpha1::VERSION as V1ALPHA1;

/// `object` (any `gpucloud.io` kind in `v1alpha1` or `v1beta1`) in `api_version`
/// (`gpucloud.io/v1alpha1` or `gpucloud.io/v1beta1`). An object already in that version
/// comes back as it is. The error names the field and the rule when the object cannot be
/// read, or cannot be said in the other version.
pub fn convert(object: Value, api_version: &str) -> Result<Value, ConversionError> {
    let to = version_of(api_version)?;
    let text = |field: &str| {
        object
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    if version_of(text("apiVersion"))? == to {
        return Ok(object);
    }
    let up = to == V1BETA1;
    let kind = text("kind").to_string();
    let mut converted = match kind.as_str() {
        "NetworkVolume" => via(
            object,
            up,
            total(network_volume::to_v1beta1),
            total(network_volume::to_v1alpha1),
        ),
        "Endpoint" => via(object, up, endpoint::to_v1beta1, endpoint::to_v1alpha1),
        "Pod" => via(object, up, total(pod::to_v1beta1), total(pod::to_v1alpha1)),
        "Budget" => via(
            object,
            up,
            total(budget::to_v1beta1),
            total(budget::to_v1alpha1),
        ),
        "RegistryCredential" => via(
            object,
            up,
            total(registry_credential::to_v1beta1),
            total(registry_credential::to_v1alpha1),
        ),
        "Template" => via(
            object,
            up,
            total(template::to_v1beta1),
            total(template::to_v1alpha1),
        ),
        "Cluster" => via(
            object,
            up,
            total(cluster::to_v1beta1),
            total(cluster::to_v1alpha1),
        ),
        _ => Err(ConversionError::UnknownKind(kind.clone())),
    }?;
    // A `v1alpha1` type holds no `apiVersion` and `kind`; the current version's writes
    // its own, the same.
    if let Some(fields) = converted.as_object_mut() {
        fields.insert("apiVersion".into(), Value::from(api_version));
        fields.insert("kind".into(), Value::from(kind));
    }
    Ok(converted)
}

/// Reads `object` in the version it is in, converts it with `up` (to `v1beta1`) or `down`
/// (to `v1alpha1`), and writes it.
fn via<A, B>(
    object: Value,
    up: bool,
    to_v1beta1: impl FnOnce(A) -> Result<B, ConversionError>,
    to_v1alpha1: impl FnOnce(B) -> Result<A, ConversionError>,
) -> Result<Value, ConversionError>
where
    A: DeserializeOwned + Serialize,
    B: DeserializeOwned + Serialize,
{
    if up {
        written(to_v1beta1(read(object)?)?)
    } else {
        written(to_v1alpha1(read(object)?)?)
    }
}

/// A conversion that takes every object of its version.
fn total<A, B>(convert: fn(A) -> B) -> impl FnOnce(A) -> Result<B, ConversionError> {
    move |object| Ok(convert(object))
}

/// The version part of `api_version`, when it is one of this group's.
fn version_of(api_version: &str) -> Result<&str, ConversionError> {
    match api_version.split_once('/') {
        Some((group, version)) if group == GROUP && [V1ALPHA1, V1BETA1].contains(&version) => {
            Ok(version)
        }
        _ => Err(ConversionError::UnknownVersion(api_version.to_string())),
    }
}

fn read<T: DeserializeOwned>(object: Value) -> Result<T, ConversionError> {
    serde_path_to_error::deserialize(object).map_err(|e| ConversionError::Unreadable {
        field: e.path().to_string(),
        message: e.inner().to_string(),
    })
}

fn written<T: Serialize>(object: T) -> Result<Value, ConversionError> {
    serde_json::to_value(object).map_err(|e| ConversionError::Unreadable {
        field: ".".to_string(),
        message: e.to_string(),
    })
}
