//! `kubectl gpucloud cost [--since 30d] [-n NS]`: what the platform billed (`/v2/billing/*`),
//! matched by platform id to the Pods, Endpoints and NetworkVolumes of the cluster, summed
//! per object and per namespace; what matches no object (orphans, or objects of another
//! cluster on the same account) is listed apart. Matching and rendering are pure.

use std::collections::{BTreeMap, HashMap};

use anyhow::{Context, bail};
use k8s_openapi::jiff::{Span, SpanRelativeTo, Timestamp};
use kube::Api;
use kube::api::ListParams;

use gpucloud_crd::{Endpoint, ManagedKind, NetworkVolume, Pod};
use gpucloud_platform::PlatformApi;
use gpucloud_platform::v2::{BillingBucketSize, BillingWindow};

use super::access::Access;
use crate::cli::table::render;

/// Options of `cost`.
#[derive(Debug, clap::Args)]
pub struct CostArgs {
    /// How far back: `30d`, `12h`, `2w` (the billing API's default is 30 days).
    #[arg(long, default_value = "30d")]
    pub since: String,
    /// Only this namespace's objects (spend that matches no object is then not shown).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
}

/// Spend on one platform object in the window.
#[derive(Debug, Clone, PartialEq)]
pub struct Billed {
    pub kind: &'static str,
    pub id: String,
    pub amount: f64,
}

/// The cluster object that made a platform object: namespace and name.
pub type Owners = HashMap<(&'static str, String), (String, String)>;

pub async fn run(access: &Access, args: CostArgs) -> anyhow::Result<()> {
    let start = window_start(&args.since, Timestamp::now())?;
    let kube = super::access::kube_client().await?;
    let platform = super::access::platform_client(access, &kube).await?;
    if platform.api() != PlatformApi::V2 {
        bail!("cost reads the REST v2 billing API, which the seed API does not have");
    }
    let since_days = start.duration_until(Timestamp::now()).as_hours() / 24;
    let window = BillingWindow {
        start_time: Some(start.to_string()),
        end_time: None,
        bucket_size: Some(if since_days >= 2 {
            BillingBucketSize::Day
        } else {
            BillingBucketSize::Hour
        }),
        last_n: None,
    };
    let v2 = platform.v2();
    let mut billed = Vec::new();
    for r in v2.pod_billing(&window, None).await?.records {
        billed.push(Billed {
            kind: "Pod",
            id: r.pod_id,
            amount: r.amounts.total_amount,
        });
    }
    for r in v2.serverless_billing(&window, None).await?.records {
        billed.push(Billed {
            kind: "Endpoint",
            id: r.serverless_id,
            amount: r.amounts.total_amount,
        });
    }
    for r in v2.network_volume_billing(&window, None).await?.records {
        billed.push(Billed {
            kind: "NetworkVolume",
            id: r.network_volume_id,
            amount: r.amounts.total_amount,
        });
    }
    let mut owners = Owners::new();
    owners_of::<Pod>(&kube, "Pod", &mut owners).await?;
    owners_of::<Endpoint>(&kube, "Endpoint", &mut owners).await?;
    owners_of::<NetworkVolume>(&kube, "NetworkVolume", &mut owners).await?;
    print!(
        "{}",
        render_cost(
            &billed,
            &owners,
            args.namespace.as_deref(),
            &start.to_string()
        )
    );
    Ok(())
}

/// `now` minus `since` (`30d`: days are 24 hours here, as in the billing buckets).
pub fn window_start(since: &str, now: Timestamp) -> anyhow::Result<Timestamp> {
    let span: Span = since
        .parse()
        .with_context(|| format!("--since {since:?} is not a duration such as 30d or 12h"))?;
    let duration = span
        .to_duration(SpanRelativeTo::days_are_24_hours())
        .with_context(|| format!("--since {since:?} is not a duration such as 30d or 12h"))?;
    if duration.is_negative() || duration.is_zero() {
        bail!("--since must be a positive duration, got {since:?}");
    }
    Ok(now - duration)
}

/// The cluster's objects of `K` by platform id, in every namespace.
async fn owners_of<K: ManagedKind>(
    kube: &kube::Client,
    kind: &'static str,
    owners: &mut Owners,
) -> anyhow::Result<()> {
    for object in Api::<K>::all(kube.clone())
        .list(&ListParams::default())
        .await?
    {
        let id = object
            .current_status()
            .and_then(|s| K::common(s).id.clone());
        if let Some(id) = id {
            let namespace = object.meta().namespace.clone().unwrap_or_default();
            let name = object.meta().name.clone().unwrap_or_default();
            owners.insert((kind, id), (namespace, name));
        }
    }
    Ok(())
}

/// The page: spend per object and per namespace, then what matches no object.
pub fn render_cost(
    billed: &[Billed],
    owners: &Owners,
    namespace: Option<&str>,
    start: &str,
) -> String {
    let mut per_object: BTreeMap<(String, &'static str, String), f64> = BTreeMap::new();
    let mut unmatched: BTreeMap<(&'static str, String), f64> = BTreeMap::new();
    for b in billed {
        match owners.get(&(b.kind, b.id.clone())) {
            Some((ns, name)) => {
                *per_object
                    .entry((ns.clone(), b.kind, name.clone()))
                    .or_default() += b.amount;
            }
            None => *unmatched.entry((b.kind, b.id.clone())).or_default() += b.amount,
        }
    }
    per_object.retain(|(ns, _, _), _| namespace.is_none_or(|wanted| wanted == ns));
    let mut per_namespace: BTreeMap<&str, f64> = BTreeMap::new();
    for ((ns, _, _), amount) in &per_object {
        *per_namespace.entry(ns.as_str()).or_default() += amount;
    }
    let usd = |x: &f64| format!("${x:.2}");
    let mut out = format!("Billed since {start}:\n\n");
    let rows: Vec<Vec<String>> = per_object
        .iter()
        .map(|((ns, kind, name), amount)| {
            vec![ns.clone(), kind.to_string(), name.clone(), usd(amount)]
        })
        .collect();
    out.push_str(&render(&["NAMESPACE", "KIND", "NAME", "BILLED"], &rows));
    out.push('\n');
    let rows: Vec<Vec<String>> = per_namespace
        .iter()
        .map(|(ns, amount)| vec![ns.to_string(), usd(amount)])
        .collect();
    out.push_str(&render(&["NAMESPACE", "BILLED"], &rows));
    if namespace.is_none() {
        let total = billed.iter().fold(0.0, |sum, b| sum + b.amount);
        if !unmatched.is_empty() {
            out.push_str(
                "\nBilled to no object of this cluster (orphans, or another cluster's):\n",
            );
            let rows: Vec<Vec<String>> = unmatched
                .iter()
                .map(|((kind, id), amount)| vec![kind.to_string(), id.clone(), usd(amount)])
                .collect();
            out.push_str(&render(&["KIND", "ID", "BILLED"], &rows));
        }
        out.push_str(&format!("\nTotal billed: {}\n", usd(&total)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn billed(kind: &'static str, id: &str, amount: f64) -> Billed {
        Billed {
            kind,
            id: id.into(),
            amount,
        }
    }

    #[test]
    fn spend_is_matched_to_objects_and_the_rest_is_listed_apart() {
        let mut owners = Owners::new();
        owners.insert(("Pod", "p-1".into()), ("team-a".into(), "trainer".into()));
        owners.insert(
            ("NetworkVolume", "v-1".into()),
            ("team-b".into(), "data".into()),
        );
        let spend = [
            billed("Pod", "p-1", 1.0),
            billed("Pod", "p-1", 0.5),
            billed("NetworkVolume", "v-1", 0.25),
            billed("Pod", "p-gone", 2.0),
        ];
        let page = render_cost(&spend, &owners, None, "2026-01-01T00:00:00Z");
        assert!(
            page.contains("team-a     Pod            trainer  $1.50"),
            "{page}"
        );
        assert!(page.contains("Pod   p-gone  $2.00"), "{page}");
        assert!(page.ends_with("Total billed: $3.75\n"), "{page}");
        let only_b = render_cost(&spend, &owners, Some("team-b"), "x");
        assert!(
            only_b.contains("data") && !only_b.contains("trainer"),
            "{only_b}"
        );
        assert!(
            !only_b.contains("p-gone"),
            "unmatched spend is account-wide: {only_b}"
        );
    }

    #[test]
    fn since_reads_days_weeks_and_hours() {
        let now: Timestamp = "2026-01-31T00:00:00Z".parse().unwrap();
        assert_eq!(
            window_start("30d", now).unwrap().to_string(),
            "2026-01-01T00:00:00Z"
        );
        assert_eq!(
            window_start("2w", now).unwrap().to_string(),
            "2026-01-17T00:00:00Z"
        );
        assert_eq!(
            window_start("12h", now).unwrap().to_string(),
            "2026-01-30T12:00:00Z"
        );
        assert!(
            window_start("soon", now)
                .unwrap_err()
                .to_string()
                .contains("--since")
        );
    }
}
