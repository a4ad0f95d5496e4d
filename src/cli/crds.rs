//! `gpucloud-operator crds`.

use std::io::Write;

/// Options of `crds`.
#[derive(Debug, clap::Args)]
pub struct CrdsArgs {
    /// Print the field reference (Markdown, `docs/reference.md`) instead of the YAML.
    #[arg(long)]
    pub reference: bool,
}

/// Prints every CRD as YAML, ready for `kubectl apply -f -`, or their field reference.
pub fn run(args: CrdsArgs) -> anyhow::Result<()> {
    let text = if args.reference {
        crate::kinds::reference_markdown()
    } else {
        crate::kinds::crds_yaml()?
    };
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(())
}
