//! One HTTP attempt loop for every call: auth per surface, client-side limits, per-attempt
//! timeouts, retries for what may be repeated, metrics and logs that never hold the key.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};
use bytes::Bytes;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;
use url::Url;

use super::config::{ApiKey, BaseUrls, PlatformApi, PlatformConfig, RetryConfig, Timeouts};
use super::error::{self, PlatformError};
use super::metrics::ClientMetrics;
use super::operation::{Operation, Repeat, Surface};
use super::ratelimit::Limiters;
use super::streamed_json;
use super::v2::quota_gate::{self, KeyId, QuotaGate};

/// Largest answer the client reads; a `/runsync` result may be big, but not unbounded.
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// How the key travels, per the spec's "Authentication" section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Auth {
    /// REST and registry: `Authorization: Bearer <key>`.
    Bearer,
    /// Job API: the `authorization` header; the spec shows both `Bearer <key>` and the bare
    /// key, and the official SDK sends the bearer form, so do we.
    JobHeader,
    /// GraphQL: query parameter `api_key`.
    QueryApiKey,
}

/// A management API that names its resources by path segments under one base URL: REST v1
/// and REST v2. Each says where its calls go and how they authenticate; sending a JSON body
/// and reading the JSON answer is the same for both, so it is written once here.
pub(crate) trait PathApi {
    fn transport(&self) -> &Transport;

    /// A call to `{base}/{segments...}`, segments percent-encoded.
    fn call(&self, op: Operation, method: Method, segments: &[&str]) -> Call;

    /// Sends `body` as JSON to `{base}/{segments...}` and decodes the JSON answer.
    async fn send_body<B: serde::Serialize + ?Sized, T: DeserializeOwned>(
        &self,
        op: Operation,
        method: Method,
        segments: &[&str],
        body: &B,
    ) -> Result<T, PlatformError> {
        let call = self.call(op, method, segments).json_body(body)?;
        self.transport().send_json(&call).await
    }
}

/// One call to make.
#[derive(Debug)]
pub(crate) struct Call {
    pub op: Operation,
    pub method: Method,
    /// Without credentials: the key is added per attempt and never logged.
    pub url: Url,
    pub auth: Auth,
    /// Rate-limit key inside the operation's bucket: the endpoint id for the job API.
    pub limit_key: String,
    /// Serialised once so that retries resend the very same bytes.
    pub body: Option<Bytes>,
    /// Overrides the configured per-attempt timeout (for `/runsync`).
    pub timeout: Option<Duration>,
    /// Extra request headers (never the key).
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl Call {
    pub(crate) fn new(op: Operation, method: Method, url: Url, auth: Auth) -> Self {
        Self {
            op,
            method,
            url,
            auth,
            limit_key: String::new(),
            body: None,
            timeout: None,
            headers: Vec::new(),
        }
    }

    pub(crate) fn header(mut self, name: &'static str, value: &str) -> Result<Self, PlatformError> {
        let v = HeaderValue::from_str(value).map_err(|_| {
            PlatformError::invalid_input(name, "is not a valid header value")
                .in_operation(self.op.name())
        })?;
        self.headers.push((HeaderName::from_static(name), v));
        Ok(self)
    }

    pub(crate) fn json_body<T: serde::Serialize + ?Sized>(
        mut self,
        body: &T,
    ) -> Result<Self, PlatformError> {
        let bytes = serde_json::to_vec(body).map_err(|e| {
            PlatformError::invalid_input("body", format!("cannot be serialised: {e}"))
                .in_operation(self.op.name())
        })?;
        self.body = Some(Bytes::from(bytes));
        Ok(self)
    }

    pub(crate) fn limit_key(mut self, key: &str) -> Self {
        self.limit_key = key.to_owned();
        self
    }

    pub(crate) fn timeout(mut self, t: Duration) -> Self {
        self.timeout = Some(t);
        self
    }
}

/// A successful answer.
#[derive(Debug)]
pub(crate) struct Answer {
    pub body: Bytes,
}

/// Failure of one attempt, with what the retry decision needs to know.
#[derive(Debug)]
struct AttemptError {
    error: PlatformError,
    /// The platform certainly did not act on the request (429, or no connection).
    unprocessed: bool,
}

/// What every clone of the client shares: the connection pool, limiters and metrics.
pub(crate) struct Shared {
    http: reqwest::Client,
    pub(crate) urls: BaseUrls,
    pub(crate) timeouts: Timeouts,
    retry: RetryConfig,
    limiters: Limiters,
    /// The quota REST v2 answers publish, per key.
    quota: Arc<QuotaGate>,
    pub(crate) api: PlatformApi,
    pub(crate) metrics: ClientMetrics,
    /// How many items each listing of each key had last time: the room its next answer is
    /// decoded into (see [`streamed_json::Listing`]).
    listing_lengths: parking_lot::Mutex<HashMap<(Operation, KeyId), usize>>,
}

/// The shared part plus the key of this handle. Cloning is two reference-count bumps.
#[derive(Clone)]
pub(crate) struct Transport {
    pub(crate) shared: Arc<Shared>,
    key: Arc<ApiKey>,
    key_id: KeyId,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("urls", &self.shared.urls)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl Transport {
    pub(crate) fn new(
        config: PlatformConfig,
        metrics: ClientMetrics,
    ) -> Result<Self, PlatformError> {
        let http = reqwest::Client::builder()
            .connect_timeout(config.timeouts.connect)
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            // A redirect could carry the GraphQL `api_key` query parameter to another host.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(config.user_agent.clone())
            .build()
            .map_err(|e| {
                PlatformError::invalid_input("http_client", e.without_url().to_string())
                    .in_operation("config")
            })?;
        Ok(Self {
            shared: Arc::new(Shared {
                http,
                urls: config.urls,
                timeouts: config.timeouts,
                retry: config.retry,
                limiters: Limiters::new(&config.rate_limits),
                quota: Arc::new(QuotaGate::default()),
                api: config.api,
                metrics,
                listing_lengths: Default::default(),
            }),
            key_id: KeyId::of(config.api_key.expose()),
            key: Arc::new(config.api_key),
        })
    }

    /// Same pool, limiters and metrics; another key.
    pub(crate) fn with_key(&self, key: ApiKey) -> Self {
        Self {
            shared: self.shared.clone(),
            key_id: KeyId::of(key.expose()),
            key: Arc::new(key),
        }
    }

    pub(crate) fn urls(&self) -> &BaseUrls {
        &self.shared.urls
    }

    /// Sends `call`, retrying as its operation allows, and returns the successful answer.
    pub(crate) async fn send(&self, call: &Call) -> Result<Answer, PlatformError> {
        self.send_reading(call, |response| async move {
            read_body(response).await.map(|body| Answer { body })
        })
        .await
    }

    /// Sends `call` as [`Transport::send`] does, but hands back the successful response as
    /// soon as its headers arrive, for a body that streams for as long as the server likes
    /// (the per-attempt timeout covers the wait for the headers only).
    pub(crate) async fn open_stream(
        &self,
        call: &Call,
    ) -> Result<reqwest::Response, PlatformError> {
        self.send_reading(call, |response| async move { Ok(response) })
            .await
    }

    async fn send_reading<R, F, Fut>(&self, call: &Call, read: F) -> Result<R, PlatformError>
    where
        F: Fn(reqwest::Response) -> Fut,
        Fut: Future<Output = Result<R, reqwest::Error>>,
    {
        let retry = &self.shared.retry;
        let backoff = ExponentialBuilder::default()
            .with_min_delay(retry.min_delay)
            .with_max_delay(retry.max_delay)
            .with_max_times(retry.max_retries)
            .with_jitter();
        let max_retry_after = retry.max_retry_after;
        let op = call.op;
        let mut attempt_no = 0u32;
        let read = &read;
        let result = (|| {
            attempt_no += 1;
            self.attempt(call, attempt_no, read)
        })
        .retry(backoff)
        .sleep(tokio::time::sleep)
        .when(|e: &AttemptError| should_retry(op, e))
        .adjust(move |e: &AttemptError, backoff: Option<Duration>| {
            let backoff = backoff?;
            match e.error.retry_after() {
                // A wait longer than we are prepared to hold the call is the caller's to do.
                Some(ra) if ra > max_retry_after => None,
                Some(ra) => Some(ra.max(backoff)),
                None => Some(backoff),
            }
        })
        .notify(|e: &AttemptError, wait: Duration| {
            self.shared.metrics.observe_retry(op);
            tracing::warn!(
                surface = op.surface().as_str(),
                operation = op.name(),
                class = e.error.class().as_str(),
                status = e.error.status(),
                wait_ms = wait.as_millis() as u64,
                "platform call failed, retrying"
            );
        })
        .await;
        result.map_err(|e| e.error.redact(self.key.expose()))
    }

    /// Sends and decodes a JSON answer.
    pub(crate) async fn send_json<T: DeserializeOwned>(
        &self,
        call: &Call,
    ) -> Result<T, PlatformError> {
        let answer = self.send(call).await?;
        decode(call.op, &answer.body).map_err(|e| e.redact(self.key.expose()))
    }

    /// Sends a listing call and decodes its answer's `field` while it arrives (see
    /// [`crate::streamed_json`]), each item converted by `convert`, into room for as many
    /// items as this key's last listing of the kind had (and a little more, for growth).
    pub(crate) async fn send_listing<T, U>(
        &self,
        call: &Call,
        field: &'static str,
        convert: fn(T) -> U,
    ) -> Result<Vec<U>, PlatformError>
    where
        T: DeserializeOwned + 'static,
        U: Send + 'static,
    {
        let last = (call.op, self.key_id);
        let previous = self.shared.listing_lengths.lock().get(&last).copied();
        let capacity = previous.map_or(0, |n| n + n / 64 + 8);
        let seed = streamed_json::Listing {
            field,
            capacity,
            convert,
        };
        let decoded = self
            .send_reading(call, |response| {
                streamed_json::read_json(response, MAX_RESPONSE_BYTES, seed)
            })
            .await?;
        let items = decoded.map_err(|e| {
            PlatformError::decode(call.op.name(), e.to_string()).redact(self.key.expose())
        })?;
        self.shared.listing_lengths.lock().insert(last, items.len());
        Ok(items)
    }

    async fn attempt<R, F, Fut>(
        &self,
        call: &Call,
        attempt_no: u32,
        read: &F,
    ) -> Result<R, AttemptError>
    where
        F: Fn(reqwest::Response) -> Fut,
        Fut: Future<Output = Result<R, reqwest::Error>>,
    {
        let op = call.op;
        let v2 = op.surface() == Surface::RestV2;
        let waited_since = Instant::now();
        let _permit = self
            .shared
            .limiters
            .acquire(op.limit_class(), &call.limit_key)
            .await;
        // The platform's own published quota, per key: wait for a spent window's reset
        // rather than earn a 429, unless the wait is longer than a call should hold.
        let pass = if v2 {
            let max_wait = self.shared.retry.max_retry_after;
            match self.shared.quota.admit(self.key_id, max_wait).await {
                Ok(pass) => Some(pass),
                Err(wait) => {
                    return Err(AttemptError {
                        error: PlatformError::RateLimited {
                            operation: op.name(),
                            retry_after: Some(wait),
                            detail: "the platform's published quota for this key is spent \
                                     until the window resets (no call made)"
                                .to_owned(),
                        },
                        unprocessed: true,
                    });
                }
            }
        } else {
            None
        };
        let waited = waited_since.elapsed();
        if waited > Duration::from_millis(1) {
            self.shared.metrics.observe_throttle(op, waited);
        }

        let mut url = call.url.clone();
        let mut headers = HeaderMap::new();
        match call.auth {
            Auth::Bearer | Auth::JobHeader => {
                let mut v = HeaderValue::from_str(&format!("Bearer {}", self.key.expose()))
                    .map_err(|_| AttemptError {
                        error: PlatformError::invalid_input("api_key", "not a valid header value")
                            .in_operation(op.name()),
                        unprocessed: true,
                    })?;
                // Keeps the value out of hyper's and reqwest's own debug output.
                v.set_sensitive(true);
                headers.insert(AUTHORIZATION, v);
            }
            Auth::QueryApiKey => {
                url.query_pairs_mut()
                    .append_pair("api_key", self.key.expose());
            }
        }
        if call.body.is_some() {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        for (name, value) in &call.headers {
            headers.insert(name.clone(), value.clone());
        }
        let timeout = call.timeout.unwrap_or(self.shared.timeouts.request);
        let mut request = self
            .shared
            .http
            .request(call.method.clone(), url)
            .headers(headers);
        if let Some(body) = &call.body {
            request = request.body(body.clone());
        }

        let started = Instant::now();
        // The whole exchange is bounded by the timeout; the streaming reader returns at the
        // headers, so for a stream only the wait for them is.
        let exchange = async {
            let response = request.send().await?;
            let status = response.status();
            let headers = response.headers().clone();
            let result = if status.is_success() {
                Ok(read(response).await?)
            } else {
                Err(read_body(response).await?)
            };
            Ok::<_, reqwest::Error>((status, headers, result))
        };
        let sent = tokio::time::timeout(timeout, exchange).await;
        // The metrics label: the HTTP status when there was one, else what went wrong.
        let (outcome, status_label) = match sent {
            Ok(Ok((status, headers, result))) => {
                if let Some(pass) = pass {
                    drop(pass);
                    let retry_after = (status == StatusCode::TOO_MANY_REQUESTS)
                        .then(|| error::parse_retry_after(&headers))
                        .flatten();
                    let quota = quota_gate::read_headers(&headers);
                    self.shared.quota.observe(self.key_id, &quota, retry_after);
                    let group = quota_gate::route_group(&self.shared.urls.api, &call.url);
                    self.shared.metrics.observe_quota(group, &quota);
                }
                let label = status.as_str().to_owned();
                let outcome = result.map_err(|body| {
                    let map = if v2 {
                        error::from_problem
                    } else {
                        error::from_http
                    };
                    AttemptError {
                        error: map(
                            op.name(),
                            status,
                            &headers,
                            &body,
                            op.may_apply_on_failure(),
                        ),
                        unprocessed: status == StatusCode::TOO_MANY_REQUESTS,
                    }
                });
                (outcome, label)
            }
            Ok(Err(e)) => {
                let label = if e.is_timeout() {
                    "timeout"
                } else if e.is_connect() {
                    "connect"
                } else {
                    "error"
                };
                (Err(transport_error(op, e, None)), label.to_owned())
            }
            Err(_) => (Err(timeout_error(op, timeout)), "timeout".to_owned()),
        };
        let elapsed = started.elapsed();
        self.shared.metrics.observe_call(op, &status_label, elapsed);
        // The path only: the GraphQL URL carries the key in its query.
        tracing::debug!(
            surface = op.surface().as_str(),
            operation = op.name(),
            method = %call.method,
            path = call.url.path(),
            status = %status_label,
            attempt = attempt_no,
            elapsed_ms = elapsed.as_secs_f64() * 1000.0,
            "platform call"
        );
        outcome
    }
}

fn should_retry(op: Operation, e: &AttemptError) -> bool {
    match op.repeat() {
        Repeat::Safe => e.error.is_retryable() && e.error.class() != super::ErrorClass::Capacity,
        Repeat::OnlyUnprocessed => e.unprocessed,
    }
}

/// A request that got no (complete) answer. The reqwest error is stripped of its URL, which
/// for GraphQL holds the key.
fn transport_error(op: Operation, e: reqwest::Error, status: Option<StatusCode>) -> AttemptError {
    let connect = e.is_connect();
    let kind = if e.is_timeout() {
        "timeout"
    } else if connect {
        "connect"
    } else {
        "request"
    };
    // The chain of causes says what actually went wrong (refused, reset, ...); none of
    // its parts hold the URL once reqwest's own is stripped.
    let e = e.without_url();
    let mut detail = format!("{kind}: {e}");
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        detail.push_str(": ");
        detail.push_str(&cause.to_string());
        source = cause.source();
    }
    let detail = error::truncate(&detail);
    AttemptError {
        error: PlatformError::Transient {
            operation: op.name(),
            status: status.map(|s| s.as_u16()),
            detail,
            // Without a connection nothing was sent; otherwise a create may have landed.
            maybe_applied: op.may_apply_on_failure() && !connect,
        },
        unprocessed: connect,
    }
}

/// No complete answer within the per-attempt limit: the request was sent, so a create
/// may have landed.
fn timeout_error(op: Operation, limit: Duration) -> AttemptError {
    AttemptError {
        error: PlatformError::Transient {
            operation: op.name(),
            status: None,
            detail: format!("timeout: no answer within {:.1}s", limit.as_secs_f64()),
            maybe_applied: op.may_apply_on_failure(),
        },
        unprocessed: false,
    }
}

async fn read_body(mut response: reqwest::Response) -> Result<Bytes, reqwest::Error> {
    let announced = response.content_length().map(|n| n as usize);
    if announced.is_some_and(|n| n > MAX_RESPONSE_BYTES) {
        // Drain nothing; a decode error will name the size.
        return Ok(Bytes::from_static(b"\"response too large\""));
    }
    // Sized once from the length the answer announces: grown by doubling, the buffer of a
    // listing of 10,000 objects held up to twice the body while it was read.
    let mut buf = Vec::with_capacity(announced.unwrap_or(0));
    while let Some(chunk) = response.chunk().await? {
        if buf.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Ok(Bytes::from_static(b"\"response too large\""));
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(buf))
}

/// Decodes a JSON answer; failures name the operation and never panic.
pub(crate) fn decode<T: DeserializeOwned>(op: Operation, body: &[u8]) -> Result<T, PlatformError> {
    serde_json::from_slice(body).map_err(|e| {
        let hint = if body.is_empty() { " (empty body)" } else { "" };
        PlatformError::decode(op.name(), format!("{e}{hint}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The operator awaits these calls on a multi-threaded runtime: the futures of
    /// [`PathApi`]'s default methods must stay `Send` for every surface that uses them.
    #[test]
    fn path_api_calls_are_send() {
        fn is_send<T: Send>(_: T) {}
        fn check(
            rest: &super::super::rest::Rest,
            v2: &super::super::v2::V2,
            seed: &super::super::TemplateCreate,
            new: &super::super::v2::CreateTemplate,
        ) {
            is_send(rest.create_template(seed));
            is_send(v2.create_template(new));
        }
        let _ = check;
    }

    #[test]
    fn decode_error_quotes_the_operation() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct T {
            id: String,
        }
        let e = decode::<T>(Operation::JobStatus, b"{\"id\": 5}").unwrap_err();
        assert_eq!(e.class(), super::super::ErrorClass::Decode);
        assert!(e.to_string().contains("jobs.status"), "{e}");
        let e = decode::<T>(Operation::JobStatus, b"").unwrap_err();
        assert!(e.to_string().contains("empty body"), "{e}");
    }

    #[test]
    fn retry_decisions_follow_the_operation() {
        let transient = |maybe| AttemptError {
            error: PlatformError::Transient {
                operation: "x",
                status: Some(500),
                detail: String::new(),
                maybe_applied: maybe,
            },
            unprocessed: false,
        };
        let limited = AttemptError {
            error: PlatformError::RateLimited {
                operation: "x",
                retry_after: None,
                detail: String::new(),
            },
            unprocessed: true,
        };
        let not_found = AttemptError {
            error: PlatformError::NotFound {
                operation: "x",
                detail: String::new(),
            },
            unprocessed: false,
        };
        assert!(should_retry(Operation::JobStatus, &transient(false)));
        assert!(should_retry(Operation::JobStatus, &limited));
        assert!(!should_retry(Operation::JobStatus, &not_found));
        assert!(!should_retry(Operation::GraphqlDeployPod, &transient(true)));
        assert!(should_retry(Operation::GraphqlDeployPod, &limited));
        assert!(!should_retry(Operation::JobRun, &transient(true)));
    }
}
