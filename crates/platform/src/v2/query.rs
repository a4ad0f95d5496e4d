//! Query strings of the v2 listings: arrays travel comma-separated in one parameter
//! (`product=POD,SERVERLESS`), and only what is set is sent.

use super::types::{BillingWindow, CpuQuery, DataCenterQuery, GpuQuery, LogQuery, PodListQuery};

/// Name and value pairs, in a stable order.
pub(crate) type Pairs = Vec<(&'static str, String)>;

fn join<T: AsRef<str>>(items: impl IntoIterator<Item = T>) -> String {
    items
        .into_iter()
        .map(|s| s.as_ref().to_owned())
        .collect::<Vec<_>>()
        .join(",")
}

fn push_list<T: AsRef<str>>(pairs: &mut Pairs, name: &'static str, items: &[T]) {
    if !items.is_empty() {
        pairs.push((name, join(items)));
    }
}

fn push_opt(pairs: &mut Pairs, name: &'static str, value: Option<impl ToString>) {
    if let Some(v) = value {
        pairs.push((name, v.to_string()));
    }
}

pub(crate) fn pods(q: &PodListQuery) -> Pairs {
    let mut p = Pairs::new();
    push_opt(&mut p, "includeClusterPods", q.include_cluster_pods);
    p
}

/// The query of a log stream; `last_event_id` travels as a header, not here.
pub(crate) fn logs(q: &LogQuery) -> Pairs {
    let mut p = Pairs::new();
    push_opt(&mut p, "source", q.source.as_ref());
    push_opt(&mut p, "tail", q.tail);
    push_opt(&mut p, "since", q.since.as_ref());
    p
}

pub(crate) fn gpus(q: &GpuQuery) -> Pairs {
    let mut p = Pairs::new();
    if q.availability {
        p.push(("include", "AVAILABILITY".to_owned()));
    }
    let products: Vec<&str> = q.products.iter().map(|x| x.as_str()).collect();
    push_list(&mut p, "product", &products);
    push_opt(&mut p, "count", q.count);
    push_opt(&mut p, "cloud", q.cloud.as_ref());
    push_list(&mut p, "countryCodes", &q.country_codes);
    push_list(&mut p, "cudaVersions", &q.cuda_versions);
    push_opt(&mut p, "minCudaVersion", q.min_cuda_version.as_ref());
    p
}

pub(crate) fn cpus(q: &CpuQuery) -> Pairs {
    let mut p = Pairs::new();
    if q.availability {
        p.push(("include", "AVAILABILITY".to_owned()));
    }
    let products: Vec<&str> = q.products.iter().map(|x| x.as_str()).collect();
    push_list(&mut p, "product", &products);
    push_opt(&mut p, "vcpuCount", q.vcpu_count);
    p
}

pub(crate) fn data_centers(q: &DataCenterQuery) -> Pairs {
    let mut p = Pairs::new();
    let mut include = Vec::new();
    if q.gpu_availability {
        include.push("GPU_AVAILABILITY");
    }
    if q.cpu_availability {
        include.push("CPU_AVAILABILITY");
    }
    push_list(&mut p, "include", &include);
    let regions: Vec<&str> = q.regions.iter().map(|x| x.as_str()).collect();
    push_list(&mut p, "regions", &regions);
    let tiers: Vec<&str> = q.network_volume_types.iter().map(|x| x.as_str()).collect();
    push_list(&mut p, "networkVolumeTypes", &tiers);
    let compliance: Vec<&str> = q.compliance.iter().map(|x| x.as_str()).collect();
    push_list(&mut p, "compliance", &compliance);
    push_opt(&mut p, "globalNetwork", q.global_network);
    p
}

/// A billing window plus the one-resource filter of the route (`podId`, ...).
pub(crate) fn billing(w: &BillingWindow, filter: Option<(&'static str, &str)>) -> Pairs {
    let mut p = Pairs::new();
    push_opt(&mut p, "startTime", w.start_time.as_ref());
    push_opt(&mut p, "endTime", w.end_time.as_ref());
    push_opt(&mut p, "bucketSize", w.bucket_size.as_ref());
    push_opt(&mut p, "lastN", w.last_n);
    if let Some((name, id)) = filter {
        p.push((name, id.to_owned()));
    }
    p
}
