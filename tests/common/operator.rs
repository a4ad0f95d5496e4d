//! An end-to-end environment: the test control plane (real kube-apiserver), an emulator on
//! a loopback port, the CRDs, a namespace of its own, the API key in a real Secret, and
//! the operator running in-process against all of them over real HTTP.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use clap::Parser;
use gpucloud_crd::ManagedKind;
use gpucloud_crd::{NetworkVolume, NetworkVolumeSpec};
use gpucloud_emulator::{self as emulator, EmulatorConfig, RunningEmulator};
use gpucloud_engine::clock::{Clock, WallClock};
use gpucloud_operator::cli::run::{RunArgs, run_with, run_with_clock};
use gpucloud_platform::{ApiKey, BaseUrls, PlatformClient, PlatformConfig};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::api::{Api, PostParams};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

use super::passes;
use super::recording;
use super::shutdown::{self, LeaseOf};
use super::{TestNamespace, kube_client, wait_until};

pub const API_KEY: &str = "test-key";
pub const KEY_SECRET: &str = "gpucloud-api-key";

/// When set, the operator (in-process or child process) authenticates with this kubeconfig
/// instead of the tests' admin one: `scripts/test.sh` points it at the deploy/
/// ServiceAccount to run the end-to-end suites once more with only that RBAC.
pub use super::process::OperatorProcess;

pub fn operator_kubeconfig() -> Option<String> {
    std::env::var("OPERATOR_KUBECONFIG")
        .ok()
        .filter(|v| !v.is_empty())
}

async fn operator_client(admin: &Client) -> Client {
    let Some(path) = operator_kubeconfig() else {
        return admin.clone();
    };
    super::client_from_kubeconfig(Path::new(&path)).await
}

/// Applies, in `namespace`, the documents of `kinds` in the deploy/ file `path` (whose
/// text is `text`), as the install does; `want` of them, or the test stops. Their names.
pub async fn apply_deploy_documents(
    client: &Client,
    namespace: &str,
    (path, text): (&str, &str),
    kinds: &[&str],
    want: usize,
) -> Vec<String> {
    use gpucloud_operator::demo::apply::{apply_objects, parse_documents};
    let objects: Vec<_> = parse_documents(text, path)
        .unwrap_or_else(|e| panic!("{path} does not parse: {e}"))
        .into_iter()
        .filter(|o| {
            o.types
                .as_ref()
                .is_some_and(|t| kinds.contains(&t.kind.as_str()))
        })
        .collect();
    assert_eq!(objects.len(), want, "{path}: documents of {kinds:?}");
    apply_objects(client, namespace, &objects, "e2e-tests")
        .await
        .unwrap_or_else(|e| panic!("apply {kinds:?} of {path}: {e}"));
    objects
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .collect()
}

/// The deploy/ Role (the Lease and the key Secret, in the operator's own namespace) bound
/// in `namespace` too, which the tests use as the operator's namespace for both.
async fn grant_operator_namespace_role(client: &Client, namespace: &str) {
    let file = (
        "deploy/base/rbac.yaml",
        include_str!("../../deploy/base/rbac.yaml"),
    );
    apply_deploy_documents(client, namespace, file, &["Role", "RoleBinding"], 2).await;
}

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    run: RunArgs,
}

/// Installs the operator's CRDs (server-side apply, idempotent) and waits until served,
/// as the demo does.
pub async fn install_crds(client: &Client) {
    gpucloud_operator::demo::install_crds(client)
        .await
        .expect("install the CRDs");
}

/// The emulator's clock as the operator's wall clock.
pub struct EmulatorWallClock(pub emulator::clock::Clock);

impl WallClock for EmulatorWallClock {
    fn now(&self) -> k8s_openapi::jiff::Timestamp {
        let ms = self.0.wall().as_millisecond();
        k8s_openapi::jiff::Timestamp::from_millisecond(ms).expect("an emulated time in range")
    }

    fn real(&self, d: Duration) -> Duration {
        self.0
            .real_duration(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

pub struct Operator {
    pub stop: watch::Sender<bool>,
    pub task: tokio::task::JoinHandle<anyhow::Result<()>>,
    /// Its Lease, checked released when it stops.
    pub lease: Option<LeaseOf>,
    /// The loopback port of its `/metrics` (0: none was chosen).
    pub metrics_port: u16,
}

impl Operator {
    /// Stops the operator as SIGTERM would, and waits for it: the test fails unless it
    /// stops within the pod's grace period, without an error, with its Lease released and
    /// no panic outside the tests' code.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let abort = self.task.abort_handle();
        match tokio::time::timeout(shutdown::GRACE, self.task).await {
            Err(_) => {
                abort.abort();
                panic!(
                    "the operator did not stop within {:?} of being told to",
                    shutdown::GRACE
                );
            }
            Ok(Err(failed)) => panic!("the operator's task failed: {failed}"),
            Ok(Ok(Err(e))) => panic!("the operator stopped with an error: {e:#}"),
            Ok(Ok(Ok(()))) => {}
        }
        if let Some(lease) = &self.lease {
            lease.assert_released().await;
        }
        shutdown::assert_no_foreign_panic();
    }

    /// Kills the operator at once, wherever it is: its task is dropped mid-flight.
    pub fn kill(self) {
        self.task.abort();
    }

    /// The reconcile passes over `kind` it has made so far.
    pub async fn passes(&self, kind: &str) -> u64 {
        assert_ne!(self.metrics_port, 0, "this operator serves no /metrics");
        passes::passes_on(self.metrics_port, kind).await
    }

    /// Waits until it has made `more` passes over `kind` beyond the `since` it had made
    /// (from [`Self::passes`]): the sign that a change seen before `since` was acted on,
    /// and that whatever it would have caused has happened.
    pub async fn wait_passes(&self, kind: &str, since: u64, more: u64) {
        passes::wait_passes_on(self.metrics_port, kind, since, more).await;
    }

    /// [`Self::wait_passes`] from now.
    pub async fn wait_more_passes(&self, kind: &str, more: u64) {
        let since = self.passes(kind).await;
        self.wait_passes(kind, since, more).await;
    }

    /// Makes the operator pass over object `name` once more and waits for that pass: a
    /// change of an annotation of its own (which every watch sees, and which means nothing
    /// to the operator), then one more pass over the kind. For an object the operator
    /// leaves alone until it changes (held, stalled, paused), the pass a "nothing happens"
    /// check must follow.
    pub async fn pass_over<K>(&self, api: &Api<K>, name: &str)
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    {
        let kind = K::kind(&());
        let since = self.passes(&kind).await;
        passes::touch(api, name).await;
        self.wait_passes(&kind, since, 1).await;
    }
}

pub struct Env {
    pub client: Client,
    /// What the operator authenticates with: the admin client, or the ServiceAccount's.
    pub operator_client: Client,
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
        let client = kube_client().await;
        Self::start_on(operator_client(&client).await, client, prefix, config).await
    }

    /// [`Env::start_with`] on `client`'s control plane, the operator signed in as `operator_client`.
    pub async fn start_on(
        operator_client: Client,
        client: Client,
        prefix: &str,
        config: EmulatorConfig,
    ) -> Self {
        install_crds(&client).await;
        Self::start_on_installed(operator_client, client, prefix, config).await
    }

    /// [`Env::start_on`] on a control plane whose CRDs the caller installed: those of an
    /// earlier release, for the upgrade test.
    pub async fn start_on_installed(
        operator_client: Client,
        client: Client,
        prefix: &str,
        config: EmulatorConfig,
    ) -> Self {
        shutdown::record_panics();
        // Operator logs go through the test harness's capture: shown for failed tests only.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(
                tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
                    tracing_subscriber::EnvFilter::new(
                        "warn,gpucloud_operator=info,gpucloud_engine=info,gpucloud_policy=info",
                    )
                }),
            )
            .with_test_writer()
            .try_init();
        let ns = TestNamespace::create(&client, prefix).await;
        if operator_kubeconfig().is_some() {
            grant_operator_namespace_role(&client, ns.name()).await;
        }
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
            operator_client,
            ns,
            emulator,
            platform,
        }
    }

    /// Lets an operator of this test use `namespace` as its own namespace (its Lease, its
    /// released record) when it runs as the deploy/ ServiceAccount, as the test's own
    /// namespace is; nothing to do as the admin.
    pub async fn grant_operator_namespace(&self, namespace: &str) {
        if operator_kubeconfig().is_some() {
            grant_operator_namespace_role(&self.client, namespace).await;
        }
    }

    /// The operator's command line for this environment, plus `extra` flags.
    pub fn args(&self, extra: &[&str]) -> RunArgs {
        let mut argv = vec!["operator".to_string()];
        argv.extend(self.flags(extra));
        Args::try_parse_from(argv).expect("operator flags").run
    }

    /// The flags of `gpucloud-operator run` for this environment, plus `extra` flags
    /// (a later flag wins over an earlier one).
    pub fn flags(&self, extra: &[&str]) -> Vec<String> {
        let base = self.emulator.base_url();
        let secret = format!("{}/{KEY_SECRET}", self.ns.name());
        let mut argv: Vec<String> = vec![
            format!("--rest-url={base}/v1"),
            format!("--graphql-url={base}/graphql"),
            format!("--serverless-url={base}/v2"),
            format!("--registry-url={base}"),
            format!("--api-url={base}/v2"),
            format!("--platform-api={}", super::backend::backend()),
            format!("--api-key-secret={secret}"),
            format!("--namespaces={}", self.ns.name()),
            // A port of its own, where the tests read its passes (`common::passes`).
            format!("--metrics-addr=127.0.0.1:{}", free_port()),
            // Loopback, read by the tests over plain HTTP; a test of the token check passes
            // --metrics-auth=kubernetes.
            "--metrics-auth=none".into(),
            // The install's Lease in the test's namespace, held under one identity by every
            // operator of the test: a restarted operator holds it again at once, and
            // concurrent suites do not share an install name.
            format!("--leader-election-namespace={}", self.ns.name()),
            format!("--identity={}-operator", self.ns.name()),
            "--poll-interval=2s".into(),
            "--progress-interval=1s".into(),
            // Tests that change a key Secret wait for it seconds, not the 30s default.
            "--secret-recheck-interval=1s".into(),
        ];
        // clap refuses a repeated flag: an extra flag replaces the default one.
        let name_of = |flag: &str| flag.split('=').next().unwrap_or(flag).to_string();
        let overridden: Vec<String> = extra.iter().map(|f| name_of(f)).collect();
        argv.retain(|flag| !overridden.contains(&name_of(flag)));
        argv.extend(extra.iter().map(|s| s.to_string()));
        argv
    }

    /// Starts the operator binary as a child process (`gpucloud-operator run` with the
    /// flags of [`Env::flags`]), so that it can really be killed.
    pub fn operator_process(&self, extra: &[&str]) -> OperatorProcess {
        OperatorProcess::spawn(&self.flags(extra))
    }

    /// [`Self::operator_process`] signed in with `kubeconfig`: a control plane of the
    /// caller's own.
    pub fn operator_process_on(&self, kubeconfig: &Path, extra: &[&str]) -> OperatorProcess {
        OperatorProcess::spawn_with(Some(kubeconfig), &self.flags(extra))
    }

    /// [`Self::operator_process`] serving `/metrics` on a loopback port chosen now, so that
    /// the caller can read them ([`OperatorProcess::metrics`]).
    pub fn operator_process_serving_metrics(&self, extra: &[&str]) -> OperatorProcess {
        let metrics = format!("--metrics-addr=127.0.0.1:{}", free_port());
        let mut flags = extra.to_vec();
        flags.push(&metrics);
        OperatorProcess::spawn(&self.flags(&flags))
    }

    /// Starts the operator in-process.
    pub fn operator(&self, extra: &[&str]) -> Operator {
        self.operator_with_args(self.args(extra))
    }

    /// Starts the operator in-process with exactly `flags` (see [`Env::flags`] for the
    /// environment's; a test that must drop one of them filters it out).
    pub fn operator_with_flags(&self, flags: &[String]) -> Operator {
        let argv = std::iter::once("operator".to_string()).chain(flags.iter().cloned());
        self.operator_with_args(Args::try_parse_from(argv).expect("operator flags").run)
    }

    fn operator_with_args(&self, args: RunArgs) -> Operator {
        self.spawn_operator(args, run_with)
    }

    /// Runs `run` (the operator's entry point) with `args` as a task of the test, signed in
    /// as the operator is.
    fn spawn_operator<F, Fut>(&self, args: RunArgs, run: F) -> Operator
    where
        F: FnOnce(RunArgs, Client, watch::Receiver<bool>) -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<()>> + Send + 'static,
    {
        let (stop, stop_rx) = watch::channel(false);
        let lease = self.lease_of(&args);
        let metrics_port = args.metrics_addr.port();
        let task = tokio::spawn(run(args, self.operator_client.clone(), stop_rx));
        Operator {
            stop,
            task,
            lease,
            metrics_port,
        }
    }

    /// The Lease an in-process operator started with `args` holds.
    fn lease_of(&self, args: &RunArgs) -> Option<LeaseOf> {
        Some(LeaseOf {
            client: self.client.clone(),
            namespace: args.leader_election_namespace.clone()?,
            name: args.leader_election_lease.clone(),
            identity: args.identity.clone()?,
        })
    }

    /// Starts the operator in-process on the emulator's clock: schedules then follow the
    /// emulator's `--time-scale` and `/_emulator/clock/advance`.
    pub fn operator_on_emulator_clock(&self, extra: &[&str]) -> Operator {
        let clock = Clock::new(EmulatorWallClock(self.emulator.clock()));
        self.spawn_operator(self.args(extra), move |args, client, stop_rx| {
            run_with_clock(args, client, stop_rx, clock)
        })
    }

    /// The tag of the install the tests' operators make (from the UID of the Lease they
    /// hold in the test's namespace): on the remote objects they make.
    pub async fn install_tag(&self) -> gpucloud_engine::marker::InstallTag {
        gpucloud_operator::app::lease::read_install_tag(
            &self.client,
            self.ns.name(),
            "gpucloud-operator",
        )
        .await
        .expect("read the install's Lease")
        .expect("the install's Lease, with a UID of hex digits")
    }

    /// The emulator's wall-clock time now.
    pub fn emulated_now(&self) -> k8s_openapi::jiff::Timestamp {
        EmulatorWallClock(self.emulator.clock()).now()
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

    /// Creates `obj` in the test's namespace, as `kubectl create` would.
    pub async fn create<K>(&self, obj: &K) -> K
    where
        K: Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
            + Clone
            + DeserializeOwned
            + serde::Serialize
            + std::fmt::Debug,
    {
        let created = self
            .api::<K>()
            .create(&kube::api::PostParams::default(), obj)
            .await
            .unwrap_or_else(|e| {
                panic!("create {}: {e}", obj.meta().name.as_deref().unwrap_or("?"))
            });
        recording::record(&created, &mut Vec::new());
        created
    }

    /// Polls `name` until `check` holds, returning the object; panics after `timeout`
    /// with the last state seen.
    /// Waits until Budget `name` has a status for its current generation and `check`
    /// holds of it.
    pub async fn wait_budget(
        &self,
        name: &str,
        timeout: Duration,
        what: &str,
        check: impl Fn(&gpucloud_crd::Budget) -> bool,
    ) -> gpucloud_crd::Budget {
        self.wait_for(name, timeout, what, |b: &gpucloud_crd::Budget| {
            b.status
                .as_ref()
                .is_some_and(|s| s.observed_generation == b.metadata.generation)
                && check(b)
        })
        .await
    }

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
        let mut recorded = Vec::new();
        loop {
            if let Some(obj) = api.get_opt(name).await.expect("get") {
                recording::record(&obj, &mut recorded);
                if check(&obj) {
                    return obj;
                }
                last = Some(obj);
            }
            if tokio::time::Instant::now() >= deadline {
                panic!(
                    "{name}: {what} not reached within {timeout:?}; last seen: {}",
                    last.as_ref().map_or("nothing".into(), described)
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Deletes the operator's objects, then the namespace, while `operator` still runs
    /// (its finalizers need it), then stops the operator and the emulator. The objects go
    /// first because the namespace's deletion removes the API key Secret too, in an order
    /// of its own: an object whose key is gone cannot delete its remote object and keeps
    /// its finalizer (as it must: letting go would leak the remote object).
    pub async fn finish(self, operator: Operator) {
        self.delete_managed_objects().await;
        self.ns.delete_and_wait(&self.client).await;
        operator.stop().await;
        self.emulator.shutdown().await;
    }

    /// [`Env::finish`] for an operator running as a child process.
    pub async fn finish_process(self, operator: OperatorProcess) {
        self.finish_process_within(operator, Duration::from_secs(60))
            .await;
    }

    /// [`Env::finish_process`], waiting up to `timeout` for the namespace to go (a
    /// benchmark's namespace holds as many Events as it made objects).
    pub async fn finish_process_within(self, operator: OperatorProcess, timeout: Duration) {
        self.delete_managed_objects().await;
        self.ns.delete_and_wait_within(&self.client, timeout).await;
        operator.terminate().await;
        self.emulator.shutdown().await;
    }

    /// Deletes every object of the operator's kinds in the namespace and waits (up to a
    /// minute) until their finalizers have let them go.
    async fn delete_managed_objects(&self) {
        use gpucloud_crd::{Cluster, Endpoint, Pod, RegistryCredential, Template};
        let dp = kube::api::DeleteParams::default();
        let lp = kube::api::ListParams::default();
        let volumes: Api<NetworkVolume> = self.api();
        let endpoints: Api<Endpoint> = self.api();
        let pods: Api<Pod> = self.api();
        let clusters: Api<Cluster> = self.api();
        let templates: Api<Template> = self.api();
        let registries: Api<RegistryCredential> = self.api();
        let _ = endpoints.delete_collection(&dp, &lp).await;
        let _ = pods.delete_collection(&dp, &lp).await;
        let _ = clusters.delete_collection(&dp, &lp).await;
        let _ = volumes.delete_collection(&dp, &lp).await;
        let _ = templates.delete_collection(&dp, &lp).await;
        let _ = registries.delete_collection(&dp, &lp).await;
        // Each object still there is held by its finalizer: recorded as deleting.
        fn none<K: serde::Serialize + Clone>(
            listed: Result<kube::core::ObjectList<K>, kube::Error>,
        ) -> bool {
            listed.is_ok_and(|l| {
                l.items
                    .iter()
                    .for_each(|o| recording::record(o, &mut Vec::new()));
                l.items.is_empty()
            })
        }
        wait_until(Duration::from_secs(60), || async {
            none(volumes.list(&lp).await)
                && none(endpoints.list(&lp).await)
                && none(pods.list(&lp).await)
                && none(clusters.list(&lp).await)
                && none(templates.list(&lp).await)
                && none(registries.list(&lp).await)
        })
        .await;
    }

    /// The calls the emulator counted, by route.
    pub async fn calls(&self) -> BTreeMap<String, u64> {
        self.emulator.admin().calls().await.expect("emulator calls")
    }

    /// Every network volume of the account, through the backend under test.
    pub async fn platform_volumes(&self) -> Vec<gpucloud_platform::domain::Volume> {
        let volumes = self.platform.volumes();
        through_faults("list network volumes", || volumes.list()).await
    }

    /// The ids of [`Self::platform_volumes`], sorted.
    pub async fn platform_volume_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .platform_volumes()
            .await
            .into_iter()
            .map(|v| v.id)
            .collect();
        ids.sort();
        ids
    }

    /// Every network volume on the platform whose name is `name`.
    pub async fn remote_volumes(&self, name: &str) -> Vec<gpucloud_platform::NetworkVolume> {
        self.remote_volumes_where(|n| n == name).await
    }

    /// Every network volume on the platform whose name `keep` accepts.
    pub async fn remote_volumes_where(
        &self,
        keep: impl Fn(&str) -> bool,
    ) -> Vec<gpucloud_platform::NetworkVolume> {
        let rest = self.platform.rest();
        let all = through_faults("list network volumes", || rest.list_network_volumes()).await;
        all.into_iter().filter(|v| keep(&v.name)).collect()
    }

    /// The platform's network volume `id`, or the error it answers.
    pub async fn remote_volume(
        &self,
        id: &str,
    ) -> Result<gpucloud_platform::NetworkVolume, gpucloud_platform::PlatformError> {
        self.platform.rest().get_network_volume(id).await
    }

    /// The `events.k8s.io/v1` Events about the object `name` of kind `kind`.
    pub async fn events_about(&self, kind: &str, name: &str) -> Vec<K8sEvent> {
        let events: Api<K8sEvent> = self.api();
        events
            .list(&Default::default())
            .await
            .expect("list Events")
            .items
            .into_iter()
            .filter(|e| {
                e.regarding.as_ref().is_some_and(|r| {
                    r.kind.as_deref() == Some(kind) && r.name.as_deref() == Some(name)
                })
            })
            .collect()
    }
}

/// A loopback port free now, for a process to listen on a moment later. Taken below the
/// kernel's range of ephemeral ports (32768 up, by default): a port that range gives out
/// (what a bind to port 0 gets) is soon the local end of some outbound connection, such as
/// a client's to the apiserver, and the listen that follows would find it taken.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    const PORTS: std::ops::Range<u16> = 20_000..32_000;
    let random = RandomState::new();
    for attempt in 0u32..1000 {
        let span = u64::from(PORTS.end - PORTS.start);
        let port = PORTS.start + (random.hash_one(attempt) % span) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free loopback port in {PORTS:?}");
}

/// An object as a failed wait reports it: its status first, then its annotations and
/// spec, without `managedFields` (long, and what a truncated CI log would show instead).
pub fn described<K: serde::Serialize>(obj: &K) -> String {
    let value = serde_json::to_value(obj).expect("an object serializes");
    let part = |pointer: &str| value.pointer(pointer).cloned().unwrap_or_default();
    let metadata = serde_json::json!({
        "annotations": part("/metadata/annotations"),
        "generation": part("/metadata/generation"),
        "deletionTimestamp": part("/metadata/deletionTimestamp"),
    });
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).expect("JSON");
    format!(
        "status: {}\nmetadata: {}\nspec: {}",
        pretty(&part("/status")),
        pretty(&metadata),
        pretty(&part("/spec"))
    )
}

/// The status of condition `type_` in a status's conditions, if any.
pub fn condition<'a>(
    conditions: &'a [gpucloud_crd::condition::Condition],
    type_: &str,
) -> Option<&'a gpucloud_crd::condition::Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// A NetworkVolume in data center EU-RO-1 with `extra` merged into its spec.
pub fn volume(name: &str, size: i32, extra: serde_json::Value) -> NetworkVolume {
    let spec = super::merged(
        serde_json::json!({"sizeGb": size, "dataCenterId": "EU-RO-1"}),
        extra,
    );
    let spec: NetworkVolumeSpec = serde_json::from_value(spec).expect("a NetworkVolume spec");
    NetworkVolume::new(name, spec)
}

/// Ready=True for the object's current generation.
pub fn is_ready(nv: &NetworkVolume) -> bool {
    ready_now(nv)
}

/// Ready=True for the object's current generation, whatever its kind.
pub fn ready_now<K: ManagedKind>(obj: &K) -> bool {
    obj.current_status().is_some_and(|s| {
        let common = K::common(s);
        common.observed_generation == obj.meta().generation
            && condition(&common.conditions, "Ready").is_some_and(|c| c.status == "True")
    })
}

/// Stalled=True with reason `why` and Ready=False for the object's current generation,
/// whatever its kind; the Stalled message, for the test to check what it names.
pub fn stalled_now<K: ManagedKind>(obj: &K, why: &str) -> Option<String> {
    let common = K::common(obj.current_status()?);
    let stalled = condition(&common.conditions, "Stalled")?;
    let ready = condition(&common.conditions, "Ready")?;
    (common.observed_generation == obj.meta().generation
        && stalled.status == "True"
        && stalled.reason == why
        && ready.status == "False")
        .then(|| stalled.message.to_string())
}

/// The reason of condition `type_`, if present.
pub fn reason(nv: &NetworkVolume, type_: &str) -> Option<String> {
    nv.status
        .as_ref()
        .and_then(|s| condition(&s.common.conditions, type_))
        .map(|c| c.reason.to_string())
}

/// Whether condition `type_` is present with status True.
pub fn is_true(nv: &NetworkVolume, type_: &str) -> bool {
    nv.status
        .as_ref()
        .and_then(|s| condition(&s.common.conditions, type_))
        .is_some_and(|c| c.status == "True")
}

/// Stalled=True with `why` as the reason of Stalled and Ready, Ready=False, for the
/// object's current generation.
pub fn is_stalled_with(nv: &NetworkVolume, why: &str) -> bool {
    is_true(nv, "Stalled")
        && !is_true(nv, "Ready")
        && reason(nv, "Stalled").as_deref() == Some(why)
        && reason(nv, "Ready").as_deref() == Some(why)
        && nv
            .status
            .as_ref()
            .and_then(|s| s.common.observed_generation)
            == nv.metadata.generation
}

/// The message of condition `type_`, if present.
pub fn message(nv: &NetworkVolume, type_: &str) -> String {
    nv.status
        .as_ref()
        .and_then(|s| condition(&s.common.conditions, type_))
        .map(|c| c.message.to_string())
        .unwrap_or_default()
}

/// The answer of a read the test makes to check the platform, repeated while the
/// emulator answers with a transient error: the suites that inject faults (30% of calls)
/// keep them on while they look, and the client's own few retries can all meet one.
pub async fn through_faults<T, F, Fut>(what: &str, mut read: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, gpucloud_platform::PlatformError>>,
{
    let mut attempts = 0;
    loop {
        match read().await {
            Ok(answer) => return answer,
            Err(e) if e.class() == gpucloud_platform::ErrorClass::Transient && attempts < 50 => {
                attempts += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("{what}: {e:?}"),
        }
    }
}
