//! The command-line shape of `platform v2 ...`: one subcommand per resource family, and
//! the flags that build the common request bodies.

use std::path::PathBuf;

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
