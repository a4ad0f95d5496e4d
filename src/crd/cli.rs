//! `gpucloud-operator crds`.

/// Options of `crds`.
#[derive(Debug, clap::Args)]
pub struct CrdsArgs {}

pub fn run(_args: CrdsArgs) -> anyhow::Result<()> {
    anyhow::bail!("`crds` is not there yet: it lands with the operator-core issue")
}
