//! Checks a REST v2 answer against a schema of the published document (our copy,
//! `tests/fixtures/platform-rest-v2.openapi.json`): the JSON Schema keywords its response
//! schemas use (`$ref`, `allOf`, `anyOf`, `oneOf`, `type` with `null`, `enum`, `required`,
//! `properties`, `additionalProperties`, `items`, `minimum`, `maximum`, `minLength`). Enough
//! to catch a missing required field, a wrong type, an unknown enum value or a property the
//! document forbids, without a JSON Schema library; schemathesis
//! (`tests/v2-conformance/run.sh`) checks every answer with a full one.

#![allow(dead_code)]

use std::sync::OnceLock;

use serde_json::{Value, json};

const DOCUMENT: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/platform-rest-v2.openapi.json"
));

fn document() -> &'static Value {
    static DOC: OnceLock<Value> = OnceLock::new();
    DOC.get_or_init(|| serde_json::from_str(DOCUMENT).expect("the fixture is JSON"))
}

/// Every way `value` breaks `#/components/schemas/{name}`, as `path: problem`.
pub fn violations(name: &str, value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let root = json!({"$ref": format!("#/components/schemas/{name}")});
    check(&root, value, "$", &mut out);
    out
}

/// Asserts that `value` is a valid `name` of the document.
pub fn assert_schema(name: &str, value: &Value) {
    let problems = violations(name, value);
    assert!(
        problems.is_empty(),
        "not a valid {name}: {}\n{value:#}",
        problems.join("; ")
    );
}

fn resolve(reference: &str) -> &'static Value {
    let pointer = reference
        .strip_prefix('#')
        .unwrap_or_else(|| panic!("only local references: {reference}"));
    document()
        .pointer(pointer)
        .unwrap_or_else(|| panic!("{reference} is not in the document"))
}

fn is_type(value: &Value, ty: &str) -> bool {
    match ty {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        other => panic!("unknown JSON Schema type {other}"),
    }
}

fn passes(schema: &Value, value: &Value, path: &str) -> bool {
    let mut out = Vec::new();
    check(schema, value, path, &mut out);
    out.is_empty()
}

fn check(schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        check(resolve(r), value, path, out);
    }
    for sub in schema
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        check(sub, value, path, out);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key).and_then(Value::as_array)
            && !options.iter().any(|s| passes(s, value, path))
        {
            out.push(format!("{path}: matches none of its {key}"));
        }
    }
    if let Some(ty) = schema.get("type") {
        let types: Vec<&str> = match ty {
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            other => other.as_str().into_iter().collect(),
        };
        if !types.iter().any(|t| is_type(value, t)) {
            out.push(format!("{path}: must be of type {ty} (got {value})"));
            return;
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        out.push(format!("{path}: {value} is not one of {allowed:?}"));
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            out.push(format!("{path}: {n} is below the minimum {min}"));
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            out.push(format!("{path}: {n} is above the maximum {max}"));
        }
    }
    if let (Some(s), Some(min)) = (
        value.as_str(),
        schema.get("minLength").and_then(Value::as_u64),
    ) && (s.chars().count() as u64) < min
    {
        out.push(format!("{path}: shorter than {min}"));
    }
    if let Some(object) = value.as_object() {
        check_object(schema, object, path, out);
    }
    if let (Some(items), Some(schema)) = (value.as_array(), schema.get("items")) {
        for (i, item) in items.iter().enumerate() {
            check(schema, item, &format!("{path}[{i}]"), out);
        }
    }
}

fn check_object(
    schema: &Value,
    object: &serde_json::Map<String, Value>,
    path: &str,
    out: &mut Vec<String>,
) {
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = name.as_str().unwrap_or_default();
        if !object.contains_key(name) {
            out.push(format!("{path}.{name}: required"));
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    for (name, item) in object {
        let at = format!("{path}.{name}");
        match (
            properties.and_then(|p| p.get(name)),
            schema.get("additionalProperties"),
        ) {
            (Some(property), _) => check(property, item, &at, out),
            (None, Some(Value::Bool(false))) => out.push(format!("{at}: not allowed here")),
            (None, Some(additional)) if additional.is_object() => check(additional, item, &at, out),
            (None, _) => {}
        }
    }
}
