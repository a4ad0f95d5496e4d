//! The operator's metrics as `run` serves them: the engine's families (with the platform
//! client's) and the Budgets' ledger, which registers its own. Tests read the same
//! registry to check that every metric a dashboard or alert names is served.

use std::sync::Arc;

use gpucloud_engine::metrics::Metrics;
use gpucloud_policy::budget::BudgetLedger;

/// Every metric family `run` serves on `/metrics`, registered, with the ledger that
/// feeds the Budget families.
pub fn operator_metrics() -> (Arc<Metrics>, Arc<BudgetLedger>) {
    let metrics = Arc::new(Metrics::new());
    let budgets = Arc::new(BudgetLedger::new(&metrics));
    (metrics, budgets)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_registry_holds_the_engine_platform_and_budget_families() {
        let (metrics, _budgets) = operator_metrics();
        let text = metrics.encode();
        for family in [
            "# TYPE gpucloud_managed_objects gauge",
            "# TYPE gpucloud_platform_calls counter",
            "# TYPE gpucloud_budget_held_pods gauge",
            "# TYPE gpucloud_leader gauge",
        ] {
            assert!(text.contains(family), "{family} in {text}");
        }
    }
}
