//! The dashboard and the alerts name only metrics the operator serves:
//!
//! - every `gpucloud_` metric in an expression of `deploy/grafana/*.json` and of both
//!   copies of the PrometheusRule is a family of the registry `run` serves
//!   (`gpucloud_operator::app::metrics::operator_metrics`), read from its `# TYPE` lines
//!   with the OpenMetrics suffixes (`_total` of a counter; `_bucket`, `_sum`, `_count` of a
//!   histogram); and, end to end, of a running operator's `/metrics`;
//! - docs/metrics.md lists every family, and no family that is not served;
//! - the kustomize PrometheusRule and the Helm chart's rule file hold the same groups, the
//!   Helm template renders only when `prometheusRule.enabled` (false by default), and the
//!   default kustomization leaves the rule out.
//!
//! Prometheus's own parser checks the same files in `tests/prometheus-rules/`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

const KUSTOMIZE_RULE: &str = "deploy/components/prometheusrule/prometheusrule.yaml";
const HELM_RULE_FILE: &str = "deploy/helm/gpucloud-operator/files/prometheus-rules.yaml";
const HELM_TEMPLATE: &str = "deploy/helm/gpucloud-operator/templates/prometheusrule.yaml";
const HELM_VALUES: &str = "deploy/helm/gpucloud-operator/values.yaml";
const GRAFANA: &str = "deploy/grafana";
const METRICS_DOC: &str = "docs/metrics.md";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(repo().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn yaml(path: &str) -> Value {
    serde_saphyr::from_str(&read(path)).unwrap_or_else(|e| panic!("{path} is not YAML: {e}"))
}

/// The `gpucloud_` metric names of a PromQL expression, read loosely: identifiers outside
/// quoted strings (label values, regular expressions) that start with `gpucloud_`.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut chars = expr.char_indices().peekable();
    let mut quote: Option<char> = None;
    while let Some((i, c)) = chars.next() {
        if let Some(q) = quote {
            if c == '\\' {
                chars.next();
            } else if c == q {
                quote = None;
            }
            continue;
        }
        if matches!(c, '"' | '\'' | '`') {
            quote = Some(c);
            continue;
        }
        let starts_name = c.is_ascii_alphabetic() || c == '_' || c == ':';
        let after_name = expr[..i]
            .chars()
            .next_back()
            .is_some_and(|p| p.is_ascii_alphanumeric() || p == '_' || p == ':');
        if starts_name && !after_name {
            let end = expr[i..]
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_' || ch == ':'))
                .map_or(expr.len(), |n| i + n);
            let name = &expr[i..end];
            if name.starts_with("gpucloud_") {
                names.insert(name.to_string());
            }
            while chars.peek().is_some_and(|(j, _)| *j < end) {
                chars.next();
            }
        }
    }
    names
}

/// The families of an OpenMetrics exposition: name → type, from its `# TYPE` lines.
fn families(exposition: &str) -> BTreeMap<String, String> {
    exposition
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .map(|(name, kind)| (name.to_string(), kind.trim().to_string()))
        .collect()
}

/// The family a series name belongs to, with the suffixes OpenMetrics gives each type.
fn family_of<'a>(name: &str, families: &'a BTreeMap<String, String>) -> Option<&'a str> {
    if let Some((family, _)) = families.get_key_value(name) {
        return Some(family);
    }
    let suffixes: &[(&str, &[&str])] = &[
        ("counter", &["_total", "_created"]),
        ("histogram", &["_bucket", "_sum", "_count", "_created"]),
        ("summary", &["_sum", "_count", "_created"]),
        ("info", &["_info"]),
    ];
    suffixes.iter().find_map(|(kind, ends)| {
        ends.iter().find_map(|end| {
            let base = name.strip_suffix(end)?;
            let (family, k) = families.get_key_value(base)?;
            (k == kind).then_some(family.as_str())
        })
    })
}

/// Every string under a key `expr`, `query` or `definition` of a Grafana dashboard: its
/// panels' queries and its variables' queries.
fn dashboard_queries(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match v {
                    Value::String(s) if matches!(key.as_str(), "expr" | "query" | "definition") => {
                        out.push(s.clone())
                    }
                    _ => dashboard_queries(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| dashboard_queries(v, out)),
        _ => {}
    }
}

/// The expressions of a Prometheus rule file's `groups`.
fn rule_exprs(groups: &Value) -> Vec<String> {
    groups
        .as_array()
        .expect("groups is a list")
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("a group has rules").iter())
        .map(|r| r["expr"].as_str().expect("a rule has an expr").to_string())
        .collect()
}

fn kustomize_groups() -> Value {
    let rule = yaml(KUSTOMIZE_RULE);
    assert_eq!(rule["kind"], "PrometheusRule", "{KUSTOMIZE_RULE}");
    rule["spec"]["groups"].clone()
}

fn helm_groups() -> Value {
    yaml(HELM_RULE_FILE)["groups"].clone()
}

/// Every expression of the dashboards and both rule copies, with where it comes from.
fn expressions() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut dashboards: Vec<PathBuf> = std::fs::read_dir(repo().join(GRAFANA))
        .expect("deploy/grafana")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    dashboards.sort();
    assert!(!dashboards.is_empty(), "no dashboard in {GRAFANA}");
    for path in dashboards {
        let text = std::fs::read_to_string(&path).unwrap();
        let dashboard: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        let mut queries = Vec::new();
        dashboard_queries(&dashboard, &mut queries);
        let name = path.strip_prefix(repo()).unwrap().display().to_string();
        out.extend(queries.into_iter().map(|q| (name.clone(), q)));
    }
    for (name, groups) in [
        (KUSTOMIZE_RULE, kustomize_groups()),
        (HELM_RULE_FILE, helm_groups()),
    ] {
        out.extend(
            rule_exprs(&groups)
                .into_iter()
                .map(|e| (name.to_string(), e)),
        );
    }
    out
}

/// What the dashboards and rules name that `exposition` does not serve.
fn missing_from(exposition: &str) -> Vec<String> {
    let families = families(exposition);
    let mut missing = Vec::new();
    for (source, expr) in expressions() {
        for name in metric_names(&expr) {
            if family_of(&name, &families).is_none() {
                missing.push(format!("{source}: {name} (in {expr})"));
            }
        }
    }
    missing
}

fn served() -> String {
    let (metrics, _budgets) = gpucloud_operator::app::metrics::operator_metrics();
    metrics.encode()
}

#[test]
fn every_metric_the_dashboard_and_alerts_name_is_served() {
    let names: BTreeSet<String> = expressions()
        .iter()
        .flat_map(|(_, e)| metric_names(e))
        .collect();
    for wanted in [
        "gpucloud_stalled_objects",
        "gpucloud_leader",
        "gpucloud_budget_cost_per_hour",
        "gpucloud_budget_max_cost_per_hour",
        "gpucloud_platform_ratelimit_remaining_ratio",
        "gpucloud_platform_calls_total",
        "gpucloud_reconcile_duration_seconds_bucket",
    ] {
        assert!(
            names.contains(wanted),
            "the dashboard or rules use {wanted}"
        );
    }
    let missing = missing_from(&served());
    assert!(missing.is_empty(), "not served:\n{}", missing.join("\n"));
}

#[test]
fn the_metric_docs_list_every_family_served_and_no_other() {
    let families = families(&served());
    let doc = read(METRICS_DOC);
    // The first column of the tables: `gpucloud_...`.
    let documented: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `gpucloud_"))
        .filter_map(|l| l.split('`').next())
        .map(|n| format!("gpucloud_{n}"))
        .collect();
    let mut problems = Vec::new();
    for (family, kind) in &families {
        let shown = if kind == "counter" {
            format!("{family}_total")
        } else {
            family.clone()
        };
        if !documented.contains(&shown) {
            problems.push(format!(
                "{shown} ({kind}) is served but not in {METRICS_DOC}"
            ));
        }
    }
    for name in &documented {
        if family_of(name, &families).is_none() {
            problems.push(format!("{name} is in {METRICS_DOC} but not served"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn both_copies_of_the_alerts_hold_the_same_groups() {
    let (kustomize, helm) = (kustomize_groups(), helm_groups());
    assert!(
        kustomize.as_array().is_some_and(|g| !g.is_empty()),
        "{KUSTOMIZE_RULE} has groups"
    );
    assert_eq!(
        kustomize, helm,
        "{HELM_RULE_FILE} must hold the groups of {KUSTOMIZE_RULE} (the source): copy them over"
    );
    let alerts: BTreeSet<&str> = kustomize
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap())
        .filter_map(|r| r["alert"].as_str())
        .collect();
    for alert in [
        "GpucloudObjectsStalled",
        "GpucloudOrphansCosting",
        "GpucloudBudgetNearlySpent",
        "GpucloudPlatformRateLimited",
        "GpucloudPlatformServerErrors",
        "GpucloudNoLeader",
        "GpucloudApiserverUnreachable",
    ] {
        assert!(alerts.contains(alert), "{alert} in {alerts:?}");
        assert!(
            read(METRICS_DOC).contains(alert),
            "{METRICS_DOC} says what {alert} means"
        );
    }
}

#[test]
fn the_rule_is_optional_in_helm_and_kustomize() {
    let values = yaml(HELM_VALUES);
    assert_eq!(
        values["prometheusRule"]["enabled"],
        Value::Bool(false),
        "{HELM_VALUES}: prometheusRule.enabled defaults to false"
    );
    let template = read(HELM_TEMPLATE);
    let body: Vec<&str> = template.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(
        body.first().copied(),
        Some("{{- if .Values.prometheusRule.enabled }}"),
        "{HELM_TEMPLATE} renders nothing unless enabled"
    );
    assert_eq!(body.last().copied(), Some("{{- end }}"), "{HELM_TEMPLATE}");
    let file = HELM_RULE_FILE
        .strip_prefix("deploy/helm/gpucloud-operator/")
        .unwrap();
    assert!(
        template.contains(&format!(".Files.Get \"{file}\"")),
        "{HELM_TEMPLATE} serves {HELM_RULE_FILE} as a file (not a template)"
    );
    assert!(
        !read("deploy/helm/gpucloud-operator/.helmignore")
            .lines()
            .any(|l| l.trim_start_matches('/').starts_with("files")),
        "the chart ships its files/"
    );
    // The default install and its base leave the rule out; the overlay brings it.
    for kustomization in [
        "deploy/kustomization.yaml",
        "deploy/base/kustomization.yaml",
    ] {
        let k = yaml(kustomization);
        let listed = serde_json::to_string(&[&k["resources"], &k["components"]]).unwrap();
        assert!(
            !listed.contains("prometheusrule"),
            "{kustomization} must not include the PrometheusRule: {listed}"
        );
    }
    let overlay = yaml("deploy/overlays/with-prometheusrule/kustomization.yaml");
    assert_eq!(
        overlay["components"],
        serde_json::json!(["../../components/prometheusrule"])
    );
}

#[test]
fn the_loose_promql_reader_finds_names_and_skips_strings() {
    let names = metric_names(
        r#"histogram_quantile(0.99, sum by (kind, le) (rate(gpucloud_reconcile_duration_seconds_bucket{kind!="gpucloud_not_a_metric"}[5m]))) / ignoring(x) gpucloud_leader or absent(gpucloud_leader)"#,
    );
    assert_eq!(
        names,
        BTreeSet::from([
            "gpucloud_leader".to_string(),
            "gpucloud_reconcile_duration_seconds_bucket".to_string(),
        ])
    );
    assert!(metric_names("my_gpucloud_x + label_values(gpucloud_y, ns)").contains("gpucloud_y"));
    assert!(!metric_names("my_gpucloud_x").contains("gpucloud_x"));
    let families = families(
        "# TYPE gpucloud_calls counter\n# TYPE gpucloud_d histogram\n# TYPE gpucloud_g gauge\n",
    );
    assert_eq!(
        family_of("gpucloud_calls_total", &families),
        Some("gpucloud_calls")
    );
    assert_eq!(
        family_of("gpucloud_d_bucket", &families),
        Some("gpucloud_d")
    );
    assert_eq!(family_of("gpucloud_g", &families), Some("gpucloud_g"));
    assert_eq!(
        family_of("gpucloud_g_total", &families),
        None,
        "a gauge has no _total"
    );
    assert_eq!(
        family_of("gpucloud_calls", &families),
        Some("gpucloud_calls")
    );
}

/// A running operator's `/metrics` serves every family the dashboard and the alerts name,
/// and its new gauges say what they should: it leads (no leader election), one object is
/// Ready, one is Stalled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the control plane: run scripts/test.sh"]
async fn a_running_operator_serves_what_the_dashboard_and_alerts_use() {
    use common::operator::{Env, free_port, is_ready, is_stalled_with, volume};
    use gpucloud_crd::NetworkVolume;

    const TIMEOUT: Duration = Duration::from_secs(30);
    let env = Env::start("observability").await;
    let port = free_port();
    let op = env.operator(&[&format!("--metrics-addr=127.0.0.1:{port}")]);
    env.create(&volume("fine", 10, serde_json::json!({}))).await;
    env.create(&volume(
        "nowhere",
        10,
        serde_json::json!({"dataCenterId": "XX-NOWHERE-1"}),
    ))
    .await;
    env.wait_for::<NetworkVolume, _>("fine", TIMEOUT, "Ready", is_ready)
        .await;
    env.wait_for::<NetworkVolume, _>("nowhere", TIMEOUT, "Stalled", |nv| {
        is_stalled_with(nv, "InvalidSpec")
    })
    .await;

    let scrape = || async {
        reqwest::get(format!("http://127.0.0.1:{port}/metrics"))
            .await
            .expect("/metrics answers")
            .text()
            .await
            .unwrap()
    };
    // The gauges follow the status write by a moment.
    let mut text = scrape().await;
    let want = [
        "gpucloud_leader 1",
        r#"gpucloud_stalled_objects{kind="NetworkVolume"} 1"#,
        r#"gpucloud_managed_objects{kind="NetworkVolume",ready="true"} 1"#,
    ];
    for _ in 0..50 {
        if want.iter().all(|w| text.lines().any(|l| l == *w)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        text = scrape().await;
    }
    for w in want {
        assert!(text.lines().any(|l| l == w), "{w} in\n{text}");
    }
    let missing = missing_from(&text);
    assert!(
        missing.is_empty(),
        "not served by the running operator:\n{}",
        missing.join("\n")
    );
    if common::backend::backend() == "v2" {
        // The emulator's REST v2 answers carry RateLimit headers.
        assert!(
            text.contains("gpucloud_platform_ratelimit_remaining_ratio{group="),
            "{text}"
        );
    }
    env.finish(op).await;
}
