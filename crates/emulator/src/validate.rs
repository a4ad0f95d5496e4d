//! Field-by-field validation of JSON request bodies.
//!
//! Handlers read bodies through [`Fields`] rather than typed serde structs so that every
//! problem is reported at once, each message names the field and the rule it broke
//! ("workersMax: must be an integer between 0 and 1000"), and unexpected properties are
//! refused the way the platform refuses them.

use serde_json::{Map, Value};

use super::error::ApiError;

/// Parses a request body as a JSON object. An empty body counts as `{}` when `allow_empty`.
pub fn parse_object(body: &[u8], allow_empty: bool) -> Result<Map<String, Value>, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return if allow_empty {
            Ok(Map::new())
        } else {
            Err(ApiError::bad_request(
                "body: required, must be a JSON object",
            ))
        };
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::bad_request("body: must be a JSON object")),
        Err(err) => Err(ApiError::bad_request(format!(
            "body: must be valid JSON ({err})"
        ))),
    }
}

/// Reads the properties of one JSON object, collecting problems.
pub struct Fields<'a> {
    map: &'a Map<String, Value>,
    prefix: String,
    seen: Vec<&'static str>,
    errors: Vec<String>,
}

impl<'a> Fields<'a> {
    pub fn new(map: &'a Map<String, Value>) -> Self {
        Self::nested(map, "")
    }

    /// Reads a nested object; messages name fields as `prefix.field`.
    pub fn nested(map: &'a Map<String, Value>, prefix: &str) -> Self {
        Self {
            map,
            prefix: prefix.to_string(),
            seen: Vec::new(),
            errors: Vec::new(),
        }
    }

    fn name(&self, field: &str) -> String {
        if self.prefix.is_empty() {
            field.to_string()
        } else {
            format!("{}.{field}", self.prefix)
        }
    }

    /// Records a problem with `field`.
    pub fn fail(&mut self, field: &str, rule: impl AsRef<str>) {
        let name = self.name(field);
        self.errors.push(format!("{name}: {}", rule.as_ref()));
    }

    fn get(&mut self, field: &'static str) -> Option<&'a Value> {
        self.seen.push(field);
        // An explicit null is treated like an absent optional field.
        self.map.get(field).filter(|v| !v.is_null())
    }

    pub fn present(&self, field: &str) -> bool {
        self.map.get(field).is_some_and(|v| !v.is_null())
    }

    pub fn opt_string(&mut self, field: &'static str) -> Option<String> {
        match self.get(field)? {
            Value::String(s) => Some(s.clone()),
            _ => {
                self.fail(field, "must be a string");
                None
            }
        }
    }

    /// A required non-empty string.
    pub fn req_string(&mut self, field: &'static str) -> Option<String> {
        if !self.present(field) {
            self.seen.push(field);
            self.fail(field, "required");
            return None;
        }
        let value = self.opt_string(field)?;
        if value.trim().is_empty() {
            self.fail(field, "must not be empty");
            return None;
        }
        Some(value)
    }

    pub fn opt_bool(&mut self, field: &'static str) -> Option<bool> {
        match self.get(field)? {
            Value::Bool(b) => Some(*b),
            _ => {
                self.fail(field, "must be a boolean");
                None
            }
        }
    }

    /// An optional integer within `min..=max`.
    pub fn opt_int(&mut self, field: &'static str, min: i64, max: i64) -> Option<i64> {
        let value = self.get(field)?;
        match value.as_i64() {
            Some(n) if (min..=max).contains(&n) => Some(n),
            Some(_) => {
                self.fail(field, format!("must be between {min} and {max}"));
                None
            }
            None => {
                self.fail(field, format!("must be an integer between {min} and {max}"));
                None
            }
        }
    }

    pub fn req_int(&mut self, field: &'static str, min: i64, max: i64) -> Option<i64> {
        if !self.present(field) {
            self.seen.push(field);
            self.fail(field, "required");
            return None;
        }
        self.opt_int(field, min, max)
    }

    /// An optional array of strings.
    pub fn opt_strings(&mut self, field: &'static str) -> Option<Vec<String>> {
        match self.get(field)? {
            Value::Array(items) => {
                let strings: Option<Vec<String>> = items
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect();
                if strings.is_none() {
                    self.fail(field, "must be an array of strings");
                }
                strings
            }
            _ => {
                self.fail(field, "must be an array of strings");
                None
            }
        }
    }

    pub fn opt_object(&mut self, field: &'static str) -> Option<&'a Map<String, Value>> {
        match self.get(field)? {
            Value::Object(map) => Some(map),
            _ => {
                self.fail(field, "must be an object");
                None
            }
        }
    }

    /// Any JSON value, unchecked.
    pub fn opt_value(&mut self, field: &'static str) -> Option<&'a Value> {
        self.get(field)
    }

    /// Problems found so far, including unexpected properties.
    pub fn finish(mut self) -> Vec<String> {
        let mut unexpected: Vec<&String> = self
            .map
            .keys()
            .filter(|k| !self.seen.contains(&k.as_str()))
            .collect();
        unexpected.sort();
        for key in unexpected {
            let name = self.name(key);
            self.errors
                .push(format!("{name}: unexpected property, not allowed here"));
        }
        self.errors
    }

    /// Adds problems from a nested reader.
    pub fn absorb(&mut self, errors: Vec<String>) {
        self.errors.extend(errors);
    }
}

/// Turns collected problems into `Ok(())` or a 400.
pub fn check(errors: Vec<String>) -> Result<(), ApiError> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::validation(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn reports_every_problem_with_field_and_rule() {
        let body = map(json!({"name": 5, "size": 9000, "extra": true}));
        let mut f = Fields::new(&body);
        assert_eq!(f.opt_string("name"), None);
        assert_eq!(f.opt_int("size", 0, 4000), None);
        let errors = f.finish();
        assert_eq!(
            errors,
            vec![
                "name: must be a string",
                "size: must be between 0 and 4000",
                "extra: unexpected property, not allowed here",
            ]
        );
    }

    #[test]
    fn required_fields_and_nesting() {
        let body = map(json!({"policy": {"ttl": "x"}}));
        let mut f = Fields::new(&body);
        assert!(f.req_string("name").is_none());
        let policy = f.opt_object("policy").unwrap();
        let mut p = Fields::nested(policy, "policy");
        assert!(p.opt_int("ttl", 10_000, 20_000).is_none());
        let nested = p.finish();
        f.absorb(nested);
        let errors = f.finish();
        assert_eq!(errors[0], "name: required");
        assert_eq!(
            errors[1],
            "policy.ttl: must be an integer between 10000 and 20000"
        );
    }

    #[test]
    fn empty_body_rules() {
        assert!(parse_object(b"", true).unwrap().is_empty());
        assert!(parse_object(b"  ", false).is_err());
        assert!(parse_object(b"[1]", true).is_err());
        assert!(parse_object(b"{", true).is_err());
    }
}
