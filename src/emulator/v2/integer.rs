//! JSON Schema integers as the document means them: `12` and `12.0` are the same integer,
//! and an integer too large for `i64` is still an integer (it saturates, so a range rule
//! refuses it as too large rather than the parser calling it the wrong type). Fractions,
//! strings and the rest are type errors (422).

use std::fmt;

use serde::de::{self, Deserializer, Visitor};

struct IntegerVisitor;

impl Visitor<'_> for IntegerVisitor {
    type Value = i64;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an integer")
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<i64, E> {
        Ok(i64::try_from(v).unwrap_or(i64::MAX))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<i64, E> {
        if v.is_finite() && v.fract() == 0.0 {
            // `as` saturates at the bounds of i64.
            Ok(v as i64)
        } else {
            Err(E::invalid_type(de::Unexpected::Float(v), &self))
        }
    }
}

/// A required integer field: `#[serde(deserialize_with = "integer")]`.
pub fn integer<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    d.deserialize_any(IntegerVisitor)
}

/// An optional integer field the document types as non-null:
/// `#[serde(default, deserialize_with = "opt_integer")]`.
pub fn opt_integer<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    integer(d).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

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
        assert_eq!(n(r#"{"n": -3}"#).unwrap().n, -3);
        assert_eq!(n(r#"{"n": 19868988730764242944}"#).unwrap().n, i64::MAX);
        assert_eq!(n(r#"{"n": 1e300}"#).unwrap().n, i64::MAX);
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
