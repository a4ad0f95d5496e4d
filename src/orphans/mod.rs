//! The orphan sweep: remote pods that carry this operator's ownership marker but have no
//! object in the cluster any more (a crash between the deploy and the status write, an
//! object deleted with its finalizer removed by hand).
//!
//! - The marker: a pod's env [`TAG_ENV`] holds the UID of the Pod object that deployed it.
//!   A pod whose tag names no Pod object of the cluster is an orphan.
//! - Released on purpose: a Pod deleted with `deletionPolicy: Orphan` (or while paused or
//!   observe-only) leaves its pod on the platform on purpose; the operator records the id
//!   in the ConfigMap [`released::CONFIG_MAP`] of its own namespace at that moment, and
//!   the sweep leaves recorded ids alone.
//! - Volumes and endpoints are recognised only by their name (`<namespace>-<name>-<uid8>`),
//!   which a person can also choose: the sweep does not count them.
//!
//! [`orphan_pods`] is the pure decision; [`cli`] is `gpucloud-operator orphans`.

pub mod cli;
pub mod released;

use std::collections::HashSet;

use serde::Serialize;

use crate::controller::pod::TAG_ENV;
use crate::platform::domain::{Pod as RemotePod, TERMINATED};

/// A remote object with the operator's marker and no object in the cluster.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Orphan {
    pub kind: &'static str,
    pub id: String,
    pub name: String,
    /// The UID its marker names.
    pub owner_uid: String,
    pub desired_status: String,
    pub cost_per_hour: Option<f64>,
}

/// Pure: the orphans among `remote`, given the UIDs of the cluster's Pod objects and the
/// ids released on purpose. A terminated pod is gone already, and a pod without the tag was
/// not deployed by the operator.
pub fn orphan_pods(
    remote: &[RemotePod],
    cluster_uids: &HashSet<String>,
    released: &HashSet<String>,
) -> Vec<Orphan> {
    let mut out: Vec<Orphan> = remote
        .iter()
        .filter(|p| p.desired_status != TERMINATED)
        .filter(|p| !released.contains(&p.id))
        .filter_map(|p| {
            let uid = p.env_value(TAG_ENV)?;
            (!cluster_uids.contains(uid)).then(|| Orphan {
                kind: "Pod",
                id: p.id.clone(),
                name: p.name.clone(),
                owner_uid: uid.to_string(),
                desired_status: p.desired_status.clone(),
                cost_per_hour: p.cost_per_hr,
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

    fn remote(id: &str, env: &[&str], status: &str) -> RemotePod {
        serde_json::from_value(json!({
            "id": id, "name": format!("ns-{id}-1234abcd"), "imageName": "i", "env": env,
            "machineId": "", "desiredStatus": status, "costPerHr": 0.69
        }))
        .unwrap()
    }

    #[test]
    fn a_tagged_pod_without_its_object_is_an_orphan_unless_released() {
        let tag = |uid: &str| format!("{TAG_ENV}={uid}");
        let (a, b, c) = (tag("uid-a"), tag("uid-b"), tag("uid-c"));
        let pods = vec![
            remote("live", &[&a], "RUNNING"),
            remote("lost", &[&b, "X=1"], "RUNNING"),
            remote("stopped", &[&b], "EXITED"),
            remote("released", &[&c], "RUNNING"),
            remote("gone", &[&b], "TERMINATED"),
            remote("hand-made", &["X=1"], "RUNNING"),
        ];
        let cluster: HashSet<String> = ["uid-a".to_string()].into();
        let released: HashSet<String> = ["released".to_string()].into();
        let found = orphan_pods(&pods, &cluster, &released);
        let ids: Vec<&str> = found.iter().map(|o| o.id.as_str()).collect();
        assert_eq!(ids, vec!["lost", "stopped"]);
        assert_eq!(found[0].owner_uid, "uid-b");
        assert_eq!(found[0].cost_per_hour, Some(0.69));
    }
}
