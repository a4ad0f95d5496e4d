//! `kubectl gpucloud`: the kubectl plugin. The operator's binary is the plugin when it runs
//! as `kubectl-gpucloud` (a symlink or a copy on the PATH, as kubectl finds plugins) or as
//! `gpucloud-operator kubectl ...`. It reads the current kube context like kubectl, and the
//! platform key from the environment or the operator's Secret in the cluster.
//!
//! One module per command; each keeps its page a pure function of what it read.

pub mod access;
pub mod cost;
pub mod explain;
pub mod logs;
pub mod ssh;
pub mod status;
pub mod target;

use access::Access;

/// The name kubectl looks for on the PATH to run `kubectl gpucloud`.
pub const PLUGIN_BINARY: &str = "kubectl-gpucloud";

/// `kubectl gpucloud ...`.
#[derive(Debug, clap::Parser)]
#[command(
    name = "kubectl-gpucloud",
    bin_name = "kubectl gpucloud",
    about = "gpucloud objects as the operator sees them: status, logs, ssh, explain, cost, orphans"
)]
pub struct PluginCli {
    #[command(flatten)]
    pub access: Access,
    #[command(subcommand)]
    pub command: PluginCommand,
}

#[derive(Debug, clap::Subcommand)]
pub enum PluginCommand {
    /// Every gpucloud object with its state, cost and Ready; each namespace's cost against
    /// its Budgets; what is not Ready, and why.
    Status(status::StatusArgs),
    /// A Pod's platform logs, or an Endpoint's workers' (`-f` follows until Ctrl-C).
    Logs(logs::LogsArgs),
    /// The SSH command of a Pod (`--exec` runs it).
    Ssh(ssh::SshArgs),
    /// Why an object is where it is: conditions, the guardrail or Budget holding it, and
    /// the operator's Events (the placement candidates refused, and why).
    Explain(explain::ExplainArgs),
    /// What the platform billed, per object and namespace, and what matches no object.
    Cost(cost::CostArgs),
    /// Remote objects the operator made whose object is gone; `--delete` removes them.
    Orphans(crate::cli::orphans::Sweep),
}

/// Whether the process was started as the plugin (`argv[0]` is `kubectl-gpucloud`).
pub fn invoked_as_plugin(argv0: &str) -> bool {
    std::path::Path::new(argv0)
        .file_stem()
        .is_some_and(|name| name == PLUGIN_BINARY)
}

/// Runs one plugin command to completion.
pub async fn run(cli: PluginCli) -> anyhow::Result<()> {
    let access = cli.access;
    match cli.command {
        PluginCommand::Status(args) => status::run(args).await,
        PluginCommand::Logs(args) => logs::run(&access, args).await,
        PluginCommand::Ssh(args) => ssh::run(&access, args).await,
        PluginCommand::Explain(args) => explain::run(args).await,
        PluginCommand::Cost(args) => cost::run(&access, args).await,
        PluginCommand::Orphans(sweep) => {
            let kube = access::kube_client().await?;
            let platform = access::platform_client(&access, &kube).await?;
            crate::cli::orphans::sweep(&kube, &platform, &sweep).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn the_plugin_is_known_by_the_name_kubectl_runs_it_under() {
        assert!(invoked_as_plugin("/usr/local/bin/kubectl-gpucloud"));
        assert!(invoked_as_plugin("kubectl-gpucloud.exe"));
        assert!(!invoked_as_plugin("/usr/bin/gpucloud-operator"));
    }

    #[test]
    fn kubectl_style_flags_parse() {
        let cli = PluginCli::try_parse_from(["kubectl-gpucloud", "status", "-A"]).unwrap();
        assert!(matches!(cli.command, PluginCommand::Status(s) if s.all_namespaces));
        let cli =
            PluginCli::try_parse_from(["kubectl-gpucloud", "logs", "gpod/t", "-f", "--system"])
                .unwrap();
        assert!(matches!(cli.command, PluginCommand::Logs(l) if l.follow && l.system));
        assert!(
            PluginCli::try_parse_from(["kubectl-gpucloud", "status", "-A", "-n", "x"]).is_err()
        );
        assert_eq!(
            cli.access.api_key_secret,
            "gpucloud-system/gpucloud-api-key"
        );
    }
}
