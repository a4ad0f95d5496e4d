//! How a Pod, Endpoint or Cluster is held by the Budgets: a `Waiting` failure (no error
//! loop) that looks again after `recheck` at the latest, should the ledger's wake-up not
//! come first. Both holds, and the release of a create that did not happen, are the same
//! for every kind that the Budgets count.

use std::time::Duration;

use kube::ResourceExt;

use gpucloud_crd::budget::BUDGET_EXCEEDED;
use gpucloud_engine::failure::{Applied, Failure};
use gpucloud_policy::budget::ledger::Exceeded;
use gpucloud_policy::budget::members::BudgetMember;
use gpucloud_policy::budget::{BudgetLedger, LISTING_WAIT};

/// A `Waiting` failure that looks again after `recheck`.
pub fn waiting(reason: &str, message: impl Into<String>, recheck: Duration) -> Failure {
    let mut f = Failure::waiting(reason, message);
    f.retry_after = Some(recheck);
    f
}

/// Held: a Budget has no room; the message names it, with the figures.
pub fn exceeded(exceeded: &Exceeded, recheck: Duration) -> Failure {
    waiting(BUDGET_EXCEEDED, exceeded.message(), recheck)
}

/// Waits (at most [`LISTING_WAIT`]) until the Budget controller has listed the Budgets
/// and every member: before that, an admission could miss a Budget. `what` says what
/// waits ("the deploy").
pub async fn listed(budgets: &BudgetLedger, recheck: Duration, what: &str) -> Result<(), Failure> {
    if budgets.wait_synced(LISTING_WAIT).await {
        return Ok(());
    }
    Err(waiting(
        "BudgetsNotListed",
        format!(
            "the operator has not listed the Budgets and what they count yet; {what} waits for it"
        ),
        recheck,
    ))
}

/// `created`, as it is, having given `obj`'s reservation back at once if the create failed
/// before the platform made anything: there is no member for the Budgets to count.
pub fn release_if_unmade<K: BudgetMember, T>(
    budgets: Option<&BudgetLedger>,
    obj: &K,
    created: Result<T, Failure>,
) -> Result<T, Failure> {
    if let (Err(f), Some(budgets)) = (&created, budgets)
        && f.applied == Applied::No
    {
        budgets.release(&obj.namespace().unwrap_or_default(), &obj.member());
    }
    created
}
