//! What the emulator counted of the operator's calls (`/_emulator/calls`, by route) and of
//! its watches (its `/metrics`): totals, the calls between two counts, the writes among
//! them.

use std::collections::BTreeMap;

/// Total of a call-count map.
pub fn total_calls(calls: &BTreeMap<String, u64>) -> u64 {
    calls.values().sum()
}

/// Calls counted in `after` but not in `before`, by route (routes with none left out).
pub fn calls_since(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    after
        .iter()
        .map(|(route, n)| {
            (
                route.clone(),
                n - before.get(route).copied().unwrap_or(0).min(*n),
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// Pure: `gpucloud_watch_listings_total` by `(kind, resource, namespace)`, from the text
/// of the operator's `/metrics`.
pub fn watch_listings(metrics: &str) -> BTreeMap<(String, String, String), u64> {
    let label = |line: &str, name: &str| -> String {
        let start = format!("{name}=\"");
        line.split_once(&start)
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(value, _)| value.to_string())
            .unwrap_or_default()
    };
    metrics
        .lines()
        .filter(|l| l.starts_with("gpucloud_watch_listings_total{"))
        .filter_map(|l| {
            let count = l.rsplit_once(' ')?.1.parse().ok()?;
            let key = (
                label(l, "kind"),
                label(l, "resource"),
                label(l, "namespace"),
            );
            Some((key, count))
        })
        .collect()
}

/// Whether the emulator's route `route` changes the platform: a REST call other than a
/// GET, or a GraphQL mutation (the seed's queries are `myself`, `pod`, `gpuTypes`...). A
/// GraphQL request is counted twice, as `POST /graphql` and by its operation: the
/// operation tells.
pub fn is_write(route: &str) -> bool {
    if route == "POST /graphql" {
        return false;
    }
    match route.strip_prefix("graphql:") {
        Some(op) => !matches!(
            op,
            "myself" | "pod" | "pods" | "gpuTypes" | "cpuFlavors" | "dataCenters" | "countryCodes"
        ),
        None => !route.starts_with("GET ") && !route.starts_with("/_emulator"),
    }
}

/// The platform writes among the calls counted between `before` and `after`.
pub fn writes(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, u64> {
    calls_since(before, after)
        .into_iter()
        .filter(|(route, _)| is_write(route))
        .collect()
}
