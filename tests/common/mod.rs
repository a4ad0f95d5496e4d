//! Helpers shared by the end-to-end suites: a client for the test control plane and
//! throw-away namespaces.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::Client;

pub mod backend;
pub mod calls;
pub mod clusters;
pub mod control_plane;
pub mod conversion;
pub mod endpoints;
pub mod http;
pub mod lease;
pub mod operator;
pub mod passes;
pub mod pods;
pub mod process;
pub mod proxy;
pub mod recording;
pub mod shutdown;
pub mod sweep;
pub mod templates;
pub mod volumes;
/// A capture of every log line of the process (the platform crate's, shared with its tests).
pub use gpucloud_platform::log_capture;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};

/// A client signed in with the kubeconfig file at `path`.
pub async fn client_from_kubeconfig(path: &std::path::Path) -> Client {
    let config = kube::config::Kubeconfig::read_from(path)
        .unwrap_or_else(|e| panic!("read the kubeconfig {}: {e}", path.display()));
    let config = kube::Config::from_custom_kubeconfig(config, &Default::default())
        .await
        .unwrap_or_else(|e| panic!("{} is not a usable kubeconfig: {e}", path.display()));
    Client::try_from(config).expect("a client from a kubeconfig")
}

/// A client for the cluster named by `KUBECONFIG`, which `scripts/test.sh` points at the
/// control plane it started.
pub async fn kube_client() -> Client {
    assert!(
        std::env::var_os("KUBECONFIG").is_some(),
        "KUBECONFIG is not set: run the end-to-end tests through scripts/test.sh"
    );
    Client::try_default()
        .await
        .expect("a client from KUBECONFIG")
}

/// `base` with the keys of `extra` set on top (a shallow merge of two JSON objects): a
/// test's object is a suite's base with its own fields.
pub fn merged(mut base: serde_json::Value, extra: serde_json::Value) -> serde_json::Value {
    let extra = extra.as_object().expect("extra is a JSON object");
    base.as_object_mut()
        .expect("base is a JSON object")
        .extend(extra.clone());
    base
}

/// Polls `check` every 100 ms until it returns true or `timeout` passes.
pub async fn wait_until<F, Fut>(timeout: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if check().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `attempt` until the apiserver takes it, a second apart, at most 10 times: the first
/// requests after its return may meet a connection it closed, or an apiserver that does
/// not reach etcd yet.
pub async fn retrying<T, F, Fut>(what: &str, mut attempt: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    for _ in 0..10 {
        match attempt().await {
            Ok(done) => return done,
            Err(e) => eprintln!("{what}: {e}; trying again"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    panic!("{what}: still failing after 10 attempts");
}

/// Waits until object `name` of `api` is gone from the cluster (its finalizers done), at
/// most `timeout`; whether it went.
pub async fn wait_gone<K>(api: &Api<K>, name: &str, timeout: Duration) -> bool
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    wait_until(timeout, || async {
        api.get_opt(name).await.expect("read the object").is_none()
    })
    .await
}

/// Creates `obj` through `api` and asserts the apiserver refuses it with a 422 whose
/// message names `field`; the message, for more checks. `case` names the case in failures.
pub async fn assert_refused<K>(api: &Api<K>, case: &str, obj: &K, field: &str) -> String
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let err = api
        .create(&PostParams::default(), obj)
        .await
        .expect_err(case);
    let kube::Error::Api(status) = err else {
        panic!("{case}: want a 422 from the apiserver, got {err}");
    };
    assert_eq!(status.code, 422, "{case}: {status:?}");
    assert!(
        status.message.contains(field),
        "{case}: the field {field} must be named: {}",
        status.message
    );
    status.message
}

/// A namespace with a unique name, so tests can run side by side.
pub struct TestNamespace {
    name: String,
}

impl TestNamespace {
    pub async fn create(client: &Client, prefix: &str) -> Self {
        Self::create_labelled(client, prefix, &[]).await
    }

    /// A namespace with a unique name, made with `labels`.
    pub async fn create_labelled(client: &Client, prefix: &str, labels: &[(&str, &str)]) -> Self {
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        let name = format!("{prefix}-{}", &suffix[..8]);
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some(labels),
                ..Default::default()
            },
            ..Default::default()
        };
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .expect("create namespace");
        Self { name }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Deletes the namespace and waits until the namespace controller has emptied and
    /// removed it, which proves the controller manager is doing its job.
    pub async fn delete_and_wait(self, client: &Client) {
        self.delete_and_wait_within(client, Duration::from_secs(60))
            .await;
    }

    /// [`Self::delete_and_wait`], for up to `timeout`: a namespace that held 100,000
    /// objects and their Events takes the namespace controller minutes to empty.
    ///
    /// Past `timeout`, the test fails at once when the namespace controller says what holds
    /// the namespace (an object's finalizer, content it could not delete). When it says
    /// nothing yet, it has not reached the namespace: on a loaded machine its queue runs
    /// behind (every deletion is two calls per namespaced resource type), which says
    /// nothing of the operator, so that gets [`NAMESPACE_QUEUE_SLACK`] more.
    pub async fn delete_and_wait_within(self, client: &Client, timeout: Duration) {
        let namespaces: Api<Namespace> = Api::all(client.clone());
        namespaces
            .delete(&self.name, &DeleteParams::default())
            .await
            .expect("delete namespace");
        let gone = || async {
            namespaces
                .get_opt(&self.name)
                .await
                .expect("get namespace")
                .is_none()
        };
        if wait_until(timeout, gone).await {
            return;
        }
        let holding = holding_conditions(&namespaces, &self.name).await;
        assert!(
            holding.is_empty(),
            "namespace {} was not removed within {timeout:?}: {holding:#?}",
            self.name
        );
        assert!(
            wait_until(NAMESPACE_QUEUE_SLACK, gone).await,
            "namespace {} was not removed within {:?}, and the namespace controller says \
             nothing holds it: {:#?}",
            self.name,
            timeout + NAMESPACE_QUEUE_SLACK,
            holding_conditions(&namespaces, &self.name).await
        );
    }
}

/// How much longer than its timeout a deleted namespace is waited for while the namespace
/// controller has not reached it ([`TestNamespace::delete_and_wait_within`]).
pub const NAMESPACE_QUEUE_SLACK: Duration = Duration::from_secs(120);

/// The conditions the namespace controller set True on namespace `name`: what holds it
/// (content or finalizers left, and which; a discovery or a deletion that failed).
async fn holding_conditions(namespaces: &Api<Namespace>, name: &str) -> Vec<String> {
    namespaces
        .get_opt(name)
        .await
        .ok()
        .flatten()
        .and_then(|ns| ns.status?.conditions)
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.status == "True")
        .map(|c| format!("{}: {}", c.type_, c.message.unwrap_or_default()))
        .collect()
}
