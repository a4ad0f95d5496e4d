//! `platform v2 registries ...`: container registry credentials. The password is read from
//! a file, never from a flag (it would show in `ps` and shell history), and never printed.

use anyhow::Context;

use super::args::RegistryCommand;
use crate::cli::platform::output::Printer;
use gpucloud_platform::v2::{CreateRegistry, V2};

pub(super) async fn run(v2: &V2, out: Printer, command: RegistryCommand) -> anyhow::Result<()> {
    match command {
        RegistryCommand::List => out.rows(&v2.list_registries().await?),
        RegistryCommand::Get { id } => out.row(&v2.get_registry(&id).await?),
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
            out.row(&v2.create_registry(&body).await?)
        }
        RegistryCommand::Delete { id } => {
            v2.delete_registry(&id).await?;
            out.deleted(&id)
        }
    }
}
