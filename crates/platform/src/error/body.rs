//! The error bodies the platform answers with (the spec's `title, status, detail, errors`,
//! problem+json, GraphQL `errors`, bare text), read into one shape that never fails.

use reqwest::StatusCode;
use serde_json::Value;

/// Capacity failures are recognised by the platform's texts (deploy: "There are no longer any
/// instances available ..."; resume: "There are not enough free GPUs on the host machine ...").
pub fn is_capacity_message(text: &str) -> bool {
    let t = text.to_ascii_lowercase();
    t.contains("no longer any instances available")
        || t.contains("not enough free gpus")
        || t.contains("no instances available")
}

/// The capacity text of a resume only: the stopped pod's own machine has no free GPU
/// ("There are not enough free GPUs on the host machine to start this pod").
pub fn is_host_full_message(text: &str) -> bool {
    text.to_ascii_lowercase()
        .contains("not enough free gpus on the host")
}

/// The spec's error body (`title, status, detail, errors`) or any of the other shapes seen.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ErrorBody {
    pub title: Option<String>,
    pub detail: Option<String>,
    /// Validation problems (`errors` of the spec's body, or GraphQL `errors[].message`).
    pub problems: Vec<String>,
    /// GraphQL `extensions.code` values, when present.
    pub codes: Vec<String>,
}

impl ErrorBody {
    /// Reads whatever the server sent; never fails. Unknown JSON or text becomes the detail.
    pub fn parse(body: &[u8]) -> Self {
        let Ok(value) = serde_json::from_slice::<Value>(body) else {
            let text = String::from_utf8_lossy(body).trim().to_owned();
            return Self {
                detail: (!text.is_empty()).then(|| truncate(&text)),
                ..Self::default()
            };
        };
        Self::from_value(&value)
    }

    pub fn from_value(value: &Value) -> Self {
        let mut out = Self::default();
        let str_of = |v: Option<&Value>| v.and_then(Value::as_str).map(truncate);
        match value {
            Value::Object(map) => {
                out.title = str_of(map.get("title"));
                out.detail = str_of(map.get("detail")).or_else(|| str_of(map.get("message")));
                match map.get("error") {
                    Some(Value::String(s)) => {
                        out.detail.get_or_insert_with(|| truncate(s));
                    }
                    Some(Value::Object(inner)) => {
                        if let Some(m) = str_of(inner.get("message")) {
                            out.detail.get_or_insert(m);
                        }
                    }
                    _ => {}
                }
                if let Some(Value::Array(errors)) = map.get("errors") {
                    for e in errors {
                        match e {
                            Value::String(s) => out.problems.push(truncate(s)),
                            Value::Object(o) => {
                                if let Some(m) = str_of(o.get("message")) {
                                    out.problems.push(m);
                                }
                                if let Some(code) = o
                                    .get("extensions")
                                    .and_then(|x| x.get("code"))
                                    .and_then(Value::as_str)
                                {
                                    out.codes.push(code.to_owned());
                                }
                            }
                            _ => {}
                        }
                    }
                }
            }
            Value::String(s) => out.detail = Some(truncate(s)),
            _ => {}
        }
        out
    }

    /// One line explaining the failure.
    pub fn summary(&self, status: Option<StatusCode>) -> String {
        let mut parts: Vec<&str> = Vec::new();
        if let Some(d) = &self.detail {
            parts.push(d);
        } else if let Some(t) = &self.title {
            parts.push(t);
        }
        let problems = self.problems.join("; ");
        if !problems.is_empty() && self.detail.as_deref() != Some(problems.as_str()) {
            parts.push(&problems);
        }
        if parts.is_empty() {
            return status
                .map(|s| s.canonical_reason().unwrap_or("error").to_owned())
                .unwrap_or_else(|| "no explanation given".to_owned());
        }
        parts.join(": ")
    }

    /// Every text of the body, one a line, for the phrases that classify an error.
    pub(super) fn all_text(&self) -> String {
        let mut s = String::new();
        for part in self
            .title
            .iter()
            .chain(self.detail.iter())
            .chain(self.problems.iter())
        {
            s.push_str(part);
            s.push('\n');
        }
        s
    }
}

/// Keeps error texts to one readable size: a server that answers with a whole HTML page
/// should not flood logs and Kubernetes Events.
pub(crate) fn truncate(s: &str) -> String {
    const MAX: usize = 512;
    if s.len() <= MAX {
        return s.to_owned();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}
