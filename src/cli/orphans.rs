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
use kube::Api;
use kube::api::ListParams;

use crate::app::lease::read_install_tag;
use crate::cli::table::render;
use gpucloud_crd::ManagedKind;
use gpucloud_crd::{Cluster, Endpoint, NetworkVolume, Pod, Template};
use gpucloud_platform::PlatformClient;
use gpucloud_platform::config::{ApiKey, BaseUrls, PlatformApi, PlatformConfig};
use gpucloud_platform::domain::ServerlessEndpoint;

use gpucloud_engine::marker::InstallTag;
use gpucloud_engine::released;
use gpucloud_policy::orphans::{
    Candidate, ClusterObjects, Orphan, Scope, cluster_candidate, endpoint_candidate, orphans,
    pod_candidate, template_candidate, volume_candidate,
};

/// A kind the sweep looks at, in the order `--delete` removes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum SweptKind {
    Pod,
    Cluster,
    Endpoint,
    Template,
    NetworkVolume,
}

impl SweptKind {
    const ALL: [SweptKind; 5] = [
        SweptKind::Pod,
        SweptKind::Cluster,
        SweptKind::Endpoint,
        SweptKind::Template,
        SweptKind::NetworkVolume,
    ];

    /// The kind's name, as `Candidate::kind` and the released record spell it.
    fn name(self) -> &'static str {
        match self {
            SweptKind::Pod => "Pod",
            SweptKind::Cluster => "Cluster",
            SweptKind::Endpoint => "Endpoint",
            SweptKind::Template => "Template",
            SweptKind::NetworkVolume => "NetworkVolume",
        }
    }

    /// What a deletion does, for what the command prints.
    fn verb(self) -> &'static str {
        match self {
            SweptKind::Pod => "terminated pod",
            SweptKind::Cluster => "deleted cluster",
            SweptKind::Endpoint => "deleted endpoint",
            SweptKind::Template => "deleted template",
            SweptKind::NetworkVolume => "deleted network volume",
        }
    }

    fn of(kind: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == kind)
    }
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
    #[arg(long = "kind", value_enum, value_delimiter = ',')]
    pub kinds: Vec<SweptKind>,
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

/// What the cluster holds of kind `K`, in every namespace. A kind whose CRD is not
/// installed (a 404: deleted, and every object of the kind with it) holds nothing, so that
/// after an uninstall that took the CRDs along the remote objects are judged by the
/// released record and their tags alone.
async fn cluster_objects<K: ManagedKind>(kube: &kube::Client) -> anyhow::Result<ClusterObjects> {
    let api: Api<K> = Api::all(kube.clone());
    match api.list(&ListParams::default()).await {
        Ok(list) => Ok(ClusterObjects::of(list.items.iter())),
        Err(kube::Error::Api(status)) if status.code == 404 => {
            Ok(ClusterObjects::of(std::iter::empty::<&K>()))
        }
        Err(err) => {
            Err(err).with_context(|| format!("could not list gpucloud.io {}s", K::kind(&())))
        }
    }
}

/// The platform's objects of `kind`, as candidates.
async fn candidates(platform: &PlatformClient, kind: SweptKind) -> anyhow::Result<Vec<Candidate>> {
    let listed = match kind {
        SweptKind::Pod => platform
            .pods()
            .list()
            .await
            .map(|l| l.iter().filter_map(pod_candidate).collect()),
        SweptKind::Cluster => platform
            .clusters()
            .list()
            .await
            .map(|l| l.iter().map(cluster_candidate).collect()),
        SweptKind::Endpoint => match platform.endpoints().list().await {
            Ok(listed) => Ok(endpoint_candidates(platform, &listed).await),
            Err(e) => Err(e),
        },
        SweptKind::Template => platform
            .templates()
            .list()
            .await
            .map(|l| l.iter().map(template_candidate).collect()),
        SweptKind::NetworkVolume => platform
            .volumes()
            .list()
            .await
            .map(|l| l.iter().map(volume_candidate).collect()),
    };
    listed.with_context(|| format!("could not list the platform's {}s", kind.name()))
}

/// Endpoints as candidates, each with what its minimum workers cost at the catalog's
/// price (the catalog is read only when one keeps workers; unknown when it cannot be).
async fn endpoint_candidates(
    platform: &PlatformClient,
    listed: &[ServerlessEndpoint],
) -> Vec<Candidate> {
    let keeps_workers = listed.iter().any(|e| e.workers_min.unwrap_or(0) > 0);
    let prices = match keeps_workers {
        true => platform.catalog().serverless_prices().await.ok(),
        false => None,
    };
    listed
        .iter()
        .map(|e| {
            let cost = match (e.workers_min.unwrap_or(0), &prices) {
                (min, _) if min <= 0 => Some(0.0),
                (min, Some(prices)) => prices
                    .min_workers_cost(min, e.gpu_count.unwrap_or(1), &e.gpus.types())
                    .ok(),
                (_, None) => None,
            };
            endpoint_candidate(e, cost)
        })
        .collect()
}

/// Removes one orphan from the platform.
async fn delete(platform: &PlatformClient, kind: SweptKind, id: &str) -> anyhow::Result<()> {
    match kind {
        SweptKind::Pod => platform.pods().terminate(id).await?,
        SweptKind::Cluster => platform.clusters().delete(id).await?,
        SweptKind::Endpoint => platform.endpoints().delete(id).await?,
        SweptKind::Template => platform.templates().delete(id).await?,
        SweptKind::NetworkVolume => platform.volumes().delete(id).await?,
    }
    Ok(())
}

/// The orphans of `kind`.
async fn find(
    kube: &kube::Client,
    platform: &PlatformClient,
    kind: SweptKind,
    record: &released::Record,
    mine: Option<&InstallTag>,
) -> anyhow::Result<Vec<Orphan>> {
    let cluster = match kind {
        SweptKind::Pod => cluster_objects::<Pod>(kube).await?,
        SweptKind::Cluster => cluster_objects::<Cluster>(kube).await?,
        SweptKind::Endpoint => cluster_objects::<Endpoint>(kube).await?,
        SweptKind::Template => cluster_objects::<Template>(kube).await?,
        SweptKind::NetworkVolume => cluster_objects::<NetworkVolume>(kube).await?,
    };
    let released: HashSet<String> = record.ids_of(kind.name());
    let remote = candidates(platform, kind).await?;
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
    let kinds: Vec<SweptKind> = if args.kinds.is_empty() {
        SweptKind::ALL.to_vec()
    } else {
        let mut kinds = args.kinds.clone();
        kinds.sort();
        kinds.dedup();
        kinds
    };
    let mine = install_tag(kube, args).await;
    let mut found: Vec<Orphan> = Vec::new();
    for kind in kinds {
        found.extend(find(kube, platform, kind, &record, mine.as_ref()).await?);
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
    // Pods before endpoints before templates before volumes: what uses goes first.
    found.sort_by_key(|o| SweptKind::of(o.kind));
    let mut failed = 0;
    for o in &found {
        let kind = SweptKind::of(o.kind).expect("a swept kind");
        match delete(platform, kind, &o.id).await {
            Ok(()) => println!("{} {} ({})", kind.verb(), o.id, o.name),
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
        let mut kinds = ["NetworkVolume", "Template", "Pod", "Endpoint"].map(SweptKind::of);
        kinds.sort();
        assert_eq!(
            kinds,
            [
                Some(SweptKind::Pod),
                Some(SweptKind::Endpoint),
                Some(SweptKind::Template),
                Some(SweptKind::NetworkVolume)
            ]
        );
        assert_eq!(SweptKind::of("RegistryCredential"), None);
    }
}
