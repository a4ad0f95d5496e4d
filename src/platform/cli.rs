//! `gpucloud-operator platform`.

/// Options of `platform`.
#[derive(Debug, clap::Args)]
pub struct PlatformArgs {}

pub async fn run(_args: PlatformArgs) -> anyhow::Result<()> {
    anyhow::bail!("`platform` is not there yet: it lands with the platform-client issue")
}
