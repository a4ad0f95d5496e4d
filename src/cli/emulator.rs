//! `gpucloud-operator emulator`.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;

use gpucloud_emulator::{ApiKey, EmulatorConfig, Fixtures};

/// Options of `emulator`.
#[derive(Debug, clap::Args)]
pub struct EmulatorArgs {
    /// Address to listen on; port 0 picks a free port (the URLs printed show which).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// An accepted API key: `KEY` (full access) or `KEY:read` (read only). Repeatable.
    #[arg(
        long = "api-key",
        required = true,
        env = "GPUCLOUD_EMULATOR_API_KEY",
        value_delimiter = ','
    )]
    pub api_keys: Vec<ApiKey>,
    /// Run the emulator's clock N times faster than real time.
    #[arg(long, default_value_t = 1.0)]
    pub time_scale: f64,
    /// YAML or JSON file with the catalog and initial state (built-in defaults otherwise).
    #[arg(long)]
    pub fixtures: Option<PathBuf>,
    /// The dynamic rate-limit rule's requests per running worker.
    #[arg(long, default_value_t = 10)]
    pub requests_per_worker: u32,
    /// Token that lets non-loopback callers use `/_emulator/` (header x-emulator-admin-token).
    #[arg(long, env = "GPUCLOUD_EMULATOR_ADMIN_TOKEN")]
    pub admin_token: Option<String>,
    /// Serve HTTPS with the certificate in this directory (tls.crt, and its key tls.key, in
    /// PEM), rather than plain HTTP: to try a client's certificate checks.
    #[arg(long)]
    pub tls_cert_dir: Option<PathBuf>,
    /// Emulated milliseconds a pod takes to boot.
    #[arg(long, default_value_t = 5_000)]
    pub pod_boot_ms: u64,
    /// Registry delegation calls allowed per key per minute.
    #[arg(long, default_value_t = 60)]
    pub registry_requests_per_minute: u32,
    /// A key (also given with --api-key) that gets 403 on registry delegations. Repeatable.
    #[arg(long = "registry-forbidden-key")]
    pub registry_forbidden_keys: Vec<String>,
    /// REST v2 requests allowed per key and route group per minute.
    #[arg(long, default_value_t = 600)]
    pub v2_requests_per_minute: u64,
    /// REST v2 requests allowed per key and route group per hour.
    #[arg(long, default_value_t = 20_000)]
    pub v2_requests_per_hour: u64,
    /// REST v2 requests allowed per key and route group per day.
    #[arg(long, default_value_t = 200_000)]
    pub v2_requests_per_day: u64,
}

pub async fn run(args: EmulatorArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.time_scale.is_finite() && args.time_scale > 0.0,
        "--time-scale must be a positive number"
    );
    let fixtures = match &args.fixtures {
        Some(path) => Some(Fixtures::load(path).context("loading --fixtures")?),
        None => None,
    };
    let config = EmulatorConfig {
        api_keys: args.api_keys,
        time_scale: args.time_scale,
        fixtures,
        requests_per_worker: args.requests_per_worker,
        admin_token: args.admin_token,
        pod_boot_ms: args.pod_boot_ms,
        registry_requests_per_minute: args.registry_requests_per_minute,
        registry_forbidden_keys: args.registry_forbidden_keys,
        v2_quota: gpucloud_emulator::v2::limits::Quota {
            minute: args.v2_requests_per_minute,
            hour: args.v2_requests_per_hour,
            day: args.v2_requests_per_day,
        },
    };
    let emulator = match &args.tls_cert_dir {
        None => gpucloud_emulator::start(config, args.listen).await,
        Some(dir) => {
            let tls = crate::app::server::tls_config(Some(dir))?;
            let tcp = tokio::net::TcpListener::bind(args.listen).await?;
            let listener = crate::app::server::TlsListener::new(tcp, tls)?;
            gpucloud_emulator::start_on(config, listener, "https").await
        }
    }
    .with_context(|| format!("listening on {}", args.listen))?;
    // One line a script can parse, then one per surface.
    println!("emulator listening on {}", emulator.base_url());
    println!("  REST:       {}", emulator.rest_url());
    println!("  GraphQL:    {}", emulator.graphql_url());
    println!(
        "  job API:    {}/{{endpoint_id}}/run",
        emulator.serverless_url()
    );
    println!(
        "  registry:   {}/v2/registries/delegations",
        emulator.registry_url()
    );
    println!("  admin:      {}/_emulator/state", emulator.base_url());
    use std::io::Write;
    std::io::stdout().flush().ok();
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    emulator.shutdown().await;
    Ok(())
}
