//! `gpucloud-operator run`: the operator process.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use tokio::sync::watch;
use tracing::{info, warn};

use crate::app::election::{Reachable, TIMING};
use crate::app::lease::{self, Hold, Holding};
use crate::app::liveness;
use crate::app::server::{self, MetricsAuth, Probes, Readiness, Serving};
use crate::app::telemetry::{self, LogFormat};
use crate::app::terms::run_terms;
use gpucloud_platform::PlatformClient;
use gpucloud_platform::config::{ApiKey, BaseUrls, PlatformApi, PlatformConfig};

use super::flags::duration_arg;
use super::process::{own_namespace, termination};
use crate::app::stop::stopped as wait_for;
use crate::kinds::Controllers;
use gpucloud_engine::context::{EngineConfig, Shared};
use gpucloud_engine::credentials::{CredentialResolver, DefaultKey};
use gpucloud_engine::marker::InstallTag;
use gpucloud_engine::namespace_watch::SelectedNamespaces;
use gpucloud_engine::runner::{Namespaces, Watched};
use gpucloud_policy::guardrails::clock::Clock;

/// Options of `run`.
#[derive(Debug, Clone, clap::Args)]
pub struct RunArgs {
    /// Which platform API to speak: `v2` (REST v2, the platform's current API) or `seed`
    /// (REST v1 and GraphQL; the platform retired REST v1 on 2026-11-15 and retires
    /// GraphQL in early 2027).
    #[arg(long, env = "GPUCLOUD_PLATFORM_API", default_value = "v2", value_parser = platform_api_arg)]
    pub platform_api: PlatformApi,
    /// REST v2 base, including `/v2`.
    #[arg(long, env = "GPUCLOUD_API_URL")]
    pub api_url: Option<String>,
    /// REST management base, including `/v1`.
    #[arg(long, env = "GPUCLOUD_REST_URL")]
    pub rest_url: Option<String>,
    /// GraphQL address.
    #[arg(long, env = "GPUCLOUD_GRAPHQL_URL")]
    pub graphql_url: Option<String>,
    /// Job API base, up to and including `/v2`.
    #[arg(long, env = "GPUCLOUD_SERVERLESS_URL")]
    pub serverless_url: Option<String>,
    /// Registry delegation base.
    #[arg(long, env = "GPUCLOUD_REGISTRY_URL")]
    pub registry_url: Option<String>,
    /// Secret holding the default API key, as NAMESPACE/NAME (key `apiKey`). Changes to it
    /// are picked up without a restart. Without it the key comes from GPUCLOUD_API_KEY or
    /// --api-key-file; objects may always name their own with spec.credentialsSecretRef.
    #[arg(long, env = "GPUCLOUD_API_KEY_SECRET")]
    pub api_key_secret: Option<String>,
    /// File holding the default API key.
    #[arg(long)]
    pub api_key_file: Option<PathBuf>,
    /// Namespaces to watch, comma separated; all when empty.
    #[arg(long, env = "GPUCLOUD_NAMESPACES", value_delimiter = ',')]
    pub namespaces: Vec<String>,
    /// Watch the namespaces whose labels match this label selector (such as
    /// `gpucloud.io/managed=yes`), as they come to match and stop matching, without a
    /// restart and without listing the other namespaces again. Needs list and watch on
    /// namespaces. Not with --namespaces.
    #[arg(
        long,
        env = "GPUCLOUD_NAMESPACE_SELECTOR",
        conflicts_with = "namespaces"
    )]
    pub namespace_selector: Option<String>,
    /// How often each object is compared with the platform, such as 60s or 5m.
    #[arg(long, env = "GPUCLOUD_POLL_INTERVAL", default_value = "60s", value_parser = duration_arg)]
    pub poll_interval: Duration,
    /// How soon to look again while something is coming up.
    #[arg(long, default_value = "5s", value_parser = duration_arg)]
    pub progress_interval: Duration,
    /// Time limit of one platform call attempt. It also bounds how long a create can still
    /// land after it was sent, which the operator waits out before it concludes that an
    /// interrupted create (a crash, a timeout) made nothing.
    #[arg(long, env = "GPUCLOUD_PLATFORM_TIMEOUT", default_value = "30s", value_parser = duration_arg)]
    pub platform_timeout: Duration,
    /// How long one reconcile may run before /healthz answers 503, so that the kubelet
    /// restarts a process whose controllers are wedged (a call or a lock that never
    /// returns), such as 20m. Default: twice the longest one platform call can take with
    /// --platform-timeout and the client's retries (17m at 30s: 6 attempts, each after a
    /// wait of at most 30s for the platform's quota, and waits of at most 30s between
    /// them), since a pass makes its calls one after another; a healthy pass takes seconds.
    #[arg(long, env = "GPUCLOUD_LIVENESS_STALL_TIMEOUT", value_parser = duration_arg)]
    pub liveness_stall_timeout: Option<Duration>,
    /// Reconciles running at once, per kind.
    #[arg(long, default_value_t = 16)]
    pub concurrency: u16,
    /// Address of /metrics, /healthz (the controllers make progress) and /readyz (the
    /// process has started and is not stopping, whether it leads or waits for the Lease).
    #[arg(long, env = "GPUCLOUD_METRICS_ADDR", default_value = "0.0.0.0:8080")]
    pub metrics_addr: SocketAddr,
    /// Who may read /metrics, which names objects, namespaces and costs. `kubernetes`
    /// (the default): the port speaks HTTPS, and /metrics wants `Authorization: Bearer
    /// TOKEN` whose identity the apiserver says may get the non-resource URL /metrics (the
    /// ClusterRole gpucloud-metrics-reader); the operator needs create on tokenreviews and
    /// subjectaccessreviews (system:auth-delegator). `none`: plain HTTP, open to whoever
    /// reaches the port; for a process on a loopback address. The default is the safe one
    /// because the address listens on every interface. /healthz and /readyz are always open.
    #[arg(long, env = "GPUCLOUD_METRICS_AUTH", value_enum, default_value_t = MetricsAuth::Kubernetes)]
    pub metrics_auth: MetricsAuth,
    /// Directory holding the HTTPS certificate of the port as tls.crt and tls.key (PEM; a
    /// cert-manager Certificate's Secret mounted there), read at start. Without it a
    /// self-signed certificate is made at start. Only with --metrics-auth kubernetes.
    #[arg(long, env = "GPUCLOUD_METRICS_CERT_DIR")]
    pub metrics_cert_dir: Option<PathBuf>,
    /// Elect one active replica through a Lease. A replica waiting for the Lease is Ready
    /// (/readyz), so that a rolling update can stop the leader; the leader releases the
    /// Lease when it stops, and the next replica leads within about a second. A leader
    /// that cannot renew the Lease for 10 s (the apiserver is away) stops acting, before
    /// the Lease can expire for another replica, and waits for it again without exiting.
    #[arg(long, env = "GPUCLOUD_LEADER_ELECTION", default_value_t = false)]
    pub leader_election: bool,
    /// Namespace of the Lease (default: the pod's namespace, else `default`).
    #[arg(long, env = "GPUCLOUD_LEADER_ELECTION_NAMESPACE")]
    pub leader_election_namespace: Option<String>,
    /// Name of the Lease.
    #[arg(long, default_value = "gpucloud-operator")]
    pub leader_election_lease: String,
    /// This process's identity in its Lease (default: the host name and a random suffix).
    #[arg(long, env = "POD_NAME")]
    pub identity: Option<String>,
    /// This install's name in the `gpucloud.io/owner` claim on every object it manages
    /// (default: NAMESPACE/NAME of its leader-election Lease), with the platform account of
    /// the object's key. Another install leaves a claimed object alone. Without
    /// --leader-election the process holds the Lease this name names, and waits while
    /// another running process holds it.
    #[arg(long, env = "GPUCLOUD_INSTALL")]
    pub install: Option<String>,
    /// Take over an object claimed by another install once that install's Lease has not
    /// been renewed for this long.
    #[arg(long, default_value = "10m", value_parser = duration_arg)]
    pub takeover_after: Duration,
    /// How often the orphan census (the `gpucloud_orphans` metric) runs; 0s: never. It reads
    /// the listings the resyncs share, and lists a kind itself only when no resync did.
    #[arg(long, env = "GPUCLOUD_ORPHAN_CENSUS_INTERVAL", default_value = "10m", value_parser = duration_arg)]
    pub orphan_census_interval: Duration,
    /// How often each kind reads again (`get`, metadata only) the Secrets its objects name
    /// and the default key's Secret, to notice a rotated key; never 0s. The operator never
    /// lists or watches Secrets.
    #[arg(long, env = "GPUCLOUD_SECRET_RECHECK_INTERVAL", default_value = "30s", value_parser = duration_arg)]
    pub secret_recheck_interval: Duration,
    /// The longest one watch of the Kubernetes API lasts before the apiserver ends it and
    /// the operator watches again from where it was (each watch draws between two thirds
    /// of it and all of it). Shorter than an idle timeout of a proxy or load balancer in
    /// front of the apiserver, if there is one.
    #[arg(long, env = "GPUCLOUD_WATCH_TIMEOUT", default_value = "290s", value_parser = duration_arg)]
    pub watch_timeout: Duration,
    /// How long the apiserver may answer none of the operator's requests (its watches, its
    /// Lease) before `/readyz` answers 503. Shorter outages (an upgrade, a failover) leave
    /// the process Ready; it catches up within seconds of the apiserver's return.
    #[arg(long, env = "GPUCLOUD_APISERVER_OUTAGE_UNREADY_AFTER", default_value = "60s", value_parser = duration_arg)]
    pub apiserver_outage_unready_after: Duration,
    /// How often Budgets read what the platform billed this month (one billing call per
    /// family of Pods and Endpoints, not per object; REST v2 only).
    #[arg(long, env = "GPUCLOUD_BILLING_INTERVAL", default_value = "5m", value_parser = duration_arg)]
    pub billing_interval: Duration,
    /// Manage only objects with these labels (a label selector such as
    /// `gpucloud.io/install=staging`), to split objects between installs on purpose.
    #[arg(long, env = "GPUCLOUD_SELECTOR")]
    pub selector: Option<String>,
    /// Log format.
    #[arg(long, env = "GPUCLOUD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    #[command(flatten)]
    pub webhook: super::webhook::WebhookArgs,
}

fn platform_api_arg(text: &str) -> Result<PlatformApi, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not a platform API: use v2 or seed"))
}

fn base_urls(args: &RunArgs) -> anyhow::Result<BaseUrls> {
    // Flags carry the environment too (clap's `env`), so the defaults are the public platform.
    let mut urls = BaseUrls::default();
    urls.override_with(
        args.rest_url.as_deref(),
        args.graphql_url.as_deref(),
        args.serverless_url.as_deref(),
        args.registry_url.as_deref(),
    )?;
    urls.override_api(args.api_url.as_deref())?;
    Ok(urls)
}

fn default_key(args: &RunArgs) -> anyhow::Result<DefaultKey> {
    if let Some(reference) = &args.api_key_secret {
        let Some((namespace, name)) = reference.split_once('/') else {
            bail!("--api-key-secret must be NAMESPACE/NAME, got {reference:?}");
        };
        return Ok(DefaultKey::Secret {
            namespace: namespace.into(),
            name: name.into(),
            key: "apiKey".into(),
        });
    }
    if let Some(path) = &args.api_key_file {
        return Ok(DefaultKey::Fixed(ApiKey::from_file(path)?));
    }
    Ok(match ApiKey::from_env() {
        Ok(key) => DefaultKey::Fixed(key),
        Err(_) => DefaultKey::None,
    })
}

/// Refuses to start when the CRDs are not installed, saying how to install them.
async fn check_crds(client: &kube::Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crate::kinds::crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        match crds.get_opt(&name).await {
            Ok(Some(_)) => {}
            Ok(None) => bail!(
                "the CustomResourceDefinition {name} is not installed; install the CRDs with \
                 `gpucloud-operator crds | kubectl apply --server-side -f -` (or `kubectl apply -f crds/`)"
            ),
            Err(kube::Error::Api(e)) if e.code == 403 => {
                warn!(crd = %name, "may not read CustomResourceDefinitions; assuming they are installed");
                return Ok(());
            }
            Err(e) => return Err(e).context("could not reach the Kubernetes API"),
        }
    }
    Ok(())
}

/// Says at start-up what is missing for objects that do not name their own key. Not fatal:
/// such objects report it in their conditions, and a Secret created later is picked up.
async fn check_default_key(kube: &kube::Client, default: &DefaultKey) {
    match default {
        DefaultKey::None => warn!(
            "no default API key: objects without spec.credentialsSecretRef will be Stalled with \
             CredentialsNotConfigured; pass --api-key-secret NAMESPACE/NAME, --api-key-file \
             or GPUCLOUD_API_KEY"
        ),
        DefaultKey::Secret {
            namespace, name, ..
        } => {
            let secrets: Api<k8s_openapi::api::core::v1::Secret> =
                Api::namespaced(kube.clone(), namespace);
            if let Ok(None) = secrets.get_metadata_opt(name).await {
                warn!(
                    secret = %format!("{namespace}/{name}"),
                    "the API key Secret does not exist yet; create it with `kubectl -n \
                     {namespace} create secret generic {name} --from-literal=apiKey=...` \
                     (picked up without a restart)"
                );
            }
        }
        DefaultKey::Fixed(_) => {}
    }
}

pub async fn run(args: RunArgs) -> anyhow::Result<()> {
    telemetry::init(args.log_format);
    let kube = kube::Client::try_default().await.context(
        "no Kubernetes cluster: set KUBECONFIG, or run inside a cluster with a service account",
    )?;
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(async move {
        termination().await;
        info!("shutting down");
        let _ = stop_tx.send(true);
    });
    run_with(args, kube, stop_rx).await
}

/// The operator on a given cluster until `stop` turns true; its controllers run while it
/// leads. Tests run it in-process with their own stop switch.
pub async fn run_with(
    args: RunArgs,
    kube: kube::Client,
    stop_rx: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    run_with_clock(args, kube, stop_rx, Clock::default()).await
}

/// [`run_with`] on a given clock for time-driven decisions (a Pod's schedule): the
/// end-to-end tests pass the emulator's fast clock.
pub async fn run_with_clock(
    args: RunArgs,
    kube: kube::Client,
    stop_rx: watch::Receiver<bool>,
    clock: Clock,
) -> anyhow::Result<()> {
    check_crds(&kube).await?;
    let (metrics, budgets) = crate::app::metrics::operator_metrics();
    // Before the Lease: a selector the apiserver refuses, or no right to list namespaces,
    // stops the start at once. The one Namespace watch then runs for every kind.
    let namespaces = watched_namespaces(&args, &kube, &metrics).await?;
    let urls = base_urls(&args)?;
    let default = default_key(&args)?;
    check_default_key(&kube, &default).await;
    // The base client needs some key; per-object keys are swapped in per call.
    let base_key = match &default {
        DefaultKey::Fixed(key) => key.clone(),
        _ => ApiKey::new("unset").expect("a literal key"),
    };
    let mut platform_config = PlatformConfig::new(urls, base_key);
    platform_config.timeouts.request = args.platform_timeout;
    platform_config.api = args.platform_api;
    info!(platform_api = %args.platform_api, "platform API chosen");
    let platform = PlatformClient::with_metrics(platform_config, metrics.platform.clone())?;
    let credentials = CredentialResolver::new(kube.clone(), default, args.poll_interval);
    let lease_namespace = lease_namespace(&args);
    let install = args
        .install
        .clone()
        .unwrap_or_else(|| format!("{lease_namespace}/{}", args.leader_election_lease));
    info!(install = %install, "install name in object claims");
    let config = EngineConfig {
        poll_interval: args.poll_interval,
        progress_interval: args.progress_interval,
        create_timeout: args.platform_timeout,
        install,
        operator_namespace: lease_namespace.clone(),
        takeover_after: args.takeover_after,
        orphan_census_interval: args.orphan_census_interval,
        sees_every_object: matches!(namespaces, Namespaces::All) && args.selector.is_none(),
        secret_recheck_interval: args.secret_recheck_interval,
        watch_timeout: args.watch_timeout,
        clock,
        ..EngineConfig::default()
    };
    let identity = args.identity.clone().unwrap_or_else(process_identity);
    let shared = Arc::new(Shared::new(
        kube.clone(),
        platform,
        credentials,
        config,
        metrics.clone(),
        Some(identity.clone()),
    ));

    let ready = Readiness::default();
    let probes = Probes {
        ready: ready.clone(),
        progress: shared.progress.clone(),
        stall_limit: liveness::stall_limit(args.liveness_stall_timeout, args.platform_timeout),
        apiserver: shared.metrics.apiserver.clone(),
        outage_limit: args.apiserver_outage_unready_after,
    };
    let stall_limit_s = probes.stall_limit.as_secs();
    // Ready from the first answer, leading or not: a follower that is not Ready would keep
    // a rolling update from ever stopping the leader whose Lease it waits for. Not once
    // stopping.
    ready.set(true);
    tokio::spawn({
        let stopping = wait_for(stop_rx.clone());
        async move {
            stopping.await;
            ready.set(false);
        }
    });
    // Served by every replica from before it may lead: the apiserver calls any of them,
    // and the controllers' own reads of objects stored in v1alpha1 go through it.
    // It keeps serving a while after the stop (`--conversion-webhook-drain`), and the
    // process waits for it before it ends.
    let webhook = match args
        .webhook
        .webhook(&lease_namespace, super::webhook::crd_names())?
    {
        Some(webhook) => {
            Some(super::webhook::start(kube.clone(), webhook, wait_for(stop_rx.clone())).await?)
        }
        None => None,
    };
    let serving = serving(&args)?;
    let bound = server::serve(&serving, metrics, probes, &kube, wait_for(stop_rx.clone()))
        .await
        .with_context(|| format!("could not serve /metrics on {}", args.metrics_addr))?;
    info!(
        address = %bound,
        metrics_auth = ?serving.auth,
        stall_limit_s,
        "serving /metrics, /healthz and /readyz"
    );

    let lease = lease::lease_for(
        &shared.config.install,
        args.leader_election,
        &lease_namespace,
        &args.leader_election_lease,
    );
    // The elector's answers feed the process's view of the apiserver (the log,
    // `gpucloud_apiserver_unreachable`, `/readyz`), as the watches' do; a follower has
    // only these.
    let apiserver = shared.metrics.apiserver.clone();
    let reachable: Reachable = Arc::new(move |answer| match answer {
        Err(error) if !error.answered() => apiserver.unanswered("Lease", error),
        _ => apiserver.answered(),
    });
    let hold = lease::hold(
        &shared,
        &shared.config.install,
        &lease,
        &identity,
        reachable,
    )
    .await
    .context("could not set up leader election")?;
    // Without a Lease to check, this process leads for as long as it runs.
    let (always, unchecked) = watch::channel(true);
    let (holding, leading) = match hold {
        Hold::Electing(holding) => {
            let leading = holding.leading();
            (Some(holding), leading)
        }
        Hold::Unchecked => (None, unchecked),
    };
    let lease_uid = holding.as_ref().map(Holding::lease_uid);
    let watched = Watched {
        namespaces,
        selector: args.selector.clone(),
    };
    let start_term = |term_stop| {
        let (shared, lease, watched) = (shared.clone(), lease.clone(), watched.clone());
        let lease_uid = lease_uid.as_ref().and_then(|uid| uid.borrow().clone());
        let controllers = Controllers {
            shared: shared.clone(),
            watched,
            concurrency: args.concurrency,
            stop: term_stop,
            budgets: budgets.clone(),
            billing_interval: args.billing_interval,
        };
        async move {
            if shared.install_tag.get().is_none() {
                learn_install_tag(&shared, &lease, lease_uid).await;
            }
            crate::kinds::KINDS
                .iter()
                .filter_map(|kind| kind.start(&controllers))
                .collect()
        }
    };
    let failed = run_terms(leading, stop_rx, shared.metrics.clone(), start_term).await;
    drop(always);
    // Let the next process with this install name act at once, not after the Lease expires;
    // only now, so that no pass of this process runs while another process leads.
    if let Some(holding) = holding {
        holding.release(RELEASE_WITHIN).await;
    }
    if let Some(webhook) = webhook {
        let _ = webhook.stopped.await;
    }
    info!("stopped");
    match failed {
        0 => Ok(()),
        n => bail!("{n} controller task(s) failed"),
    }
}

/// Sets this install's tag in `shared`: from the UID of the Lease the elector took
/// (`lease_uid`), or, for a process that may not hold its Lease, read from the Lease within
/// a request's time. An install that learns no tag says so: its remote objects then carry
/// none, and its orphan census judges only untagged ones.
async fn learn_install_tag(shared: &Shared, lease: &lease::LeaseRef, lease_uid: Option<String>) {
    let tag = match lease_uid {
        Some(uid) => InstallTag::from_uid(&uid),
        None => tokio::time::timeout(TIMING.request_timeout, lease::install_tag(shared, lease))
            .await
            .unwrap_or_else(|_| {
                warn!(lease = %lease.name, "could not read the install's Lease in time");
                None
            }),
    };
    let Some(tag) = tag else {
        warn!(lease = %lease.name, "no install tag: the remote objects made now carry none");
        return;
    };
    info!(
        install_tag = tag.as_str(),
        "install tag on the remote objects this install makes"
    );
    let _ = shared.install_tag.set(tag);
}

/// How long a stopping leader waits for its Lease to be released.
const RELEASE_WITHIN: Duration = Duration::from_secs(3);

/// How `/metrics` is served; a certificate directory without the token check is refused,
/// since HTTPS is there for the token.
fn serving(args: &RunArgs) -> anyhow::Result<Serving> {
    if args.metrics_auth == MetricsAuth::None && args.metrics_cert_dir.is_some() {
        bail!("--metrics-cert-dir needs --metrics-auth kubernetes");
    }
    Ok(Serving {
        addr: args.metrics_addr,
        auth: args.metrics_auth,
        cert_dir: args.metrics_cert_dir.clone(),
    })
}

/// The namespaces to watch: those --namespace-selector matches (their watch started), the
/// --namespaces list, or all.
async fn watched_namespaces(
    args: &RunArgs,
    kube: &kube::Client,
    metrics: &Arc<gpucloud_engine::metrics::Metrics>,
) -> anyhow::Result<Namespaces> {
    if let Some(selector) = &args.namespace_selector {
        let selected =
            SelectedNamespaces::start(kube.clone(), selector, metrics.clone(), args.watch_timeout)
                .await?;
        info!(selector = %selector, "watching the namespaces the namespace selector matches");
        return Ok(Namespaces::Selected(selected));
    }
    Ok(if args.namespaces.is_empty() {
        Namespaces::All
    } else {
        Namespaces::Only(args.namespaces.clone())
    })
}

/// The namespace of the leader-election Lease: the flag, else the pod's own namespace,
/// else `default`.
fn lease_namespace(args: &RunArgs) -> String {
    own_namespace(args.leader_election_namespace.clone())
}

/// This process's identity in its Lease when none is given: the host name and a random
/// suffix, since two processes on one host (two `run`s with default flags) must not take
/// each other for themselves.
fn process_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "gpucloud-operator".to_string());
    format!("{host}-{}", &uuid::Uuid::new_v4().simple().to_string()[..8])
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Top {
        #[command(flatten)]
        run: RunArgs,
    }

    #[test]
    fn a_namespace_selector_and_a_namespace_list_are_refused_together() {
        let both = Top::try_parse_from(["x", "--namespaces=a,b", "--namespace-selector=team=ml"]);
        let err = both.err().expect("refused").to_string();
        assert!(
            err.contains("--namespaces") && err.contains("--namespace-selector"),
            "names both flags: {err}"
        );
        let selector = Top::try_parse_from(["x", "--namespace-selector=team=ml"])
            .expect("the selector alone")
            .run;
        assert_eq!(selector.namespace_selector.as_deref(), Some("team=ml"));
        assert!(selector.namespaces.is_empty());
    }

    #[test]
    fn secrets_are_read_again_every_30s_unless_told_and_never_at_0s() {
        let default = Top::try_parse_from(["x"]).expect("no flags").run;
        assert_eq!(default.secret_recheck_interval, Duration::from_secs(30));
        let set = Top::try_parse_from(["x", "--secret-recheck-interval=2m"])
            .expect("an interval")
            .run;
        assert_eq!(set.secret_recheck_interval, Duration::from_secs(120));
        let err = Top::try_parse_from(["x", "--secret-recheck-interval=0s"])
            .err()
            .expect("0s refused")
            .to_string();
        // `parse_duration` has no zero: an interval that never ticks is no interval.
        assert!(err.contains("--secret-recheck-interval"), "{err}");
    }

    #[test]
    fn the_stall_limit_is_twice_the_longest_platform_call_unless_told() {
        let default = Top::try_parse_from(["x"]).expect("no flags").run;
        let limit = liveness::stall_limit(default.liveness_stall_timeout, default.platform_timeout);
        assert_eq!(limit, Duration::from_secs(17 * 60));
        let set = Top::try_parse_from(["x", "--liveness-stall-timeout=3s"])
            .expect("a limit")
            .run;
        assert_eq!(set.liveness_stall_timeout, Some(Duration::from_secs(3)));
    }

    #[test]
    fn metrics_want_a_token_unless_told_otherwise() {
        let default = Top::try_parse_from(["x"]).expect("no flags").run;
        let served = serving(&default).expect("the default");
        assert_eq!(served.auth, MetricsAuth::Kubernetes);
        assert!(served.cert_dir.is_none(), "a self-signed certificate");

        let open = Top::try_parse_from(["x", "--metrics-auth=none"])
            .unwrap()
            .run;
        assert_eq!(serving(&open).unwrap().auth, MetricsAuth::None);

        let files = [
            "x",
            "--metrics-auth=kubernetes",
            "--metrics-cert-dir=/certs",
        ];
        let files = Top::try_parse_from(files).unwrap().run;
        assert_eq!(
            serving(&files).unwrap().cert_dir.as_deref(),
            Some(std::path::Path::new("/certs"))
        );

        let clear = ["x", "--metrics-auth=none", "--metrics-cert-dir=/certs"];
        let clear = Top::try_parse_from(clear).unwrap().run;
        let refused = serving(&clear).unwrap_err().to_string();
        assert!(refused.contains("--metrics-cert-dir"), "{refused}");
    }
}
