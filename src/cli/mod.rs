//! Command-line interface: one subcommand per job of the binary.

mod crds;
mod emulator;
mod flags;
pub mod migrate_storage;
pub(crate) mod orphans;
mod platform;
mod process;
pub mod run;
pub(crate) mod table;
pub mod webhook;

use clap::{Parser, Subcommand};

/// Kubernetes operator for GPU pods, serverless endpoints and network volumes.
#[derive(Debug, Parser)]
#[command(name = "gpucloud-operator", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the operator against the current cluster.
    Run(Box<run::RunArgs>),
    /// Print the CustomResourceDefinitions as YAML.
    Crds(crds::CrdsArgs),
    /// Serve a local emulator of the whole platform API.
    Emulator(emulator::EmulatorArgs),
    /// Talk to the platform (or the emulator) from the command line.
    Platform(platform::PlatformArgs),
    /// Start a local control plane (or use KUBECONFIG), the emulator and the operator, apply
    /// examples/ and show them converge until Ctrl-C.
    Demo(crate::demo::DemoArgs),
    /// List the remote objects the operator made (pods, endpoints, templates, network
    /// volumes) whose object is gone, with what they cost per hour; with --delete, remove them.
    Orphans(orphans::OrphansArgs),
    /// Store every object of the operator's kinds in the CRDs' storage version, then trim
    /// their status.storedVersions to it (after an upgrade that moved the storage version).
    MigrateStorage(migrate_storage::MigrateStorageArgs),
    /// Serve the CRDs' conversion webhook alone (`run` serves it too, with the same flags).
    ConversionWebhook(webhook::ConversionWebhookArgs),
    /// The kubectl plugin's commands (`kubectl gpucloud ...` when installed as
    /// `kubectl-gpucloud`).
    Kubectl(crate::plugin::PluginCli),
}

/// Runs the chosen subcommand to completion.
pub async fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(args) => run::run(*args).await,
        Command::Crds(args) => crds::run(args),
        Command::Emulator(args) => emulator::run(args).await,
        Command::Platform(args) => platform::run(args).await,
        Command::Demo(args) => crate::demo::run(args).await,
        Command::Orphans(args) => orphans::run(args).await,
        Command::ConversionWebhook(args) => webhook::run(args).await,
        Command::MigrateStorage(args) => migrate_storage::run(args).await,
        Command::Kubectl(cli) => crate::plugin::run(cli).await,
    }
}
