//! `platform v2 serverless ...`: endpoints, their workers and their releases.

use super::args::ServerlessCommand;
use super::body::read_body;
use crate::cli::platform::output::Printer;
use gpucloud_platform::v2::{CreateEndpoint, UpdateEndpoint, V2};

pub(super) async fn run(v2: &V2, out: Printer, command: ServerlessCommand) -> anyhow::Result<()> {
    match command {
        ServerlessCommand::List => out.rows(&v2.list_endpoints().await?),
        ServerlessCommand::Get { id } => out.row(&v2.get_endpoint(&id).await?),
        ServerlessCommand::Create { body } => {
            let body: CreateEndpoint = read_body(&body)?;
            out.row(&v2.create_endpoint(&body).await?)
        }
        ServerlessCommand::Update { id, body } => {
            let body: UpdateEndpoint = read_body(&body)?;
            out.row(&v2.update_endpoint(&id, &body).await?)
        }
        ServerlessCommand::Delete { id } => {
            v2.delete_endpoint(&id).await?;
            out.deleted(&id)
        }
        ServerlessCommand::Workers { id } => {
            let list = v2.endpoint_workers(&id).await?;
            out.wrapped(&list, &list.workers)
        }
        ServerlessCommand::Releases { id } => {
            let list = v2.endpoint_releases(&id).await?;
            out.wrapped(&list, &list.releases)
        }
    }
}
