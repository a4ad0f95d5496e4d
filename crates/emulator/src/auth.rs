//! API keys and the spec's authentication rules (401 missing/wrong key, 403 lacking access).
//!
//! Keys are compared but never logged or echoed: error messages and the state dump name a
//! key only by its position in the configuration.

use std::fmt;
use std::str::FromStr;

use axum::http::HeaderMap;

use super::error::ApiError;

/// One API key the emulator accepts. `KEY` has full access; `KEY:read` may only read.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey {
    pub key: String,
    pub read_only: bool,
}

// Keep the key out of `{:?}` output so a stray debug log cannot leak it.
impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiKey")
            .field("key", &"<redacted>")
            .field("read_only", &self.read_only)
            .finish()
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ApiKeyParseError {
    #[error("an API key must not be empty")]
    Empty,
    #[error("unknown API key scope {0:?}: use KEY (full access) or KEY:read (read only)")]
    UnknownScope(String),
}

impl FromStr for ApiKey {
    type Err = ApiKeyParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (key, read_only) = match s.rsplit_once(':') {
            Some((key, "read")) => (key, true),
            Some((_, scope)) => return Err(ApiKeyParseError::UnknownScope(scope.to_string())),
            None => (s, false),
        };
        if key.is_empty() {
            return Err(ApiKeyParseError::Empty);
        }
        Ok(Self {
            key: key.to_string(),
            read_only,
        })
    }
}

/// The caller behind a request: the index of its key in the configuration (used to key rate
/// limits without keeping the key itself around) and what it may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Caller {
    pub key_index: usize,
    pub read_only: bool,
}

impl Caller {
    /// Fails with 403 unless the caller may write.
    pub fn require_write(&self, what: &str) -> Result<(), ApiError> {
        if self.read_only {
            Err(ApiError::forbidden(format!(
                "this API key is read-only and may not {what}"
            )))
        } else {
            Ok(())
        }
    }
}

/// The configured keys.
#[derive(Debug, Clone, Default)]
pub struct KeyRing {
    keys: Vec<ApiKey>,
}

impl KeyRing {
    pub fn new(keys: Vec<ApiKey>) -> Self {
        Self { keys }
    }

    /// Looks a presented key up.
    pub fn identify(&self, presented: &str) -> Option<Caller> {
        self.keys
            .iter()
            .position(|k| constant_time_eq(k.key.as_bytes(), presented.as_bytes()))
            .map(|key_index| Caller {
                key_index,
                read_only: self.keys[key_index].read_only,
            })
    }

    /// REST and registry: `Authorization: Bearer <KEY>`.
    pub fn bearer(&self, headers: &HeaderMap) -> Result<Caller, ApiError> {
        let value = authorization(headers).ok_or_else(ApiError::unauthorized)?;
        let key = strip_bearer(value).ok_or_else(ApiError::unauthorized)?;
        self.identify(key).ok_or_else(ApiError::unauthorized)
    }

    /// Job API: the `authorization` header carries the key, as `Bearer <KEY>` or bare.
    pub fn bearer_or_bare(&self, headers: &HeaderMap) -> Result<Caller, ApiError> {
        let value = authorization(headers).ok_or_else(ApiError::unauthorized)?;
        let key = strip_bearer(value).unwrap_or(value.trim());
        self.identify(key).ok_or_else(ApiError::unauthorized)
    }
}

fn authorization(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
}

fn strip_bearer(value: &str) -> Option<&str> {
    let value = value.trim();
    let (scheme, rest) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then_some(rest.trim())
}

/// Compares without an early exit, so response timing does not reveal how much of a guessed
/// key was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn parses_scopes() {
        let full: ApiKey = "abc".parse().unwrap();
        assert!(!full.read_only);
        let read: ApiKey = "abc:read".parse().unwrap();
        assert!(read.read_only);
        assert_eq!(read.key, "abc");
        assert_eq!(
            "abc:admin".parse::<ApiKey>(),
            Err(ApiKeyParseError::UnknownScope("admin".into()))
        );
        assert_eq!(":read".parse::<ApiKey>(), Err(ApiKeyParseError::Empty));
    }

    #[test]
    fn debug_never_shows_the_key() {
        let key: ApiKey = "secret-value".parse().unwrap();
        assert!(!format!("{key:?}").contains("secret-value"));
    }

    fn ring() -> KeyRing {
        KeyRing::new(vec!["full".parse().unwrap(), "ro:read".parse().unwrap()])
    }

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert("authorization", HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn bearer_rules() {
        let ring = ring();
        assert_eq!(ring.bearer(&headers("Bearer full")).unwrap().key_index, 0);
        assert!(ring.bearer(&headers("Bearer ro")).unwrap().read_only);
        assert_eq!(
            ring.bearer(&headers("full")).unwrap_err().status.as_u16(),
            401
        );
        assert_eq!(
            ring.bearer(&headers("Bearer nope"))
                .unwrap_err()
                .status
                .as_u16(),
            401
        );
        assert_eq!(
            ring.bearer(&HeaderMap::new()).unwrap_err().status.as_u16(),
            401
        );
    }

    #[test]
    fn job_api_accepts_bare_keys() {
        let ring = ring();
        assert!(ring.bearer_or_bare(&headers("full")).is_ok());
        assert!(ring.bearer_or_bare(&headers("Bearer full")).is_ok());
        assert!(ring.bearer_or_bare(&headers("wrong")).is_err());
    }
}
