//! `gpucloud-operator emulator`.

/// Options of `emulator`.
#[derive(Debug, clap::Args)]
pub struct EmulatorArgs {}

pub async fn run(_args: EmulatorArgs) -> anyhow::Result<()> {
    anyhow::bail!("`emulator` is not there yet: it lands with the emulator issue")
}
