//! `platform v2 ...`: every REST v2 operation the operator uses, for people and scripts.
//! Create and update bodies come from flags for the common cases, or whole from `--body`
//! (inline JSON or `@FILE`) in the document's shape.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};
use futures::StreamExt;
use serde::de::DeserializeOwned;

use super::{OutputFormat, Printer};
use crate::platform::PlatformClient;
use crate::platform::v2::{
    BillingBucketSize, BillingWindow, Cloud, Compliance, CpuQuery, CreateContainerConfig,
    CreateCpuConfig, CreateEndpoint, CreateGpuConfig, CreateNetworkVolume, CreatePod,
    CreateRegistry, CreateTemplate, DataCenterQuery, DataCenterRegion, Endpoint, GpuQuery, GpuType,
    LogQuery, LogSource, Mounts, NetworkMount, NetworkVolume, Pod, PodAction, PodListQuery,
    Product, PublicTemplateSource, Template, UpdateContainerConfig, UpdateEndpoint,
    UpdateNetworkVolume, UpdatePod, UpdateTemplate, V2, VolumeType,
};

#[derive(Debug, clap::Subcommand)]
pub enum V2Command {
    /// Pods.
    Pods {
        #[command(subcommand)]
        command: PodCommand,
    },
    /// Serverless endpoints.
    Serverless {
        #[command(subcommand)]
        command: ServerlessCommand,
    },
    /// The account's templates.
    Templates {
        #[command(subcommand)]
        command: TemplateCommand,
    },
    /// Network volumes.
    Volumes {
        #[command(subcommand)]
        command: VolumeCommand,
    },
    /// Container registry credentials.
    Registries {
        #[command(subcommand)]
        command: RegistryCommand,
    },
    /// GPU types, CPU flavours, data centres and public templates.
    Catalog {
        #[command(subcommand)]
        command: CatalogCommand,
    },
    /// Spend per time bucket.
    Billing {
        #[command(subcommand)]
        command: BillingCommand,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum PodCommand {
    /// List pods.
    List {
        /// Include members of instant clusters.
        #[arg(long)]
        include_cluster_pods: bool,
    },
    /// Show one pod.
    Get { id: String },
    /// Create a pod (exactly one of --gpu or --cpu, or a whole --body).
    Create(Box<PodCreateArgs>),
    /// Change a pod (only what is given).
    Update(Box<PodUpdateArgs>),
    /// Terminate and delete a pod.
    Delete { id: String },
    /// Start, stop, restart or terminate a pod.
    Action {
        id: String,
        /// start, stop, restart or terminate.
        action: String,
    },
    /// Print a pod's log lines as they come.
    Logs {
        id: String,
        /// container or system (both when unset).
        #[arg(long)]
        source: Option<String>,
        /// Past lines first (the platform's default is 100).
        #[arg(long)]
        tail: Option<u32>,
        /// Resume from this RFC 3339 time.
        #[arg(long)]
        since: Option<String>,
    },
}

#[derive(Debug, clap::Args)]
pub struct PodCreateArgs {
    /// The whole request body (JSON or @FILE); the other flags then must not be given.
    #[arg(long, conflicts_with_all = ["name", "image", "gpu", "cpu"])]
    pub body: Option<String>,
    #[arg(long, required_unless_present = "body")]
    pub name: Option<String>,
    #[arg(long)]
    pub image: Option<String>,
    /// GPU type id (`NVIDIA GeForce RTX 4090`).
    #[arg(long, conflicts_with = "cpu")]
    pub gpu: Option<String>,
    #[arg(long, requires = "gpu")]
    pub gpu_count: Option<u32>,
    /// CPU flavour id (`cpu5c`).
    #[arg(long, requires = "vcpus")]
    pub cpu: Option<String>,
    #[arg(long, requires = "cpu")]
    pub vcpus: Option<u32>,
    /// SECURE or COMMUNITY.
    #[arg(long)]
    pub cloud: Option<String>,
    /// Container disk, GB.
    #[arg(long)]
    pub disk: Option<u32>,
    /// KEY=VALUE, repeatable.
    #[arg(long = "env")]
    pub env: Vec<String>,
    /// PORT/PROTOCOL, repeatable.
    #[arg(long = "port")]
    pub ports: Vec<String>,
    /// Preferred data centre, repeatable.
    #[arg(long = "data-center")]
    pub data_centers: Vec<String>,
    /// VOLUME_ID:PATH, repeatable.
    #[arg(long = "network-volume")]
    pub network_volumes: Vec<String>,
    #[arg(long)]
    pub template: Option<String>,
}

#[derive(Debug, clap::Args)]
pub struct PodUpdateArgs {
    pub id: String,
    /// The whole request body (JSON or @FILE).
    #[arg(long, conflicts_with_all = ["name", "image", "locked"])]
    pub body: Option<String>,
    #[arg(long)]
    pub name: Option<String>,
    #[arg(long)]
    pub image: Option<String>,
    /// true or false.
    #[arg(long)]
    pub locked: Option<bool>,
}

#[derive(Debug, clap::Subcommand)]
pub enum ServerlessCommand {
    List,
    Get {
        id: String,
    },
    /// Create an endpoint from a JSON body (the document's CreateEndpointRequest).
    Create {
        /// JSON or @FILE.
        #[arg(long)]
        body: String,
    },
    /// Change an endpoint from a JSON body (UpdateEndpointRequest).
    Update {
        id: String,
        #[arg(long)]
        body: String,
    },
    Delete {
        id: String,
    },
    /// Active workers and their counts by status.
    Workers {
        id: String,
    },
    /// Configuration versions and the rollout of the latest.
    Releases {
        id: String,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum TemplateCommand {
    List,
    Get {
        id: String,
    },
    /// Create a template from --name and --image, or a whole --body.
    Create {
        #[arg(long, conflicts_with_all = ["name", "image"])]
        body: Option<String>,
        #[arg(long, required_unless_present = "body")]
        name: Option<String>,
        #[arg(long, required_unless_present = "body")]
        image: Option<String>,
        /// For serverless workers rather than pods.
        #[arg(long)]
        serverless: bool,
    },
    /// Change a template from a JSON body (UpdateTemplateRequest).
    Update {
        id: String,
        #[arg(long)]
        body: String,
    },
    Delete {
        id: String,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum VolumeCommand {
    List,
    Get {
        id: String,
    },
    Create {
        #[arg(long)]
        name: String,
        /// GB (10 to 4096).
        #[arg(long)]
        size: u32,
        #[arg(long)]
        data_center: String,
        /// STANDARD or HIGH_PERFORMANCE.
        #[arg(long = "type")]
        volume_type: Option<String>,
    },
    Update {
        id: String,
        #[arg(long)]
        name: Option<String>,
        /// GB; may only grow.
        #[arg(long)]
        size: Option<u32>,
    },
    Delete {
        id: String,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum RegistryCommand {
    List,
    Get {
        id: String,
    },
    /// Store a registry credential; the password is read from a file, never a flag.
    Create {
        #[arg(long)]
        name: String,
        #[arg(long)]
        username: String,
        #[arg(long)]
        password_file: PathBuf,
    },
    Delete {
        id: String,
    },
}

/// Filters shared by `catalog gpus` and `catalog gpu`.
#[derive(Debug, clap::Args)]
pub struct GpuFilterArgs {
    /// Include availability (needs --product).
    #[arg(long)]
    pub available: bool,
    /// POD, CLUSTER or SERVERLESS; repeatable.
    #[arg(long = "product", requires = "available")]
    pub products: Vec<String>,
    /// GPUs per pod the availability is for.
    #[arg(long, requires = "available")]
    pub count: Option<u32>,
    /// SECURE or COMMUNITY.
    #[arg(long, requires = "available")]
    pub cloud: Option<String>,
    /// ISO country code; repeatable.
    #[arg(long = "country", requires = "available")]
    pub countries: Vec<String>,
    /// Exact CUDA version (12.8); repeatable.
    #[arg(long = "cuda", requires = "available")]
    pub cuda_versions: Vec<String>,
    #[arg(long, requires = "available")]
    pub min_cuda: Option<String>,
}

#[derive(Debug, clap::Subcommand)]
pub enum CatalogCommand {
    /// GPU types with prices (and availability with --available --product ...).
    Gpus(GpuFilterArgs),
    /// One GPU type.
    Gpu {
        id: String,
        #[command(flatten)]
        filters: GpuFilterArgs,
    },
    /// CPU flavours.
    Cpus {
        #[arg(long)]
        available: bool,
        #[arg(long = "product", requires = "available")]
        products: Vec<String>,
        #[arg(long, requires = "available")]
        vcpus: Option<u32>,
    },
    /// Data centres.
    Datacenters {
        #[arg(long)]
        gpu_availability: bool,
        #[arg(long)]
        cpu_availability: bool,
        /// Region (EUROPE, ...); repeatable, any of them.
        #[arg(long = "region")]
        regions: Vec<String>,
        /// STANDARD or HIGH_PERFORMANCE; repeatable, all of them.
        #[arg(long = "volume-type")]
        volume_types: Vec<String>,
        /// Certification; repeatable, all of them.
        #[arg(long = "compliance")]
        compliance: Vec<String>,
        #[arg(long)]
        global_network: Option<bool>,
    },
    /// Public templates: official (default), verified or community.
    Templates {
        #[arg(long)]
        source: Option<String>,
    },
}

/// The window of a billing command.
#[derive(Debug, clap::Args)]
pub struct BillingArgs {
    /// RFC 3339.
    #[arg(long, conflicts_with = "last")]
    pub start: Option<String>,
    /// RFC 3339, exclusive.
    #[arg(long, conflicts_with = "last")]
    pub end: Option<String>,
    /// hour, day, week, month or year.
    #[arg(long)]
    pub bucket: Option<String>,
    /// The last N buckets.
    #[arg(long)]
    pub last: Option<u32>,
}

#[derive(Debug, clap::Subcommand)]
pub enum BillingCommand {
    /// Spend across every resource family.
    All(BillingArgs),
    /// Pods (one with --id).
    Pods {
        #[command(flatten)]
        window: BillingArgs,
        #[arg(long)]
        id: Option<String>,
    },
    /// Serverless endpoints (one with --id).
    Serverless {
        #[command(flatten)]
        window: BillingArgs,
        #[arg(long)]
        id: Option<String>,
    },
    /// Network volumes (one with --id).
    Volumes {
        #[command(flatten)]
        window: BillingArgs,
        #[arg(long)]
        id: Option<String>,
    },
}

pub(super) async fn run(
    client: &PlatformClient,
    out: Printer,
    command: V2Command,
) -> anyhow::Result<()> {
    let v2 = client.v2();
    match command {
        V2Command::Pods { command } => pods(&v2, out, command).await,
        V2Command::Serverless { command } => serverless(&v2, out, command).await,
        V2Command::Templates { command } => templates(&v2, out, command).await,
        V2Command::Volumes { command } => volumes(&v2, out, command).await,
        V2Command::Registries { command } => registries(&v2, out, command).await,
        V2Command::Catalog { command } => catalog(&v2, out, command).await,
        V2Command::Billing { command } => billing(&v2, out, command).await,
    }
}

const POD_COLUMNS: &[&str] = &[
    "ID",
    "NAME",
    "STATUS",
    "COMPUTE",
    "IMAGE",
    "DATA_CENTER",
    "COST_PER_HR",
];

fn pod_row(p: &Pod) -> Vec<String> {
    let compute = match (&p.gpu, &p.cpu) {
        (Some(g), _) => format!("{}x {}", g.count.unwrap_or(1), g.id),
        (None, Some(c)) => format!("{} {} vCPU", c.id, c.vcpu_count),
        (None, None) => "-".into(),
    };
    vec![
        p.id.clone(),
        p.name.clone(),
        p.status.to_string(),
        compute,
        p.container.image.clone(),
        p.data_center_id.clone().unwrap_or_else(|| "-".into()),
        format!("{:.2}", p.cost),
    ]
}

/// The pods table (also the top-level `pods` command on v2).
pub(super) fn print_pods(out: Printer, pods: &[Pod]) -> anyhow::Result<()> {
    out.list(pods, POD_COLUMNS, pod_row)
}

async fn pods(v2: &V2, out: Printer, command: PodCommand) -> anyhow::Result<()> {
    match command {
        PodCommand::List {
            include_cluster_pods,
        } => {
            let filter = PodListQuery {
                include_cluster_pods: include_cluster_pods.then_some(true),
            };
            print_pods(out, &v2.list_pods(&filter).await?)
        }
        PodCommand::Get { id } => out.one(&v2.get_pod(&id).await?, POD_COLUMNS, pod_row),
        PodCommand::Create(args) => {
            let body = pod_create_body(*args)?;
            out.one(&v2.create_pod(&body).await?, POD_COLUMNS, pod_row)
        }
        PodCommand::Update(args) => {
            let body = match args.body {
                Some(raw) => read_body(&raw)?,
                None => UpdatePod {
                    name: args.name,
                    container: UpdateContainerConfig {
                        image: args.image,
                        ..UpdateContainerConfig::default()
                    },
                    locked: args.locked,
                    ..UpdatePod::default()
                },
            };
            out.one(&v2.update_pod(&args.id, &body).await?, POD_COLUMNS, pod_row)
        }
        PodCommand::Delete { id } => {
            v2.delete_pod(&id).await?;
            out.done(&id, "deleted")
        }
        PodCommand::Action { id, action } => {
            let action: PodAction = action.parse().unwrap_or_else(|e| match e {});
            match v2.pod_action(&id, action.clone()).await? {
                Some(pod) => out.one(&pod, POD_COLUMNS, pod_row),
                None => out.done(&id, action.as_str()),
            }
        }
        PodCommand::Logs {
            id,
            source,
            tail,
            since,
        } => {
            let q = LogQuery {
                source: source.map(|s| s.parse::<LogSource>().unwrap_or_else(|e| match e {})),
                tail,
                since,
                last_event_id: None,
            };
            let mut lines = v2.pod_logs(&id, &q).await?;
            let mut stdout = std::io::stdout();
            while let Some(line) = lines.next().await {
                let line = line?;
                match out.format {
                    OutputFormat::Json => writeln!(stdout, "{}", serde_json::to_string(&line)?)?,
                    OutputFormat::Table => {
                        writeln!(stdout, "{} [{}] {}", line.ts, line.source, line.line)?
                    }
                }
                stdout.flush()?;
            }
            Ok(())
        }
    }
}

/// The create body the flags describe.
fn pod_create_body(a: PodCreateArgs) -> anyhow::Result<CreatePod> {
    if let Some(raw) = a.body {
        return read_body(&raw);
    }
    if a.gpu.is_none() && a.cpu.is_none() && a.template.is_none() {
        bail!("give --gpu or --cpu (or --template, or a whole --body)");
    }
    let network: Vec<NetworkMount> = a
        .network_volumes
        .iter()
        .map(|v| {
            let (volume_id, path) = v
                .split_once(':')
                .with_context(|| format!("--network-volume {v:?} is not VOLUME_ID:PATH"))?;
            Ok(NetworkMount {
                volume_id: volume_id.to_owned(),
                path: path.to_owned(),
            })
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(CreatePod {
        name: a.name.unwrap_or_default(),
        container: CreateContainerConfig {
            image: a.image,
            disk: a.disk,
            env: (!a.env.is_empty()).then(|| parse_env(&a.env)).transpose()?,
            ports: (!a.ports.is_empty()).then_some(a.ports),
            ..CreateContainerConfig::default()
        },
        gpu: a.gpu.map(|id| CreateGpuConfig {
            id,
            count: a.gpu_count,
            ..CreateGpuConfig::default()
        }),
        cpu: a.cpu.map(|id| CreateCpuConfig {
            id,
            vcpu_count: a.vcpus.unwrap_or(2),
        }),
        cloud: a
            .cloud
            .map(|c| c.parse::<Cloud>().unwrap_or_else(|e| match e {})),
        data_center_ids: (!a.data_centers.is_empty()).then_some(a.data_centers),
        mounts: (!network.is_empty()).then(|| Mounts {
            network: Some(network),
            ..Mounts::default()
        }),
        template_id: a.template,
        ..CreatePod::default()
    })
}

fn parse_env(pairs: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .map(|p| {
            let (k, v) = p
                .split_once('=')
                .with_context(|| format!("--env {p:?} is not KEY=VALUE"))?;
            Ok((k.to_owned(), v.to_owned()))
        })
        .collect()
}

const ENDPOINT_COLUMNS: &[&str] = &["ID", "NAME", "TYPE", "COMPUTE", "WORKERS", "IMAGE"];

fn endpoint_row(e: &Endpoint) -> Vec<String> {
    let compute = match (&e.gpu, &e.cpu) {
        (Some(g), _) => g.pools.join(","),
        (None, Some(c)) => c
            .iter()
            .map(|c| c.id.as_str())
            .collect::<Vec<_>>()
            .join(","),
        (None, None) => "-".into(),
    };
    let bound = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_else(|| "?".into());
    vec![
        e.id.clone(),
        e.name.clone(),
        e.endpoint_type
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_else(|| "-".into()),
        compute,
        format!("{}..{}", bound(e.workers.min), bound(e.workers.max)),
        e.container.image.clone().unwrap_or_default(),
    ]
}

/// The endpoints table (also the top-level `endpoints` command on v2).
pub(super) fn print_endpoints(out: Printer, eps: &[Endpoint]) -> anyhow::Result<()> {
    out.list(eps, ENDPOINT_COLUMNS, endpoint_row)
}

async fn serverless(v2: &V2, out: Printer, command: ServerlessCommand) -> anyhow::Result<()> {
    match command {
        ServerlessCommand::List => print_endpoints(out, &v2.list_endpoints().await?),
        ServerlessCommand::Get { id } => {
            out.one(&v2.get_endpoint(&id).await?, ENDPOINT_COLUMNS, endpoint_row)
        }
        ServerlessCommand::Create { body } => {
            let body: CreateEndpoint = read_body(&body)?;
            out.one(
                &v2.create_endpoint(&body).await?,
                ENDPOINT_COLUMNS,
                endpoint_row,
            )
        }
        ServerlessCommand::Update { id, body } => {
            let body: UpdateEndpoint = read_body(&body)?;
            out.one(
                &v2.update_endpoint(&id, &body).await?,
                ENDPOINT_COLUMNS,
                endpoint_row,
            )
        }
        ServerlessCommand::Delete { id } => {
            v2.delete_endpoint(&id).await?;
            out.done(&id, "deleted")
        }
        ServerlessCommand::Workers { id } => {
            let list = v2.endpoint_workers(&id).await?;
            if out.format == OutputFormat::Json {
                return out.json(&list);
            }
            out.list(
                &list.workers,
                &[
                    "ID",
                    "STATUS",
                    "STALE",
                    "GPUS",
                    "GPU_TYPE",
                    "DATA_CENTER",
                    "UPTIME_S",
                ],
                |w| {
                    vec![
                        w.id.clone(),
                        w.status.to_string(),
                        w.is_stale.to_string(),
                        w.gpu_count.to_string(),
                        w.gpu_type_id.clone().unwrap_or_else(|| "-".into()),
                        w.data_center_id.clone().unwrap_or_else(|| "-".into()),
                        w.uptime_seconds
                            .map(|s| s.to_string())
                            .unwrap_or_else(|| "-".into()),
                    ]
                },
            )
        }
        ServerlessCommand::Releases { id } => {
            let list = v2.endpoint_releases(&id).await?;
            if out.format == OutputFormat::Json {
                return out.json(&list);
            }
            out.list(
                &list.releases,
                &["ID", "VERSION", "SOURCE", "WORKERS", "CREATED", "CHANGED"],
                |r| {
                    vec![
                        r.id.clone(),
                        r.version
                            .map(|v| v.to_string())
                            .unwrap_or_else(|| "-".into()),
                        r.source.to_string(),
                        r.worker_count.to_string(),
                        r.created_at.clone(),
                        r.diff
                            .iter()
                            .map(|d| d.field.as_str())
                            .collect::<Vec<_>>()
                            .join(","),
                    ]
                },
            )
        }
    }
}

const TEMPLATE_COLUMNS: &[&str] = &["ID", "NAME", "IMAGE", "SERVERLESS", "PUBLIC", "CATEGORY"];

fn template_row(t: &Template) -> Vec<String> {
    vec![
        t.id.clone(),
        t.name.clone(),
        t.container.image.clone(),
        t.serverless.to_string(),
        t.public.to_string(),
        t.category
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_else(|| "-".into()),
    ]
}

async fn templates(v2: &V2, out: Printer, command: TemplateCommand) -> anyhow::Result<()> {
    match command {
        TemplateCommand::List => {
            out.list(&v2.list_templates().await?, TEMPLATE_COLUMNS, template_row)
        }
        TemplateCommand::Get { id } => {
            out.one(&v2.get_template(&id).await?, TEMPLATE_COLUMNS, template_row)
        }
        TemplateCommand::Create {
            body,
            name,
            image,
            serverless,
        } => {
            let body = match body {
                Some(raw) => read_body(&raw)?,
                None => CreateTemplate {
                    name: name.unwrap_or_default(),
                    container: CreateContainerConfig {
                        image: image.unwrap_or_default(),
                        ..CreateContainerConfig::default()
                    },
                    serverless: serverless.then_some(true),
                    ..CreateTemplate::default()
                },
            };
            out.one(
                &v2.create_template(&body).await?,
                TEMPLATE_COLUMNS,
                template_row,
            )
        }
        TemplateCommand::Update { id, body } => {
            let body: UpdateTemplate = read_body(&body)?;
            out.one(
                &v2.update_template(&id, &body).await?,
                TEMPLATE_COLUMNS,
                template_row,
            )
        }
        TemplateCommand::Delete { id } => {
            v2.delete_template(&id).await?;
            out.done(&id, "deleted")
        }
    }
}

const VOLUME_COLUMNS: &[&str] = &["ID", "NAME", "SIZE_GB", "DATA_CENTER", "TYPE"];

fn volume_row(v: &NetworkVolume) -> Vec<String> {
    vec![
        v.id.clone(),
        v.name.clone(),
        v.size.to_string(),
        v.data_center.clone(),
        v.volume_type
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_else(|| "-".into()),
    ]
}

/// The volumes table (also the top-level `volumes` command on v2).
pub(super) fn print_volumes(out: Printer, vols: &[NetworkVolume]) -> anyhow::Result<()> {
    out.list(vols, VOLUME_COLUMNS, volume_row)
}

async fn volumes(v2: &V2, out: Printer, command: VolumeCommand) -> anyhow::Result<()> {
    match command {
        VolumeCommand::List => print_volumes(out, &v2.list_network_volumes().await?),
        VolumeCommand::Get { id } => out.one(
            &v2.get_network_volume(&id).await?,
            VOLUME_COLUMNS,
            volume_row,
        ),
        VolumeCommand::Create {
            name,
            size,
            data_center,
            volume_type,
        } => {
            let body = CreateNetworkVolume {
                name,
                size,
                data_center,
                volume_type: volume_type
                    .map(|t| t.parse::<VolumeType>().unwrap_or_else(|e| match e {})),
            };
            out.one(
                &v2.create_network_volume(&body).await?,
                VOLUME_COLUMNS,
                volume_row,
            )
        }
        VolumeCommand::Update { id, name, size } => {
            if name.is_none() && size.is_none() {
                bail!("give --name or --size");
            }
            let body = UpdateNetworkVolume { name, size };
            out.one(
                &v2.update_network_volume(&id, &body).await?,
                VOLUME_COLUMNS,
                volume_row,
            )
        }
        VolumeCommand::Delete { id } => {
            v2.delete_network_volume(&id).await?;
            out.done(&id, "deleted")
        }
    }
}

async fn registries(v2: &V2, out: Printer, command: RegistryCommand) -> anyhow::Result<()> {
    let columns = &["ID", "NAME"];
    let row = |r: &crate::platform::v2::Registry| vec![r.id.clone(), r.name.clone()];
    match command {
        RegistryCommand::List => out.list(&v2.list_registries().await?, columns, row),
        RegistryCommand::Get { id } => out.one(&v2.get_registry(&id).await?, columns, row),
        RegistryCommand::Create {
            name,
            username,
            password_file,
        } => {
            let password = std::fs::read_to_string(&password_file)
                .with_context(|| format!("reading --password-file {}", password_file.display()))?
                .trim_end_matches(['\n', '\r'])
                .to_owned();
            let body = CreateRegistry {
                name,
                username,
                password,
            };
            out.one(&v2.create_registry(&body).await?, columns, row)
        }
        RegistryCommand::Delete { id } => {
            v2.delete_registry(&id).await?;
            out.done(&id, "deleted")
        }
    }
}

fn gpu_query(f: GpuFilterArgs) -> GpuQuery {
    GpuQuery {
        availability: f.available,
        products: parse_all(&f.products),
        count: f.count,
        cloud: f
            .cloud
            .map(|c| c.parse::<Cloud>().unwrap_or_else(|e| match e {})),
        country_codes: f.countries.iter().map(|c| c.to_ascii_uppercase()).collect(),
        cuda_versions: f.cuda_versions,
        min_cuda_version: f.min_cuda,
    }
}

fn parse_all<T: std::str::FromStr<Err = std::convert::Infallible>>(raw: &[String]) -> Vec<T> {
    raw.iter()
        .flat_map(|r| r.split(','))
        .filter(|s| !s.trim().is_empty())
        .map(|s| s.parse().unwrap_or_else(|e| match e {}))
        .collect()
}

const GPU_COLUMNS: &[&str] = &[
    "ID",
    "NAME",
    "MEMORY_GB",
    "SECURE_PRICE",
    "COMMUNITY_PRICE",
    "POOL",
    "AVAILABILITY",
];

fn gpu_row(g: &GpuType) -> Vec<String> {
    vec![
        g.id.clone(),
        g.name.clone(),
        g.memory.to_string(),
        format!("{:.2}", g.price.secure),
        format!("{:.2}", g.price.community),
        g.pool.clone().unwrap_or_else(|| "-".into()),
        g.availability
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_else(|| "-".into()),
    ]
}

/// The GPU types table (also the top-level `gpu-types` command on v2).
pub(super) fn print_gpus(out: Printer, gpus: &[GpuType]) -> anyhow::Result<()> {
    out.list(gpus, GPU_COLUMNS, gpu_row)
}

async fn catalog(v2: &V2, out: Printer, command: CatalogCommand) -> anyhow::Result<()> {
    match command {
        CatalogCommand::Gpus(filters) => {
            print_gpus(out, &v2.list_gpu_types(&gpu_query(filters)).await?)
        }
        CatalogCommand::Gpu { id, filters } => out.one(
            &v2.get_gpu_type(&id, &gpu_query(filters)).await?,
            GPU_COLUMNS,
            gpu_row,
        ),
        CatalogCommand::Cpus {
            available,
            products,
            vcpus,
        } => {
            let q = CpuQuery {
                availability: available,
                products: parse_all::<Product>(&products),
                vcpu_count: vcpus,
            };
            out.list(
                &v2.list_cpu_types(&q).await?,
                &[
                    "ID",
                    "NAME",
                    "GROUP",
                    "VCPUS",
                    "RAM_GB_PER_VCPU",
                    "PRICE_PER_VCPU",
                    "AVAILABILITY",
                ],
                |c| {
                    vec![
                        c.id.clone(),
                        c.name.clone(),
                        c.group.clone(),
                        format!("{}..{}", c.vcpu.min, c.vcpu.max),
                        format!("{}", c.ram_gb_per_vcpu),
                        format!("{:.3}", c.price.secure_per_vcpu),
                        c.availability
                            .as_ref()
                            .map(ToString::to_string)
                            .unwrap_or_else(|| "-".into()),
                    ]
                },
            )
        }
        CatalogCommand::Datacenters {
            gpu_availability,
            cpu_availability,
            regions,
            volume_types,
            compliance,
            global_network,
        } => {
            let q = DataCenterQuery {
                gpu_availability,
                cpu_availability,
                regions: parse_all::<DataCenterRegion>(&regions),
                network_volume_types: parse_all::<VolumeType>(&volume_types),
                compliance: parse_all::<Compliance>(&compliance),
                global_network,
            };
            out.list(
                &v2.list_data_centers(&q).await?,
                &[
                    "ID",
                    "NAME",
                    "REGION",
                    "VOLUME_TYPES",
                    "GLOBAL_NETWORK",
                    "GPUS_AVAILABLE",
                ],
                |d| {
                    vec![
                        d.id.clone(),
                        d.name.clone(),
                        d.region.to_string(),
                        join(d.network_volume_types.iter().map(ToString::to_string)),
                        d.global_network.to_string(),
                        d.gpu_availability
                            .as_ref()
                            .map(|g| {
                                join(
                                    g.iter()
                                        .filter(|a| a.availability.as_str() != "NONE")
                                        .map(|a| a.id.clone()),
                                )
                            })
                            .unwrap_or_else(|| "-".into()),
                    ]
                },
            )
        }
        CatalogCommand::Templates { source } => {
            let source = source.map(|s| {
                s.parse::<PublicTemplateSource>()
                    .unwrap_or_else(|e| match e {})
            });
            out.list(
                &v2.list_public_templates(source).await?,
                TEMPLATE_COLUMNS,
                template_row,
            )
        }
    }
}

fn join(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(",")
}

fn window(a: BillingArgs) -> BillingWindow {
    BillingWindow {
        start_time: a.start,
        end_time: a.end,
        bucket_size: a.bucket.map(|b| {
            b.parse::<BillingBucketSize>()
                .unwrap_or_else(|e| match e {})
        }),
        last_n: a.last,
    }
}

async fn billing(v2: &V2, out: Printer, command: BillingCommand) -> anyhow::Result<()> {
    let money = |v: f64| format!("{v:.2}");
    match command {
        BillingCommand::All(w) => {
            let h = v2.billing(&window(w)).await?;
            if out.format == OutputFormat::Json {
                return out.json(&h);
            }
            out.list(
                &h.records,
                &["START", "END", "TOTAL", "PODS", "SERVERLESS", "STORAGE"],
                |r| {
                    let a = &r.amounts;
                    vec![
                        r.start_time.clone(),
                        r.end_time.clone(),
                        money(a.total_amount),
                        money(a.pod_gpu_amount + a.pod_cpu_amount + a.pod_disk_amount),
                        money(
                            a.serverless_gpu_amount
                                + a.serverless_cpu_amount
                                + a.serverless_disk_amount
                                + a.serverless_fee_amount,
                        ),
                        money(a.storage_standard_amount + a.storage_high_performance_amount),
                    ]
                },
            )
        }
        BillingCommand::Pods { window: w, id } => {
            let h = v2.pod_billing(&window(w), id.as_deref()).await?;
            if out.format == OutputFormat::Json {
                return out.json(&h);
            }
            out.list(
                &h.records,
                &["START", "END", "POD", "TOTAL", "GPU", "CPU", "DISK"],
                |r| {
                    let a = &r.amounts;
                    vec![
                        r.start_time.clone(),
                        r.end_time.clone(),
                        r.pod_id.clone(),
                        money(a.total_amount),
                        money(a.gpu_amount),
                        money(a.cpu_amount),
                        money(a.disk_amount),
                    ]
                },
            )
        }
        BillingCommand::Serverless { window: w, id } => {
            let h = v2.serverless_billing(&window(w), id.as_deref()).await?;
            if out.format == OutputFormat::Json {
                return out.json(&h);
            }
            out.list(
                &h.records,
                &[
                    "START", "END", "ENDPOINT", "TOTAL", "GPU", "CPU", "DISK", "FEE",
                ],
                |r| {
                    let a = &r.amounts;
                    vec![
                        r.start_time.clone(),
                        r.end_time.clone(),
                        r.serverless_id.clone(),
                        money(a.total_amount),
                        money(a.gpu_amount),
                        money(a.cpu_amount),
                        money(a.disk_amount),
                        money(a.fee_amount),
                    ]
                },
            )
        }
        BillingCommand::Volumes { window: w, id } => {
            let h = v2.network_volume_billing(&window(w), id.as_deref()).await?;
            if out.format == OutputFormat::Json {
                return out.json(&h);
            }
            out.list(
                &h.records,
                &[
                    "START",
                    "END",
                    "VOLUME",
                    "TOTAL",
                    "STANDARD",
                    "HIGH_PERFORMANCE",
                ],
                |r| {
                    let a = &r.amounts;
                    vec![
                        r.start_time.clone(),
                        r.end_time.clone(),
                        r.network_volume_id.clone(),
                        money(a.total_amount),
                        money(a.standard_amount),
                        money(a.high_performance_amount),
                    ]
                },
            )
        }
    }
}

/// A request body given inline or as `@FILE`, in the document's JSON shape.
fn read_body<T: DeserializeOwned>(raw: &str) -> anyhow::Result<T> {
    let text = match raw.strip_prefix('@') {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading --body file {path}"))?
        }
        None => raw.to_owned(),
    };
    serde_json::from_str(&text).context("--body does not fit the request's shape")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_flags_make_the_body() {
        let args = PodCreateArgs {
            body: None,
            name: Some("p".into()),
            image: Some("img".into()),
            gpu: Some("NVIDIA A40".into()),
            gpu_count: Some(2),
            cpu: None,
            vcpus: None,
            cloud: Some("community".into()),
            disk: Some(20),
            env: vec!["A=1".into(), "B=x=y".into()],
            ports: vec!["8888/http".into()],
            data_centers: vec![],
            network_volumes: vec!["vol_1:/data".into()],
            template: None,
        };
        let body = serde_json::to_value(pod_create_body(args).unwrap()).unwrap();
        assert_eq!(
            body,
            serde_json::json!({
                "name": "p", "image": "img", "disk": 20,
                "env": {"A": "1", "B": "x=y"}, "ports": ["8888/http"],
                "cloud": "COMMUNITY", "gpu": {"id": "NVIDIA A40", "count": 2},
                "mounts": {"network": [{"volumeId": "vol_1", "path": "/data"}]}
            })
        );
    }

    #[test]
    fn bad_pod_flags_are_named() {
        let base = || PodCreateArgs {
            body: None,
            name: Some("p".into()),
            image: None,
            gpu: None,
            cpu: None,
            vcpus: None,
            gpu_count: None,
            cloud: None,
            disk: None,
            env: vec![],
            ports: vec![],
            data_centers: vec![],
            network_volumes: vec![],
            template: None,
        };
        let e = pod_create_body(base()).unwrap_err();
        assert!(e.to_string().contains("--gpu"), "{e}");
        let mut a = base();
        a.gpu = Some("g".into());
        a.env = vec!["novalue".into()];
        assert!(
            pod_create_body(a)
                .unwrap_err()
                .to_string()
                .contains("--env")
        );
        let mut a = base();
        a.gpu = Some("g".into());
        a.network_volumes = vec!["nopath".into()];
        assert!(
            pod_create_body(a)
                .unwrap_err()
                .to_string()
                .contains("--network-volume")
        );
    }

    #[test]
    fn bodies_read_inline_or_from_files() {
        let b: UpdatePod = read_body(r#"{"registry": null}"#).unwrap();
        assert_eq!(b.container.registry, Some(None));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.json");
        std::fs::write(&path, r#"{"name": "t", "image": "i"}"#).unwrap();
        let t: CreateTemplate = read_body(&format!("@{}", path.display())).unwrap();
        assert_eq!(t.name, "t");
        assert!(read_body::<CreateTemplate>("{}").is_err());
    }
}
