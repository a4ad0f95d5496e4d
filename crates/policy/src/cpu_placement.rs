//! Pure placement of a CPU pod: which (CPU flavor, data center) offers to try, in order.
//!
//! The same order as GPU placement ([`super::placement`]): the spec's flavors in priority
//! order, and within a flavor the cheapest data center first, then the one with more
//! stock. An offer out of stock, outside the flavor's vCPU range, over the cap or refused
//! for capacity a moment ago (`exhausted`) is skipped without a call. CPU pods run in the
//! secure cloud only, so there is no cloud to choose.

use std::collections::HashSet;

use gpucloud_platform::domain::{CpuOffer, CpuPlacement};

use gpucloud_engine::failure::Failure;

/// One CPU placement to try, with the hourly price of the whole pod there.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuCandidate {
    pub placement: CpuPlacement,
    pub price_per_hour: f64,
}

/// What the spec asks of a CPU placement.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuRules<'a> {
    /// CPU flavor ids in priority order.
    pub flavors: &'a [String],
    pub vcpu_count: u32,
    /// Cap on the hourly price of the whole pod.
    pub max_price_per_hour: Option<f64>,
    /// Data centers the pod may use (empty: any).
    pub data_center_ids: &'a [String],
}

/// Pure: the CPU placements to try, in order. A flavor the catalog does not know is a
/// permanent `UnknownCpuFlavor`; a vCPU count no listed flavor allows is a permanent
/// `VcpuCountOutOfRange`; a cap below every price in stock is a retryable
/// `PriceAboveCap`; nothing in stock is a retryable `NoCapacity`.
pub fn choose_cpu_placements(
    rules: &CpuRules<'_>,
    offers: &[CpuOffer],
    exhausted: &HashSet<CpuPlacement>,
) -> Result<Vec<CpuCandidate>, Failure> {
    let unknown: Vec<&str> = rules
        .flavors
        .iter()
        .filter(|f| !offers.iter().any(|o| &o.flavor_id == *f))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(Failure::permanent(
            "UnknownCpuFlavor",
            format!(
                "spec.cpu.flavors names CPU flavors the platform does not know: {}",
                unknown.join(", ")
            ),
        ));
    }
    let fits = |o: &CpuOffer| (o.vcpu_min..=o.vcpu_max).contains(&rules.vcpu_count);
    if !offers
        .iter()
        .any(|o| rules.flavors.contains(&o.flavor_id) && fits(o))
    {
        return Err(Failure::permanent(
            "VcpuCountOutOfRange",
            format!(
                "spec.cpu.vcpuCount {} is outside the vCPU range of every flavor of spec.cpu.flavors ({})",
                rules.vcpu_count,
                rules.flavors.join(", ")
            ),
        ));
    }
    let mut chosen = Vec::new();
    let mut over_cap: Vec<String> = Vec::new();
    for flavor in rules.flavors {
        let mut of_flavor: Vec<CpuCandidate> = Vec::new();
        for o in offers.iter().filter(|o| &o.flavor_id == flavor) {
            let usable = o.in_stock
                && fits(o)
                && o.data_center_id.as_ref().is_some_and(|dc| {
                    rules.data_center_ids.is_empty() || rules.data_center_ids.contains(dc)
                });
            let Some(price) = o.price_per_hour.filter(|_| usable) else {
                continue;
            };
            let placement = CpuPlacement {
                flavor_id: o.flavor_id.clone(),
                data_center_id: o.data_center_id.clone(),
                vcpu_count: rules.vcpu_count,
            };
            if exhausted.contains(&placement) {
                continue;
            }
            if let Some(cap) = rules.max_price_per_hour
                && price > cap + 1e-9
            {
                let word = format!("{flavor} at ${price:.3}/h");
                if !over_cap.contains(&word) {
                    over_cap.push(word);
                }
                continue;
            }
            of_flavor.push(CpuCandidate {
                placement,
                price_per_hour: price,
            });
        }
        // Cheapest first; the sort is stable, so the catalog's order (more stock first)
        // breaks ties.
        of_flavor.sort_by(|a, b| a.price_per_hour.total_cmp(&b.price_per_hour));
        chosen.extend(of_flavor);
    }
    if !chosen.is_empty() {
        return Ok(chosen);
    }
    if let (Some(cap), false) = (rules.max_price_per_hour, over_cap.is_empty()) {
        return Err(Failure::retryable(
            "PriceAboveCap",
            format!(
                "every CPU flavor in stock costs more than spec.cpu.maxPricePerHour (${cap:.3}/h): {}; will try again",
                over_cap.join(", ")
            ),
        ));
    }
    Err(no_cpu_capacity(rules.flavors, rules.vcpu_count))
}

/// The failure when no CPU placement is left.
pub fn no_cpu_capacity(flavors: &[String], vcpu_count: u32) -> Failure {
    Failure::retryable(
        "NoCapacity",
        format!(
            "no stock for {vcpu_count} vCPUs of any of {}; will try again",
            flavors.join(", ")
        ),
    )
}

/// How a CPU placement reads in Events: `cpu3c × 4 vCPUs in EU-RO-1`.
pub fn describe_cpu(p: &CpuPlacement) -> String {
    let mut s = format!("{} × {} vCPUs", p.flavor_id, p.vcpu_count);
    if let Some(dc) = &p.data_center_id {
        s.push_str(&format!(" in {dc}"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(flavor: &str, dc: Option<&str>, price: f64, stock: bool) -> CpuOffer {
        CpuOffer {
            flavor_id: flavor.into(),
            data_center_id: dc.map(str::to_string),
            price_per_hour: Some(price),
            in_stock: stock,
            vcpu_min: 2,
            vcpu_max: 32,
        }
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn rules<'a>(flavors: &'a [String], cap: Option<f64>) -> CpuRules<'a> {
        CpuRules {
            flavors,
            vcpu_count: 4,
            max_price_per_hour: cap,
            data_center_ids: &[],
        }
    }

    fn described(c: &[CpuCandidate]) -> Vec<String> {
        c.iter().map(|c| describe_cpu(&c.placement)).collect()
    }

    /// cpu5g out of stock everywhere; cpu3c in two data centers (cheaper in EU-RO-1, as
    /// the catalog lists them: more stock first).
    fn offers() -> Vec<CpuOffer> {
        vec![
            offer("cpu5g", None, 0.20, false),
            offer("cpu3c", Some("US-TX-3"), 0.16, true),
            offer("cpu3c", Some("EU-RO-1"), 0.12, true),
            offer("cpu3c", Some("EU-SE-1"), 0.10, false),
        ]
    }

    #[test]
    fn flavors_go_in_priority_order_cheapest_data_center_first_and_stockless_ones_are_skipped() {
        let f = names(&["cpu5g", "cpu3c"]);
        let got = choose_cpu_placements(&rules(&f, None), &offers(), &HashSet::new()).unwrap();
        assert_eq!(
            described(&got),
            ["cpu3c × 4 vCPUs in EU-RO-1", "cpu3c × 4 vCPUs in US-TX-3"]
        );
        assert_eq!(got[0].price_per_hour, 0.12);
        let exhausted: HashSet<CpuPlacement> = [got[0].placement.clone()].into();
        let got = choose_cpu_placements(&rules(&f, None), &offers(), &exhausted).unwrap();
        assert_eq!(described(&got), ["cpu3c × 4 vCPUs in US-TX-3"]);
        let all: HashSet<CpuPlacement> = exhausted
            .into_iter()
            .chain(got.into_iter().map(|c| c.placement))
            .collect();
        let err = choose_cpu_placements(&rules(&f, None), &offers(), &all).unwrap_err();
        assert_eq!(err.reason, "NoCapacity");
        assert!(!err.is_permanent());
    }

    #[test]
    fn the_cap_is_on_the_whole_pod_and_a_cap_below_every_price_says_so() {
        let f = names(&["cpu3c"]);
        let got =
            choose_cpu_placements(&rules(&f, Some(0.13)), &offers(), &HashSet::new()).unwrap();
        assert_eq!(described(&got), ["cpu3c × 4 vCPUs in EU-RO-1"]);
        let err =
            choose_cpu_placements(&rules(&f, Some(0.05)), &offers(), &HashSet::new()).unwrap_err();
        assert_eq!(err.reason, "PriceAboveCap");
        assert!(err.message.contains("cpu3c at $0.120/h"), "{}", err.message);
    }

    #[test]
    fn an_unknown_flavor_and_an_impossible_size_are_permanent_and_named() {
        let f = names(&["cpu3c", "cpu9x"]);
        let err = choose_cpu_placements(&rules(&f, None), &offers(), &HashSet::new()).unwrap_err();
        assert_eq!(err.reason, "UnknownCpuFlavor");
        assert!(err.is_permanent());
        assert!(err.message.contains("cpu9x"), "{}", err.message);
        let f = names(&["cpu3c"]);
        let big = CpuRules {
            vcpu_count: 64,
            ..rules(&f, None)
        };
        let err = choose_cpu_placements(&big, &offers(), &HashSet::new()).unwrap_err();
        assert_eq!(err.reason, "VcpuCountOutOfRange");
        assert!(err.is_permanent());
    }

    #[test]
    fn the_spec_data_centers_filter_offers() {
        let f = names(&["cpu3c"]);
        let dcs = names(&["US-TX-3"]);
        let r = CpuRules {
            data_center_ids: &dcs,
            ..rules(&f, None)
        };
        let got = choose_cpu_placements(&r, &offers(), &HashSet::new()).unwrap();
        assert_eq!(described(&got), ["cpu3c × 4 vCPUs in US-TX-3"]);
    }
}
