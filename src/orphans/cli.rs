//! `gpucloud-operator orphans`: lists the remote pods that carry the operator's marker but
//! have no Pod object in the cluster, with what they cost per hour, and with `--delete`
//! terminates them (after a confirmation, or `--yes`).
//!
//! The cluster comes from the kubeconfig (`KUBECONFIG`, else `~/.kube/config`, else the
//! in-cluster account); the platform from the same flags and variables as `platform`, the
//! key from `--api-key-file`, else `GPUCLOUD_API_KEY` (never from a flag).

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::{Context, bail};
use kube::api::ListParams;
use kube::{Api, ResourceExt};

use crate::crd::Pod;
use crate::platform::PlatformClient;
use crate::platform::config::{ApiKey, BaseUrls, PlatformApi, PlatformConfig};
use crate::platform::table::render;

use super::{Orphan, orphan_pods, released};

/// Options of `orphans`.
#[derive(Debug, clap::Args)]
pub struct OrphansArgs {
    /// Terminate the orphans found (asks first, unless --yes).
    #[arg(long)]
    pub delete: bool,
    /// With --delete: do not ask.
    #[arg(long, requires = "delete")]
    pub yes: bool,
    /// The operator's namespace, where it records what it released on purpose (the
    /// namespace of its leader-election Lease).
    #[arg(
        long,
        env = "GPUCLOUD_LEADER_ELECTION_NAMESPACE",
        default_value = "default"
    )]
    pub operator_namespace: String,
    /// REST v2 base, including `/v2` [env: GPUCLOUD_API_URL].
    #[arg(long)]
    pub api_url: Option<String>,
    /// REST management base, including `/v1` [env: GPUCLOUD_REST_URL].
    #[arg(long)]
    pub rest_url: Option<String>,
    /// GraphQL address [env: GPUCLOUD_GRAPHQL_URL].
    #[arg(long)]
    pub graphql_url: Option<String>,
    /// Which platform API to speak: v2 or seed [env: GPUCLOUD_PLATFORM_API; default v2].
    #[arg(long)]
    pub platform_api: Option<String>,
    /// File holding the API key (else GPUCLOUD_API_KEY).
    #[arg(long)]
    pub api_key_file: Option<PathBuf>,
}

fn platform_client(args: &OrphansArgs) -> anyhow::Result<PlatformClient> {
    let mut urls = BaseUrls::from_env()?;
    urls.override_with(
        args.rest_url.as_deref(),
        args.graphql_url.as_deref(),
        None,
        None,
    )?;
    urls.override_api(args.api_url.as_deref())?;
    let key = match &args.api_key_file {
        Some(path) => ApiKey::from_file(path)?,
        None => ApiKey::from_env()?,
    };
    let mut config = PlatformConfig::new(urls, key);
    config.api = match &args.platform_api {
        Some(v) => v.parse()?,
        None => PlatformApi::from_env()?,
    };
    Ok(PlatformClient::new(config)?)
}

/// Pure: the table of orphans, with the total cost per hour.
pub fn table(orphans: &[Orphan]) -> String {
    let rows: Vec<Vec<String>> = orphans
        .iter()
        .map(|o| {
            vec![
                o.kind.to_string(),
                o.id.clone(),
                o.name.clone(),
                o.desired_status.clone(),
                o.cost_per_hour
                    .map_or_else(|| "-".into(), |c| format!("{c:.3}")),
                o.owner_uid.clone(),
            ]
        })
        .collect();
    let total: f64 = orphans.iter().filter_map(|o| o.cost_per_hour).sum();
    format!(
        "{}{} orphan(s), {total:.3} per hour\n",
        render(
            &["KIND", "ID", "NAME", "STATUS", "COST/HR", "OWNER UID"],
            &rows
        ),
        orphans.len()
    )
}

pub async fn run(args: OrphansArgs) -> anyhow::Result<()> {
    let kube = kube::Client::try_default()
        .await
        .context("could not reach the cluster of the kubeconfig")?;
    let platform = platform_client(&args)?;
    let pods: Api<Pod> = Api::all(kube.clone());
    let cluster_uids: HashSet<String> = pods
        .list_metadata(&ListParams::default())
        .await
        .context("could not list gpucloud.io Pods")?
        .items
        .iter()
        .filter_map(|p| p.uid())
        .collect();
    let released = released::read(&kube, &args.operator_namespace, "Pod")
        .await
        .with_context(|| {
            format!(
                "could not read ConfigMap {}/{}",
                args.operator_namespace,
                released::CONFIG_MAP
            )
        })?;
    let remote = platform
        .pods()
        .list()
        .await
        .context("could not list the platform's pods")?;
    let orphans = orphan_pods(&remote, &cluster_uids, &released);
    print!("{}", table(&orphans));
    if !args.delete || orphans.is_empty() {
        return Ok(());
    }
    if !args.yes {
        print!("terminate these {} pod(s)? [y/N] ", orphans.len());
        std::io::stdout().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            println!("nothing deleted");
            return Ok(());
        }
    }
    let mut failed = 0;
    for o in &orphans {
        match platform.pods().terminate(&o.id).await {
            Ok(()) => println!("terminated pod {} ({})", o.id, o.name),
            Err(e) => {
                failed += 1;
                eprintln!("could not terminate pod {} ({}): {e}", o.id, o.name);
            }
        }
    }
    if failed > 0 {
        bail!("{failed} orphan(s) could not be terminated");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_each_orphan_and_the_total() {
        let o = |id: &str, cost| Orphan {
            kind: "Pod",
            id: id.into(),
            name: format!("ns-{id}-1234abcd"),
            owner_uid: "u".into(),
            desired_status: "RUNNING".into(),
            cost_per_hour: cost,
        };
        let text = table(&[o("a", Some(0.69)), o("b", None)]);
        assert!(
            text.contains("ns-a-1234abcd") && text.contains("0.690"),
            "{text}"
        );
        assert!(text.ends_with("2 orphan(s), 0.690 per hour\n"), "{text}");
    }
}
