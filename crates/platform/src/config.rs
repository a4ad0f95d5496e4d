//! Where the platform lives and who we are to it: one base URL per surface, the API key,
//! timeouts, retry and rate-limit settings.

use std::fmt;
use std::path::Path;
use std::time::Duration;

use url::Url;

use super::error::PlatformError;
use super::ratelimit::RateLimits;

/// Environment variable holding the API key.
pub const ENV_API_KEY: &str = "GPUCLOUD_API_KEY";
/// Environment variable overriding the REST base (including `/v1`).
pub const ENV_REST_URL: &str = "GPUCLOUD_REST_URL";
/// Environment variable overriding the GraphQL address.
pub const ENV_GRAPHQL_URL: &str = "GPUCLOUD_GRAPHQL_URL";
/// Environment variable overriding the job API base (up to and including `/v2`).
pub const ENV_SERVERLESS_URL: &str = "GPUCLOUD_SERVERLESS_URL";
/// Environment variable overriding the registry delegation base.
pub const ENV_REGISTRY_URL: &str = "GPUCLOUD_REGISTRY_URL";
/// Environment variable overriding the REST v2 base (including `/v2`).
pub const ENV_API_URL: &str = "GPUCLOUD_API_URL";
/// Environment variable choosing the platform API generation (`v2` or `seed`).
pub const ENV_PLATFORM_API: &str = "GPUCLOUD_PLATFORM_API";

/// The public platform's addresses, as the official SDK uses them.
pub const DEFAULT_REST_URL: &str = "https://rest.runpod.io/v1";
pub const DEFAULT_GRAPHQL_URL: &str = "https://api.runpod.io/graphql";
pub const DEFAULT_SERVERLESS_URL: &str = "https://api.runpod.ai/v2";
pub const DEFAULT_REGISTRY_URL: &str = "https://api.runpod.io";
/// The REST v2 base of the public platform.
pub const DEFAULT_API_URL: &str = "https://api.runpod.io/v2";

/// An API key. It is a secret: `Debug` and `Display` print a fixed mask, and the only way to
/// read it is [`ApiKey::expose`], which the transport calls when it builds a request.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Checks the key can travel in a header and a query string without escaping, so that a
    /// stray newline from a file cannot split a header or end up quoted in an error.
    pub fn new(key: impl Into<String>) -> Result<Self, PlatformError> {
        let key = key.into();
        if key.is_empty() {
            return Err(PlatformError::invalid_input("api_key", "is empty"));
        }
        if key.len() > 4096 {
            return Err(PlatformError::invalid_input(
                "api_key",
                "is longer than 4096 bytes",
            ));
        }
        if !key.bytes().all(|b| b.is_ascii_graphic()) {
            // Never echo the offending key, not even a part of it.
            return Err(PlatformError::invalid_input(
                "api_key",
                "contains whitespace, control or non-ASCII characters",
            ));
        }
        Ok(Self(key))
    }

    /// Reads the key from `GPUCLOUD_API_KEY`.
    pub fn from_env() -> Result<Self, PlatformError> {
        match std::env::var(ENV_API_KEY) {
            Ok(v) => Self::new(v.trim().to_owned()),
            Err(_) => Err(PlatformError::invalid_input(
                "api_key",
                format!("{ENV_API_KEY} is not set (or use a key file)"),
            )),
        }
    }

    /// Reads the key from a file (a mounted Secret, typically); surrounding whitespace, such
    /// as the trailing newline editors add, is dropped.
    pub fn from_file(path: &Path) -> Result<Self, PlatformError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            PlatformError::invalid_input(
                "api_key_file",
                format!("cannot read {}: {}", path.display(), e.kind()),
            )
        })?;
        Self::new(text.trim().to_owned())
    }

    /// The key itself. Only for building requests; never log or format the result.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// One base URL per API surface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaseUrls {
    /// REST management base, ending in `/v1`.
    pub rest: Url,
    /// The GraphQL address.
    pub graphql: Url,
    /// Job API base, ending in `/v2`; job calls go to `{serverless}/{endpoint_id}/...`.
    pub serverless: Url,
    /// Registry delegation base; the listing is `{registry}/v2/registries/delegations`.
    pub registry: Url,
    /// REST v2 base, ending in `/v2`; pods are at `{api}/pods`.
    pub api: Url,
}

impl Default for BaseUrls {
    fn default() -> Self {
        Self {
            rest: Url::parse(DEFAULT_REST_URL).expect("constant URL"),
            graphql: Url::parse(DEFAULT_GRAPHQL_URL).expect("constant URL"),
            serverless: Url::parse(DEFAULT_SERVERLESS_URL).expect("constant URL"),
            registry: Url::parse(DEFAULT_REGISTRY_URL).expect("constant URL"),
            api: Url::parse(DEFAULT_API_URL).expect("constant URL"),
        }
    }
}

impl BaseUrls {
    /// The defaults, overridden by whichever `GPUCLOUD_*_URL` variables are set.
    pub fn from_env() -> Result<Self, PlatformError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`BaseUrls::from_env`], reading variables through `lookup` (testable without
    /// touching the process environment).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, PlatformError> {
        let mut urls = Self::default();
        let set = |name: &str, field: &'static str, slot: &mut Url| -> Result<(), PlatformError> {
            if let Some(v) = lookup(name).filter(|v| !v.trim().is_empty()) {
                *slot = parse_base_url(field, v.trim())?;
            }
            Ok(())
        };
        set(ENV_REST_URL, "rest_url", &mut urls.rest)?;
        set(ENV_GRAPHQL_URL, "graphql_url", &mut urls.graphql)?;
        set(ENV_SERVERLESS_URL, "serverless_url", &mut urls.serverless)?;
        set(ENV_REGISTRY_URL, "registry_url", &mut urls.registry)?;
        set(ENV_API_URL, "api_url", &mut urls.api)?;
        Ok(urls)
    }

    /// Replaces each surface's URL for which an override is given (a flag's value), naming
    /// the flag in the error when one does not parse.
    pub fn override_with(
        &mut self,
        rest: Option<&str>,
        graphql: Option<&str>,
        serverless: Option<&str>,
        registry: Option<&str>,
    ) -> Result<(), PlatformError> {
        let slots = [
            ("rest_url", rest, &mut self.rest),
            ("graphql_url", graphql, &mut self.graphql),
            ("serverless_url", serverless, &mut self.serverless),
            ("registry_url", registry, &mut self.registry),
        ];
        for (field, value, slot) in slots {
            if let Some(v) = value {
                *slot = parse_base_url(field, v)?;
            }
        }
        Ok(())
    }

    /// Replaces the REST v2 base when a flag gives one.
    pub fn override_api(&mut self, api: Option<&str>) -> Result<(), PlatformError> {
        if let Some(v) = api {
            self.api = parse_base_url("api_url", v)?;
        }
        Ok(())
    }

    /// All surfaces of one emulator (or any server laid out like it) at `base`.
    pub fn single_host(base: &str) -> Result<Self, PlatformError> {
        let base = base.trim_end_matches('/');
        Ok(Self {
            rest: parse_base_url("rest_url", &format!("{base}/v1"))?,
            graphql: parse_base_url("graphql_url", &format!("{base}/graphql"))?,
            serverless: parse_base_url("serverless_url", &format!("{base}/v2"))?,
            registry: parse_base_url("registry_url", base)?,
            api: parse_base_url("api_url", &format!("{base}/v2"))?,
        })
    }
}

/// Parses a base URL, refusing what cannot be a base (no http(s) scheme, credentials or a
/// query inside, which would leak or be dropped when paths are appended).
pub fn parse_base_url(field: &'static str, raw: &str) -> Result<Url, PlatformError> {
    let url = Url::parse(raw)
        .map_err(|e| PlatformError::invalid_input(field, format!("not a URL: {e}")))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(PlatformError::invalid_input(
            field,
            "scheme must be http or https",
        ));
    }
    if url.cannot_be_a_base() || url.host().is_none() {
        return Err(PlatformError::invalid_input(
            field,
            "must be an absolute http(s) URL",
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(PlatformError::invalid_input(
            field,
            "must not carry credentials",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(PlatformError::invalid_input(
            field,
            "must not carry a query or fragment",
        ));
    }
    Ok(url)
}

/// Retry policy for calls that are safe to repeat.
#[derive(Clone, Debug, PartialEq)]
pub struct RetryConfig {
    /// Retries after the first attempt (so `max_retries + 1` attempts at most).
    pub max_retries: usize,
    /// First backoff delay.
    pub min_delay: Duration,
    /// Cap of one backoff delay.
    pub max_delay: Duration,
    /// A `Retry-After` longer than this is not waited out inside the call: the error goes
    /// back to the caller, who can requeue instead of holding a task for minutes.
    pub max_retry_after: Duration,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            max_retries: 5,
            min_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(10),
            max_retry_after: Duration::from_secs(30),
        }
    }
}

impl RetryConfig {
    /// No retries at all (the caller runs its own loop).
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }
}

/// Per-attempt time limits.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeouts {
    /// TCP + TLS connect.
    pub connect: Duration,
    /// Whole request/response of one attempt, for every call but `/runsync`.
    pub request: Duration,
    /// Added to `/runsync`'s `wait` for that call's limit: the server holds it open that long.
    pub runsync_margin: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(5),
            request: Duration::from_secs(30),
            runsync_margin: Duration::from_secs(15),
        }
    }
}

/// Which generation of the platform's API callers should speak: REST v2, or the seed
/// surfaces (REST v1, GraphQL). The client offers both whatever this says; it records the
/// choice for the code that picks a backend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PlatformApi {
    /// REST v2, the platform's current API.
    #[default]
    V2,
    /// REST v1 and GraphQL, which the platform is retiring.
    Seed,
}

impl PlatformApi {
    pub fn as_str(self) -> &'static str {
        match self {
            PlatformApi::V2 => "v2",
            PlatformApi::Seed => "seed",
        }
    }

    /// `GPUCLOUD_PLATFORM_API`, or the default when unset or blank.
    pub fn from_env() -> Result<Self, PlatformError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`PlatformApi::from_env`], reading variables through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, PlatformError> {
        match lookup(ENV_PLATFORM_API).filter(|v| !v.trim().is_empty()) {
            Some(v) => v.parse(),
            None => Ok(Self::default()),
        }
    }
}

impl std::str::FromStr for PlatformApi {
    type Err = PlatformError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "v2" => Ok(PlatformApi::V2),
            "seed" => Ok(PlatformApi::Seed),
            _ => Err(PlatformError::invalid_input(
                "platform_api",
                "must be \"v2\" or \"seed\"",
            )),
        }
    }
}

impl fmt::Display for PlatformApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything a [`super::PlatformClient`] needs.
#[derive(Clone, Debug)]
pub struct PlatformConfig {
    pub urls: BaseUrls,
    pub api_key: ApiKey,
    pub timeouts: Timeouts,
    pub retry: RetryConfig,
    pub rate_limits: RateLimits,
    /// Sent as `User-Agent`.
    pub user_agent: String,
    /// The API generation callers should use (see [`PlatformApi`]).
    pub api: PlatformApi,
}

impl PlatformConfig {
    /// Default timeouts, retries and limits for the given addresses and key.
    pub fn new(urls: BaseUrls, api_key: ApiKey) -> Self {
        Self {
            urls,
            api_key,
            timeouts: Timeouts::default(),
            retry: RetryConfig::default(),
            rate_limits: RateLimits::default(),
            user_agent: format!("gpucloud-operator/{}", env!("CARGO_PKG_VERSION")),
            api: PlatformApi::default(),
        }
    }

    /// URLs, key and API generation from the environment (`GPUCLOUD_*`).
    pub fn from_env() -> Result<Self, PlatformError> {
        let mut config = Self::new(BaseUrls::from_env()?, ApiKey::from_env()?);
        config.api = PlatformApi::from_env()?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_key_is_masked_in_debug_and_display() {
        let key = ApiKey::new("sk-very-secret-123").unwrap();
        assert_eq!(format!("{key:?}"), "ApiKey(***)");
        assert_eq!(format!("{key}"), "***");
        let cfg = PlatformConfig::new(BaseUrls::default(), key.clone());
        assert!(!format!("{cfg:?}").contains("very-secret"));
        assert_eq!(key.expose(), "sk-very-secret-123");
    }

    #[test]
    fn api_key_rejects_bad_bytes_without_echoing_them() {
        for bad in ["", "a b", "abc\n", "ключ"] {
            let err = ApiKey::new(bad).unwrap_err();
            assert_eq!(err.class(), crate::ErrorClass::InvalidInput);
            if !bad.is_empty() {
                assert!(!err.to_string().contains(bad.trim()), "{err}");
            }
        }
    }

    #[test]
    fn api_key_file_is_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "file-key\n").unwrap();
        assert_eq!(ApiKey::from_file(&path).unwrap().expose(), "file-key");
        let err = ApiKey::from_file(&dir.path().join("absent")).unwrap_err();
        assert!(err.to_string().contains("api_key_file"), "{err}");
    }

    #[test]
    fn env_overrides_defaults_one_by_one() {
        let urls = BaseUrls::from_lookup(|name| match name {
            ENV_REST_URL => Some("http://127.0.0.1:9/v1".into()),
            ENV_SERVERLESS_URL => Some(" http://127.0.0.1:9/v2 ".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(urls.rest.as_str(), "http://127.0.0.1:9/v1");
        assert_eq!(urls.serverless.as_str(), "http://127.0.0.1:9/v2");
        assert_eq!(urls.graphql.as_str(), DEFAULT_GRAPHQL_URL);
        assert_eq!(urls.registry.as_str(), "https://api.runpod.io/");
        assert_eq!(urls.api.as_str(), DEFAULT_API_URL);
        let urls =
            BaseUrls::from_lookup(|n| (n == ENV_API_URL).then(|| "http://h:1/v2".into())).unwrap();
        assert_eq!(urls.api.as_str(), "http://h:1/v2");
        let err = BaseUrls::from_lookup(|n| (n == ENV_API_URL).then(|| "h:1".into())).unwrap_err();
        assert!(err.to_string().contains("api_url"), "{err}");
    }

    #[test]
    fn platform_api_parses_and_defaults_to_v2() {
        assert_eq!(PlatformApi::default(), PlatformApi::V2);
        assert_eq!("v2".parse::<PlatformApi>().unwrap(), PlatformApi::V2);
        assert_eq!(" Seed ".parse::<PlatformApi>().unwrap(), PlatformApi::Seed);
        assert!("v1".parse::<PlatformApi>().is_err());
        let from = |v: Option<&str>| {
            PlatformApi::from_lookup(|n| {
                assert_eq!(n, ENV_PLATFORM_API);
                v.map(str::to_owned)
            })
        };
        assert_eq!(from(None).unwrap(), PlatformApi::V2);
        assert_eq!(from(Some("")).unwrap(), PlatformApi::V2);
        assert_eq!(from(Some("seed")).unwrap(), PlatformApi::Seed);
        assert!(from(Some("graphql")).is_err());
        assert_eq!(PlatformApi::Seed.to_string(), "seed");
    }

    #[test]
    fn bad_env_url_names_the_field() {
        let err = BaseUrls::from_lookup(|n| (n == ENV_GRAPHQL_URL).then(|| "ftp://x/".into()))
            .unwrap_err();
        assert!(err.to_string().contains("graphql_url"), "{err}");
        let err = parse_base_url("rest_url", "http://user:pw@h/v1").unwrap_err();
        assert!(!err.to_string().contains("pw"), "{err}");
    }

    #[test]
    fn single_host_lays_out_like_the_emulator() {
        let u = BaseUrls::single_host("http://127.0.0.1:8080/").unwrap();
        assert_eq!(u.rest.as_str(), "http://127.0.0.1:8080/v1");
        assert_eq!(u.graphql.as_str(), "http://127.0.0.1:8080/graphql");
        assert_eq!(u.serverless.as_str(), "http://127.0.0.1:8080/v2");
        assert_eq!(u.registry.as_str(), "http://127.0.0.1:8080/");
        assert_eq!(u.api.as_str(), "http://127.0.0.1:8080/v2");
        let mut u = u;
        u.override_api(Some("http://127.0.0.1:9/v2")).unwrap();
        assert_eq!(u.api.as_str(), "http://127.0.0.1:9/v2");
        assert!(u.override_api(Some("nope")).is_err());
    }
}
