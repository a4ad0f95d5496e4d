//! `kubectl gpucloud status`: every gpucloud object of a namespace (or all) in one table,
//! what each namespace costs per hour against its Budgets, and what is not Ready with the
//! condition's own words. The rendering is pure; listing is the only I/O.

use kube::Api;
use kube::api::ListParams;

use gpucloud_crd::Budget;

use crate::cli::table::render;
use crate::kinds::summary::Row;

/// Options of `status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The namespace (default: the current context's).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Every namespace.
    #[arg(short = 'A', long, conflicts_with = "namespace")]
    pub all_namespaces: bool,
}

/// One Budget, as the status page reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetLine {
    pub namespace: String,
    pub name: String,
    pub cost_per_hour: f64,
    pub max_cost_per_hour: f64,
    pub held: i32,
}

impl BudgetLine {
    fn of(budget: &Budget) -> Self {
        let status = budget.status.as_ref();
        Self {
            namespace: budget.metadata.namespace.clone().unwrap_or_default(),
            name: budget.metadata.name.clone().unwrap_or_default(),
            cost_per_hour: status.map_or(0.0, |s| s.cost_per_hour),
            max_cost_per_hour: budget.spec.max_cost_per_hour,
            held: status.map_or(0, |s| s.held_count),
        }
    }
}

pub async fn run(args: StatusArgs) -> anyhow::Result<()> {
    let kube = super::access::kube_client().await?;
    let namespace = match (args.all_namespaces, args.namespace) {
        (true, _) => None,
        (false, Some(ns)) => Some(ns),
        (false, None) => Some(super::access::context_namespace().await),
    };
    let mut rows = Vec::new();
    for kind in crate::kinds::KINDS {
        rows.extend((kind.rows)(kube.clone(), namespace.clone()).await?);
    }
    let budgets: Api<Budget> = match &namespace {
        Some(ns) => Api::namespaced(kube.clone(), ns),
        None => Api::all(kube.clone()),
    };
    let budgets: Vec<BudgetLine> = budgets
        .list(&ListParams::default())
        .await?
        .iter()
        .map(BudgetLine::of)
        .collect();
    print!("{}", render_status(&rows, &budgets, namespace.as_deref()));
    Ok(())
}

/// The whole page: the objects, the namespaces' cost against their Budgets, and what is
/// not Ready. `namespace` is `None` for every namespace (the table then names each).
pub fn render_status(rows: &[Row], budgets: &[BudgetLine], namespace: Option<&str>) -> String {
    let mut rows: Vec<&Row> = rows.iter().filter(|r| r.kind != "Budget").collect();
    rows.sort_by(|a, b| (&a.namespace, a.kind, &a.name).cmp(&(&b.namespace, b.kind, &b.name)));
    if rows.is_empty() && budgets.is_empty() {
        return match namespace {
            Some(ns) => format!("No gpucloud objects in namespace {ns}.\n"),
            None => "No gpucloud objects in any namespace.\n".into(),
        };
    }
    let money = |c: Option<f64>| c.map_or_else(|| "-".into(), |c| format!("${c:.2}"));
    let mut out = String::new();
    let mut headers = vec!["KIND", "NAME", "STATE", "GPU", "COST/HR", "READY"];
    if namespace.is_none() {
        headers.insert(0, "NAMESPACE");
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut line = vec![
                r.kind.to_string(),
                r.name.clone(),
                r.state.clone(),
                r.gpu.clone(),
                money(r.cost_per_hour),
                r.ready.clone(),
            ];
            if namespace.is_none() {
                line.insert(0, r.namespace.clone());
            }
            line
        })
        .collect();
    out.push_str(&render(&headers, &cells));
    out.push('\n');
    out.push_str(&namespace_costs(&rows, budgets));
    let waiting: Vec<&&Row> = rows.iter().filter(|r| !r.is_ready).collect();
    if !waiting.is_empty() {
        out.push_str("\nNot Ready:\n");
        for r in waiting {
            let why = if r.why.is_empty() {
                "no message yet"
            } else {
                &r.why
            };
            out.push_str(&format!(
                "  {} {}/{}: {}: {why}\n",
                r.kind, r.namespace, r.name, r.ready
            ));
        }
    }
    out
}

/// Per namespace: what its objects cost per hour, and each Budget's share of its cap.
fn namespace_costs(rows: &[&Row], budgets: &[BudgetLine]) -> String {
    let mut namespaces: Vec<&str> = rows
        .iter()
        .map(|r| r.namespace.as_str())
        .chain(budgets.iter().map(|b| b.namespace.as_str()))
        .collect();
    namespaces.sort();
    namespaces.dedup();
    let mut cells = Vec::new();
    for ns in namespaces {
        let total: f64 = rows
            .iter()
            .filter(|r| r.namespace == ns)
            .filter_map(|r| r.cost_per_hour)
            .fold(0.0, |sum, c| sum + c);
        let mine: Vec<&BudgetLine> = budgets.iter().filter(|b| b.namespace == ns).collect();
        if mine.is_empty() {
            cells.push(vec![
                ns.to_string(),
                format!("${total:.2}"),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
        }
        for b in mine {
            let used = match b.max_cost_per_hour {
                max if max > 0.0 => format!("{:.0}%", b.cost_per_hour / max * 100.0),
                _ => "-".into(),
            };
            cells.push(vec![
                ns.to_string(),
                format!("${total:.2}"),
                b.name.clone(),
                format!("${:.2} of ${:.2}", b.cost_per_hour, b.max_cost_per_hour),
                used,
                b.held.to_string(),
            ]);
        }
    }
    render(
        &[
            "NAMESPACE",
            "COST/HR",
            "BUDGET",
            "BUDGET COST/HR",
            "USED",
            "HELD",
        ],
        &cells,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(ns: &str, kind: &'static str, name: &str, cost: Option<f64>, ready: bool) -> Row {
        Row {
            namespace: ns.into(),
            kind,
            name: name.into(),
            state: "Running".into(),
            gpu: "1x RTX 4090".into(),
            cost_per_hour: cost,
            ready: if ready {
                "True".into()
            } else {
                "NoCapacity".into()
            },
            is_ready: ready,
            why: if ready {
                String::new()
            } else {
                "no RTX 4090 in EU-RO-1".into()
            },
        }
    }

    #[test]
    fn objects_costs_against_budgets_and_what_waits_with_why() {
        let rows = [
            row("team-a", "Pod", "trainer", Some(0.34), true),
            row("team-a", "Pod", "notebook", None, false),
            row("team-b", "NetworkVolume", "data", None, true),
        ];
        let budgets = [BudgetLine {
            namespace: "team-a".into(),
            name: "cap".into(),
            cost_per_hour: 0.34,
            max_cost_per_hour: 0.5,
            held: 1,
        }];
        let text = render_status(&rows, &budgets, None);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("NAMESPACE") && lines[0].contains("COST/HR"),
            "{text}"
        );
        assert!(
            lines[1].starts_with("team-a") && lines[1].contains("notebook"),
            "sorted: {text}"
        );
        assert!(
            text.contains("$0.34 of $0.50") && text.contains("68%"),
            "{text}"
        );
        assert!(
            text.contains("Pod team-a/notebook: NoCapacity: no RTX 4090 in EU-RO-1"),
            "{text}"
        );
        assert!(
            !text.contains("trainer: True"),
            "a Ready object is not listed as waiting"
        );
        assert!(
            text.contains("team-b     $0.00    -"),
            "a namespace without a Budget: {text}"
        );
    }

    #[test]
    fn one_namespace_has_no_namespace_column_and_nothing_says_so() {
        let rows = [row("team-a", "Pod", "trainer", Some(0.34), true)];
        let text = render_status(&rows, &[], Some("team-a"));
        assert!(text.starts_with("KIND"), "{text}");
        assert!(!text.contains("Not Ready"), "{text}");
        assert_eq!(
            render_status(&[], &[], Some("empty")),
            "No gpucloud objects in namespace empty.\n"
        );
    }
}
