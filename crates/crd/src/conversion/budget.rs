//! Budget: the same fields in both versions.

use super::shared::carry;
use crate::budget as alpha;
use crate::v1beta1::budget as beta;

/// Moves a Budget spec to the other version, field by field.
macro_rules! spec {
    ($value:expr => $from:path, $to:path) => {
        carry!($value => $from, $to; bind: ; set: ;
            same: max_cost_per_hour, selector, action, max_spend_per_month)
    };
}

/// A `v1alpha1` Budget in `v1beta1`.
pub fn to_v1beta1(budget: alpha::Budget) -> beta::Budget {
    beta::Budget {
        metadata: budget.metadata,
        spec: spec!(budget.spec => alpha::BudgetSpec, beta::BudgetSpec),
        status: budget.status,
    }
}

/// A `v1beta1` Budget in `v1alpha1`.
pub fn to_v1alpha1(budget: beta::Budget) -> alpha::Budget {
    alpha::Budget {
        metadata: budget.metadata,
        spec: spec!(budget.spec => beta::BudgetSpec, alpha::BudgetSpec),
        status: budget.status,
    }
}
