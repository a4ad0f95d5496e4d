//! An end-to-end environment: the test control plane (real kube-apiserver), an emulator on
//! a loopback port, the CRDs, a namespace of its own, the API key in a real Secret, and
//! the operator running in-process against all of them over real HTTP.

use std::time::Duration;

use clap::Parser;
use gpucloud_operator::controller::cli::{RunArgs, run_with};
use gpucloud_operator::emulator::{self, EmulatorConfig, RunningEmulator};
use gpucloud_operator::platform::{ApiKey, BaseUrls, PlatformClient, PlatformConfig};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::{TestNamespace, kube_client, wait_until};

pub const API_KEY: &str = "test-key";
pub const KEY_SECRET: &str = "gpucloud-api-key";

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    run: RunArgs,
}

/// Installs the operator's CRDs (server-side apply, idempotent) and waits until served.
pub async fn install_crds(client: &Client) {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in gpucloud_operator::crd::all() {
        let name = crd.metadata.name.clone().unwrap();
        crds.patch(
            &name,
            &PatchParams::apply("e2e-tests").force(),
            &Patch::Apply(&crd),
        )
        .await
        .expect("apply CRD");
        let established = wait_until(Duration::from_secs(30), || async {
            crds.get(&name)
                .await
                .ok()
                .and_then(|c| c.status)
                .and_then(|s| s.conditions)
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                })
        })
        .await;
        assert!(established, "CRD {name} not Established");
    }
}

pub struct Operator {
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Operator {
    /// Stops the operator as SIGTERM would, and waits for it.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(20), self.task).await;
    }

    /// Kills the operator at once, wherever it is: its task is dropped mid-flight.
    pub fn kill(self) {
        self.task.abort();
    }
}

pub struct Env {
    pub client: Client,
    pub ns: TestNamespace,
    pub emulator: RunningEmulator,
    /// A client of the emulator with the same key, for looking at the platform's side.
    pub platform: PlatformClient,
}

impl Env {
    pub async fn start(prefix: &str) -> Self {
        Self::start_with(prefix, EmulatorConfig::default()).await
    }

    pub async fn start_with(prefix: &str, config: EmulatorConfig) -> Self {
        // Operator logs go through the test harness's capture: shown for failed tests only.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                    tracing_subscriber::EnvFilter::new("warn,gpucloud_operator=info")
                }),
            )
            .with_test_writer()
            .try_init();
        let client = kube_client().await;
        install_crds(&client).await;
        let ns = TestNamespace::create(&client, prefix).await;
        let emulator = emulator::start(config, "127.0.0.1:0".parse().unwrap())
            .await
            .expect("emulator");
        let secrets: Api<Secret> = Api::namespaced(client.clone(), ns.name());
        let secret: Secret = serde_json::from_value(serde_json::json!({
            "metadata": {"name": KEY_SECRET},
            "stringData": {"apiKey": API_KEY}
        }))
        .unwrap();
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .expect("key Secret");
        let urls = BaseUrls::single_host(&emulator.base_url()).expect("emulator URLs");
        let platform =
            PlatformClient::new(PlatformConfig::new(urls, ApiKey::new(API_KEY).unwrap())).unwrap();
        Self {
            client,
            ns,
            emulator,
            platform,
        }
    }

    /// The operator's command line for this environment, plus `extra` flags.
    pub fn args(&self, extra: &[&str]) -> RunArgs {
        let base = self.emulator.base_url();
        let secret = format!("{}/{KEY_SECRET}", self.ns.name());
        let mut argv: Vec<String> = vec![
            "operator".into(),
            format!("--rest-url={base}/v1"),
            format!("--graphql-url={base}/graphql"),
            format!("--serverless-url={base}/v2"),
            format!("--registry-url={base}"),
            format!("--api-key-secret={secret}"),
            format!("--namespaces={}", self.ns.name()),
            "--metrics-addr=127.0.0.1:0".into(),
            "--poll-interval=2s".into(),
            "--progress-interval=1s".into(),
        ];
        argv.extend(extra.iter().map(|s| s.to_string()));
        Args::try_parse_from(argv).expect("operator flags").run
    }

    /// Starts the operator in-process.
    pub fn operator(&self, extra: &[&str]) -> Operator {
        let args = self.args(extra);
        let (stop, stop_rx) = watch::channel(false);
        let client = self.client.clone();
        let task = tokio::spawn(async move { run_with(args, client, stop_rx).await });
        Operator { stop, task }
    }

    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug,
    {
        Api::namespaced(self.client.clone(), self.ns.name())
    }

    /// Polls `name` until `check` holds, returning the object; panics after `timeout`
    /// with the last state seen.
    pub async fn wait_for<K, F>(&self, name: &str, timeout: Duration, what: &str, check: F) -> K
    where
        K: Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug
            + serde::Serialize,
        F: Fn(&K) -> bool,
    {
        let api: Api<K> = self.api();
        let deadline = tokio::time::Instant::now() + timeout;
        let mut last = None;
        loop {
            if let Some(obj) = api.get_opt(name).await.expect("get") {
                if check(&obj) {
                    return obj;
                }
                last = Some(obj);
            }
            if tokio::time::Instant::now() >= deadline {
                panic!(
                    "{name}: {what} not reached within {timeout:?}; last seen: {}",
                    serde_json::to_string_pretty(&last).unwrap()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Deletes the namespace while `operator` still runs (its finalizers need it), then
    /// stops the operator and the emulator.
    pub async fn finish(self, operator: Operator) {
        self.ns.delete_and_wait(&self.client).await;
        operator.stop().await;
        self.emulator.shutdown().await;
    }
}

/// The status of condition `type_` in a status's conditions, if any.
pub fn condition<'a>(
    conditions: &'a [k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}
