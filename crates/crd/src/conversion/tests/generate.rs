//! Objects of every kind in either version, generated from the schema the apiserver
//! enforces for it (its CRD): every field of the spec and the status, within the types,
//! enums, bounds and required fields the schema says. What the schema cannot say (the
//! Endpoint's forms, its durations) is set after.

use std::collections::BTreeMap;

use std::fmt::Debug;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionVersion;
use kube::{CustomResourceExt, Resource};
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::properties::Parts;
use crate::common::GROUP;
use crate::v1alpha1;

/// Objects of kind `K` in the current version (its CRD's): metadata, a spec from the
/// schema that `spec` makes keep the rules the schema cannot say, and a status from the
/// schema or none.
pub fn objects<K>(
    spec: impl FnOnce(BoxedStrategy<Value>) -> BoxedStrategy<Value>,
) -> BoxedStrategy<K>
where
    K: CustomResourceExt + Resource<DynamicType = ()> + DeserializeOwned + Debug + 'static,
{
    let head = json!({"apiVersion": K::api_version(&()), "kind": K::kind(&())});
    objects_of(&K::crd().spec.versions[0], head, spec)
}

/// Objects of kind `A` in `v1alpha1`, from its frozen schema, as [`objects`] makes them.
pub fn alpha_objects<A>(
    spec: impl FnOnce(BoxedStrategy<Value>) -> BoxedStrategy<Value>,
) -> BoxedStrategy<A>
where
    A: Parts + DeserializeOwned + Debug + 'static,
{
    let plural = format!("{}s", A::KIND.to_lowercase());
    let version = v1alpha1::schema(&plural).expect("a kind v1alpha1 has");
    let head = json!({"apiVersion": format!("{GROUP}/{}", v1alpha1::VERSION), "kind": A::KIND});
    objects_of(&version, head, spec)
}

fn objects_of<K>(
    version: &CustomResourceDefinitionVersion,
    head: Value,
    spec: impl FnOnce(BoxedStrategy<Value>) -> BoxedStrategy<Value>,
) -> BoxedStrategy<K>
where
    K: DeserializeOwned + Debug + 'static,
{
    let schema = serde_json::to_value(&version.schema).expect("a schema");
    let root = &schema["openAPIV3Schema"]["properties"];
    let status = proptest::option::of(values(&root["status"]));
    (metadata(), spec(values(&root["spec"])), status)
        .prop_map(move |(metadata, spec, status)| {
            let mut object = head.clone();
            object["metadata"] = metadata;
            object["spec"] = spec;
            if let Some(status) = status {
                object["status"] = status;
            }
            serde_json::from_value(object.clone())
                .unwrap_or_else(|e| panic!("a generated object does not read: {e}: {object}"))
        })
        .boxed()
}

/// Values of the JSON schema `schema` (an OpenAPI v3 schema of a CRD, as JSON).
pub fn values(schema: &Value) -> BoxedStrategy<Value> {
    if let Some(choices) = schema.get("enum").and_then(Value::as_array) {
        let choices: Vec<Value> = choices.iter().filter(|v| !v.is_null()).cloned().collect();
        return proptest::sample::select(choices).boxed();
    }
    let number = |key: &str| schema.get(key).and_then(Value::as_f64);
    let count = |key: &str| schema.get(key).and_then(Value::as_u64).map(|n| n as usize);
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => object(schema),
        Some("array") => {
            let min = count("minItems").unwrap_or(0);
            let max = count("maxItems").unwrap_or(3).min(3).max(min);
            proptest::collection::vec(values(&schema["items"]), min..=max)
                .prop_map(Value::Array)
                .boxed()
        }
        Some("string") if schema.get("format").is_some_and(|f| f == "date-time") => {
            (2000..2100i32, 1..=12u8, 1..=28u8, 0..24u8, 0..60u8, 0..60u8)
                .prop_map(|(y, mo, d, h, mi, s)| {
                    json!(format!("{y}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"))
                })
                .boxed()
        }
        Some("string") => {
            let min = count("minLength").unwrap_or(0);
            let max = count("maxLength").unwrap_or(12).min(12).max(min);
            proptest::string::string_regex(&format!("[a-z0-9/._-]{{{min},{max}}}"))
                .expect("a regex")
                .prop_map(Value::from)
                .boxed()
        }
        Some("integer") => {
            let int32 = schema.get("format").is_some_and(|f| f == "int32");
            let (low, high) = if int32 {
                (i64::from(i32::MIN), i64::from(i32::MAX))
            } else {
                (i64::MIN, i64::MAX)
            };
            let min = number("minimum").map_or(low, |n| n as i64);
            let max = number("maximum").map_or(high, |n| n as i64);
            (min..=max).prop_map(Value::from).boxed()
        }
        Some("number") => {
            let min = number("minimum").unwrap_or(-1.0e6);
            let max = number("maximum").unwrap_or(min + 1.0e6);
            (min..=max).prop_map(Value::from).boxed()
        }
        Some("boolean") => any::<bool>().prop_map(Value::from).boxed(),
        other => panic!("a schema type this generator does not know: {other:?} in {schema}"),
    }
}

/// An object: each required property, and each other one or not.
fn object(schema: &Value) -> BoxedStrategy<Value> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        // A map (`additionalProperties`), such as a label selector's `matchLabels`.
        let entry = values(
            schema
                .get("additionalProperties")
                .unwrap_or(&json!({"type": "string"})),
        );
        return proptest::collection::btree_map("[a-z]{1,6}", entry, 0..3)
            .prop_map(|map| Value::Object(map.into_iter().collect()))
            .boxed();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let fields: Vec<BoxedStrategy<(String, Option<Value>)>> = properties
        .iter()
        .map(|(name, property)| {
            let name = name.clone();
            let value = values(property);
            if required.contains(&name.as_str()) {
                value.prop_map(move |v| (name.clone(), Some(v))).boxed()
            } else {
                proptest::option::of(value)
                    .prop_map(move |v| (name.clone(), v))
                    .boxed()
            }
        })
        .collect();
    fields
        .prop_map(|fields| {
            let map: Map<String, Value> = fields
                .into_iter()
                .filter_map(|(name, value)| Some((name, value?)))
                .collect();
            Value::Object(map)
        })
        .boxed()
}

/// Metadata as the apiserver keeps it, with labels and annotations (none of them the
/// conversion's).
pub fn metadata() -> BoxedStrategy<Value> {
    let map = || {
        let map = proptest::collection::btree_map("[a-z.]{1,8}/?[a-z]{1,6}", "[ -~]{0,12}", 1..3);
        proptest::option::of(map.prop_map(|m: BTreeMap<String, String>| json!(m)))
    };
    (
        "[a-z][a-z0-9-]{0,20}",
        "[a-z]{1,10}",
        "[0-9a-f]{8}",
        1..100i64,
        map(),
        map(),
    )
        .prop_map(|(name, namespace, uid, generation, labels, annotations)| {
            let mut metadata = json!({"name": name, "namespace": namespace, "uid": uid,
                "generation": generation, "resourceVersion": generation.to_string()});
            if let Some(labels) = labels {
                metadata["labels"] = labels;
            }
            if let Some(annotations) = annotations {
                metadata["annotations"] = annotations;
            }
            metadata
        })
        .boxed()
}
