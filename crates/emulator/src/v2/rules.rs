//! Rule checks of the REST v2 routes this module family serves (serverless, templates,
//! network volumes, registries): a request that matches the document but breaks a rule of
//! the world (unknown pool, size that shrinks) is a 400 listing every broken
//! rule as `field: rule`. Also the small pattern checks the document states as regular
//! expressions, without a regex engine.

use axum::http::StatusCode;

use super::problem::{Problem, V2Result};

/// Broken rules, collected so the 400 lists them all.
#[derive(Debug, Default)]
pub struct Rules(Vec<String>);

impl Rules {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn fail(&mut self, field: &str, rule: impl std::fmt::Display) {
        self.0.push(format!("{field}: {rule}"));
    }

    pub fn check(&mut self, ok: bool, field: &str, rule: impl std::fmt::Display) {
        if !ok {
            self.fail(field, rule);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a broken rule of `field` is already recorded.
    pub fn mentions(&self, field: &str) -> bool {
        let prefix = format!("{field}: ");
        self.0.iter().any(|e| e.starts_with(&prefix))
    }

    /// `Ok` when every rule held, else the 400.
    pub fn finish(self) -> V2Result<()> {
        if self.0.is_empty() {
            return Ok(());
        }
        let detail = match self.0.as_slice() {
            [one] => format!("invalid request: {one}"),
            many => format!("invalid request: {} problems", many.len()),
        };
        Err(Problem {
            errors: self.0,
            ..Problem::new(StatusCode::BAD_REQUEST, detail)
        })
    }
}

/// `^\d+\.\d+$`: a CUDA version as `major.minor`.
pub fn is_major_minor(s: &str) -> bool {
    match s.split_once('.') {
        Some((a, b)) => is_digits(a) && is_digits(b),
        None => false,
    }
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `^\s*[^-\s]`: a GPU type id, possibly indented, whose first character is not `-`.
pub fn is_type_id(s: &str) -> bool {
    s.trim_start()
        .chars()
        .next()
        .is_some_and(|c| c != '-' && !c.is_whitespace())
}

/// Whether a list repeats an item (`uniqueItems`).
pub fn has_duplicates<T: PartialEq>(items: &[T]) -> bool {
    items
        .iter()
        .enumerate()
        .any(|(i, a)| items[..i].iter().any(|b| a == b))
}

/// Compares `major.minor` versions numerically (12.11 is above 12.2).
pub fn version_key(s: &str) -> (u64, u64) {
    let (a, b) = s.split_once('.').unwrap_or((s, "0"));
    (a.parse().unwrap_or(0), b.parse().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert!(is_major_minor("12.8"));
        assert!(is_major_minor("12.11"));
        for bad in ["12", "12.", ".8", "12.8.1", "a.b", "", "12.8 "] {
            assert!(!is_major_minor(bad), "{bad:?}");
        }
        assert!(is_type_id("NVIDIA L40"));
        assert!(is_type_id("  NVIDIA L40"));
        assert!(!is_type_id("-NVIDIA"));
        assert!(!is_type_id("   "));
        assert!(!is_type_id(""));
        assert!(has_duplicates(&[1, 2, 1]));
        assert!(!has_duplicates(&[1, 2, 3]));
        assert!(version_key("12.11") > version_key("12.2"));
    }

    #[test]
    fn rules_collect_into_a_400() {
        let mut r = Rules::new();
        r.check(true, "a", "never");
        assert!(r.is_empty());
        r.fail("size", "must not shrink");
        let p = r.finish().unwrap_err();
        assert_eq!(p.status, StatusCode::BAD_REQUEST);
        assert_eq!(p.errors, vec!["size: must not shrink"]);
        assert!(p.detail.contains("size"));
        assert!(Rules::new().finish().is_ok());
    }
}
