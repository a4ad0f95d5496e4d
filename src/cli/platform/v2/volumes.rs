//! `platform v2 volumes ...`: network volumes.

use anyhow::bail;

use super::args::VolumeCommand;
use crate::cli::platform::output::Printer;
use gpucloud_platform::v2::{CreateNetworkVolume, UpdateNetworkVolume, V2, VolumeType};

pub(super) async fn run(v2: &V2, out: Printer, command: VolumeCommand) -> anyhow::Result<()> {
    match command {
        VolumeCommand::List => out.rows(&v2.list_network_volumes().await?),
        VolumeCommand::Get { id } => out.row(&v2.get_network_volume(&id).await?),
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
            out.row(&v2.create_network_volume(&body).await?)
        }
        VolumeCommand::Update { id, name, size } => {
            if name.is_none() && size.is_none() {
                bail!("give --name or --size");
            }
            let body = UpdateNetworkVolume { name, size };
            out.row(&v2.update_network_volume(&id, &body).await?)
        }
        VolumeCommand::Delete { id } => {
            v2.delete_network_volume(&id).await?;
            out.deleted(&id)
        }
    }
}
