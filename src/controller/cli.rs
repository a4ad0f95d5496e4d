//! `gpucloud-operator run`.

/// Options of `run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {}

pub async fn run(_args: RunArgs) -> anyhow::Result<()> {
    anyhow::bail!("`run` is not there yet: it lands with the operator-core issue")
}
