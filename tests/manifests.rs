//! The install manifests under `deploy/` follow the list of kinds (`src/kinds/mod.rs`):
//! every Role and ClusterRole the project ships grants each kind what the operator does
//! with it, and nothing more on its objects; the Argo CD snippet has a health check for
//! each managed kind. A failure names the file, the kind and the verbs, so adding a kind
//! is: register it, run this test, add what it asks for.
//!
//! The manifests are checked rather than generated; `src/kinds/rbac.rs` says why.

use std::collections::BTreeMap;
use std::path::Path;

use gpucloud_operator::kinds::rbac::{self, Need, Scope, UserRole};
use gpucloud_operator::kinds::{KINDS, RegisteredKind};
use k8s_openapi::api::rbac::v1::PolicyRule;
use serde::Deserialize;

const BASE_RBAC: &str = "deploy/base/rbac.yaml";
const SINGLE_NAMESPACE_ROLE: &str = "deploy/overlays/single-namespace/role.yaml";
const SINGLE_NAMESPACE_CRD_READER: &str = "deploy/overlays/single-namespace/crd-reader.yaml";
const SINGLE_NAMESPACE: &str = "deploy/overlays/single-namespace/kustomization.yaml";
const HELM_HELPERS: &str = "deploy/helm/gpucloud-operator/templates/_helpers.tpl";
const HELM_RBAC: &str = "deploy/helm/gpucloud-operator/templates/rbac.yaml";
const USER_ROLES: &str = "deploy/base/user-roles.yaml";
const HELM_USER_ROLES: &str = "deploy/helm/gpucloud-operator/templates/user-roles.yaml";
const ARGOCD_SNIPPET: &str = "deploy/argocd/argocd-cm-snippet.yaml";
const ARGOCD_SCRIPT: &str = "deploy/argocd/health.lua";

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[derive(Deserialize)]
struct Metadata {
    name: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

/// Any document of an RBAC manifest; bindings have no rules.
#[derive(Deserialize)]
struct RbacDocument {
    kind: String,
    metadata: Metadata,
    #[serde(default)]
    rules: Vec<PolicyRule>,
}

/// The `kind` named `name` in the multi-document file at `path`.
fn document_of(path: &str, kind: &str, name: &str) -> RbacDocument {
    let documents: Vec<RbacDocument> = serde_saphyr::from_multiple(&read(path))
        .unwrap_or_else(|e| panic!("{path} is not RBAC YAML: {e}"));
    documents
        .into_iter()
        .find(|d| d.kind == kind && d.metadata.name == name)
        .unwrap_or_else(|| panic!("{path} has no {kind} {name}"))
}

/// The rules of the `kind` named `name` in the multi-document file at `path`.
fn rules_of(path: &str, kind: &str, name: &str) -> Vec<PolicyRule> {
    document_of(path, kind, name).rules
}

/// The rules in `{{- define "NAME" -}} ... {{- end -}}` of the Helm helpers: plain YAML.
fn helm_define(name: &str) -> Vec<PolicyRule> {
    let text = read(HELM_HELPERS);
    let open = format!("{{{{- define \"{name}\" -}}}}");
    let start = text
        .find(&open)
        .unwrap_or_else(|| panic!("{HELM_HELPERS} has no define {name:?}"))
        + open.len();
    let end = start
        + text[start..]
            .find("{{- end -}}")
            .unwrap_or_else(|| panic!("{HELM_HELPERS}: define {name:?} has no end"));
    serde_saphyr::from_str(&text[start..end])
        .unwrap_or_else(|e| panic!("{HELM_HELPERS}: define {name:?} is not a list of rules: {e}"))
}

/// Said of a grant beyond the operator's needs.
const UNUSED: &str = "which the operator does not use (src/kinds/rbac.rs)";

/// What `source` lacks of `needs` (each with who needs it), and what it grants beyond them
/// on what they are about or on the operator's API group, `beyond` saying why that is
/// too much.
fn judge(
    source: &str,
    rules: &[PolicyRule],
    needs: &[(String, Need)],
    beyond: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    for (who, need) in needs {
        let missing = rbac::missing_verbs(rules, need);
        if !missing.is_empty() {
            out.push(format!(
                "{source}: {who} needs {} on {}",
                missing.join(", "),
                need.target()
            ));
        }
    }
    let needs: Vec<Need> = needs.iter().map(|(_, need)| need.clone()).collect();
    let group = KINDS[0].group();
    for grant in rbac::excess(rules, &needs, &group) {
        out.push(format!("{source}: grants {grant}, {beyond}"));
    }
    out
}

/// The needs `of` gives for every kind, each named by its kind for the messages.
fn each_kinds_needs(of: impl Fn(&RegisteredKind) -> Vec<Need>) -> Vec<(String, Need)> {
    KINDS
        .iter()
        .flat_map(|kind| {
            of(kind)
                .into_iter()
                .map(|need| (format!("kind {}", kind.kind()), need))
        })
        .collect()
}

/// What rules on watched namespaces (`scope`) must grant: each kind's needs, and the
/// ConfigMaps the kinds write beside their objects.
fn watched_needs(scope: Scope) -> Vec<(String, Need)> {
    let mut needs = each_kinds_needs(|kind| rbac::needs(kind, scope));
    needs.push((
        "the ConfigMaps beside the objects (src/kinds/shared/owned_config_map.rs)".into(),
        rbac::watched_config_maps_need(),
    ));
    needs
}

/// What `source` lacks for each kind in `scope`, and what it grants beyond all kinds' needs.
fn problems(source: &str, rules: &[PolicyRule], scope: Scope) -> Vec<String> {
    judge(source, rules, &watched_needs(scope), UNUSED)
}

/// What the Role in the operator's own namespace must grant on ConfigMaps and the
/// operator's kinds: the released record's verbs, nothing more (its Lease and key Secret
/// rules are not judged here).
fn operator_namespace_problems(source: &str, rules: &[PolicyRule]) -> Vec<String> {
    let need = (
        "the released record (crates/engine/src/released/)".to_string(),
        rbac::released_record_need(),
    );
    judge(source, rules, &[need], UNUSED)
}

fn assert_none(problems: Vec<String>) {
    assert!(
        problems.is_empty(),
        "the manifests do not match what the operator does (src/kinds/):\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn every_role_grants_each_kind_what_the_operator_does_with_it() {
    let mut found = Vec::new();
    found.extend(problems(
        &format!("{BASE_RBAC} (ClusterRole gpucloud-operator)"),
        &rules_of(BASE_RBAC, "ClusterRole", "gpucloud-operator"),
        Scope::Cluster,
    ));
    found.extend(problems(
        &format!("{SINGLE_NAMESPACE_ROLE} (Role gpucloud-operator)"),
        &rules_of(SINGLE_NAMESPACE_ROLE, "Role", "gpucloud-operator"),
        Scope::Namespace,
    ));
    // The chart's Roles (one per watched namespace) are the shared rules; its ClusterRole
    // is the shared rules and the CRD check.
    let shared = helm_define("gpucloud-operator.rules");
    found.extend(problems(
        &format!("{HELM_HELPERS} (define \"gpucloud-operator.rules\")"),
        &shared,
        Scope::Namespace,
    ));
    let cluster: Vec<PolicyRule> = shared
        .into_iter()
        .chain(helm_define("gpucloud-operator.crdRules"))
        .collect();
    found.extend(problems(
        &format!("{HELM_HELPERS} (defines \"gpucloud-operator.rules\" and \"gpucloud-operator.crdRules\")"),
        &cluster,
        Scope::Cluster,
    ));
    assert_none(found);
}

/// What `rules` lack of `get` on each kind's CRD by name.
fn crd_problems(source: &str, rules: &[PolicyRule]) -> Vec<String> {
    let needs = each_kinds_needs(|kind| vec![rbac::crd_need(kind)]);
    needs
        .iter()
        .filter(|(_, need)| !rbac::missing_verbs(rules, need).is_empty())
        .map(|(who, need)| format!("{source}: {who} needs {need}"))
        .collect()
}

/// The operator reads the kind's CRD by name before it deletes a remote object (a CRD
/// being deleted turns the delete into a release) and holds the delete when the read is
/// refused: every install, cluster-wide or in a few namespaces, grants `get` on each
/// kind's CRD, and only by name.
#[test]
fn every_install_may_read_each_kinds_crd_by_name() {
    let mut found = crd_problems(
        &format!("{BASE_RBAC} (ClusterRole gpucloud-operator)"),
        &rules_of(BASE_RBAC, "ClusterRole", "gpucloud-operator"),
    );
    // The single-namespace overlay has no ClusterRole gpucloud-operator, only its reader
    // of the CRDs, which grants nothing else.
    let reader = format!("{SINGLE_NAMESPACE_CRD_READER} (ClusterRole gpucloud-operator-crds)");
    let reader_rules = rules_of(
        SINGLE_NAMESPACE_CRD_READER,
        "ClusterRole",
        "gpucloud-operator-crds",
    );
    found.extend(crd_problems(&reader, &reader_rules));
    let needs = each_kinds_needs(|kind| vec![rbac::crd_need(kind)]);
    found.extend(judge(&reader, &reader_rules, &needs, UNUSED));
    let binding = document_of(
        SINGLE_NAMESPACE_CRD_READER,
        "ClusterRoleBinding",
        "gpucloud-operator-crds",
    );
    assert_eq!(binding.metadata.name, "gpucloud-operator-crds");
    let overlay = read(SINGLE_NAMESPACE);
    if !overlay.lines().any(|l| l.trim() == "- crd-reader.yaml") {
        found.push(format!(
            "{SINGLE_NAMESPACE}: crd-reader.yaml is not among its resources"
        ));
    }
    // The chart: the define, judged whole, included in both modes (the ClusterRole, or the
    // ClusterRole NAME-crds of an install with `namespaces`).
    let define = format!("{HELM_HELPERS} (define \"gpucloud-operator.crdRules\")");
    let helm_rules = helm_define("gpucloud-operator.crdRules");
    found.extend(crd_problems(&define, &helm_rules));
    found.extend(judge(&define, &helm_rules, &needs, UNUSED));
    let template = read(HELM_RBAC);
    let (cluster_wide, namespaces) = template
        .split_once("{{- else }}")
        .unwrap_or_else(|| panic!("{HELM_RBAC} has no branch for `namespaces`"));
    for (mode, text) in [("cluster-wide", cluster_wide), ("namespaces", namespaces)] {
        if !text.contains("include \"gpucloud-operator.crdRules\"") {
            found.push(format!(
                "{HELM_RBAC}: the {mode} install does not include gpucloud-operator.crdRules"
            ));
        }
    }
    assert_none(found);
}

#[test]
fn the_operator_namespace_role_grants_the_released_record_in_every_install() {
    // The kustomize base's Role, which the single-namespace overlay inherits, and the
    // chart's Role in the release namespace, made in every mode (tests/install/rbac-variants.sh
    // runs the operator with each).
    let mut found = operator_namespace_problems(
        &format!("{BASE_RBAC} (Role gpucloud-operator)"),
        &rules_of(BASE_RBAC, "Role", "gpucloud-operator"),
    );
    found.extend(operator_namespace_problems(
        &format!("{HELM_HELPERS} (define \"gpucloud-operator.operatorNamespaceRules\")"),
        &helm_define("gpucloud-operator.operatorNamespaceRules"),
    ));
    assert_none(found);
}

#[test]
fn the_helm_cluster_role_is_made_of_the_checked_rules() {
    // The checks above read the helpers; this holds the template to using them.
    let template = read(HELM_RBAC);
    for define in [
        "gpucloud-operator.rules",
        "gpucloud-operator.crdRules",
        "gpucloud-operator.operatorNamespaceRules",
    ] {
        assert!(
            template.contains(&format!("include \"{define}\"")),
            "{HELM_RBAC} no longer includes {define:?}"
        );
    }
    assert!(
        !template.contains("gpucloud.io\""),
        "{HELM_RBAC} names a gpucloud.io resource itself; keep them in {HELM_HELPERS}, where they are checked"
    );
}

#[test]
fn the_cluster_roles_let_the_operator_follow_a_namespace_selector() {
    let need = rbac::namespace_selector_need();
    let base = rules_of(BASE_RBAC, "ClusterRole", "gpucloud-operator");
    let missing = rbac::missing_verbs(&base, &need);
    assert!(
        missing.is_empty(),
        "{BASE_RBAC} (ClusterRole gpucloud-operator) lacks {} on {} for --namespace-selector",
        missing.join(", "),
        need.target()
    );
    // The chart grants it only with namespaceSelector set, in its ClusterRole.
    let template = read(HELM_RBAC);
    let guarded = template
        .split("{{- if .Values.namespaceSelector }}")
        .nth(1)
        .and_then(|rest| rest.split("{{- end }}").next())
        .unwrap_or_else(|| panic!("{HELM_RBAC} has no rules under .Values.namespaceSelector"));
    let rules: Vec<PolicyRule> = serde_saphyr::from_str(
        &guarded
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap_or_else(|e| panic!("{HELM_RBAC}: the namespaceSelector rules are not rules: {e}"));
    assert!(
        rbac::missing_verbs(&rules, &need).is_empty(),
        "{HELM_RBAC}: namespaceSelector must grant {need}"
    );
}

/// A document of the Helm template once untemplated: a list of rules that only `include`
/// brings is left empty (null).
#[derive(Deserialize)]
struct HelmDocument {
    kind: String,
    metadata: HelmMetadata,
    #[serde(default)]
    rules: Option<Vec<PolicyRule>>,
}

/// A Helm document's name; its labels come by `include`, so untemplated they are empty
/// (null), which [`Metadata`]'s map does not take.
#[derive(Deserialize)]
struct HelmMetadata {
    name: String,
}

/// The Helm template at `path` as plain YAML, enough to read its rules: a line that is only
/// a template action (`{{- if ... }}`, `{{- include ... }}`) goes, both branches of an `if`
/// stay, and every other action reads `templated`. The rules that `include` brings are in
/// the helpers, read by [`helm_define`].
fn helm_as_yaml(path: &str) -> String {
    let mut out = String::new();
    for line in read(path).lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("{{") && trimmed.ends_with("}}") {
            continue;
        }
        let mut rest = line;
        while let Some(open) = rest.find("{{") {
            out.push_str(&rest[..open]);
            out.push_str("templated");
            let close = rest[open..]
                .find("}}")
                .unwrap_or_else(|| panic!("{path}: an action without its end: {line}"));
            rest = &rest[open + close + 2..];
        }
        out.push_str(rest);
        out.push('\n');
    }
    out
}

/// "lacks VERBS on TARGET" when `rules` lack verbs of `need`.
fn lacking(rules: &[PolicyRule], need: &Need) -> Option<String> {
    let missing = rbac::missing_verbs(rules, need);
    (!missing.is_empty()).then(|| format!("lacks {} on {}", missing.join(", "), need.target()))
}

/// What `rules` (from `source`) lack of `need` on Secrets, and grant beyond it.
fn secret_problems(source: String, rules: &[PolicyRule], need: &Need) -> Vec<String> {
    let mut out: Vec<String> = lacking(rules, need)
        .map(|l| format!("{source}: {l}"))
        .into_iter()
        .collect();
    for grant in rbac::beyond(rules, need) {
        out.push(format!(
            "{source}: grants {grant}; the operator only gets the Secrets its objects name"
        ));
    }
    out
}

/// What the operator's own Role (in its namespace) lacks or grants beyond on Secrets: `get`
/// on its key's Secret by name, and the conversion webhook's certificate (`create`, and
/// `get` and `update` by name); no other verb, and `get` and `update` only by name.
fn own_secret_problems(
    source: String,
    rules: &[PolicyRule],
    key: &str,
    webhook: &str,
) -> Vec<String> {
    let [create, by_name] = rbac::webhook_secret_needs(webhook);
    let mut out: Vec<String> = [&rbac::secrets_need(Some(key)), &create, &by_name]
        .into_iter()
        .filter_map(|need| lacking(rules, need))
        .map(|l| format!("{source}: {l}"))
        .collect();
    let all = rbac::Need {
        verbs: &["get", "create", "update"],
        ..create.clone()
    };
    for grant in rbac::beyond(rules, &all) {
        out.push(format!(
            "{source}: grants {grant} on its own namespace's Secrets"
        ));
    }
    for rule in rules
        .iter()
        .filter(|r| r.resources.iter().flatten().any(|r| r == "secrets"))
    {
        let unnamed = rule
            .resource_names
            .as_deref()
            .unwrap_or_default()
            .is_empty();
        if unnamed && rule.verbs.iter().any(|v| v != "create") {
            out.push(format!(
                "{source}: grants {:?} on every Secret of its namespace, not by name",
                rule.verbs
            ));
        }
    }
    out
}

/// The operator reads the Secrets its objects name, one `get` each, and never lists or
/// watches Secrets (a rotated key is noticed by reading the named ones again): every Role
/// and ClusterRole grants `get` on Secrets, and none any other verb on Secrets; the
/// operator's own Role, `get` on its key's Secret by name and what the conversion webhook's
/// certificate needs ([`own_secret_problems`]).
#[test]
fn secrets_are_only_read_one_by_one_never_listed_or_watched() {
    let any = rbac::secrets_need(None);
    let mut found = Vec::new();
    found.extend(secret_problems(
        format!("{BASE_RBAC} (ClusterRole gpucloud-operator)"),
        &rules_of(BASE_RBAC, "ClusterRole", "gpucloud-operator"),
        &any,
    ));
    found.extend(own_secret_problems(
        format!("{BASE_RBAC} (Role gpucloud-operator)"),
        &rules_of(BASE_RBAC, "Role", "gpucloud-operator"),
        "gpucloud-api-key",
        "gpucloud-operator-webhook-tls",
    ));
    found.extend(secret_problems(
        format!("{SINGLE_NAMESPACE_ROLE} (Role gpucloud-operator)"),
        &rules_of(SINGLE_NAMESPACE_ROLE, "Role", "gpucloud-operator"),
        &any,
    ));
    found.extend(secret_problems(
        format!("{HELM_HELPERS} (define \"gpucloud-operator.rules\")"),
        &helm_define("gpucloud-operator.rules"),
        &any,
    ));
    // The chart's template: its own rules (the helpers' come in by include, checked above),
    // in both the cluster-wide and the per-namespace branch, and the release namespace's
    // Role with the key's Secret by name.
    let documents: Vec<HelmDocument> = serde_saphyr::from_multiple(&helm_as_yaml(HELM_RBAC))
        .unwrap_or_else(|e| panic!("{HELM_RBAC} is not RBAC YAML once untemplated: {e}"));
    let mut own_role = false;
    for document in &documents {
        let source = format!("{HELM_RBAC} ({} {})", document.kind, document.metadata.name);
        let rules = document.rules.as_deref().unwrap_or_default();
        if document.kind == "Role" && document.metadata.name.ends_with("-self") {
            own_role = true;
            found.extend(own_secret_problems(source, rules, "templated", "templated"));
        } else {
            for grant in rbac::beyond(rules, &any) {
                found.push(format!("{source}: grants {grant}"));
            }
        }
    }
    assert!(own_role, "{HELM_RBAC} has no Role NAME-self");
    assert_none(found);
}

/// The label prefix that aggregates a ClusterRole into a built-in one.
const AGGREGATE_TO: &str = "rbac.authorization.k8s.io/aggregate-to-";

/// A user role: its name in deploy/base, the suffix of its name and its rules' define in
/// the chart, and the built-in roles it is aggregated into.
struct UserRoleFiles {
    role: UserRole,
    name: &'static str,
    helm_suffix: &'static str,
    helm_define: &'static str,
    into: &'static [&'static str],
}

const USER_ROLE_FILES: [UserRoleFiles; 2] = [
    UserRoleFiles {
        role: UserRole::View,
        name: "gpucloud-view",
        helm_suffix: "-view",
        helm_define: "gpucloud-operator.viewRules",
        into: &["view"],
    },
    UserRoleFiles {
        role: UserRole::Edit,
        name: "gpucloud-edit",
        helm_suffix: "-edit",
        helm_define: "gpucloud-operator.editRules",
        into: &["edit", "admin"],
    },
];

/// What the user role's `rules` lack for each kind, grant beyond, or grant outside the
/// operator's API group.
fn user_role_problems(source: &str, rules: &[PolicyRule], role: UserRole) -> Vec<String> {
    let needs = each_kinds_needs(|kind| rbac::user_needs(kind, role));
    let mut out = judge(
        source,
        rules,
        &needs,
        &format!("beyond what {role:?} gives (src/kinds/rbac.rs)"),
    );
    let group = KINDS[0].group();
    for rule in rules {
        if rule.api_groups.as_deref() != Some(std::slice::from_ref(&group)) {
            out.push(format!(
                "{source}: a rule on API groups {:?}, not only {group}",
                rule.api_groups
            ));
        }
    }
    out
}

/// The built-in roles the labels aggregate into.
fn aggregated_into(labels: &BTreeMap<String, String>) -> Vec<&str> {
    labels
        .iter()
        .filter(|(_, value)| *value == "true")
        .filter_map(|(key, _)| key.strip_prefix(AGGREGATE_TO))
        .collect()
}

#[test]
fn the_user_roles_give_every_kind_to_the_built_in_roles() {
    let mut found = Vec::new();
    let template = read(HELM_USER_ROLES);
    for files in &USER_ROLE_FILES {
        let source = format!("{USER_ROLES} (ClusterRole {})", files.name);
        let base = document_of(USER_ROLES, "ClusterRole", files.name);
        found.extend(user_role_problems(&source, &base.rules, files.role));
        let mut into = aggregated_into(&base.metadata.labels);
        into.sort_unstable();
        let mut want = files.into.to_vec();
        want.sort_unstable();
        if into != want {
            found.push(format!("{source}: aggregated into {into:?}, want {want:?}"));
        }

        let define = files.helm_define;
        found.extend(user_role_problems(
            &format!("{HELM_HELPERS} (define {define:?})"),
            &helm_define(define),
            files.role,
        ));
        // The chart's ClusterRole: its document of the template, with the define's rules
        // and the same aggregation labels.
        let name = format!("name: {{{{ $prefix }}}}{}", files.helm_suffix);
        let Some(document) = template.split("\n---\n").find(|d| d.contains(&name)) else {
            found.push(format!("{HELM_USER_ROLES}: no ClusterRole with {name:?}"));
            continue;
        };
        if !document.contains(&format!("include \"{define}\"")) {
            found.push(format!(
                "{HELM_USER_ROLES}: {name:?} does not include {define:?}"
            ));
        }
        for built_in in ["view", "edit", "admin"] {
            let labelled = document.contains(&format!("{AGGREGATE_TO}{built_in}: \"true\""));
            let want = files.into.contains(&built_in);
            if labelled != want {
                found.push(format!(
                    "{HELM_USER_ROLES}: {name:?} aggregated into {built_in}: {labelled}, want {want} as in {USER_ROLES}"
                ));
            }
        }
    }
    if template.contains("gpucloud.io\"") {
        found.push(format!(
            "{HELM_USER_ROLES} names a gpucloud.io resource itself; keep them in {HELM_HELPERS}, where they are checked"
        ));
    }
    assert_none(found);
}

#[derive(Deserialize)]
struct ConfigMapPatch {
    data: BTreeMap<String, String>,
}

#[test]
fn argocd_has_the_health_check_of_every_managed_kind() {
    let snippet: ConfigMapPatch = serde_saphyr::from_str(&read(ARGOCD_SNIPPET))
        .unwrap_or_else(|e| panic!("{ARGOCD_SNIPPET}: {e}"));
    let script = read(ARGOCD_SCRIPT);
    let mut found = Vec::new();
    let mut expected = Vec::new();
    for kind in KINDS.iter().filter(|k| k.is_managed()) {
        let key = format!(
            "resource.customizations.health.{}_{}",
            kind.group(),
            kind.kind()
        );
        match snippet.data.get(&key) {
            None => found.push(format!(
                "{ARGOCD_SNIPPET}: kind {} has no key {key} (its value: {ARGOCD_SCRIPT}, indented)",
                kind.kind()
            )),
            Some(value) if *value != script => found.push(format!(
                "{ARGOCD_SNIPPET}: {key} differs from {ARGOCD_SCRIPT}"
            )),
            Some(_) => {}
        }
        expected.push(key);
    }
    for key in snippet.data.keys().filter(|k| !expected.contains(k)) {
        found.push(format!(
            "{ARGOCD_SNIPPET}: {key} is no managed kind of src/kinds/mod.rs"
        ));
    }
    assert_none(found);
}

/// The krew manifest installs the binary under the name that makes it the plugin, on every
/// platform it lists.
#[test]
fn the_krew_manifest_installs_the_binary_as_the_plugin() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/krew/gpucloud.yaml");
    let text = std::fs::read_to_string(&path).expect("deploy/krew/gpucloud.yaml");
    let platforms = text.matches("- selector:").count();
    assert!(platforms >= 1, "no platform in the krew manifest");
    let bin = format!("bin: {}", gpucloud_operator::plugin::PLUGIN_BINARY);
    assert_eq!(
        text.matches(&bin).count(),
        platforms,
        "each platform's bin: {text}"
    );
    assert!(
        text.contains("kind: Plugin") && text.contains("name: gpucloud"),
        "{text}"
    );
    assert!(gpucloud_operator::plugin::invoked_as_plugin(
        gpucloud_operator::plugin::PLUGIN_BINARY
    ));
}
