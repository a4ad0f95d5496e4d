//! `gpucloud-operator crds`.

use std::io::Write;

/// Options of `crds`.
#[derive(Debug, clap::Args)]
pub struct CrdsArgs {}

/// Prints every CRD as YAML, ready for `kubectl apply -f -`.
pub fn run(_args: CrdsArgs) -> anyhow::Result<()> {
    let yaml = crate::kinds::crds_yaml()?;
    std::io::stdout().write_all(yaml.as_bytes())?;
    Ok(())
}
