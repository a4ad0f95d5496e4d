//! The REST v2 management API under `{api}` (which ends in `/v2`): pods, serverless
//! endpoints, templates, network volumes, registry credentials, the catalogue and billing.
//! Bearer auth, `application/problem+json` errors, and the quota the platform publishes in
//! its `RateLimit` headers followed before it answers 429.
//!
//! ```no_run
//! # async fn demo() -> Result<(), gpucloud_platform::PlatformError> {
//! use gpucloud_platform::{PlatformClient, PlatformConfig};
//! use gpucloud_platform::v2::{GpuQuery, PodListQuery, Product};
//! let client = PlatformClient::new(PlatformConfig::from_env()?)?;
//! let pods = client.v2().list_pods(&PodListQuery::default()).await?;
//! let gpus = client
//!     .v2()
//!     .list_gpu_types(&GpuQuery { availability: true, products: vec![Product::Pod], ..Default::default() })
//!     .await?;
//! # let _ = (pods, gpus); Ok(()) }
//! ```

mod billing;
mod catalog;
mod clusters;
mod pods;
mod query;
pub(crate) mod quota_gate;
pub mod ratelimit_headers;
mod serverless;
pub(crate) mod sse;
mod storage;
pub mod types;

#[cfg(test)]
mod tests;

use reqwest::Method;
use serde::de::DeserializeOwned;
use url::Url;

pub use sse::LogStream;
pub use types::*;

use super::error::PlatformError;
use super::operation::Operation;
use super::transport::{Auth, Call, PathApi, Transport};
use super::validate;

type Result<T> = std::result::Result<T, PlatformError>;

/// REST v2 calls. Cheap to clone; obtained from [`super::PlatformClient::v2`].
#[derive(Clone, Debug)]
pub struct V2 {
    t: Transport,
}

impl PathApi for V2 {
    fn transport(&self) -> &Transport {
        &self.t
    }

    fn call(&self, op: Operation, method: Method, segments: &[&str]) -> Call {
        Call::new(op, method, self.url(segments, &[]), Auth::Bearer)
    }
}

impl V2 {
    pub(crate) fn new(t: Transport) -> Self {
        Self { t }
    }

    /// `{api}/{segments...}?{query}`; segments are percent-encoded.
    fn url(&self, segments: &[&str], query: &[(&'static str, String)]) -> Url {
        build_url(&self.t.urls().api, segments, query)
    }

    /// `GET {api}/{segments...}?{query}`.
    fn get_call(&self, op: Operation, segments: &[&str], query: &[(&'static str, String)]) -> Call {
        Call::new(op, Method::GET, self.url(segments, query), Auth::Bearer)
    }

    async fn get<T: DeserializeOwned>(
        &self,
        op: Operation,
        segments: &[&str],
        query: &[(&'static str, String)],
    ) -> Result<T> {
        self.t.send_json(&self.get_call(op, segments, query)).await
    }

    /// A listing of the account's objects, the array `field` of the answer, decoded while
    /// it arrives (it grows with them), each item converted by `convert` as it is read.
    async fn list<T: DeserializeOwned + 'static, U: Send + 'static>(
        &self,
        (op, field): (Operation, &'static str),
        segments: &[&str],
        query: &[(&'static str, String)],
        convert: fn(T) -> U,
    ) -> Result<Vec<U>> {
        self.t
            .send_listing(&self.get_call(op, segments, query), field, convert)
            .await
    }

    async fn delete(&self, op: Operation, segments: &[&str]) -> Result<()> {
        // 204 without a body.
        self.t
            .send(&self.call(op, Method::DELETE, segments))
            .await
            .map(|_| ())
    }
}

/// Checks an id before it becomes a path segment.
fn check_id(op: Operation, field: &str, id: &str) -> Result<()> {
    validate::id(field, id).map_err(|e| e.in_operation(op.name()))
}

pub(crate) fn build_url(base: &Url, segments: &[&str], query: &[(&'static str, String)]) -> Url {
    let mut url = base.clone();
    {
        let mut path = url.path_segments_mut().expect("http(s) base URL");
        path.pop_if_empty();
        for s in segments {
            path.push(s);
        }
    }
    if !query.is_empty() {
        url.query_pairs_mut()
            .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
    }
    url
}
