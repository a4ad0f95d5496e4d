//! Helpers shared by the emulator conformance tests: start an in-process emulator on port 0
//! and talk to it over real HTTP. `v2`: REST v2 calls and the checks of their answers;
//! `schema`: an answer against the published document; `serverless`: the serverless suites'
//! bodies and calls.

#![allow(dead_code)]

pub mod schema;
pub mod serverless;
pub mod v2;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use gpucloud_emulator::{self as emulator, ApiKey, EmulatorConfig, RunningEmulator, StartFailure};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

pub const KEY: &str = "test-key";
pub const READ_KEY: &str = "read-key";

pub fn config() -> EmulatorConfig {
    EmulatorConfig {
        api_keys: vec![
            ApiKey {
                key: KEY.into(),
                read_only: false,
            },
            ApiKey {
                key: READ_KEY.into(),
                read_only: true,
            },
        ],
        ..EmulatorConfig::default()
    }
}

pub struct Emu {
    pub emu: RunningEmulator,
    pub http: reqwest::Client,
}

pub async fn start(config: EmulatorConfig) -> Emu {
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let emu = emulator::start(config, addr)
        .await
        .expect("emulator starts");
    Emu {
        emu,
        http: reqwest::Client::new(),
    }
}

pub async fn start_default() -> Emu {
    start(config()).await
}

/// A response: status and JSON body (Null when empty or not JSON).
#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

impl Resp {
    /// Asserts the spec's error body and that one of its messages mentions `needle`.
    pub fn assert_error(&self, status: u16, needle: &str) {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.body);
        assert_eq!(self.body["status"], status, "body: {}", self.body);
        assert!(self.body["title"].is_string(), "body: {}", self.body);
        let detail = self.body["detail"].as_str().unwrap_or_default();
        let errors: Vec<&str> = self.body["errors"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        assert!(
            detail.contains(needle) || errors.iter().any(|e| e.contains(needle)),
            "expected {needle:?} in {}",
            self.body
        );
    }
}

impl Emu {
    pub async fn call(
        &self,
        method: Method,
        url: &str,
        auth: Option<&str>,
        body: Option<Value>,
    ) -> Resp {
        let mut req = self.http.request(method, url);
        if let Some(a) = auth {
            req = req.header("authorization", a);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("request sent");
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.bytes().await.unwrap();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Resp {
            status,
            body,
            headers,
        }
    }

    pub async fn raw(&self, method: Method, url: &str, auth: &str, body: Vec<u8>) -> Resp {
        let resp = self
            .http
            .request(method, url)
            .header("authorization", auth)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let body = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap_or(Value::Null);
        Resp {
            status,
            body,
            headers,
        }
    }

    // REST (bearer).
    pub async fn rest(&self, method: Method, path: &str, body: Option<Value>) -> Resp {
        let url = format!("{}{path}", self.emu.rest_url());
        self.call(method, &url, Some(&format!("Bearer {KEY}")), body)
            .await
    }

    /// How many records the REST v1 listing at `path` holds.
    pub async fn rest_count(&self, path: &str) -> usize {
        let r = self.rest(Method::GET, path, None).await;
        r.body
            .as_array()
            .map_or_else(|| panic!("{path}: {}", r.body), Vec::len)
    }

    // Job API.
    pub fn job_url(&self, endpoint: &str, op: &str) -> String {
        format!("{}/{endpoint}/{op}", self.emu.serverless_url())
    }

    pub async fn job(&self, method: Method, endpoint: &str, op: &str, body: Option<Value>) -> Resp {
        let url = self.job_url(endpoint, op);
        self.call(method, &url, Some(KEY), body).await
    }

    /// `POST` to one of the endpoint's job API operations.
    pub async fn post(&self, endpoint: &str, op: &str, body: Value) -> Resp {
        self.job(Method::POST, endpoint, op, Some(body)).await
    }

    pub async fn run(&self, endpoint: &str, body: Value) -> String {
        let r = self.job(Method::POST, endpoint, "run", Some(body)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.body["id"].as_str().unwrap().to_string()
    }

    /// `POST /runsync` with `input`, and `?wait=` in milliseconds when given.
    pub async fn runsync(&self, endpoint: &str, wait: Option<&str>, input: Value) -> Resp {
        let op = match wait {
            Some(ms) => format!("runsync?wait={ms}"),
            None => "runsync".to_string(),
        };
        let body = json!({ "input": input });
        self.job(Method::POST, endpoint, &op, Some(body)).await
    }

    pub async fn status(&self, endpoint: &str, id: &str) -> Resp {
        self.job(Method::GET, endpoint, &format!("status/{id}"), None)
            .await
    }

    /// Polls `/status` until `pred` holds (real-time bound: 10 s).
    pub async fn wait_status(
        &self,
        endpoint: &str,
        id: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let start = Instant::now();
        loop {
            let r = self.status(endpoint, id).await;
            if r.status == 200 && pred(&r.body) {
                return r.body;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "timed out waiting; last: {} {}",
                r.status,
                r.body
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    pub async fn wait_final(&self, endpoint: &str, id: &str) -> Value {
        self.wait_status(endpoint, id, |b| {
            matches!(
                b["status"].as_str(),
                Some("COMPLETED" | "FAILED" | "TIMED_OUT" | "CANCELLED")
            )
        })
        .await
    }

    pub async fn health(&self, endpoint: &str) -> Value {
        let r = self.job(Method::GET, endpoint, "health", None).await;
        assert_eq!(r.status, 200);
        r.body
    }

    /// Creates an endpoint over REST and returns its id.
    pub async fn endpoint(&self, extra: Value) -> String {
        let mut body = json!({
            "name": format!("ep-{}", rand_suffix()),
            "templateId": "tmpl-worker-base",
            "gpuTypeIds": ["NVIDIA GeForce RTX 4090"],
            "workersMin": 0,
            "workersMax": 3,
        });
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let r = self.rest(Method::POST, "/endpoints", Some(body)).await;
        assert_eq!(r.status, 200, "{}", r.body);
        r.body["id"].as_str().unwrap().to_string()
    }

    // GraphQL.
    pub async fn gql(&self, query: &str, variables: Value) -> Resp {
        let url = format!("{}?api_key={KEY}", self.emu.graphql_url());
        self.call(
            Method::POST,
            &url,
            None,
            Some(json!({"query": query, "variables": variables})),
        )
        .await
    }

    // REST v2 (bearer, under /v2 of the base URL).
    pub async fn v2(&self, method: Method, path: &str, body: Option<Value>) -> Resp {
        self.v2_as(KEY, method, path, body).await
    }

    /// A registry credential (`POST /v2/registries`); its id.
    pub async fn registry_credential(&self) -> String {
        let body = json!({"name": "private", "username": "ci", "password": "pw"});
        let r = self.v2(Method::POST, "/registries", Some(body)).await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["id"].as_str().unwrap().to_string()
    }

    pub async fn v2_as(&self, key: &str, method: Method, path: &str, body: Option<Value>) -> Resp {
        let url = format!("{}/v2{path}", self.emu.base_url());
        self.call(method, &url, Some(&format!("Bearer {key}")), body)
            .await
    }

    pub async fn advance(&self, ms: u64) {
        self.emu.admin().advance_clock(ms).await.unwrap();
    }

    /// Containers of `image` fail to start with `failure` from now on.
    pub async fn fail_image(&self, image: &str, failure: StartFailure) {
        self.emu.admin().fail_image(image, failure).await.unwrap();
    }
}

/// Asserts a v2 problem answer: status, `application/problem+json`, the ErrorResponse body,
/// and that `detail` or one of `errors` mentions `needle`.
pub fn assert_problem(r: &Resp, status: u16, needle: &str) {
    r.assert_error(status, needle);
    let content_type = r
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    assert_eq!(content_type, "application/problem+json", "{}", r.body);
    assert!(r.body["detail"].is_string(), "{}", r.body);
}

fn rand_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..8].to_string()
}

/// A mebibyte, for the payload and chunk limits.
pub const MIB: usize = 1024 * 1024;

/// An emulator whose clock runs `scale` times faster than the wall clock.
pub async fn fast(scale: f64) -> Emu {
    start(EmulatorConfig {
        time_scale: scale,
        ..config()
    })
    .await
}
