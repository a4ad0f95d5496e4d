//! One line per object, whatever its kind: what the demo's live table shows (and what a
//! user looks at while things converge). Each kind says how its objects read
//! (`<kind>/summary.rs`); the rules every kind shares are here. Pure, so it is tested
//! without a cluster.

use std::fmt::Debug;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use kube::api::{Api, ListParams};
use kube::core::NamespaceResourceScope;
use serde::de::DeserializeOwned;

use gpucloud_crd::common::CommonStatus;

/// One line of the table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Row {
    pub namespace: String,
    pub kind: &'static str,
    pub name: String,
    pub state: String,
    pub gpu: String,
    pub cost_per_hour: Option<f64>,
    /// `True`, or the Ready condition's reason while it is not.
    pub ready: String,
    pub is_ready: bool,
    /// The Ready condition's message while the object is not Ready (empty otherwise).
    pub why: String,
}

/// The Ready column: `True` when the operator says so for the current generation; otherwise
/// the condition's reason, so the table tells why something waits.
pub fn ready_of(generation: Option<i64>, status: Option<&CommonStatus>) -> (String, bool) {
    let Some(status) = status else {
        return ("-".into(), false);
    };
    let Some(ready) = status.conditions.iter().find(|c| c.type_ == "Ready") else {
        return ("-".into(), false);
    };
    let current = status.observed_generation == generation;
    if ready.status == "True" && current {
        ("True".into(), true)
    } else if ready.reason.is_empty() {
        (ready.status.to_string(), false)
    } else {
        (ready.reason.to_string(), false)
    }
}

/// What the Ready condition says while it is not `True`: its message, the line a user
/// reads to know what to do.
pub fn why_of(conditions: &[gpucloud_crd::condition::Condition]) -> String {
    conditions
        .iter()
        .find(|c| c.type_ == "Ready" && c.status != "True")
        .map(|c| c.message.to_string())
        .unwrap_or_default()
}

/// A kind with rows in the table; its registration lists them.
pub trait TableRow {
    fn row(&self) -> Row;
}

/// `NVIDIA GeForce RTX 4090` reads as `RTX 4090`: the column stays narrow.
pub fn short_gpu(id: &str) -> String {
    id.trim_start_matches("NVIDIA ")
        .trim_start_matches("GeForce ")
        .to_string()
}

/// The table's rows of every `K` in `namespace` (every namespace when `None`); a kind's
/// registration points here.
pub fn rows_of<K>(
    client: kube::Client,
    namespace: Option<String>,
) -> BoxFuture<'static, kube::Result<Vec<Row>>>
where
    K: TableRow
        + kube::Resource<Scope = NamespaceResourceScope, DynamicType = ()>
        + Clone
        + Debug
        + DeserializeOwned
        + Send
        + 'static,
{
    async move {
        let objects: Api<K> = match &namespace {
            Some(ns) => Api::namespaced(client, ns),
            None => Api::all(client),
        };
        let listed = objects.list(&ListParams::default()).await?;
        Ok(listed.iter().map(K::row).collect())
    }
    .boxed()
}
