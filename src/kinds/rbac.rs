//! The RBAC each registered kind needs, and how a set of rules measures up to it. Pure:
//! `tests/manifests.rs` reads the Roles under `deploy/` and asks these questions.
//!
//! The manifests stay hand-written and are checked, not generated: they carry comments,
//! Helm templating and rules that have nothing to do with kinds (Secrets, Events, the
//! Lease), which a generator would have to reproduce byte for byte; a check is a few
//! functions here and names the file, the kind and the verb when something is missing.

use std::fmt;

use k8s_openapi::api::rbac::v1::PolicyRule;

use super::RegisteredKind;

/// Where a set of rules applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// A ClusterRole: it also grants reading the kinds' CRDs by name ([`crd_need`]).
    Cluster,
    /// A Role in one watched namespace: CRDs are cluster-scoped, so an install of Roles
    /// only grants [`crd_need`] in a ClusterRole of its own.
    Namespace,
}

/// `verbs` on `resource` of API group `group`: on every object, or only on `name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Need {
    pub group: String,
    pub resource: String,
    pub name: Option<String>,
    pub verbs: &'static [&'static str],
}

impl Need {
    /// What the need is about, without its verbs: `gpucloud.io networkvolumes/status`.
    pub fn target(&self) -> String {
        target(&self.group, &self.resource, self.name.as_deref())
    }
}

impl fmt::Display for Need {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} on {}", self.verbs.join(", "), self.target())
    }
}

/// `gpucloud.io networkvolumes`, `core secrets named x`.
fn target(group: &str, resource: &str, name: Option<&str>) -> String {
    let group = if group.is_empty() { "core" } else { group };
    match name {
        Some(name) => format!("{group} {resource} named {name}"),
        None => format!("{group} {resource}"),
    }
}

/// A managed kind's objects: list and watch feed the informer; get is how an Endpoint reads
/// the NetworkVolume it names; patch adds and removes the finalizer and the engine's
/// annotations (merge and JSON patches). Nothing is ever replaced with a PUT.
const MANAGED: &[&str] = &["get", "list", "watch", "patch"];
/// Status is written by server-side apply, which is a patch.
const STATUS: &[&str] = &["patch"];
/// A kind no engine manages is only read.
const READ_ONLY: &[&str] = &["get", "list", "watch"];
/// `run` reads each CRD once at start-up, and the engine reads the kind's CRD by name
/// before it deletes a remote object (a CRD being deleted turns the delete into a release).
/// Every install needs it: without it no delete of a remote object goes ahead. `patch`:
/// the conversion webhook points each CRD's `spec.conversion` at itself
/// (`crate::app::conversion::crds`).
const CRD_CHECK: &[&str] = &["get", "patch"];

/// List and watch the namespaces `run --namespace-selector` follows (cluster-scoped, so a
/// ClusterRole's). Not a kind's need: only an install that selects namespaces by label
/// has it.
const NAMESPACE_WATCH: &[&str] = &["list", "watch"];

/// Read the Secrets the objects name (API keys, `valueFrom.secretKeyRef` values, registry
/// logins), one `get` each. Never list nor watch: a rotated key is noticed by reading those
/// Secrets again (`gpucloud_engine::secret_recheck`), so the operator's token cannot read
/// the Secrets no object names.
const SECRET_READ: &[&str] = &["get"];

/// What the operator does with Secrets where its objects are (and, by name, with its
/// default key's Secret).
pub fn secrets_need(name: Option<&str>) -> Need {
    Need {
        group: String::new(),
        resource: "secrets".into(),
        name: name.map(str::to_string),
        verbs: SECRET_READ,
    }
}

/// The conversion webhook's certificate in the operator's namespace, when the install makes
/// its own (`crate::app::conversion::secret`): made when missing (`create`, which cannot be
/// limited by name), read and renewed by name.
pub fn webhook_secret_needs(name: &str) -> [Need; 2] {
    [
        Need {
            group: String::new(),
            resource: "secrets".into(),
            name: None,
            verbs: &["create"],
        },
        Need {
            group: String::new(),
            resource: "secrets".into(),
            name: Some(name.to_string()),
            verbs: &["get", "update"],
        },
    ]
}

/// What `rules` grant on `need`'s resource (any name) beyond its verbs, such as `list on
/// core secrets`: for a resource the operator must be held to one use of.
pub fn beyond(rules: &[PolicyRule], need: &Need) -> Vec<String> {
    let mut out = Vec::new();
    for rule in rules {
        let about = lists(&rule.api_groups, &need.group) && lists(&rule.resources, &need.resource);
        for verb in rule.verbs.iter().filter(|_| about) {
            if !need.verbs.contains(&verb.as_str()) {
                let grant = format!("{verb} on {}", target(&need.group, &need.resource, None));
                if !out.contains(&grant) {
                    out.push(grant);
                }
            }
        }
    }
    out
}

/// What `run --namespace-selector` needs beyond the kinds' needs.
pub fn namespace_selector_need() -> Need {
    Need {
        group: String::new(),
        resource: "namespaces".into(),
        name: None,
        verbs: NAMESPACE_WATCH,
    }
}

/// ConfigMaps in a watched namespace: those the kinds keep beside their objects (an
/// Endpoint's connection, a Cluster's node addresses). Rules that apply there (the
/// ClusterRole, each watched namespace's Role) grant exactly these verbs on ConfigMaps.
pub fn watched_config_maps_need() -> Need {
    config_maps(super::shared::owned_config_map::VERBS)
}

/// ConfigMaps in the operator's own namespace (its Lease's): the record of what it
/// released on purpose. Its Role there grants exactly these verbs on ConfigMaps, so that
/// an install without a ClusterRole can still release an object.
pub fn released_record_need() -> Need {
    config_maps(gpucloud_engine::released::CONFIG_MAP_VERBS)
}

fn config_maps(verbs: &'static [&'static str]) -> Need {
    Need {
        group: String::new(),
        resource: "configmaps".into(),
        name: None,
        verbs,
    }
}

/// A role for people, aggregated into Kubernetes' built-in roles
/// (`deploy/base/user-roles.yaml`, the chart's `templates/user-roles.yaml`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserRole {
    /// `gpucloud-view`, into `view`: every kind and its status read.
    View,
    /// `gpucloud-edit`, into `edit` and `admin`: every kind read and written, its status
    /// read. The operator writes status; a status written by hand would be overwritten.
    Edit,
}

const USER_READ: &[&str] = &["get", "list", "watch"];
const USER_EDIT: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

/// What `role` grants on `kind`: the rules of the user roles give exactly these.
pub fn user_needs(kind: &RegisteredKind, role: UserRole) -> Vec<Need> {
    user_needs_of(&kind.group(), &kind.plural(), role)
}

fn user_needs_of(group: &str, plural: &str, role: UserRole) -> Vec<Need> {
    let need = |resource: String, verbs| Need {
        group: group.into(),
        resource,
        name: None,
        verbs,
    };
    let objects = match role {
        UserRole::View => USER_READ,
        UserRole::Edit => USER_EDIT,
    };
    vec![
        need(plural.into(), objects),
        need(format!("{plural}/status"), USER_READ),
    ]
}

/// What `kind` needs in rules of `scope`.
pub fn needs(kind: &RegisteredKind, scope: Scope) -> Vec<Need> {
    needs_of(&kind.group(), &kind.plural(), kind.is_managed(), scope)
}

fn needs_of(group: &str, plural: &str, managed: bool, scope: Scope) -> Vec<Need> {
    let need = |resource: String, name: Option<String>, verbs| Need {
        group: group.into(),
        resource,
        name,
        verbs,
    };
    let mut out = if managed {
        vec![
            need(plural.into(), None, MANAGED),
            need(format!("{plural}/status"), None, STATUS),
        ]
    } else {
        vec![need(plural.into(), None, READ_ONLY)]
    };
    if scope == Scope::Cluster {
        out.push(crd_need_of(group, plural));
    }
    out
}

/// Reading `kind`'s CRD by name: in every install, whatever namespaces it watches.
pub fn crd_need(kind: &RegisteredKind) -> Need {
    crd_need_of(&kind.group(), &kind.plural())
}

fn crd_need_of(group: &str, plural: &str) -> Need {
    Need {
        group: "apiextensions.k8s.io".into(),
        resource: "customresourcedefinitions".into(),
        name: Some(format!("{plural}.{group}")),
        verbs: CRD_CHECK,
    }
}

fn lists(values: &Option<Vec<String>>, wanted: &str) -> bool {
    values.iter().flatten().any(|v| v == wanted || v == "*")
}

fn grants(rule: &PolicyRule, need: &Need, verb: &str) -> bool {
    let names = rule.resource_names.as_deref().unwrap_or_default();
    lists(&rule.api_groups, &need.group)
        && lists(&rule.resources, &need.resource)
        && rule.verbs.iter().any(|v| v == verb || v == "*")
        && (names.is_empty() || need.name.as_ref().is_some_and(|n| names.contains(n)))
}

/// The verbs of `need` that none of `rules` grants.
pub fn missing_verbs(rules: &[PolicyRule], need: &Need) -> Vec<&'static str> {
    need.verbs
        .iter()
        .copied()
        .filter(|verb| !rules.iter().any(|rule| grants(rule, need, verb)))
        .collect()
}

/// What `rules` grant beyond `needs` on the resources the needs are about, or on any
/// resource of `group` (the operator's own API group): a verb the operator does not use,
/// a kind no longer registered, a CRD name no kind has. The rules on other things
/// (Secrets, Events) are not the kinds' business and are left alone.
pub fn excess(rules: &[PolicyRule], needs: &[Need], group: &str) -> Vec<String> {
    let about = |g: &str, r: &str| {
        g == "*"
            || g == group
            || needs
                .iter()
                .any(|n| n.group == g && (r == "*" || n.resource == r))
    };
    let covered = |g: &str, r: &str, name: Option<&String>, verb: &str| {
        needs.iter().any(|n| {
            n.group == g && n.resource == r && n.name.as_ref() == name && n.verbs.contains(&verb)
        })
    };
    let mut out = Vec::new();
    for rule in rules {
        let names: Vec<Option<&String>> = match rule.resource_names.as_deref() {
            None | Some([]) => vec![None],
            Some(names) => names.iter().map(Some).collect(),
        };
        for g in rule.api_groups.iter().flatten() {
            for r in rule.resources.iter().flatten().filter(|r| about(g, r)) {
                for name in &names {
                    for verb in &rule.verbs {
                        if !covered(g, r, *name, verb) {
                            out.push(format!(
                                "{verb} on {}",
                                target(g, r, name.map(|n| n.as_str()))
                            ));
                        }
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(groups: &[&str], resources: &[&str], names: &[&str], verbs: &[&str]) -> PolicyRule {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        PolicyRule {
            api_groups: Some(strings(groups)),
            resources: Some(strings(resources)),
            resource_names: (!names.is_empty()).then(|| strings(names)),
            verbs: strings(verbs),
            non_resource_urls: None,
        }
    }

    fn volumes(scope: Scope) -> Vec<Need> {
        needs_of("gpucloud.io", "networkvolumes", true, scope)
    }

    /// Today's ClusterRole rules on the operator's kinds, for one kind.
    fn complete() -> Vec<PolicyRule> {
        vec![
            rule(
                &["gpucloud.io"],
                &["networkvolumes"],
                &[],
                &["get", "list", "watch", "patch"],
            ),
            rule(
                &["gpucloud.io"],
                &["networkvolumes/status"],
                &[],
                &["patch"],
            ),
            rule(
                &["apiextensions.k8s.io"],
                &["customresourcedefinitions"],
                &["networkvolumes.gpucloud.io"],
                &["get", "patch"],
            ),
        ]
    }

    #[test]
    fn a_managed_kind_needs_its_objects_its_status_and_in_a_cluster_its_crd() {
        let cluster = volumes(Scope::Cluster);
        let shown: Vec<String> = cluster.iter().map(Need::to_string).collect();
        assert_eq!(
            shown,
            [
                "get, list, watch, patch on gpucloud.io networkvolumes",
                "patch on gpucloud.io networkvolumes/status",
                "get, patch on apiextensions.k8s.io customresourcedefinitions named networkvolumes.gpucloud.io",
            ]
        );
        assert_eq!(volumes(Scope::Namespace), cluster[..2]);
    }

    #[test]
    fn people_who_edit_write_the_objects_and_only_read_their_status() {
        let show = |role| {
            user_needs_of("gpucloud.io", "networkvolumes", role)
                .iter()
                .map(Need::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            show(UserRole::View),
            [
                "get, list, watch on gpucloud.io networkvolumes",
                "get, list, watch on gpucloud.io networkvolumes/status",
            ]
        );
        assert_eq!(
            show(UserRole::Edit),
            [
                "get, list, watch, create, update, patch, delete, deletecollection on gpucloud.io networkvolumes",
                "get, list, watch on gpucloud.io networkvolumes/status",
            ]
        );
    }

    #[test]
    fn a_read_only_kind_needs_no_writes() {
        let needs = needs_of("gpucloud.io", "budgets", false, Scope::Namespace);
        assert_eq!(needs.len(), 1);
        assert_eq!(needs[0].verbs, ["get", "list", "watch"]);
    }

    #[test]
    fn complete_rules_miss_nothing_and_grant_nothing_more() {
        for need in volumes(Scope::Cluster) {
            assert!(missing_verbs(&complete(), &need).is_empty(), "{need}");
        }
        assert!(excess(&complete(), &volumes(Scope::Cluster), "gpucloud.io").is_empty());
    }

    #[test]
    fn a_missing_verb_is_named() {
        let mut rules = complete();
        rules[0].verbs.retain(|v| v != "watch");
        let needs = volumes(Scope::Cluster);
        assert_eq!(missing_verbs(&rules, &needs[0]), ["watch"]);
        // Another kind's rule does not stand in for this one.
        rules[1].resources = Some(vec!["pods/status".into()]);
        assert_eq!(missing_verbs(&rules, &needs[1]), ["patch"]);
    }

    #[test]
    fn rules_limited_to_names_grant_only_those_objects() {
        let mut rules = complete();
        rules[0].resource_names = Some(vec!["data".into()]);
        let needs = volumes(Scope::Cluster);
        assert_eq!(missing_verbs(&rules, &needs[0]).len(), 4);
        rules[2].resource_names = Some(vec!["pods.gpucloud.io".into()]);
        assert_eq!(missing_verbs(&rules, &needs[2]), ["get", "patch"]);
    }

    #[test]
    fn wildcards_grant_everything() {
        let rules = [rule(&["*"], &["*"], &[], &["*"])];
        for need in volumes(Scope::Cluster) {
            assert!(missing_verbs(&rules, &need).is_empty(), "{need}");
        }
        assert!(!excess(&rules, &volumes(Scope::Cluster), "gpucloud.io").is_empty());
    }

    #[test]
    fn secrets_are_read_one_by_one_and_never_listed() {
        let need = secrets_need(None);
        assert_eq!(need.to_string(), "get on core secrets");
        let get = [rule(&[""], &["secrets"], &[], &["get"])];
        assert!(missing_verbs(&get, &need).is_empty());
        assert!(beyond(&get, &need).is_empty());
        let watch = [rule(&[""], &["secrets"], &[], &["get", "list", "watch"])];
        assert_eq!(
            beyond(&watch, &need),
            ["list on core secrets", "watch on core secrets"]
        );
        // A wildcard grants them too; rules on other resources are not about Secrets.
        let wildcard = [
            rule(&["*"], &["*"], &[], &["list"]),
            rule(&[""], &["configmaps"], &[], &["list"]),
        ];
        assert_eq!(beyond(&wildcard, &need), ["list on core secrets"]);
        // The default key's Secret, by name: another name does not grant it.
        let named = secrets_need(Some("gpucloud-api-key"));
        let by_name = [rule(&[""], &["secrets"], &["gpucloud-api-key"], &["get"])];
        assert!(missing_verbs(&by_name, &named).is_empty());
        assert_eq!(missing_verbs(&by_name, &need), ["get"]);
        let other = [rule(&[""], &["secrets"], &["other"], &["get"])];
        assert_eq!(missing_verbs(&other, &named), ["get"]);
    }

    #[test]
    fn grants_beyond_the_needs_of_the_kinds_are_named() {
        let mut rules = complete();
        rules[0].verbs.push("delete".into());
        rules[0].resources.as_mut().unwrap().push("oldkinds".into());
        rules[2]
            .resource_names
            .as_mut()
            .unwrap()
            .push("oldkinds.gpucloud.io".into());
        // Rules on what no kind is about are not judged here.
        rules.push(rule(&[""], &["secrets"], &[], &["get", "list", "watch"]));
        let found = excess(&rules, &volumes(Scope::Cluster), "gpucloud.io");
        assert_eq!(
            found,
            [
                "delete on gpucloud.io networkvolumes",
                "get on gpucloud.io oldkinds",
                "list on gpucloud.io oldkinds",
                "watch on gpucloud.io oldkinds",
                "patch on gpucloud.io oldkinds",
                "delete on gpucloud.io oldkinds",
                "get on apiextensions.k8s.io customresourcedefinitions named oldkinds.gpucloud.io",
                "patch on apiextensions.k8s.io customresourcedefinitions named oldkinds.gpucloud.io",
            ]
        );
    }
}
