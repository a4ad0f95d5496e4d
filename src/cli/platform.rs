//! `gpucloud-operator platform`: a human window onto the platform (or the emulator).
//!
//! Addresses come from flags, else from `GPUCLOUD_API_URL`, `GPUCLOUD_REST_URL`,
//! `GPUCLOUD_GRAPHQL_URL`, `GPUCLOUD_SERVERLESS_URL` and `GPUCLOUD_REGISTRY_URL`, else the
//! public platform. The key comes from `--api-key-file`, else `GPUCLOUD_API_KEY`; there is
//! deliberately no flag that takes the key itself (it would show in `ps` and shell history).
//!
//! `--platform-api` (else `GPUCLOUD_PLATFORM_API`, else `v2`) picks the API the listing
//! commands `gpu-types`, `pods`, `endpoints` and `volumes` use: REST v2, or the seed
//! surfaces (GraphQL and REST v1). `platform v2 ...` always speaks REST v2; `job` and
//! `delegations` have one API only.

mod output;
mod v2;

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use futures::StreamExt;

use gpucloud_platform::config::{ApiKey, BaseUrls, PlatformApi, PlatformConfig};
use gpucloud_platform::graphql::types::LowestPriceInput;
use gpucloud_platform::jobs::PollOptions;
use gpucloud_platform::types::JobRequest;
use gpucloud_platform::v2::{GpuQuery, PodListQuery};
use gpucloud_platform::{PlatformClient, validate};

pub use output::OutputFormat;
pub use v2::V2Command;

use output::Printer;

/// Options of `platform`.
#[derive(Debug, clap::Args)]
pub struct PlatformArgs {
    /// REST management base, including `/v1` [env: GPUCLOUD_REST_URL].
    #[arg(long, global = true)]
    pub rest_url: Option<String>,
    /// GraphQL address [env: GPUCLOUD_GRAPHQL_URL].
    #[arg(long, global = true)]
    pub graphql_url: Option<String>,
    /// Job API base, up to and including `/v2` [env: GPUCLOUD_SERVERLESS_URL].
    #[arg(long, global = true)]
    pub serverless_url: Option<String>,
    /// Registry delegation base [env: GPUCLOUD_REGISTRY_URL].
    #[arg(long, global = true)]
    pub registry_url: Option<String>,
    /// REST v2 base, including `/v2` [env: GPUCLOUD_API_URL].
    #[arg(long, global = true)]
    pub api_url: Option<String>,
    /// The API of the listing commands: v2 or seed [env: GPUCLOUD_PLATFORM_API; default v2].
    #[arg(long, global = true)]
    pub platform_api: Option<String>,
    /// File holding the API key (else GPUCLOUD_API_KEY).
    #[arg(long, global = true)]
    pub api_key_file: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Table, global = true)]
    pub output: OutputFormat,
    #[command(subcommand)]
    pub command: PlatformCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum PlatformCommand {
    /// GPU types with memory, on-demand price and stock.
    GpuTypes {
        /// Only this GPU type.
        #[arg(long)]
        id: Option<String>,
        /// GPUs per pod the price and stock are quoted for.
        #[arg(long, default_value_t = 1)]
        gpu_count: i32,
        /// Quote the secure cloud only.
        #[arg(long)]
        secure_cloud: bool,
    },
    /// Pods of the account.
    Pods,
    /// Serverless endpoints.
    Endpoints,
    /// Network volumes.
    Volumes,
    /// Container registry delegations.
    Delegations,
    /// Jobs of a serverless endpoint.
    Job {
        #[command(subcommand)]
        command: JobCommand,
    },
    /// Every REST v2 operation.
    V2 {
        #[command(subcommand)]
        command: V2Command,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum JobCommand {
    /// Submit a job (`/run`); print its id, or its result with --wait / its chunks with --stream.
    Run {
        endpoint_id: String,
        /// The handler's input, a JSON object (or @FILE to read it from a file).
        #[arg(long)]
        input: String,
        /// Wait for the job to end and print its result.
        #[arg(long)]
        wait: bool,
        /// Print streamed output chunks as they come, then the final state.
        #[arg(long)]
        stream: bool,
        /// Give up waiting after this many seconds.
        #[arg(long, default_value_t = 600)]
        timeout_secs: u64,
    },
    /// Show a job's state and output.
    Status { endpoint_id: String, job_id: String },
    /// Cancel a queued or running job.
    Cancel { endpoint_id: String, job_id: String },
    /// Queue and worker counts of an endpoint.
    Health { endpoint_id: String },
}

/// Builds the client the flags and environment describe.
pub fn client_from_args(args: &PlatformArgs) -> anyhow::Result<PlatformClient> {
    let mut urls = BaseUrls::from_env()?;
    urls.override_with(
        args.rest_url.as_deref(),
        args.graphql_url.as_deref(),
        args.serverless_url.as_deref(),
        args.registry_url.as_deref(),
    )?;
    urls.override_api(args.api_url.as_deref())?;
    let api = match &args.platform_api {
        Some(v) => v.parse()?,
        None => PlatformApi::from_env()?,
    };
    let key = match &args.api_key_file {
        Some(path) => ApiKey::from_file(path)?,
        None => ApiKey::from_env()?,
    };
    let mut config = PlatformConfig::new(urls, key);
    config.api = api;
    Ok(PlatformClient::new(config)?)
}

pub async fn run(args: PlatformArgs) -> anyhow::Result<()> {
    let client = client_from_args(&args)?;
    let out = Printer {
        format: args.output,
    };
    let seed = client.api() == PlatformApi::Seed;
    match args.command {
        PlatformCommand::GpuTypes {
            id,
            gpu_count,
            secure_cloud,
        } if !seed => {
            let q = GpuQuery {
                count: Some(u32::try_from(gpu_count.max(1)).unwrap_or(1)),
                cloud: secure_cloud.then_some(gpucloud_platform::v2::Cloud::Secure),
                ..GpuQuery::default()
            };
            // The count and cloud only scope availability, which must name a product.
            let q = GpuQuery {
                availability: true,
                products: vec![gpucloud_platform::v2::Product::Pod],
                ..q
            };
            let gpus = match &id {
                Some(id) => vec![client.v2().get_gpu_type(id, &q).await?],
                None => client.v2().list_gpu_types(&q).await?,
            };
            out.rows(&gpus)
        }
        PlatformCommand::Pods if !seed => {
            out.rows(&client.v2().list_pods(&PodListQuery::default()).await?)
        }
        PlatformCommand::Endpoints if !seed => out.rows(&client.v2().list_endpoints().await?),
        PlatformCommand::Volumes if !seed => out.rows(&client.v2().list_network_volumes().await?),
        PlatformCommand::V2 { command } => v2::run(&client, out, command).await,
        PlatformCommand::GpuTypes {
            id,
            gpu_count,
            secure_cloud,
        } => {
            let price = LowestPriceInput {
                gpu_count: Some(gpu_count),
                secure_cloud: secure_cloud.then_some(true),
            };
            let types = client.graphql().gpu_types(id.as_deref(), &price).await?;
            out.list(
                &types,
                &["ID", "NAME", "MEMORY_GB", "PRICE_PER_HR", "STOCK", "COUNTS"],
                |g| {
                    let lp = g.lowest_price.as_ref();
                    vec![
                        g.id.clone(),
                        g.display_name.clone(),
                        g.memory_in_gb.to_string(),
                        lp.and_then(|l| l.uninterruptable_price)
                            .map(|p| format!("{p:.2}"))
                            .unwrap_or_else(|| "-".into()),
                        lp.and_then(|l| l.stock_status.clone())
                            .unwrap_or_else(|| "-".into()),
                        lp.map(|l| join(&l.available_gpu_counts))
                            .unwrap_or_default(),
                    ]
                },
            )
        }
        PlatformCommand::Pods => {
            let pods = client.graphql().my_pods().await?;
            out.list(
                &pods,
                &[
                    "ID",
                    "NAME",
                    "STATUS",
                    "GPU",
                    "IMAGE",
                    "COST_PER_HR",
                    "UPTIME_S",
                ],
                |p| {
                    let gpu = p
                        .machine
                        .as_ref()
                        .and_then(|m| m.gpu_type_id.clone())
                        .unwrap_or_default();
                    vec![
                        p.id.clone(),
                        p.name.clone(),
                        p.desired_status.clone(),
                        match p.gpu_count {
                            Some(n) => format!("{n}x {gpu}"),
                            None => gpu,
                        },
                        p.image_name.clone(),
                        p.cost_per_hr
                            .map(|c| format!("{c:.2}"))
                            .unwrap_or_else(|| "-".into()),
                        p.runtime
                            .as_ref()
                            .map(|r| r.uptime_in_seconds.to_string())
                            .unwrap_or_else(|| "-".into()),
                    ]
                },
            )
        }
        PlatformCommand::Endpoints => {
            let eps = client.rest().list_endpoints().await?;
            out.list(&eps, &["ID", "NAME", "TEMPLATE", "GPUS", "WORKERS"], |e| {
                vec![
                    e.id.clone(),
                    e.name.clone(),
                    e.template_id.clone().unwrap_or_default(),
                    e.gpu_type_ids.join(","),
                    format!(
                        "{}..{}",
                        e.workers_min
                            .map(|v| v.to_string())
                            .unwrap_or_else(|| "?".into()),
                        e.workers_max
                            .map(|v| v.to_string())
                            .unwrap_or_else(|| "?".into())
                    ),
                ]
            })
        }
        PlatformCommand::Volumes => {
            let vols = client.rest().list_network_volumes().await?;
            out.list(&vols, &["ID", "NAME", "SIZE_GB", "DATA_CENTER"], |v| {
                vec![
                    v.id.clone(),
                    v.name.clone(),
                    v.size.to_string(),
                    v.data_center_id.clone(),
                ]
            })
        }
        PlatformCommand::Delegations => {
            let ds = client.registry().list_delegations().await?;
            out.list(
                &ds,
                &["ID", "NAME", "IMAGE", "REGION", "REGISTRY", "CREATED"],
                |d| {
                    vec![
                        d.id.clone(),
                        d.name.clone(),
                        format!("{}:{}", d.repository, d.tag),
                        d.cloud_region.clone(),
                        d.docker_registry_uri.clone(),
                        d.created_at.clone(),
                    ]
                },
            )
        }
        PlatformCommand::Job { command } => run_job(&client, out, command).await,
    }
}

async fn run_job(client: &PlatformClient, out: Printer, command: JobCommand) -> anyhow::Result<()> {
    let jobs = client.jobs();
    match command {
        JobCommand::Run {
            endpoint_id,
            input,
            wait,
            stream,
            timeout_secs,
        } => {
            let input = read_input(&input)?;
            let handle = jobs.run(&endpoint_id, &JobRequest::new(input)).await?;
            let poll = PollOptions {
                timeout: Some(Duration::from_secs(timeout_secs)),
                ..PollOptions::default()
            };
            if stream {
                if out.format == OutputFormat::Table {
                    eprintln!("job {} {}", handle.id, handle.status);
                }
                let mut chunks = Box::pin(jobs.stream(&endpoint_id, &handle.id, poll.clone()));
                let mut stdout = std::io::stdout();
                while let Some(chunk) = chunks.next().await {
                    let chunk = chunk?;
                    match (out.format, chunk.text_generation()) {
                        (OutputFormat::Table, Some(text)) => {
                            write!(stdout, "{}", text.text.concat())?
                        }
                        _ => writeln!(stdout, "{}", serde_json::to_string(&chunk.output)?)?,
                    }
                    stdout.flush()?;
                }
                if out.format == OutputFormat::Table {
                    writeln!(stdout)?;
                }
                let job = jobs.status(&endpoint_id, &handle.id, None).await?;
                out.job(&job)
            } else if wait {
                let job = jobs
                    .wait_for_completion(&endpoint_id, &handle.id, poll)
                    .await?;
                out.job(&job)
            } else {
                out.list(std::slice::from_ref(&handle), &["ID", "STATUS"], |h| {
                    vec![h.id.clone(), h.status.to_string()]
                })
            }
        }
        JobCommand::Status {
            endpoint_id,
            job_id,
        } => out.job(&jobs.status(&endpoint_id, &job_id, None).await?),
        JobCommand::Cancel {
            endpoint_id,
            job_id,
        } => {
            let h = jobs.cancel(&endpoint_id, &job_id).await?;
            out.list(std::slice::from_ref(&h), &["ID", "STATUS"], |h| {
                vec![h.id.clone(), h.status.to_string()]
            })
        }
        JobCommand::Health { endpoint_id } => {
            let h = jobs.health(&endpoint_id).await?;
            out.list(
                std::slice::from_ref(&h),
                &[
                    "IN_QUEUE",
                    "IN_PROGRESS",
                    "COMPLETED",
                    "FAILED",
                    "RETRIED",
                    "IDLE",
                    "RUNNING",
                ],
                |h| {
                    [
                        h.jobs.in_queue,
                        h.jobs.in_progress,
                        h.jobs.completed,
                        h.jobs.failed,
                        h.jobs.retried,
                        h.workers.idle,
                        h.workers.running,
                    ]
                    .iter()
                    .map(i64::to_string)
                    .collect()
                },
            )
        }
    }
}

/// `--input`: inline JSON, or `@path`.
fn read_input(raw: &str) -> anyhow::Result<serde_json::Value> {
    let text = match raw.strip_prefix('@') {
        Some(path) => {
            std::fs::read_to_string(path).with_context(|| format!("reading --input file {path}"))?
        }
        None => raw.to_owned(),
    };
    let value: serde_json::Value =
        serde_json::from_str(&text).context("--input is not valid JSON")?;
    validate::json_object("input", &value)?;
    Ok(value)
}

fn join(v: &[i64]) -> String {
    v.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Top {
        #[command(flatten)]
        args: PlatformArgs,
    }

    #[test]
    fn job_run_parses() {
        let t = Top::try_parse_from([
            "x",
            "job",
            "run",
            "ep1",
            "--input",
            r#"{"a":1}"#,
            "--wait",
            "-o",
            "json",
        ])
        .unwrap();
        assert_eq!(t.args.output, OutputFormat::Json);
        match t.args.command {
            PlatformCommand::Job {
                command:
                    JobCommand::Run {
                        endpoint_id,
                        wait,
                        stream,
                        ..
                    },
            } => {
                assert_eq!(endpoint_id, "ep1");
                assert!(wait && !stream);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn input_must_be_a_json_object() {
        assert!(read_input(r#"{"a": 1}"#).is_ok());
        let e = read_input("[1]").unwrap_err();
        assert!(format!("{e:#}").contains("input"), "{e:#}");
        assert!(read_input("{nope").is_err());
    }

    #[test]
    fn url_flags_win_and_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("k");
        std::fs::write(&key, "flag-key\n").unwrap();
        let t = Top::try_parse_from([
            "x",
            "pods",
            "--rest-url",
            "http://127.0.0.1:1/v1",
            "--api-key-file",
            key.to_str().unwrap(),
        ])
        .unwrap();
        let c = client_from_args(&t.args).unwrap();
        assert_eq!(c.urls().rest.as_str(), "http://127.0.0.1:1/v1");
        let t = Top::try_parse_from([
            "x",
            "pods",
            "--graphql-url",
            "nonsense",
            "--api-key-file",
            key.to_str().unwrap(),
        ])
        .unwrap();
        let e = client_from_args(&t.args).unwrap_err();
        assert!(e.to_string().contains("graphql_url"), "{e}");
    }

    #[test]
    fn platform_api_and_api_url_flags() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("k");
        std::fs::write(&key, "flag-key\n").unwrap();
        let key = key.to_str().unwrap();
        let t = Top::try_parse_from([
            "x",
            "pods",
            "--platform-api",
            "seed",
            "--api-url",
            "http://127.0.0.1:1/v2",
            "--api-key-file",
            key,
        ])
        .unwrap();
        let c = client_from_args(&t.args).unwrap();
        assert_eq!(c.api(), PlatformApi::Seed);
        assert_eq!(c.urls().api.as_str(), "http://127.0.0.1:1/v2");
        let t = Top::try_parse_from(["x", "pods", "--platform-api", "v3", "--api-key-file", key])
            .unwrap();
        let e = client_from_args(&t.args).unwrap_err();
        assert!(e.to_string().contains("platform_api"), "{e}");
        let t = Top::try_parse_from([
            "x",
            "pods",
            "--api-url",
            "ftp://x/v2",
            "--api-key-file",
            key,
        ])
        .unwrap();
        assert!(
            client_from_args(&t.args)
                .unwrap_err()
                .to_string()
                .contains("api_url")
        );
    }

    #[test]
    fn v2_commands_parse() {
        let t = Top::try_parse_from([
            "x",
            "v2",
            "catalog",
            "gpus",
            "--available",
            "--product",
            "POD",
            "--count",
            "2",
        ])
        .unwrap();
        assert!(matches!(
            t.args.command,
            PlatformCommand::V2 {
                command: V2Command::Catalog { .. }
            }
        ));
        // Filters without --available are refused before any call.
        assert!(Top::try_parse_from(["x", "v2", "catalog", "gpus", "--product", "POD"]).is_err());
        assert!(
            Top::try_parse_from([
                "x",
                "v2",
                "volumes",
                "create",
                "--name",
                "n",
                "--size",
                "10",
                "--data-center",
                "EU-RO-1"
            ])
            .is_ok()
        );
        assert!(
            Top::try_parse_from([
                "x", "v2", "pods", "create", "--name", "p", "--gpu", "g", "--cpu", "c", "--vcpus",
                "2"
            ])
            .is_err()
        );
        assert!(Top::try_parse_from(["x", "v2", "pods", "action", "pod_1", "stop"]).is_ok());
    }
}
