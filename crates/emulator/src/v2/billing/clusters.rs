//! `/v2/billing/clusters`: Instant Clusters billed from their member pods' stretches, priced
//! as any pod's (GPU at the member's hourly cost, disk per GB), one record per cluster and
//! bucket. Clusters are GPU-only, so there is no CPU amount. Inter-node traffic runs on the
//! emulated overlay, which carries none, so it costs nothing.

use super::*;

/// Cluster amounts of one cluster in one bucket.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct ClusterAmounts {
    pub gpu: f64,
    pub disk: f64,
    pub networking: f64,
}

impl ClusterAmounts {
    pub(super) fn total(&self) -> f64 {
        self.gpu + self.disk + self.networking
    }
}

impl Amounts for ClusterAmounts {
    fn add(&mut self, o: &Self) {
        self.gpu += o.gpu;
        self.disk += o.disk;
        self.networking += o.networking;
    }

    fn json(&self) -> Value {
        json!({
            "totalAmount": money(self.total()),
            "gpuAmount": money(self.gpu),
            "diskAmount": money(self.disk),
            "networkingAmount": money(self.networking),
        })
    }
}

/// (cluster id, bucket start, amounts) for every cluster whose members ran in a bucket,
/// deleted clusters included.
pub fn cluster_records(
    world: &World,
    clock: &Clock,
    w: &Window,
    cluster_id: Option<&str>,
) -> Rows<ClusterAmounts> {
    let now = clock.now();
    let members = world
        .cloud
        .pod_usage()
        .iter()
        .filter_map(|it| it.cluster_id.as_deref().map(|c| (c, it)));
    let members: Vec<(&str, &PodInterval)> = members.collect();
    bucket_records(
        clock,
        w,
        cluster_id,
        members.iter(),
        |(c, it)| (*c, it.from, it.to.unwrap_or(now)),
        |(_, it), h| {
            let pod = interval_amounts(it, h);
            ClusterAmounts {
                gpu: pod.gpu,
                disk: pod.disk,
                networking: 0.0,
            }
        },
    )
}

/// `/v2/billing/clusters`.
pub(super) struct ClusterHistory;

impl History for ClusterHistory {
    type Amounts = ClusterAmounts;
    const ID_FIELD: &'static str = "clusterId";
    const UNIQUE_COUNT: &'static str = "uniqueClusterCount";

    fn filter(q: &BillingQuery) -> Option<&str> {
        q.cluster_id.as_deref()
    }

    fn records(app: &App, world: &World, w: &Window, filter: Option<&str>) -> Rows<ClusterAmounts> {
        cluster_records(world, &app.clock, w, filter)
    }
}
