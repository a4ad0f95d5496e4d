//! `kubectl gpucloud explain KIND/NAME`: why an object is where it is, in one page: its
//! conditions with their reasons, the guardrail or Budget that holds it, and the Events the
//! operator told about it (each placement candidate refused, and why, is one). Reading is
//! the only I/O; the page is built by a pure function.

use k8s_openapi::api::events::v1::Event;
use kube::Api;
use kube::api::{DynamicObject, ListParams};
use serde_json::Value;

use gpucloud_crd::Budget;

use super::target::Target;

/// Options of `explain`.
#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// The object, as KIND/NAME (`gpod/trainer`, `gep/infer`, `gnv/data`, ...).
    pub target: String,
    /// The namespace (default: the current context's).
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
}

/// A Budget that holds the object, or is stopping it.
#[derive(Debug, Clone, PartialEq)]
pub struct Hold {
    pub budget: String,
    pub stopping: bool,
    pub cost_per_hour: f64,
    pub max_cost_per_hour: f64,
}

/// One Event about the object, as the page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Told {
    pub time: String,
    pub type_: String,
    pub reason: String,
    pub note: String,
}

pub async fn run(args: ExplainArgs) -> anyhow::Result<()> {
    let target = Target::parse(&args.target)?;
    let kube = super::access::kube_client().await?;
    let namespace = super::access::namespace_or_context(args.namespace).await;
    let object = target.get(&kube, &namespace).await?;
    let holds = budget_holds(&kube, &namespace, &target).await?;
    let events = events_about(&kube, &namespace, &target).await?;
    print!("{}", render(&target, &object, &holds, &events));
    Ok(())
}

/// The Budgets of the namespace whose status names the object as held or being stopped.
async fn budget_holds(
    kube: &kube::Client,
    namespace: &str,
    target: &Target,
) -> anyhow::Result<Vec<Hold>> {
    let entry = format!("{}/{}", target.resource.kind, target.name);
    let budgets: Api<Budget> = Api::namespaced(kube.clone(), namespace);
    let mut holds = Vec::new();
    for budget in budgets.list(&ListParams::default()).await? {
        let Some(status) = &budget.status else {
            continue;
        };
        let held = status.held.contains(&entry);
        let stopping = status.stopping.contains(&entry);
        if held || stopping {
            holds.push(Hold {
                budget: budget.metadata.name.clone().unwrap_or_default(),
                stopping,
                cost_per_hour: status.cost_per_hour,
                max_cost_per_hour: budget.spec.max_cost_per_hour,
            });
        }
    }
    Ok(holds)
}

/// The `events.k8s.io/v1` Events about the object, oldest first.
async fn events_about(
    kube: &kube::Client,
    namespace: &str,
    target: &Target,
) -> anyhow::Result<Vec<Told>> {
    let events: Api<Event> = Api::namespaced(kube.clone(), namespace);
    let selector = format!(
        "regarding.kind={},regarding.name={}",
        target.resource.kind, target.name
    );
    let mut listed: Vec<Event> = events
        .list(&ListParams::default().fields(&selector))
        .await?
        .items;
    let when = |e: &Event| {
        e.series
            .as_ref()
            .map(|s| s.last_observed_time.0.to_string())
            .or_else(|| e.event_time.as_ref().map(|t| t.0.to_string()))
            .or_else(|| {
                e.deprecated_last_timestamp
                    .as_ref()
                    .map(|t| t.0.to_string())
            })
            .unwrap_or_default()
    };
    listed.sort_by_key(when);
    Ok(listed
        .iter()
        .map(|e| Told {
            time: when(e),
            type_: e.type_.clone().unwrap_or_default(),
            reason: e.reason.clone().unwrap_or_default(),
            note: e.note.clone().unwrap_or_default(),
        })
        .collect())
}

/// The page.
pub fn render(target: &Target, object: &DynamicObject, holds: &[Hold], events: &[Told]) -> String {
    let status = object.data.get("status").cloned().unwrap_or(Value::Null);
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let mut out = format!(
        "{} {}/{}\n",
        target.resource.kind,
        object.metadata.namespace.clone().unwrap_or_default(),
        target.name
    );
    let generation = object.metadata.generation;
    let observed = status["observedGeneration"].as_i64();
    if observed.is_none() || observed != generation {
        out.push_str(&format!(
            "The operator has not yet written status for this spec (generation {}).\n",
            generation.unwrap_or_default()
        ));
    }
    if let Some(phase) = status["phase"].as_str() {
        out.push_str(&format!("Phase: {phase}\n"));
    }
    out.push_str("\nConditions:\n");
    let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
    if conditions.is_empty() {
        out.push_str("  none yet\n");
    }
    for c in &conditions {
        out.push_str(&format!(
            "  {:<16} {:<6} {}: {}\n",
            text(&c["type"]),
            text(&c["status"]),
            text(&c["reason"]),
            text(&c["message"])
        ));
    }
    let hold = &status["guardrails"]["hold"];
    if hold.is_object() {
        out.push_str(&format!(
            "\nHeld stopped by the {} guardrail since {}: {}\n",
            text(&hold["guardrail"]),
            text(&hold["since"]),
            text(&hold["message"])
        ));
    }
    for h in holds {
        let what = if h.stopping {
            "being stopped by"
        } else {
            "held by"
        };
        out.push_str(&format!(
            "\n{what} Budget {} (${:.2} of ${:.2} per hour in use)\n",
            h.budget, h.cost_per_hour, h.max_cost_per_hour
        ));
    }
    out.push_str("\nEvents (oldest first; placement refusals are among them):\n");
    if events.is_empty() {
        out.push_str("  none\n");
    }
    for e in events {
        out.push_str(&format!(
            "  {}  {:<7} {}: {}\n",
            e.time, e.type_, e.reason, e.note
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(status: Value) -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "gpucloud.io/v1beta1", "kind": "Pod",
            "metadata": {"name": "trainer", "namespace": "team-a", "generation": 2},
            "spec": {}, "status": status,
        }))
        .unwrap()
    }

    #[test]
    fn conditions_holds_and_events_are_on_one_page() {
        let target = Target::parse("gpod/trainer").unwrap();
        let object = pod(json!({
            "observedGeneration": 2, "phase": "Pending",
            "conditions": [{"type": "Ready", "status": "False", "reason": "BudgetExceeded",
                            "message": "held: team-a would cost 1.20/h", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        }));
        let holds = [Hold {
            budget: "team-a".into(),
            stopping: false,
            cost_per_hour: 0.9,
            max_cost_per_hour: 1.0,
        }];
        let events = [Told {
            time: "2026-01-01T00:00:01Z".into(),
            type_: "Warning".into(),
            reason: "GpuTypeNoCapacity".into(),
            note: "RTX 4090 in EU-RO-1 refused: no capacity".into(),
        }];
        let page = render(&target, &object, &holds, &events);
        assert!(page.starts_with("Pod team-a/trainer\n"), "{page}");
        assert!(
            page.contains("BudgetExceeded: held: team-a would cost 1.20/h"),
            "{page}"
        );
        assert!(
            page.contains("held by Budget team-a ($0.90 of $1.00"),
            "{page}"
        );
        assert!(
            page.contains("GpuTypeNoCapacity: RTX 4090 in EU-RO-1 refused"),
            "{page}"
        );
        assert!(!page.contains("not yet written status"), "{page}");
    }

    #[test]
    fn a_guardrail_hold_and_a_stale_status_are_said() {
        let target = Target::parse("gpod/trainer").unwrap();
        let object = pod(json!({
            "observedGeneration": 1,
            "guardrails": {"hold": {"guardrail": "MaxRuntime", "since": "2026-01-01T01:00:00Z",
                                     "message": "ran 1h"}},
        }));
        let page = render(&target, &object, &[], &[]);
        assert!(
            page.contains("not yet written status for this spec (generation 2)"),
            "{page}"
        );
        assert!(
            page.contains("MaxRuntime guardrail since 2026-01-01T01:00:00Z: ran 1h"),
            "{page}"
        );
        assert!(page.contains("Conditions:\n  none yet"), "{page}");
    }
}
