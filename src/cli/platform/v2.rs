//! `platform v2 ...`: every REST v2 operation the operator uses, for people and scripts.
//! Create and update bodies come from flags for the common cases, or whole from `--body`
//! (inline JSON or `@FILE`) in the document's shape.
//!
//! One module per resource family runs its subcommands; [`rows`] says how each wire type
//! shows as a table row, so that listing, showing and deleting read the same everywhere.

mod args;
mod billing;
mod body;
mod catalog;
mod pods;
mod registries;
mod rows;
mod serverless;
mod templates;
mod volumes;

pub use args::*;

use super::output::Printer;
use gpucloud_platform::PlatformClient;

pub(super) async fn run(
    client: &PlatformClient,
    out: Printer,
    command: V2Command,
) -> anyhow::Result<()> {
    let v2 = client.v2();
    match command {
        V2Command::Pods { command } => pods::run(&v2, out, command).await,
        V2Command::Serverless { command } => serverless::run(&v2, out, command).await,
        V2Command::Templates { command } => templates::run(&v2, out, command).await,
        V2Command::Volumes { command } => volumes::run(&v2, out, command).await,
        V2Command::Registries { command } => registries::run(&v2, out, command).await,
        V2Command::Catalog { command } => catalog::run(&v2, out, command).await,
        V2Command::Billing { command } => billing::run(&v2, out, command).await,
    }
}
