//! `gpucloud-operator orphans`: lists the remote objects (pods, endpoints, templates,
//! network volumes) that carry the operator's marker but have no object in the cluster,
//! with what they cost per hour, and with `--delete` removes them (after a confirmation,
//! or `--yes`): pods first, then endpoints, templates, and volumes last, since the
//! platform refuses to delete a template or a volume that something still uses.
//!
//! The cluster comes from the kubeconfig (`KUBECONFIG`, else `~/.kube/config`, else the
//! in-cluster account); the platform from the same flags and variables as `platform`, the
//! key from `--api-key-file`, else `GPUCLOUD_API_KEY` (never from a flag).

use std::collections::HashSet;
use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::{Context, bail};

use crate::app::lease::read_install_tag;
use crate::cli::table::render;
use gpucloud_platform::PlatformClient;
use gpucloud_platform::config::{ApiKey, BaseUrls, PlatformApi, PlatformConfig};

use gpucloud_engine::marker::InstallTag;
use gpucloud_engine::released;
use gpucloud_policy::orphans::{Orphan, Scope, orphans};

use crate::kinds::KINDS;
use crate::kinds::shared::sweep::OrphanSweep;

/// The kinds the sweep covers, in the order `--delete` removes them.
fn swept() -> Vec<OrphanSweep> {
    let mut all: Vec<OrphanSweep> = KINDS.iter().filter_map(|k| k.sweep).collect();
    all.sort_by_key(|s| s.delete_order);
    all
}

/// A kind's name as `--kind` takes it: `network-volume` for `NetworkVolume`.
fn flag_name(kind: &str) -> String {
    let mut out = String::new();
    for (i, c) in kind.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('-');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// The kind `--kind` names (`pod`, `network-volume`; the kind's own spelling works too).
fn swept_kind(value: &str) -> Result<&'static str, String> {
    let all = swept();
    all.iter()
        .find(|s| flag_name(s.kind) == value || s.kind == value)
        .map(|s| s.kind)
        .ok_or_else(|| {
            let names: Vec<String> = all.iter().map(|s| flag_name(s.kind)).collect();
            format!("the sweep covers {}", names.join(", "))
        })
}

/// What to look for and whether to delete it: `orphans`' options, and those of
/// `kubectl gpucloud orphans`.
#[derive(Debug, Clone, clap::Args)]
pub struct Sweep {
    /// Terminate the orphans found (asks first, unless --yes).
    #[arg(long)]
    pub delete: bool,
    /// With --delete: do not ask.
    #[arg(long, requires = "delete")]
    pub yes: bool,
    /// Only these kinds (repeat the flag, or separate with commas); every kind by default.
    #[arg(long = "kind", value_parser = swept_kind, value_delimiter = ',')]
    pub kinds: Vec<&'static str>,
    /// The operator's namespace, where it records what it released on purpose (the
    /// namespace of its leader-election Lease).
    #[arg(
        long,
        env = "GPUCLOUD_LEADER_ELECTION_NAMESPACE",
        default_value = "default"
    )]
    pub operator_namespace: String,
    /// The install whose orphans to list: its Lease (`NAMESPACE/NAME`, as `run --install`
    /// names it; default: `gpucloud-operator` in the operator's namespace). Remote objects
    /// tagged by another install (another cluster on the same key) are never listed.
    #[arg(long, env = "GPUCLOUD_INSTALL")]
    pub install: Option<String>,
}

/// Options of `orphans`.
#[derive(Debug, clap::Args)]
pub struct OrphansArgs {
    #[command(flatten)]
    pub sweep: Sweep,
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

/// Pure: the table of orphans, with the total cost per hour of those whose cost is known.
pub fn table(orphans: &[Orphan]) -> String {
    let rows: Vec<Vec<String>> = orphans
        .iter()
        .map(|o| {
            vec![
                o.kind.to_string(),
                o.id.clone(),
                o.name.clone(),
                o.status.clone(),
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

/// The orphans of the kind `sweep` reaches.
async fn find(
    kube: &kube::Client,
    platform: &PlatformClient,
    sweep: &OrphanSweep,
    record: &released::Record,
    mine: Option<&InstallTag>,
) -> anyhow::Result<Vec<Orphan>> {
    let cluster = (sweep.objects)(kube.clone())
        .await
        .with_context(|| format!("could not list gpucloud.io {}s", sweep.kind))?;
    let released: HashSet<String> = record.ids_of(sweep.kind);
    let remote = (sweep.candidates)(kube.clone(), platform.clone())
        .await
        .with_context(|| format!("could not list the platform's {}s", sweep.noun))?;
    let mine = mine.map(InstallTag::as_str);
    Ok(orphans(&remote, &cluster, &released, &Scope::Cluster, mine))
}

pub async fn run(args: OrphansArgs) -> anyhow::Result<()> {
    let kube = kube::Client::try_default()
        .await
        .context("could not reach the cluster of the kubeconfig")?;
    let platform = platform_client(&args)?;
    sweep(&kube, &platform, &args.sweep).await
}

/// The tag of the install whose orphans are listed, from its Lease's UID. Without it (no
/// Lease, or no right to read it) only untagged remote objects can be judged: said on
/// stderr, so that the table's shortness is not taken for a clean account.
async fn install_tag(kube: &kube::Client, args: &Sweep) -> Option<InstallTag> {
    let (namespace, name) = match args.install.as_deref().and_then(|i| i.split_once('/')) {
        Some((ns, name)) => (ns.to_string(), name.to_string()),
        None => (
            args.operator_namespace.clone(),
            "gpucloud-operator".to_string(),
        ),
    };
    let tag = read_install_tag(kube, &namespace, &name)
        .await
        .ok()
        .flatten();
    if tag.is_none() {
        eprintln!(
            "note: no Lease {namespace}/{name} could be read: only remote objects made before \
             install tags are judged (pass --install NAMESPACE/NAME for another install)"
        );
    }
    tag
}

/// Lists the orphans of `args.kinds` and, with `args.delete`, removes them.
pub async fn sweep(
    kube: &kube::Client,
    platform: &PlatformClient,
    args: &Sweep,
) -> anyhow::Result<()> {
    let record = released::read_record(kube, &args.operator_namespace)
        .await
        .with_context(|| {
            format!(
                "could not read the released record (ConfigMaps {}/{}-*)",
                args.operator_namespace,
                released::LEGACY
            )
        })?;
    let kinds: Vec<OrphanSweep> = swept()
        .into_iter()
        .filter(|s| args.kinds.is_empty() || args.kinds.contains(&s.kind))
        .collect();
    let mine = install_tag(kube, args).await;
    let mut found: Vec<Orphan> = Vec::new();
    for sweep in &kinds {
        found.extend(find(kube, platform, sweep, &record, mine.as_ref()).await?);
    }
    print!("{}", table(&found));
    if !args.delete || found.is_empty() {
        return Ok(());
    }
    if !args.yes {
        print!(
            "delete these {} object(s) from the platform? [y/N] ",
            found.len()
        );
        std::io::stdout().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim(), "y" | "Y" | "yes") {
            println!("nothing deleted");
            return Ok(());
        }
    }
    // Pods before endpoints before templates before volumes: what uses goes first (the
    // orphans are found kind by kind, in that order).
    let mut failed = 0;
    for o in &found {
        let Some(sweep) = kinds.iter().find(|s| s.kind == o.kind) else {
            continue;
        };
        match (sweep.delete)(kube.clone(), platform.clone(), o.id.clone()).await {
            Ok(()) => println!("{} {} {} ({})", sweep.removal, sweep.noun, o.id, o.name),
            Err(e) => {
                failed += 1;
                eprintln!("could not delete {} {} ({}): {e:#}", o.kind, o.id, o.name);
            }
        }
    }
    if failed > 0 {
        bail!("{failed} orphan(s) could not be deleted");
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
            status: "RUNNING".into(),
            cost_per_hour: cost,
        };
        let text = table(&[o("a", Some(0.69)), o("b", None)]);
        assert!(
            text.contains("ns-a-1234abcd") && text.contains("0.690"),
            "{text}"
        );
        assert!(text.ends_with("2 orphan(s), 0.690 per hour\n"), "{text}");
    }

    #[test]
    fn what_uses_is_deleted_before_what_it_uses() {
        let order: Vec<&str> = swept().iter().map(|s| s.kind).collect();
        assert_eq!(
            order,
            ["Pod", "Cluster", "Endpoint", "Template", "NetworkVolume"]
        );
    }

    #[test]
    fn a_kind_is_named_in_kebab_case_or_as_it_spells_itself() {
        assert_eq!(swept_kind("network-volume"), Ok("NetworkVolume"));
        assert_eq!(swept_kind("pod"), Ok("Pod"));
        assert_eq!(swept_kind("Cluster"), Ok("Cluster"));
        let refused = swept_kind("registry-credential").expect_err("not swept");
        assert!(refused.contains("network-volume"), "{refused}");
    }
}
