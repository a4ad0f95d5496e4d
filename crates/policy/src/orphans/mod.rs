//! The orphan sweep: remote objects (pods, clusters, endpoints, templates, network volumes) that
//! carry this operator's ownership marker but have no object in the cluster any more (a
//! crash between a create and the status write, an object deleted with its finalizer
//! removed by hand, an install removed while its objects ran).
//!
//! - The markers ([`Marker`]): a pod's env [`TAG_ENV`] holds the whole UID of the Pod
//!   object that deployed it. Endpoints, templates and volumes carry no tag (the platform
//!   has nowhere to put one): their marker is the name the operator gives them when the
//!   spec names none, `<namespace>-<name>-<first 8 hex digits of the UID>`.
//! - An object is the cluster's when its marker names an object of the cluster of its kind
//!   (the whole UID, or the UID's first 8 digits), or when an object of the cluster knows
//!   its id (adopted by id, or named by its spec: a name marker may look like another's).
//! - Released on purpose: a remote object left on the platform by `deletionPolicy: Orphan`
//!   (or a paused or observe-only object deleted) is recorded in the released record
//!   ([`gpucloud_engine::released`]: ConfigMaps of the operator's namespace), and the sweep leaves it alone.
//! - An install that watches some namespaces only judges names that start with one of
//!   them ([`Scope`]); one watching with a label selector cannot judge at all (the objects
//!   it does not watch would look gone).
//!
//! [`orphans`] is the pure decision; the operator's own census for the `gpucloud_orphans`
//! metric is [`census`]; `gpucloud-operator orphans` is the binary's.

pub mod census;

use std::collections::HashSet;

use kube::ResourceExt;
use serde::Serialize;

use gpucloud_crd::ManagedKind;
use gpucloud_engine::annotations::EXTERNAL_ID;
pub use gpucloud_engine::marker::{
    Candidate, INSTALL_TAG_ENV, Marker, TAG_ENV, name_install_tag, name_marker,
};
use gpucloud_platform::domain::{
    Cluster as RemoteCluster, Pod as RemotePod, ServerlessEndpoint, TERMINATED,
    Template as RemoteTemplate, Volume,
};

/// A pod; `None` once terminated (it is gone, and bills nothing).
pub fn pod_candidate(pod: &RemotePod) -> Option<Candidate> {
    (pod.desired_status != TERMINATED).then(|| Candidate {
        kind: "Pod",
        id: pod.id.clone(),
        name: pod.name.clone(),
        status: pod.desired_status.clone(),
        cost_per_hour: pod.cost_per_hr,
        marker: pod
            .env_value(TAG_ENV)
            .map(|uid| Marker::Uid(uid.to_string())),
        install: pod.env_value(INSTALL_TAG_ENV).map(str::to_string),
    })
}

/// An Instant Cluster: its members carry the tag when they are listed; its name is the
/// marker before (or without) them.
pub fn cluster_candidate(cluster: &RemoteCluster) -> Candidate {
    let marker = match cluster.env_value(TAG_ENV) {
        Some(uid) => Some(Marker::Uid(uid.to_string())),
        None => name_marker(&cluster.name),
    };
    Candidate {
        kind: "Cluster",
        id: cluster.id.clone(),
        name: cluster.name.clone(),
        status: format!(
            "{} x {} {} in {}",
            cluster.pod_count,
            cluster.gpu_count_per_pod,
            cluster.gpu_type_id,
            cluster.data_center_id.as_deref().unwrap_or("-")
        ),
        cost_per_hour: Some(cluster.cost_per_hour()),
        marker,
        install: cluster
            .env_value(INSTALL_TAG_ENV)
            .or_else(|| name_install_tag(&cluster.name))
            .map(str::to_string),
    }
}

pub fn volume_candidate(volume: &Volume) -> Candidate {
    Candidate {
        kind: "NetworkVolume",
        id: volume.id.clone(),
        name: volume.name.clone(),
        status: format!("{} GB in {}", volume.size_gb, volume.data_center_id),
        cost_per_hour: None,
        marker: name_marker(&volume.name),
        install: name_install_tag(&volume.name).map(str::to_string),
    }
}

/// An endpoint, with what its minimum workers cost per hour when known.
pub fn endpoint_candidate(endpoint: &ServerlessEndpoint, cost_per_hour: Option<f64>) -> Candidate {
    let status = match endpoint.workers_min {
        Some(min) => format!("{min} min worker(s)"),
        None => String::new(),
    };
    Candidate {
        kind: "Endpoint",
        id: endpoint.id.clone(),
        name: endpoint.name.clone(),
        status,
        cost_per_hour,
        marker: name_marker(&endpoint.name),
        install: name_install_tag(&endpoint.name).map(str::to_string),
    }
}

pub fn template_candidate(template: &RemoteTemplate) -> Candidate {
    Candidate {
        kind: "Template",
        id: template.id.clone(),
        name: template.name.clone(),
        status: template.image.clone(),
        cost_per_hour: None,
        marker: name_marker(&template.name),
        install: name_install_tag(&template.name).map(str::to_string),
    }
}

/// What the cluster holds of one kind: the UIDs of its objects (whole, and their first 8
/// digits, which name markers carry), and the remote ids they know (in status, or adopted
/// by annotation).
///
/// Kept as 64-bit fingerprints, not strings: the census holds the cluster as it was at the
/// previous census for the whole interval between two (see [`census`]), and three 8-byte
/// fingerprints per object are a fraction of three sets of strings. A fingerprint shared by
/// chance (at 100,000 objects, odds of a few in a billion per census) can only make a
/// remote object look held:
/// that orphan would go uncounted, and nothing is ever taken for an orphan that is not one.
#[derive(Clone, Debug, Default)]
pub struct ClusterObjects {
    held: HashSet<u64>,
}

/// What a fingerprint is of: the same text as a UID and as an id are different entries.
#[derive(Hash)]
enum Held<'a> {
    Uid(&'a str),
    UidPrefix(&'a str),
    Id(&'a str),
}

impl Held<'_> {
    /// The engine's fingerprint, under keys drawn once per process: sets are only compared
    /// within one process, and names chosen to collide under fixed keys could hide an orphan.
    fn fingerprint(&self) -> u64 {
        gpucloud_engine::fingerprint::of(self)
    }
}

impl ClusterObjects {
    /// Adds an object with `uid` that knows the remote ids `ids`.
    pub fn add<'a>(&mut self, uid: Option<&str>, ids: impl IntoIterator<Item = &'a str>) {
        if let Some(uid) = uid {
            let prefix: String = uid.chars().filter(|c| *c != '-').take(8).collect();
            self.held.insert(Held::UidPrefix(&prefix).fingerprint());
            self.held.insert(Held::Uid(uid).fingerprint());
        }
        self.held
            .extend(ids.into_iter().map(|id| Held::Id(id).fingerprint()));
    }

    /// The objects of one kind, as the cluster holds them.
    pub fn of<'a, K: ManagedKind>(objects: impl IntoIterator<Item = &'a K>) -> Self {
        let mut out = Self::default();
        for obj in objects {
            out.add_object(obj);
        }
        out
    }

    /// Adds one object of the cluster, with the remote ids it knows.
    pub fn add_object<K: ManagedKind>(&mut self, obj: &K) {
        let status_id = obj
            .current_status()
            .and_then(|s| K::common(s).id.as_deref());
        let adopted = obj.annotations().get(EXTERNAL_ID).map(String::as_str);
        self.add(
            obj.meta().uid.as_deref(),
            status_id.into_iter().chain(adopted),
        );
    }

    /// Everything of both (the cluster as seen before and after a listing).
    pub fn union(mut self, other: &ClusterObjects) -> Self {
        self.held.extend(other.held.iter().copied());
        self
    }

    fn holds(&self, candidate: &Candidate, marker: &Marker) -> bool {
        let by_marker = match marker {
            Marker::Uid(uid) => Held::Uid(uid),
            Marker::UidPrefix(prefix) => Held::UidPrefix(prefix),
        };
        self.held.contains(&Held::Id(&candidate.id).fingerprint())
            || self.held.contains(&by_marker.fingerprint())
    }
}

/// Which remote objects an install may judge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every object of the account: the install sees every namespace.
    Cluster,
    /// Objects whose name starts with `<namespace>-` for one of these namespaces.
    Namespaces(Vec<String>),
}

impl Scope {
    fn covers(&self, name: &str) -> bool {
        match self {
            Scope::Cluster => true,
            Scope::Namespaces(list) => list.iter().any(|ns| {
                name.strip_prefix(ns.as_str())
                    .is_some_and(|rest| rest.starts_with('-'))
            }),
        }
    }
}

/// A remote object with the operator's marker and no object in the cluster.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Orphan {
    pub kind: &'static str,
    pub id: String,
    pub name: String,
    /// The UID (or its first 8 digits) that its marker names.
    pub owner_uid: String,
    pub status: String,
    pub cost_per_hour: Option<f64>,
}

/// Pure: whether an install with tag `mine` may judge a remote object made by the install
/// tagged `made_by`: one with its own tag, or with none (made before tags). Another
/// install's never, and no tagged object when this install does not know its own tag.
fn judges(made_by: Option<&str>, mine: Option<&str>) -> bool {
    match made_by {
        None => true,
        Some(tag) => mine == Some(tag),
    }
}

/// Pure: the orphans among `candidates`, given what the cluster holds of their kind and
/// the ids released on purpose, in name order, as the install tagged `mine` judges them. A
/// candidate without a marker was not made by the operator (or not recognisably: a name
/// the spec chose).
pub fn orphans(
    candidates: &[Candidate],
    cluster: &ClusterObjects,
    released: &HashSet<String>,
    scope: &Scope,
    mine: Option<&str>,
) -> Vec<Orphan> {
    let mut out: Vec<Orphan> = candidates
        .iter()
        .filter(|c| !released.contains(&c.id) && scope.covers(&c.name))
        .filter(|c| judges(c.install.as_deref(), mine))
        .filter_map(|c| {
            let marker = c.marker.as_ref()?;
            (!cluster.holds(c, marker)).then(|| Orphan {
                kind: c.kind,
                id: c.id.clone(),
                name: c.name.clone(),
                owner_uid: marker.uid().to_string(),
                status: c.status.clone(),
                cost_per_hour: c.cost_per_hour,
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name).then(a.id.cmp(&b.id)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn remote_pod(id: &str, env: &[&str], status: &str) -> RemotePod {
        serde_json::from_value(json!({
            "id": id, "name": format!("ns-{id}-1234abcd"), "imageName": "i", "env": env,
            "machineId": "", "desiredStatus": status, "costPerHr": 0.69
        }))
        .unwrap()
    }

    fn named(kind: &'static str, id: &str, name: &str) -> Candidate {
        Candidate {
            kind,
            id: id.into(),
            name: name.into(),
            status: String::new(),
            cost_per_hour: None,
            marker: name_marker(name),
            install: name_install_tag(name).map(str::to_string),
        }
    }

    fn ids(found: &[Orphan]) -> Vec<&str> {
        found.iter().map(|o| o.id.as_str()).collect()
    }

    #[test]
    fn a_deterministic_name_marks_the_uid_prefix_and_nothing_else_does() {
        let prefix = |s: &str| Some(Marker::UidPrefix(s.into()));
        assert_eq!(name_marker("team-a-data-1b4e28ba"), prefix("1b4e28ba"));
        assert_eq!(name_marker("ns-x-0123abcd"), prefix("0123abcd"));
        for not_ours in [
            "scratch",
            "data-1b4e28ba",                  // no namespace part
            "ns-x-1B4E28BA",                  // Kubernetes UIDs are lower case
            "ns-x-1b4e28b",                   // 7 digits
            "ns-x-1b4e28bax",                 // 9 characters
            "ns-x-1b4e28bg",                  // not hex
            "-x-1b4e28ba",                    // empty namespace
            "ns--1b4e28ba",                   // empty name
            "team-a-data-1b4e28ba-01234567-", // trailing dash
        ] {
            assert_eq!(name_marker(not_ours), None, "{not_ours}");
        }
    }

    #[test]
    fn a_tagged_pod_without_its_object_is_an_orphan_unless_released() {
        let tag = |uid: &str| format!("{TAG_ENV}={uid}");
        let (a, b, c) = (tag("uid-a"), tag("uid-b"), tag("uid-c"));
        let pods = [
            remote_pod("live", &[&a], "RUNNING"),
            remote_pod("lost", &[&b, "X=1"], "RUNNING"),
            remote_pod("stopped", &[&b], "EXITED"),
            remote_pod("released", &[&c], "RUNNING"),
            remote_pod("gone", &[&b], "TERMINATED"),
            remote_pod("hand-made", &["X=1"], "RUNNING"),
        ];
        let candidates: Vec<Candidate> = pods.iter().filter_map(pod_candidate).collect();
        let mut cluster = ClusterObjects::default();
        cluster.add(Some("uid-a"), []);
        let released: HashSet<String> = ["released".to_string()].into();
        let found = orphans(&candidates, &cluster, &released, &Scope::Cluster, None);
        assert_eq!(ids(&found), vec!["lost", "stopped"]);
        assert_eq!(found[0].owner_uid, "uid-b");
        assert_eq!(found[0].cost_per_hour, Some(0.69));
        assert_eq!(found[0].kind, "Pod");
    }

    #[test]
    fn a_named_object_is_the_clusters_by_its_uid_prefix_or_its_id() {
        let uid = "1b4e28ba-2fa1-11d2-883f-0016d3cca427";
        let candidates = [
            named("NetworkVolume", "v-live", "team-a-data-1b4e28ba"),
            named("NetworkVolume", "v-lost", "team-a-old-0000ffff"),
            // Adopted by id: its name looks like a marker of an object that is gone.
            named("NetworkVolume", "v-adopted", "team-b-x-deadbeef"),
            named("NetworkVolume", "v-hand-made", "scratch"),
            named("NetworkVolume", "v-released", "team-a-kept-abcdef01"),
        ];
        let mut cluster = ClusterObjects::default();
        cluster.add(Some(uid), ["v-live"]);
        cluster.add(Some("99999999-0000-0000-0000-000000000000"), ["v-adopted"]);
        let released: HashSet<String> = ["v-released".to_string()].into();
        let found = orphans(&candidates, &cluster, &released, &Scope::Cluster, None);
        assert_eq!(ids(&found), vec!["v-lost"]);
        assert_eq!(found[0].owner_uid, "0000ffff");
    }

    #[test]
    fn an_install_of_some_namespaces_judges_only_their_names() {
        let candidates = [
            named("Template", "t-a", "team-a-web-0000ffff"),
            named("Template", "t-ab", "team-ab-web-0000fffe"),
            named("Template", "t-b", "team-b-web-0000fffd"),
        ];
        let scope = Scope::Namespaces(vec!["team-a".into()]);
        let found = orphans(
            &candidates,
            &ClusterObjects::default(),
            &HashSet::new(),
            &scope,
            None,
        );
        assert_eq!(ids(&found), vec!["t-a"], "team-ab is not team-a");
        let all = orphans(
            &candidates,
            &ClusterObjects::default(),
            &HashSet::new(),
            &Scope::Cluster,
            None,
        );
        assert_eq!(all.len(), 3);
    }

    #[test]
    fn an_install_never_judges_another_installs_remote_objects() {
        // Two clusters, one key: each install's remote objects carry its tag.
        let env = ["GPUCLOUD_OBJECT_UID=uid-x", "GPUCLOUD_INSTALL_TAG=bbbbbb"];
        let pod = remote_pod("p-theirs", &env, "RUNNING");
        let candidates = [
            named("NetworkVolume", "v-mine", "team-a-lost-0000ffff-iaaaaaa"),
            named("NetworkVolume", "v-theirs", "team-a-lost-0000fffe-ibbbbbb"),
            named("NetworkVolume", "v-before-tags", "team-a-old-0000fffd"),
            pod_candidate(&pod).unwrap(),
        ];
        let judge = |mine| {
            let found = orphans(
                &candidates,
                &ClusterObjects::default(),
                &HashSet::new(),
                &Scope::Cluster,
                mine,
            );
            found.into_iter().map(|o| o.id).collect::<Vec<_>>()
        };
        assert_eq!(judge(Some("aaaaaa")), vec!["v-mine", "v-before-tags"]);
        assert_eq!(
            judge(Some("bbbbbb")),
            vec!["p-theirs", "v-theirs", "v-before-tags"]
        );
        // An install that does not know its own tag judges only untagged objects.
        assert_eq!(judge(None), vec!["v-before-tags"]);
    }

    #[test]
    fn a_uid_an_id_and_a_prefix_are_told_apart() {
        // The cluster holds an object whose UID reads like a remote id, and that knows a
        // remote id that reads like a UID prefix: neither is taken for the other.
        let mut cluster = ClusterObjects::default();
        cluster.add(Some("v-lost"), ["0000ffff"]);
        let candidates = [named("NetworkVolume", "v-lost", "team-a-old-0000ffff")];
        let found = orphans(
            &candidates,
            &cluster,
            &HashSet::new(),
            &Scope::Cluster,
            None,
        );
        assert_eq!(
            ids(&found),
            vec!["v-lost"],
            "not held by a UID nor by an id"
        );
        let pod = remote_pod("p", &[&format!("{TAG_ENV}=0000ffff")], "RUNNING");
        let found = orphans(
            &[pod_candidate(&pod).unwrap()],
            &cluster,
            &HashSet::new(),
            &Scope::Cluster,
            None,
        );
        assert_eq!(ids(&found), vec!["p"], "a known id is not a UID");
    }

    #[test]
    fn the_cluster_before_and_after_a_listing_both_count() {
        let candidates = [
            named("Endpoint", "e-new", "ns-made-meanwhile-aaaaaaaa"),
            named("Endpoint", "e-deleted", "ns-deleted-meanwhile-bbbbbbbb"),
        ];
        let mut before = ClusterObjects::default();
        before.add(Some("bbbbbbbb-0000-0000-0000-000000000000"), []);
        let mut after = ClusterObjects::default();
        after.add(Some("aaaaaaaa-0000-0000-0000-000000000000"), []);
        let both = before.union(&after);
        assert!(orphans(&candidates, &both, &HashSet::new(), &Scope::Cluster, None).is_empty());
    }
}
