//! Pure placement of a pod: which (GPU type, data center, cloud) offers to try, in order.
//!
//! REST v2 places a pod on exactly one GPU type in the data centers and cloud it is told,
//! and never falls back; the seed API takes one type and any data center. Either way the
//! operator decides the order: the spec's types in priority order, and within a type the
//! cheapest offer first, then the one with more stock. An offer the platform refused for
//! capacity is skipped for a cool-down (`exhausted`), so the next one is tried in the same
//! pass and the refused one is not hammered on the next.

use std::collections::HashSet;

use gpucloud_platform::domain::{GpuOffer, Placement};

use gpucloud_engine::failure::Failure;

/// One placement to try, with the hourly price of the whole pod there.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub placement: Placement,
    pub price_per_hour: f64,
}

/// What the spec asks of a placement.
#[derive(Clone, Debug, PartialEq)]
pub struct PlacementRules<'a> {
    /// GPU type ids in priority order.
    pub types: &'a [String],
    pub count: i32,
    /// Cap on the price of one GPU per hour.
    pub max_price_per_gpu: Option<f64>,
    /// Data centers the pod may use (empty: any).
    pub data_center_ids: &'a [String],
    /// CUDA versions the pod accepts (empty: any).
    pub allowed_cuda_versions: &'a [String],
}

/// Pure: the placements to try, in order. A type the catalog does not know is a permanent
/// `UnknownGpuType`; a cap below every price in stock is a retryable `PriceAboveCap`;
/// nothing in stock is a retryable `NoCapacity`.
pub fn choose_placements(
    rules: &PlacementRules<'_>,
    offers: &[GpuOffer],
    exhausted: &HashSet<Placement>,
) -> Result<Vec<Candidate>, Failure> {
    let unknown: Vec<&str> = rules
        .types
        .iter()
        .filter(|t| !offers.iter().any(|o| &o.gpu_type_id == *t))
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        return Err(Failure::permanent(
            "UnknownGpuType",
            format!(
                "spec.gpu.types names GPU types the platform does not know: {}",
                unknown.join(", ")
            ),
        ));
    }
    let count = rules.count.max(1);
    let mut chosen: Vec<Candidate> = Vec::new();
    let mut over_cap: Vec<String> = Vec::new();
    for t in rules.types {
        let mut of_type: Vec<Candidate> = Vec::new();
        for o in offers.iter().filter(|o| &o.gpu_type_id == t) {
            let usable = o.in_stock
                && o.gpu_counts.contains(&i64::from(count))
                && o.data_center_id.as_ref().is_none_or(|dc| {
                    rules.data_center_ids.is_empty() || rules.data_center_ids.contains(dc)
                })
                && (rules.allowed_cuda_versions.is_empty()
                    || o.cuda_versions.is_empty()
                    || o.cuda_versions
                        .iter()
                        .any(|v| rules.allowed_cuda_versions.contains(v)));
            let Some(price) = o.price_per_hour.filter(|_| usable) else {
                continue;
            };
            let placement = Placement {
                gpu_type_id: o.gpu_type_id.clone(),
                data_center_id: o.data_center_id.clone(),
                secure_cloud: o.secure_cloud,
            };
            if exhausted.contains(&placement) {
                continue;
            }
            if let Some(cap) = rules.max_price_per_gpu
                && price > cap * f64::from(count) + 1e-9
            {
                let word = format!("{t} at ${:.3}/GPU/h", price / f64::from(count));
                if !over_cap.contains(&word) {
                    over_cap.push(word);
                }
                continue;
            }
            of_type.push(Candidate {
                placement,
                price_per_hour: price,
            });
        }
        // Cheapest first; the sort is stable, so the catalog's order (more stock first)
        // breaks ties.
        of_type.sort_by(|a, b| a.price_per_hour.total_cmp(&b.price_per_hour));
        chosen.extend(of_type);
    }
    if !chosen.is_empty() {
        return Ok(chosen);
    }
    if let (Some(cap), false) = (rules.max_price_per_gpu, over_cap.is_empty()) {
        return Err(Failure::retryable(
            "PriceAboveCap",
            format!(
                "every GPU type in stock costs more than spec.gpu.maxPricePerHour (${cap:.3}/GPU/h): {}; will try again",
                over_cap.join(", ")
            ),
        ));
    }
    Err(no_capacity(rules.types, rules.count))
}

/// Pure: `candidates` for a pod whose network volume decides its data center: the data
/// center is dropped from each and the repeats that leaves are removed, keeping the order.
pub fn pinned_by_volume(candidates: Vec<Candidate>) -> Vec<Candidate> {
    let mut seen = HashSet::new();
    candidates
        .into_iter()
        .map(|mut c| {
            c.placement.data_center_id = None;
            c
        })
        .filter(|c| seen.insert(c.placement.clone()))
        .collect()
}

/// The failure when no placement is left.
pub fn no_capacity(types: &[String], count: i32) -> Failure {
    Failure::retryable(
        "NoCapacity",
        format!(
            "no stock for {count} GPU(s) of any of {}; will try again",
            types.join(", ")
        ),
    )
}

/// How a placement reads in Events: `NVIDIA A40 in EU-RO-1 (secure cloud)`.
pub fn describe(p: &Placement) -> String {
    let mut s = p.gpu_type_id.clone();
    if let Some(dc) = &p.data_center_id {
        s.push_str(&format!(" in {dc}"));
    }
    match p.secure_cloud {
        Some(true) => s.push_str(" (secure cloud)"),
        Some(false) => s.push_str(" (community cloud)"),
        None => {}
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(
        id: &str,
        dc: Option<&str>,
        price: Option<f64>,
        stock: bool,
        counts: &[i64],
    ) -> GpuOffer {
        GpuOffer {
            gpu_type_id: id.into(),
            data_center_id: dc.map(str::to_string),
            secure_cloud: Some(true),
            price_per_hour: price,
            in_stock: stock,
            gpu_counts: counts.to_vec(),
            cuda_versions: vec!["12.4".into(), "12.8".into()],
        }
    }

    fn types(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn offers() -> Vec<GpuOffer> {
        vec![
            offer("A", None, Some(0.70), false, &[]),
            offer("B", None, Some(0.40), true, &[1, 2]),
            offer("C", None, Some(0.30), true, &[1, 2, 4]),
        ]
    }

    fn rules<'a>(types: &'a [String], count: i32, cap: Option<f64>) -> PlacementRules<'a> {
        PlacementRules {
            types,
            count,
            max_price_per_gpu: cap,
            data_center_ids: &[],
            allowed_cuda_versions: &[],
        }
    }

    fn ids(c: &[Candidate]) -> Vec<String> {
        c.iter().map(|c| describe(&c.placement)).collect()
    }

    #[test]
    fn types_in_stock_come_in_priority_order() {
        let t = types(&["A", "B", "C"]);
        let got = choose_placements(&rules(&t, 1, None), &offers(), &HashSet::new()).unwrap();
        assert_eq!(ids(&got), ["B (secure cloud)", "C (secure cloud)"]);
        assert_eq!(got[0].price_per_hour, 0.40);
    }

    #[test]
    fn the_count_must_fit_on_one_machine() {
        let t = types(&["B", "C"]);
        let got = choose_placements(&rules(&t, 4, None), &offers(), &HashSet::new()).unwrap();
        assert_eq!(got[0].placement.gpu_type_id, "C");
    }

    #[test]
    fn the_cap_is_per_gpu_against_the_whole_pod_price() {
        let t = types(&["B", "C"]);
        let got = choose_placements(&rules(&t, 2, Some(0.18)), &offers(), &HashSet::new()).unwrap();
        assert_eq!(ids(&got), ["C (secure cloud)"]);
    }

    #[test]
    fn a_cap_below_every_price_says_so() {
        let t = types(&["B", "C"]);
        let err =
            choose_placements(&rules(&t, 1, Some(0.10)), &offers(), &HashSet::new()).unwrap_err();
        assert_eq!(err.reason, "PriceAboveCap");
        assert!(!err.is_permanent());
        assert!(err.message.contains("B at $0.400/GPU/h"), "{}", err.message);
    }

    #[test]
    fn an_unknown_type_is_permanent_and_named() {
        let t = types(&["B", "Z 9000"]);
        let err = choose_placements(&rules(&t, 1, None), &offers(), &HashSet::new()).unwrap_err();
        assert_eq!(err.reason, "UnknownGpuType");
        assert!(err.is_permanent());
        assert!(err.message.contains("Z 9000"));
    }

    /// B in two data centers (the cheaper in US-TX-3), C in one, cheaper than both.
    fn two_types_in_two_data_centers() -> Vec<GpuOffer> {
        vec![
            offer("B", Some("EU-RO-1"), Some(0.50), true, &[1]),
            offer("B", Some("US-TX-3"), Some(0.40), true, &[1]),
            offer("C", Some("EU-RO-1"), Some(0.30), true, &[1]),
        ]
    }

    #[test]
    fn within_a_type_data_centers_go_cheapest_first_and_exhausted_ones_are_skipped() {
        let offers = two_types_in_two_data_centers();
        let t = types(&["B", "C"]);
        let got = choose_placements(&rules(&t, 1, None), &offers, &HashSet::new()).unwrap();
        assert_eq!(
            ids(&got),
            [
                "B in US-TX-3 (secure cloud)",
                "B in EU-RO-1 (secure cloud)",
                "C in EU-RO-1 (secure cloud)"
            ]
        );
        let exhausted: HashSet<Placement> = [got[0].placement.clone()].into();
        let got = choose_placements(&rules(&t, 1, None), &offers, &exhausted).unwrap();
        assert_eq!(got[0].placement.data_center_id.as_deref(), Some("EU-RO-1"));
        let all: HashSet<Placement> = got
            .iter()
            .map(|c| c.placement.clone())
            .chain(exhausted)
            .collect();
        let err = choose_placements(&rules(&t, 1, None), &offers, &all).unwrap_err();
        assert_eq!(err.reason, "NoCapacity");
    }

    #[test]
    fn a_network_volume_leaves_one_try_per_type_and_cloud() {
        let offers = two_types_in_two_data_centers();
        let t = types(&["B", "C"]);
        let got = choose_placements(&rules(&t, 1, None), &offers, &HashSet::new()).unwrap();
        let pinned = pinned_by_volume(got);
        assert_eq!(ids(&pinned), ["B (secure cloud)", "C (secure cloud)"]);
        assert_eq!(pinned[0].price_per_hour, 0.40);
    }

    #[test]
    fn data_centers_and_cuda_versions_of_the_spec_filter_offers() {
        let offers = vec![
            offer("B", Some("EU-RO-1"), Some(0.40), true, &[1]),
            offer("B", Some("US-TX-3"), Some(0.40), true, &[1]),
        ];
        let t = types(&["B"]);
        let dcs = types(&["US-TX-3"]);
        let r = PlacementRules {
            data_center_ids: &dcs,
            ..rules(&t, 1, None)
        };
        let got = choose_placements(&r, &offers, &HashSet::new()).unwrap();
        assert_eq!(ids(&got), ["B in US-TX-3 (secure cloud)"]);
        let cuda = types(&["11.8"]);
        let r = PlacementRules {
            allowed_cuda_versions: &cuda,
            ..rules(&t, 1, None)
        };
        assert_eq!(
            choose_placements(&r, &offers, &HashSet::new())
                .unwrap_err()
                .reason,
            "NoCapacity"
        );
    }
}
