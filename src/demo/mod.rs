//! `gpucloud-operator demo`: the product in one command. A cluster (the local control plane,
//! or the one in `KUBECONFIG`), the emulator in this process, the CRDs, the operator, the
//! manifests of `examples/`, and a live table of them converging until Ctrl-C; then it
//! cleans up after itself.

pub mod apply;
pub mod cluster;
pub mod examples;
pub mod table;

use std::fmt::Debug;
use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::Parser;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use tokio::sync::watch;

use crate::cli::run::{RunArgs, run_with};
use crate::kinds::KINDS;
use gpucloud_emulator::{self as emulator, ApiKey, EmulatorConfig};
use gpucloud_engine::annotations::parse_duration;

use self::apply::{apply_objects, parse_documents};
use self::cluster::Cluster;
use crate::kinds::summary::Row;

const FIELD_MANAGER: &str = "gpucloud-operator-demo";
/// The key the demo's emulator accepts; it guards nothing but the emulator in this process.
const DEMO_KEY: &str = "demo-key";
/// The Secret the operator reads its key from, and the examples' applications too.
const KEY_SECRET: &str = "gpucloud-api-key";

/// Options of `demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Namespace the examples are applied to (created, and deleted at the end).
    #[arg(long, default_value = "gpucloud-demo")]
    pub namespace: String,
    /// Apply the YAML files of this directory instead of the built-in `examples/`.
    #[arg(long)]
    pub examples: Option<PathBuf>,
    /// Exit by itself once every gpucloud.io object is Ready (status 0), or fail after
    /// --timeout, instead of running until Ctrl-C. For scripts and CI.
    #[arg(long)]
    pub until_ready: bool,
    /// With --until-ready: how long to wait, such as 90s or 5m.
    #[arg(long, default_value = "5m", value_parser = duration_arg)]
    pub timeout: Duration,
    /// The platform API the operator speaks to the emulator: `v2` or `seed`.
    #[arg(long, default_value = "v2", value_parser = ["v2", "seed"])]
    pub platform_api: String,
    /// The local control plane script, when the demo is not run from the repository.
    #[arg(long)]
    pub control_plane_script: Option<PathBuf>,
}

fn duration_arg(text: &str) -> Result<Duration, String> {
    parse_duration(text).ok_or_else(|| format!("{text:?} is not a duration such as 90s or 5m"))
}

/// A manifest file to apply: its name and text.
struct Manifest {
    name: String,
    text: String,
}

fn manifests(dir: Option<&PathBuf>) -> anyhow::Result<Vec<Manifest>> {
    let Some(dir) = dir else {
        return Ok(examples::EXAMPLES
            .iter()
            .map(|(name, text)| Manifest {
                name: (*name).to_string(),
                text: (*text).to_string(),
            })
            .collect());
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("--examples {}: cannot read the directory", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    if files.is_empty() {
        bail!("--examples {}: no .yaml files there", dir.display());
    }
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            Ok(Manifest {
                name: path.display().to_string(),
                text,
            })
        })
        .collect()
}

pub async fn run(args: DemoArgs) -> anyhow::Result<()> {
    // Parse everything before starting anything, so a bad file costs nothing.
    let manifests = manifests(args.examples.as_ref())?;
    let mut parsed = Vec::new();
    for m in &manifests {
        parsed.push((m.name.clone(), parse_documents(&m.text, &m.name)?));
    }

    let log_path = std::env::temp_dir().join(format!("gpucloud-demo-{}.log", std::process::id()));
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("cannot write the operator log {}", log_path.display()))?;
    crate::app::telemetry::init_to_file(log);

    let (cluster, client) = cluster::acquire(args.control_plane_script.as_deref()).await?;
    eprintln!("demo: {}", cluster.describe());
    eprintln!("demo: operator log in {}", log_path.display());
    let outcome = Session::start(&args, &cluster, client).await;
    let result = match outcome {
        Ok(session) => {
            let shown = session.show(&args, &parsed).await;
            session.finish(&cluster).await;
            shown
        }
        Err(e) => Err(e),
    };
    cluster.release();
    if cluster.is_local() {
        eprintln!("demo: local control plane stopped and removed");
    }
    match &result {
        // The log is worth keeping only when something went wrong.
        Ok(()) => {
            let _ = std::fs::remove_file(&log_path);
        }
        Err(_) => eprintln!("demo: the operator's log is in {}", log_path.display()),
    }
    result
}

/// What the demo started on the cluster: the emulator and the operator.
struct Session {
    namespace: String,
    kube_client: kube::Client,
    emulator: emulator::RunningEmulator,
    stop_operator: watch::Sender<bool>,
    operator: tokio::task::JoinHandle<anyhow::Result<()>>,
}

#[derive(Parser)]
struct OperatorCommandLine {
    #[command(flatten)]
    run: RunArgs,
}

impl Session {
    async fn start(
        args: &DemoArgs,
        cluster: &Cluster,
        client: kube::Client,
    ) -> anyhow::Result<Self> {
        install_crds(&client).await?;
        if !cluster.is_local() {
            eprintln!(
                "demo: the gpucloud.io CRDs are installed (server-side apply); they stay after the demo"
            );
        }
        let namespace = args.namespace.clone();
        prepare_namespace(&client, &namespace).await?;

        let config = EmulatorConfig {
            api_keys: vec![ApiKey {
                key: DEMO_KEY.into(),
                read_only: false,
            }],
            fixtures: Some(examples::fixtures()),
            ..EmulatorConfig::default()
        };
        let emulator = emulator::start(config, "127.0.0.1:0".parse().expect("an address"))
            .await
            .context("could not start the emulator")?;
        eprintln!(
            "demo: emulator at {}; the operator speaks its {} API",
            emulator.base_url(),
            if args.platform_api == "seed" {
                "seed (REST v1 + GraphQL)"
            } else {
                "REST v2"
            }
        );
        let platform_api = args.platform_api.clone();

        let secrets: Api<Secret> = Api::namespaced(client.clone(), &namespace);
        let secret: Secret = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": KEY_SECRET},
            "stringData": {"apiKey": DEMO_KEY},
        }))
        .expect("a Secret");
        secrets
            .patch(
                KEY_SECRET,
                &PatchParams::apply(FIELD_MANAGER).force(),
                &Patch::Apply(&secret),
            )
            .await
            .context("could not write the API key Secret")?;

        let base = emulator.base_url();
        let argv = [
            "run".to_string(),
            format!("--rest-url={base}/v1"),
            format!("--graphql-url={base}/graphql"),
            format!("--serverless-url={base}/v2"),
            format!("--registry-url={base}"),
            format!("--api-url={base}/v2"),
            format!("--platform-api={platform_api}"),
            format!("--api-key-secret={namespace}/{KEY_SECRET}"),
            format!("--namespaces={namespace}"),
            "--metrics-addr=127.0.0.1:0".into(),
            // On a loopback port nobody is told of: plain HTTP, no certificate to make.
            "--metrics-auth=none".into(),
            "--poll-interval=5s".into(),
            "--progress-interval=1s".into(),
            "--platform-timeout=10s".into(),
        ];
        let run_args = OperatorCommandLine::try_parse_from(argv)
            .context("the demo's operator flags")?
            .run;
        let (stop_operator, stop_rx) = watch::channel(false);
        let operator = tokio::spawn(run_with(run_args, client.clone(), stop_rx));
        Ok(Self {
            namespace,
            kube_client: client,
            emulator,
            stop_operator,
            operator,
        })
    }

    /// Applies the manifests and shows the table until Ctrl-C (or, with --until-ready,
    /// until everything is Ready).
    async fn show(
        &self,
        args: &DemoArgs,
        parsed: &[(String, Vec<kube::api::DynamicObject>)],
    ) -> anyhow::Result<()> {
        let client = self.kube_client.clone();
        let mut expected = 0usize;
        for (name, objects) in parsed {
            let (objects, left_out): (Vec<_>, Vec<_>) = objects
                .iter()
                .cloned()
                .partition(|o| examples::runs_on(&args.platform_api, o));
            if !left_out.is_empty() {
                eprintln!(
                    "demo: left out {} object(s) of {name}: Instant Clusters need the REST v2 API (--platform-api v2)",
                    left_out.len()
                );
            }
            let applied = apply_objects(&client, &self.namespace, &objects, FIELD_MANAGER).await?;
            expected += applied
                .iter()
                .filter(|a| a.api_version.starts_with("gpucloud.io/"))
                .count();
            eprintln!("demo: applied {} objects from {name}", applied.len());
        }
        let interactive = std::io::stdout().is_terminal();
        let started = Instant::now();
        let mut shown = String::new();
        let mut ctrl_c = std::pin::pin!(tokio::signal::ctrl_c());
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = &mut ctrl_c => {
                    eprintln!("\ndemo: Ctrl-C, cleaning up");
                    return Ok(());
                }
                _ = tick.tick() => {}
            }
            if self.operator.is_finished() {
                bail!("the operator stopped unexpectedly; see the operator log named above");
            }
            let rows = self.rows().await?;
            let text = table::render(&rows);
            if text != shown {
                if interactive {
                    print!("\x1b[2J\x1b[H");
                }
                println!(
                    "[{:>4} s] namespace {}{}",
                    started.elapsed().as_secs(),
                    self.namespace,
                    if args.until_ready {
                        ""
                    } else {
                        "   (Ctrl-C stops and cleans up)"
                    }
                );
                print!("{text}");
                println!();
                let _ = std::io::stdout().flush();
                shown = text;
            }
            let ready = rows.iter().filter(|r| r.is_ready).count();
            if args.until_ready {
                if rows.len() >= expected && ready == rows.len() {
                    println!(
                        "demo: all {} objects Ready after {:.1} s",
                        rows.len(),
                        started.elapsed().as_secs_f64()
                    );
                    return Ok(());
                }
                if started.elapsed() > args.timeout {
                    let waiting: Vec<String> = rows
                        .iter()
                        .filter(|r| !r.is_ready)
                        .map(|r| format!("{} {} ({})", r.kind, r.name, r.ready))
                        .collect();
                    bail!(
                        "not every object was Ready after {:?}: {}",
                        args.timeout,
                        waiting.join(", ")
                    );
                }
            }
        }
    }

    async fn rows(&self) -> anyhow::Result<Vec<Row>> {
        let mut rows = Vec::new();
        for kind in KINDS {
            rows.extend((kind.rows)(self.kube_client.clone(), Some(self.namespace.clone())).await?);
        }
        Ok(rows)
    }

    /// Deletes the demo namespace while the operator still runs (its finalizers need it),
    /// then stops the operator and the emulator. On a local control plane that is about to
    /// go away, deleting is skipped.
    async fn finish(self, cluster: &Cluster) {
        if !cluster.is_local() {
            let namespaces: Api<Namespace> = Api::all(self.kube_client.clone());
            let _ = namespaces
                .delete(&self.namespace, &DeleteParams::default())
                .await;
            let deadline = Instant::now() + Duration::from_secs(90);
            while Instant::now() < deadline {
                match namespaces.get_opt(&self.namespace).await {
                    Ok(None) => break,
                    _ => tokio::time::sleep(Duration::from_millis(500)).await,
                }
            }
            match namespaces.get_opt(&self.namespace).await {
                Ok(None) => eprintln!("demo: namespace {} deleted", self.namespace),
                _ => eprintln!(
                    "demo: namespace {} is still terminating; `kubectl get gpucloud -n {}` shows what holds it",
                    self.namespace, self.namespace
                ),
            }
        }
        let _ = self.stop_operator.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(20), self.operator).await;
        self.emulator.shutdown().await;
    }
}

/// The annotation on a CRD [`install_crds`] applied: a digest of what it applied.
const CRD_DIGEST: &str = "gpucloud.io/crd-digest";

/// Applies the CRDs (server-side, idempotent) and waits until they are served. A CRD whose
/// digest says it was applied as it is already is left alone: applying it again would have
/// the apiserver validate it, compiling its CEL rules, for nothing (each test suite calls
/// this).
pub async fn install_crds(client: &kube::Client) -> anyhow::Result<()> {
    use std::hash::{DefaultHasher, Hash as _, Hasher as _};
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for mut crd in crate::kinds::crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let mut hasher = DefaultHasher::new();
        serde_json::to_string(&crd)?.hash(&mut hasher);
        let digest = format!("{:016x}", hasher.finish());
        let installed = crds.get_opt(&name).await?;
        let applied = installed
            .and_then(|c| c.metadata.annotations)
            .and_then(|a| a.get(CRD_DIGEST).cloned());
        if applied.as_deref() == Some(digest.as_str()) {
            continue;
        }
        crd.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(CRD_DIGEST.into(), digest);
        crds.patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&crd),
        )
        .await
        .with_context(|| format!("could not install the CRD {name} (does your user may create CustomResourceDefinitions?)"))?;
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    for crd in crate::kinds::crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        loop {
            let established = crds
                .get(&name)
                .await?
                .status
                .and_then(|s| s.conditions)
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c.type_ == "Established" && c.status == "True")
                });
            if established {
                break;
            }
            if Instant::now() > deadline {
                bail!("the CRD {name} was not Established within 30 s");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    Ok(())
}

/// Creates the namespace, waiting out a previous demo's namespace that is still terminating.
async fn prepare_namespace(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Some(ns) = namespaces.get_opt(name).await? {
        if ns.metadata.deletion_timestamp.is_none() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "namespace {name} has been terminating for a minute; choose another with --namespace"
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let ns: Namespace = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}
    }))
    .expect("a Namespace");
    namespaces
        .patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&ns),
        )
        .await
        .with_context(|| format!("could not create namespace {name}"))?;
    Ok(())
}
