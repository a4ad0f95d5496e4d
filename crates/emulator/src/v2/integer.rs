//! `deserialize_with` adapters that read plain `i64` fields as the document's integers
//! ([`Int`]: `12.0` is 12, a value beyond 64 bits saturates so a range rule judges it).

use serde::{Deserialize, Deserializer};

use super::request::Int;

/// A required integer field: `#[serde(deserialize_with = "integer")]`.
pub fn integer<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    Int::deserialize(d).map(|i| i.0)
}

/// An optional integer field the document types as non-null:
/// `#[serde(default, deserialize_with = "opt_integer")]`.
pub fn opt_integer<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    integer(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
    struct Body {
        #[serde(deserialize_with = "integer")]
        n: i64,
        #[serde(default, deserialize_with = "opt_integer")]
        m: Option<i64>,
    }

    fn n(json: &str) -> Result<Body, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn integers_as_json_schema_sees_them() {
        assert_eq!(n(r#"{"n": 12}"#).unwrap().n, 12);
        assert_eq!(n(r#"{"n": 12.0}"#).unwrap().n, 12);
        assert_eq!(n(r#"{"n": 19868988730764242944}"#).unwrap().n, i64::MAX);
        assert_eq!(n(r#"{"n": 1, "m": 2.0}"#).unwrap().m, Some(2));
        assert_eq!(n(r#"{"n": 1}"#).unwrap().m, None);
        for bad in [
            r#"{"n": 1.5}"#,
            r#"{"n": "1"}"#,
            r#"{"n": null}"#,
            r#"{"n": 1, "m": null}"#,
        ] {
            let e = n(bad).unwrap_err().to_string();
            assert!(e.contains("an integer"), "{bad}: {e}");
        }
    }
}
