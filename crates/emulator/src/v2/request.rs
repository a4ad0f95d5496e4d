//! Reading a v2 request: who calls (bearer auth and scope), the JSON body and the query
//! string, each checked against the document's schema with every failure naming its field.
//!
//! A body or query that does not match the schema (malformed JSON, wrong type, unknown
//! property where the document forbids them, missing required field, value outside its
//! range) is a 422 listing each violation as `path: rule`. Rule violations that need the
//! world (unknown GPU type, capacity) are the handlers' 400s.

use std::fmt;
use std::marker::PhantomData;

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::de::{self, DeserializeOwned, IntoDeserializer};
use serde::{Deserialize, Deserializer};

use super::problem::{Problem, V2Result};
use crate::auth;
use crate::state::App;

/// The authenticated caller of a v2 route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    pub read_only: bool,
    /// Position of the key in the configuration: rate limits are kept per key without
    /// keeping the key itself.
    pub key_index: usize,
}

impl Caller {
    /// 403 for a read-only key.
    pub fn require_write(&self) -> Result<(), Problem> {
        if self.read_only {
            Err(Problem::forbidden(
                "access denied: this API key may only read",
            ))
        } else {
            Ok(())
        }
    }
}

impl From<auth::Caller> for Caller {
    fn from(c: auth::Caller) -> Self {
        Self {
            read_only: c.read_only,
            key_index: c.key_index,
        }
    }
}

/// `Authorization: Bearer <KEY>` against the emulator's key ring. The key is never echoed.
pub fn authenticate(app: &App, headers: &axum::http::HeaderMap) -> V2Result<Caller> {
    let presented = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::trim);
    let Some(value) = presented.filter(|v| !v.is_empty()) else {
        return Err(Problem::unauthorized("missing bearer token"));
    };
    let token = value
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, rest)| rest.trim())
        .ok_or_else(|| {
            Problem::unauthorized("malformed authorization header: use Bearer <API_KEY>")
        })?;
    app.keys
        .identify(token)
        .map(Caller::from)
        .ok_or_else(|| Problem::unauthorized("invalid API key"))
}

impl FromRequestParts<App> for Caller {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        // The rate-limit layer authenticates first and leaves the caller here.
        if let Some(caller) = parts.extensions.get::<Caller>() {
            return Ok(*caller);
        }
        authenticate(app, &parts.headers)
    }
}

/// A caller whose key may write. It is extracted after the path, so a path that does not
/// parse is refused before a read-only key is (as when the handler checked it itself).
#[derive(Debug, Clone, Copy)]
pub struct Writer;

impl FromRequestParts<App> for Writer {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, app: &App) -> Result<Self, Self::Rejection> {
        Caller::from_request_parts(parts, app)
            .await?
            .require_write()?;
        Ok(Self)
    }
}

/// The body of a write: read like plain `Bytes` (a body that cannot be read is refused
/// first), then the caller must be a [`Writer`].
#[derive(Debug, Clone)]
pub struct WriteBody(pub Bytes);

impl FromRequest<App> for WriteBody {
    type Rejection = Response;

    async fn from_request(req: Request, app: &App) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = req.into_parts();
        let caller = Caller::from_request_parts(&mut parts, app)
            .await
            .map_err(IntoResponse::into_response)?;
        let bytes = Bytes::from_request(Request::from_parts(parts, body), app)
            .await
            .map_err(IntoResponse::into_response)?;
        caller
            .require_write()
            .map_err(IntoResponse::into_response)?;
        Ok(Self(bytes))
    }
}

/// Parses a JSON body into `T`; anything that does not deserialize is a 422 naming the path.
pub fn parse_body<T: DeserializeOwned>(bytes: &[u8]) -> V2Result<T> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Problem::unprocessable(vec![
            "body: required, must be a JSON object".into(),
        ]));
    }
    // Every v2 body is an object; serde would otherwise read a struct from an array.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(match serde_json::from_slice::<serde_json::Value>(bytes) {
            Ok(_) => Problem::unprocessable(vec!["body: must be a JSON object".into()]),
            Err(e) => Problem::unprocessable(vec![format!("body: must be valid JSON ({e})")]),
        });
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        let valid_json = || serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok();
        if (inner.is_syntax() || inner.is_eof()) && !valid_json() {
            Problem::unprocessable(vec![format!("body: must be valid JSON ({inner})")])
        } else if inner.is_syntax() {
            // serde_json reads an enum given anything but a string (or an object) as a
            // syntax error, although the document is valid JSON: the field is at fault.
            Problem::unprocessable(vec![describe(
                &path,
                "must be one of the documented values (a string)",
            )])
        } else {
            Problem::unprocessable(vec![describe(&path, &strip_position(&inner.to_string()))])
        }
    })?;
    de.end()
        .map_err(|e| Problem::unprocessable(vec![format!("body: must be one JSON value ({e})")]))?;
    Ok(value)
}

/// Parses a query string into `T` (absent = empty); failures are 422s naming the parameter.
pub fn parse_query<T: DeserializeOwned>(raw: Option<&str>) -> V2Result<T> {
    let raw = raw.unwrap_or("");
    let de = serde_urlencoded::Deserializer::new(url::form_urlencoded::parse(raw.as_bytes()));
    serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        Problem::unprocessable(vec![describe(&path, &err.into_inner().to_string())])
    })
}

/// Query parameters as an extractor (`V2Query(q): V2Query<ListFilters>`).
#[derive(Debug, Clone)]
pub struct V2Query<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for V2Query<T> {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parse_query(parts.uri.query()).map(V2Query)
    }
}

/// serde_json appends " at line L column C" to data errors; the path already says where.
fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) if msg[i..].contains(" column ") => msg[..i].to_string(),
        _ => msg.to_string(),
    }
}

/// Turns a serde message at `path` into `field.path: rule`.
fn describe(path: &str, msg: &str) -> String {
    let at = |field: &str| -> String {
        match path {
            "." | "" => field.to_string(),
            p => format!("{p}.{field}"),
        }
    };
    let here = match path {
        "." | "" => "body".to_string(),
        p => p.to_string(),
    };
    if let Some(field) = backticked(msg, "missing field `") {
        return format!("{}: required", at(&field));
    }
    if let Some(field) = backticked(msg, "unknown field `") {
        // The path already ends at the unknown property.
        let name = if path == field || path.ends_with(&format!(".{field}")) {
            path.to_string()
        } else {
            at(&field)
        };
        return format!("{name}: unexpected property, not allowed here");
    }
    if let Some(variant) = backticked(msg, "unknown variant `") {
        let allowed = msg
            .split_once("expected ")
            .map(|(_, rest)| rest.replace('`', ""))
            .unwrap_or_default();
        return format!("{here}: must be {allowed} (got {variant:?})");
    }
    if let Some(rest) = msg.strip_prefix("invalid type: ")
        && let Some((got, expected)) = rest.split_once(", expected ")
    {
        return format!("{here}: must be {expected} (got {got})");
    }
    if let Some(rest) = msg.strip_prefix("invalid value: ")
        && let Some((got, expected)) = rest.split_once(", expected ")
    {
        return format!("{here}: must be {expected} (got {got})");
    }
    format!("{here}: {msg}")
}

fn backticked(msg: &str, prefix: &str) -> Option<String> {
    let rest = msg.strip_prefix(prefix)?;
    rest.split_once('`').map(|(name, _)| name.to_string())
}

/// For optional properties the document types as non-null: absent is `None`, an explicit
/// `null` is a type error (422) rather than a silent "absent". Use with `#[serde(default,
/// deserialize_with = "not_null")]`.
pub fn not_null<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// For nullable optional properties (`registry: string | null`) where absent and `null`
/// differ: absent is `None`, `null` is `Some(None)`. Use with `#[serde(default,
/// deserialize_with = "nullable")]`.
pub fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// A JSON Schema `integer` in a body: any integral number (`650.0` is one), saturated to the
/// `i64` range so a schema-valid huge value reaches the handler's rules instead of failing to
/// parse. A string is not an integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Int(pub i64);

/// A JSON Schema `integer` in a query string: a decimal integer of any length, saturated to
/// the `i64` range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IntParam(pub i64);

macro_rules! integer_helpers {
    ($t:ty) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl $t {
            /// The value as a count that fits `u32` (negative values are 0).
            pub fn as_u32(self) -> u32 {
                self.0.clamp(0, i64::from(u32::MAX)) as u32
            }

            /// The value as a 64-bit count (negative values, which a `minimum` refuses
            /// first, are 0): sizes the document bounds only from below keep every value.
            pub fn as_u64(self) -> u64 {
                self.0.max(0) as u64
            }
        }
    };
}
integer_helpers!(Int);
integer_helpers!(IntParam);

struct IntVisitor {
    from_text: bool,
}

impl de::Visitor<'_> for IntVisitor {
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
            // `as` saturates at the i64 bounds.
            Ok(v as i64)
        } else {
            Err(E::invalid_type(de::Unexpected::Float(v), &self))
        }
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<i64, E> {
        let digits = s.strip_prefix('-').unwrap_or(s);
        if !self.from_text || digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(E::invalid_type(de::Unexpected::Str(s), &self));
        }
        Ok(s.parse().unwrap_or(if s.starts_with('-') {
            i64::MIN
        } else {
            i64::MAX
        }))
    }
}

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IntVisitor { from_text: false }).map(Int)
    }
}

impl<'de> Deserialize<'de> for IntParam {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(IntVisitor { from_text: true })
            .map(IntParam)
    }
}

/// A comma-separated query list (`include=AVAILABILITY`, `product=POD,SERVERLESS`) whose
/// entries deserialize as `T` (enums with their document spelling, strings, numbers).
/// An empty value (`include=`) is the empty list only where an empty entry would be valid:
/// for a list of enum values it is the entry `""`, which no enum holds, so the document
/// makes the value required and the query is refused naming the parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommaList<T>(pub Vec<T>);

impl<T> Default for CommaList<T> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for CommaList<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T>(PhantomData<T>);
        impl<T: DeserializeOwned> de::Visitor<'_> for Visit<T> {
            type Value = CommaList<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a comma-separated list")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                // `name=` is the empty list where `""` would be a valid entry (free
                // strings); otherwise every entry must be valid as it is.
                if s.is_empty() {
                    let d: de::value::StrDeserializer<'_, E> = s.into_deserializer();
                    return T::deserialize(d).map(|_| CommaList(Vec::new()));
                }
                s.split(',')
                    .map(|p| {
                        let d: de::value::StrDeserializer<'_, E> = p.into_deserializer();
                        T::deserialize(d)
                    })
                    .collect::<Result<Vec<T>, E>>()
                    .map(CommaList)
            }
        }
        d.deserialize_str(Visit(PhantomData))
    }
}

/// Schema checks a type cannot express (ranges, lengths, patterns, one-of), collected so the
/// 422 lists every violation at once.
#[derive(Debug, Default)]
pub struct Violations(Vec<String>);

impl Violations {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `path: rule` unless `ok`.
    pub fn check(&mut self, ok: bool, path: &str, rule: impl fmt::Display) {
        if !ok {
            self.0.push(format!("{path}: {rule}"));
        }
    }

    pub fn fail(&mut self, path: &str, rule: impl fmt::Display) {
        self.0.push(format!("{path}: {rule}"));
    }

    /// `min <= value <= max` for an optional value.
    pub fn range<N: PartialOrd + fmt::Display + Copy>(
        &mut self,
        value: Option<N>,
        path: &str,
        min: Option<N>,
        max: Option<N>,
    ) {
        let Some(v) = value else { return };
        if let Some(min) = min
            && v < min
        {
            self.fail(path, format!("must be at least {min} (got {v})"));
        } else if let Some(max) = max
            && v > max
        {
            self.fail(path, format!("must be at most {max} (got {v})"));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `Ok` when nothing was recorded, else the 422.
    pub fn finish(self) -> V2Result<()> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(Problem::unprocessable(self.0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Gpu {
        id: String,
        count: u32,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Body {
        name: String,
        #[serde(default)]
        gpu: Option<Gpu>,
        #[serde(default)]
        cloud: Option<Kind>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "SCREAMING_SNAKE_CASE")]
    enum Kind {
        Secure,
        Community,
    }

    fn err_of(body: &str) -> Vec<String> {
        let p = parse_body::<Body>(body.as_bytes()).unwrap_err();
        assert_eq!(p.status, StatusCode::UNPROCESSABLE_ENTITY);
        p.errors
    }

    #[test]
    fn body_errors_name_the_field_path() {
        let b: Body =
            parse_body(br#"{"name":"a","gpu":{"id":"x","count":2},"cloud":"SECURE"}"#).unwrap();
        assert_eq!(b.name, "a");
        assert_eq!(b.cloud, Some(Kind::Secure));
        let gpu = b.gpu.unwrap();
        assert_eq!((gpu.id.as_str(), gpu.count), ("x", 2));
        assert_eq!(
            err_of(r#"{"name":"a","gpu":{"id":"x","count":1,"extra":true}}"#),
            ["gpu.extra: unexpected property, not allowed here"]
        );
        assert_eq!(
            err_of(r#"{"gpu":{"id":"x","count":1}}"#),
            ["name: required"]
        );
        assert_eq!(
            err_of(r#"{"name":"a","gpu":{"id":"x"}}"#),
            ["gpu.count: required"]
        );
        assert_eq!(
            err_of(r#"{"name":"a","bogus":1}"#),
            ["bogus: unexpected property, not allowed here"]
        );
        let wrong_type = err_of(r#"{"name":"a","gpu":{"id":"x","count":"two"}}"#);
        assert!(
            wrong_type[0].starts_with("gpu.count: must be"),
            "{wrong_type:?}"
        );
        let negative = err_of(r#"{"name":"a","gpu":{"id":"x","count":-1}}"#);
        assert!(
            negative[0].starts_with("gpu.count: must be"),
            "{negative:?}"
        );
        let variant = err_of(r#"{"name":"a","cloud":"MOON"}"#);
        assert!(variant[0].starts_with("cloud: must be"), "{variant:?}");
        assert!(variant[0].contains("SECURE"), "{variant:?}");
        assert!(err_of("{nope")[0].starts_with("body: must be valid JSON"));
        // An enum given a non-string is the field's fault, not the JSON's.
        let wrong = err_of(r#"{"name":"a","cloud":true}"#);
        assert!(wrong[0].starts_with("cloud: must be one of"), "{wrong:?}");
        assert!(err_of("")[0].starts_with("body: required"));
        assert!(err_of("[1]")[0].starts_with("body: must be"));
        assert!(err_of(r#"{"name":"a"} {}"#)[0].starts_with("body: must be one JSON value"));
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Nulls {
        #[serde(default, deserialize_with = "not_null")]
        disk: Option<u32>,
        #[serde(default, deserialize_with = "nullable")]
        registry: Option<Option<String>>,
    }

    #[test]
    fn null_is_not_absent() {
        let n: Nulls = parse_body(b"{}").unwrap();
        assert_eq!((n.disk, n.registry), (None, None));
        let n: Nulls = parse_body(br#"{"registry":null,"disk":3}"#).unwrap();
        assert_eq!((n.disk, n.registry), (Some(3), Some(None)));
        let p = parse_body::<Nulls>(br#"{"disk":null}"#).unwrap_err();
        assert!(p.errors[0].starts_with("disk: must be"), "{:?}", p.errors);
    }

    #[derive(Debug, Deserialize, Default)]
    #[serde(rename_all = "camelCase")]
    struct Filters {
        #[serde(default)]
        include: Option<CommaList<Kind>>,
        #[serde(default)]
        count: Option<u32>,
        #[serde(default)]
        flag: Option<bool>,
    }

    #[derive(Debug, Deserialize)]
    struct Words {
        words: Option<CommaList<String>>,
    }

    #[test]
    fn query_lists_enums_and_numbers() {
        let q: Filters = parse_query(Some("include=SECURE,COMMUNITY&count=2&flag=true")).unwrap();
        assert_eq!(q.include.unwrap().0, [Kind::Secure, Kind::Community]);
        assert_eq!((q.count, q.flag), (Some(2), Some(true)));
        let q: Filters = parse_query(None).unwrap();
        assert!(q.include.is_none());
        let p = parse_query::<Filters>(Some("count=abc")).unwrap_err();
        assert_eq!(p.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(p.errors[0].starts_with("count:"), "{:?}", p.errors);
        let p = parse_query::<Filters>(Some("include=SECURE,MOON")).unwrap_err();
        assert!(
            p.errors[0].starts_with("include: must be"),
            "{:?}",
            p.errors
        );
        // An empty value of an enum list is no value of the enum; of a string list, no entry.
        let p = parse_query::<Filters>(Some("include=")).unwrap_err();
        assert_eq!(p.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(
            p.errors[0].starts_with("include: must be") && p.errors[0].ends_with("(got \"\")"),
            "{:?}",
            p.errors
        );
        let q: Words = parse_query(Some("words=")).unwrap();
        assert!(q.words.unwrap().0.is_empty());
    }

    #[derive(Debug, Deserialize)]
    struct Ints {
        n: Int,
    }

    #[derive(Debug, Deserialize)]
    struct IntParams {
        n: IntParam,
    }

    #[test]
    fn integers_are_json_schema_integers() {
        let n = |body: &str| parse_body::<Ints>(body.as_bytes()).map(|i| i.n);
        assert_eq!(n(r#"{"n":650}"#).unwrap(), Int(650));
        assert_eq!(n(r#"{"n":650.0}"#).unwrap(), Int(650));
        assert_eq!(n(r#"{"n":-3}"#).unwrap(), Int(-3));
        assert_eq!(
            n(r#"{"n":99999999999999999999999}"#).unwrap(),
            Int(i64::MAX)
        );
        assert!(n(r#"{"n":1.5}"#).unwrap_err().errors[0].starts_with("n: must be an integer"));
        assert!(
            n(r#"{"n":"7"}"#).is_err(),
            "a string is not an integer in a body"
        );
        let q = |s: &str| parse_query::<IntParams>(Some(s)).map(|i| i.n);
        assert_eq!(q("n=12").unwrap(), IntParam(12));
        assert_eq!(q("n=-2").unwrap(), IntParam(-2));
        assert_eq!(
            q("n=499069433393321268234682368").unwrap(),
            IntParam(i64::MAX)
        );
        assert!(q("n=ten").unwrap_err().errors[0].starts_with("n: must be an integer"));
        assert!(q("n=1.5").is_err());
        assert_eq!(Int(-5).as_u32(), 0);
    }

    #[test]
    fn violations_collect() {
        let mut v = Violations::new();
        v.range(Some(0u32), "gpu.count", Some(1), Some(8));
        v.range(Some(9u32), "disk", None, Some(8));
        v.range(None::<u32>, "absent", Some(1), None);
        v.check(true, "fine", "never");
        let p = v.finish().unwrap_err();
        assert_eq!(
            p.errors,
            [
                "gpu.count: must be at least 1 (got 0)",
                "disk: must be at most 8 (got 9)"
            ]
        );
        assert!(Violations::new().finish().is_ok());
    }

    #[test]
    fn read_only_callers_may_not_write() {
        let ro = Caller {
            read_only: true,
            key_index: 1,
        };
        assert_eq!(
            ro.require_write().unwrap_err().status,
            StatusCode::FORBIDDEN
        );
        assert!(
            Caller {
                read_only: false,
                key_index: 0
            }
            .require_write()
            .is_ok()
        );
    }

    /// A read-only key is refused a write, whether it carries a body or not, and only
    /// after a path that cannot be read; a writer's request goes on to the handler.
    #[tokio::test]
    async fn writes_need_a_key_that_may_write() {
        use axum::body::Body;
        use tower::ServiceExt;

        let config = crate::EmulatorConfig {
            api_keys: vec![
                crate::ApiKey {
                    key: "writer".into(),
                    read_only: false,
                },
                crate::ApiKey {
                    key: "reader".into(),
                    read_only: true,
                },
            ],
            ..crate::EmulatorConfig::default()
        };
        let router = crate::router(crate::state::Emulator::new(config).unwrap());
        let call = |method: &str, path: &str, key: &str, body: &str| {
            let request = axum::http::Request::builder()
                .method(method)
                .uri(path)
                .header("authorization", format!("Bearer {key}"))
                .header("content-type", "application/json")
                .body(Body::from(body.to_string()))
                .unwrap();
            let router = router.clone();
            async move { router.oneshot(request).await.unwrap().status() }
        };
        let volume = r#"{"name":"v","size":10,"dataCenterId":"EU-RO-1"}"#;
        assert_eq!(
            call("POST", "/v2/network-volumes", "reader", volume).await,
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            call("DELETE", "/v2/pods/nope", "reader", "").await,
            StatusCode::FORBIDDEN
        );
        assert_eq!(
            call("DELETE", "/v2/pods/%FF", "reader", "").await,
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            call("DELETE", "/v2/pods/nope", "writer", "").await,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            call(
                "POST",
                "/v2/pods/nope/action",
                "writer",
                r#"{"action":"stop"}"#
            )
            .await,
            StatusCode::NOT_FOUND
        );
    }
}
