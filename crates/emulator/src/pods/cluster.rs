//! The pods of an Instant Cluster: placed by whole machines, all in one data center, each
//! member on a machine of its own with the cluster's GPU count free; and the member pods as
//! the cloud lists them apart from standalone pods.
//!
//! Members are ordinary pods (same GPU accounting, pricing and usage), so stock, the catalog
//! and billing see the GPUs a cluster holds without knowing clusters.

use super::*;

/// `count` machines that pass `fits`, all in the first data center of `order` that has
/// that many (machines in their own order); `None` when no data center has enough.
pub fn whole_machines<'a>(
    machines: &'a [Machine],
    order: &[String],
    count: usize,
    fits: impl Fn(&Machine) -> bool,
) -> Option<Vec<&'a Machine>> {
    order.iter().find_map(|dc| {
        let here: Vec<&Machine> = machines
            .iter()
            .filter(|m| &m.data_center_id == dc && fits(m))
            .take(count)
            .collect();
        (here.len() == count && count > 0).then_some(here)
    })
}

impl Cloud {
    /// Deploys one pod of `req` per membership, each on its own machine, all in one data
    /// center: the first of the request's data centers (or of the catalog's) with enough
    /// machines. Nothing is deployed unless every member fits (the platform's capacity
    /// error otherwise). Returns the members' ids in the order of `members`.
    pub fn deploy_cluster(
        &mut self,
        req: &DeployRequest,
        members: Vec<Membership>,
        now: Millis,
    ) -> Result<Vec<String>, PodError> {
        let checked = self.check_deploy(req, false)?;
        let ask = self.gpu_ask(req)?;
        let order = Self::allowed_data_centers(req).unwrap_or_else(|| self.data_centers.clone());
        let placements: Vec<Placement> =
            whole_machines(&self.machines, &order, members.len(), |m| ask.fits(m))
                .ok_or(PodError::NoCapacity)?
                .into_iter()
                .map(|m| ask.placement_on(m))
                .collect();
        Ok(placements
            .into_iter()
            .zip(members)
            .map(|(placement, member)| {
                let seq = self.install(req, &checked, placement, Some(member), now);
                self.pods[&seq].id.clone()
            })
            .collect())
    }

    /// Pods that belong to no cluster: what the pod listings show by default.
    pub fn standalone_pods(&self) -> impl Iterator<Item = &Pod> {
        self.pods().filter(|p| p.cluster.is_none())
    }

    /// A pod by id unless it is a cluster member (surfaces that know no clusters).
    pub fn standalone_pod(&self, id: &str) -> Option<&Pod> {
        self.pod(id).filter(|p| p.cluster.is_none())
    }

    /// The member pods of a cluster, by rank.
    pub fn members(&self, cluster_id: &str) -> Vec<&Pod> {
        let mut members: Vec<&Pod> = self
            .pods()
            .filter(|p| {
                p.cluster
                    .as_ref()
                    .is_some_and(|m| m.cluster_id == cluster_id)
            })
            .collect();
        members.sort_by_key(|p| p.cluster.as_ref().map(|m| m.rank));
        members
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(id: &str, dc: &str, free: u32) -> Machine {
        Machine {
            id: id.into(),
            gpu_type_id: "G".into(),
            cpu_flavor: None,
            data_center_id: dc.into(),
            secure: true,
            total: 8,
            free,
            public_ip: "203.0.113.1".into(),
            cuda_versions: vec!["12.8".into()],
        }
    }

    fn ids(picked: Option<Vec<&Machine>>) -> Option<Vec<&str>> {
        picked.map(|ms| ms.into_iter().map(|m| m.id.as_str()).collect())
    }

    #[test]
    fn members_take_whole_machines_in_one_data_center() {
        let machines = [
            machine("a1", "A", 8),
            machine("b1", "B", 8),
            machine("a2", "A", 4),
            machine("b2", "B", 8),
            machine("a3", "A", 8),
        ];
        let order = ["A".to_string(), "B".to_string()];
        let four_free = |m: &Machine| m.free >= 4;
        let eight_free = |m: &Machine| m.free >= 8;
        // Three machines of A have 4 free: A is preferred and has them.
        assert_eq!(
            ids(whole_machines(&machines, &order, 3, four_free)),
            Some(vec!["a1", "a2", "a3"])
        );
        // Eight free per node: A still has two such machines.
        assert_eq!(
            ids(whole_machines(&machines, &order, 2, eight_free)),
            Some(vec!["a1", "a3"])
        );
        let b_first = ["B".to_string(), "A".to_string()];
        assert_eq!(
            ids(whole_machines(&machines, &b_first, 2, eight_free)),
            Some(vec!["b1", "b2"])
        );
        // Four machines with 8 free exist, but never four in one data center.
        assert_eq!(ids(whole_machines(&machines, &order, 4, eight_free)), None);
        assert_eq!(ids(whole_machines(&machines, &order, 3, eight_free)), None);
        // A data center left out of the order is never used.
        let only_b = ["B".to_string()];
        assert_eq!(ids(whole_machines(&machines, &only_b, 3, four_free)), None);
    }
}
