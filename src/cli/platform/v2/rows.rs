//! How each REST v2 wire type shows as one row of a table.

use crate::cli::platform::output::Row;
use gpucloud_platform::v2::{
    BillingRecord, CpuType, DataCenter, Endpoint, GpuType, NetworkVolume,
    NetworkVolumeBillingRecord, Pod, PodBillingRecord, Registry, Release, ServerlessBillingRecord,
    Template, Worker,
};

/// A cell for an absent value.
fn or_dash(v: Option<impl ToString>) -> String {
    v.map(|v| v.to_string()).unwrap_or_else(|| "-".into())
}

fn money(v: f64) -> String {
    format!("{v:.2}")
}

fn join(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(",")
}

impl Row for Pod {
    const COLUMNS: &'static [&'static str] = &[
        "ID",
        "NAME",
        "STATUS",
        "COMPUTE",
        "IMAGE",
        "DATA_CENTER",
        "COST_PER_HR",
    ];

    fn cells(&self) -> Vec<String> {
        let compute = match (&self.gpu, &self.cpu) {
            (Some(g), _) => format!("{}x {}", g.count.unwrap_or(1), g.id),
            (None, Some(c)) => format!("{} {} vCPU", c.id, c.vcpu_count),
            (None, None) => "-".into(),
        };
        vec![
            self.id.clone(),
            self.name.clone(),
            self.status.to_string(),
            compute,
            self.container.image.clone(),
            or_dash(self.data_center_id.as_ref()),
            money(self.cost),
        ]
    }
}

impl Row for Endpoint {
    const COLUMNS: &'static [&'static str] = &["ID", "NAME", "TYPE", "COMPUTE", "WORKERS", "IMAGE"];

    fn cells(&self) -> Vec<String> {
        let compute = match (&self.gpu, &self.cpu) {
            (Some(g), _) => g.pools.join(","),
            (None, Some(c)) => join(c.iter().map(|c| c.id.clone())),
            (None, None) => "-".into(),
        };
        let bound = |v: Option<u32>| v.map(|v| v.to_string()).unwrap_or_else(|| "?".into());
        vec![
            self.id.clone(),
            self.name.clone(),
            or_dash(self.endpoint_type.as_ref()),
            compute,
            format!("{}..{}", bound(self.workers.min), bound(self.workers.max)),
            self.container.image.clone().unwrap_or_default(),
        ]
    }
}

impl Row for Worker {
    const COLUMNS: &'static [&'static str] = &[
        "ID",
        "STATUS",
        "STALE",
        "GPUS",
        "GPU_TYPE",
        "DATA_CENTER",
        "UPTIME_S",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.id.clone(),
            self.status.to_string(),
            self.is_stale.to_string(),
            self.gpu_count.to_string(),
            or_dash(self.gpu_type_id.as_ref()),
            or_dash(self.data_center_id.as_ref()),
            or_dash(self.uptime_seconds),
        ]
    }
}

impl Row for Release {
    const COLUMNS: &'static [&'static str] =
        &["ID", "VERSION", "SOURCE", "WORKERS", "CREATED", "CHANGED"];

    fn cells(&self) -> Vec<String> {
        vec![
            self.id.clone(),
            or_dash(self.version),
            self.source.to_string(),
            self.worker_count.to_string(),
            self.created_at.clone(),
            join(self.diff.iter().map(|d| d.field.clone())),
        ]
    }
}

impl Row for Template {
    const COLUMNS: &'static [&'static str] =
        &["ID", "NAME", "IMAGE", "SERVERLESS", "PUBLIC", "CATEGORY"];

    fn cells(&self) -> Vec<String> {
        vec![
            self.id.clone(),
            self.name.clone(),
            self.container.image.clone(),
            self.serverless.to_string(),
            self.public.to_string(),
            or_dash(self.category.as_ref()),
        ]
    }
}

impl Row for NetworkVolume {
    const COLUMNS: &'static [&'static str] = &["ID", "NAME", "SIZE_GB", "DATA_CENTER", "TYPE"];

    fn cells(&self) -> Vec<String> {
        vec![
            self.id.clone(),
            self.name.clone(),
            self.size.to_string(),
            self.data_center.clone(),
            or_dash(self.volume_type.as_ref()),
        ]
    }
}

impl Row for Registry {
    const COLUMNS: &'static [&'static str] = &["ID", "NAME"];

    fn cells(&self) -> Vec<String> {
        vec![self.id.clone(), self.name.clone()]
    }
}

impl Row for GpuType {
    const COLUMNS: &'static [&'static str] = &[
        "ID",
        "NAME",
        "MEMORY_GB",
        "SECURE_PRICE",
        "COMMUNITY_PRICE",
        "POOL",
        "AVAILABILITY",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.id.clone(),
            self.name.clone(),
            self.memory.to_string(),
            money(self.price.secure),
            money(self.price.community),
            or_dash(self.pool.as_ref()),
            or_dash(self.availability.as_ref()),
        ]
    }
}

impl Row for CpuType {
    const COLUMNS: &'static [&'static str] = &[
        "ID",
        "NAME",
        "GROUP",
        "VCPUS",
        "RAM_GB_PER_VCPU",
        "PRICE_PER_VCPU",
        "AVAILABILITY",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.id.clone(),
            self.name.clone(),
            self.group.clone(),
            format!("{}..{}", self.vcpu.min, self.vcpu.max),
            format!("{}", self.ram_gb_per_vcpu),
            format!("{:.3}", self.price.secure_per_vcpu),
            or_dash(self.availability.as_ref()),
        ]
    }
}

impl Row for DataCenter {
    const COLUMNS: &'static [&'static str] = &[
        "ID",
        "NAME",
        "REGION",
        "VOLUME_TYPES",
        "GLOBAL_NETWORK",
        "GPUS_AVAILABLE",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.id.clone(),
            self.name.clone(),
            self.region.to_string(),
            join(self.network_volume_types.iter().map(ToString::to_string)),
            self.global_network.to_string(),
            or_dash(self.gpu_availability.as_ref().map(|g| {
                join(
                    g.iter()
                        .filter(|a| a.availability.as_str() != "NONE")
                        .map(|a| a.id.clone()),
                )
            })),
        ]
    }
}

impl Row for BillingRecord {
    const COLUMNS: &'static [&'static str] =
        &["START", "END", "TOTAL", "PODS", "SERVERLESS", "STORAGE"];

    fn cells(&self) -> Vec<String> {
        let a = &self.amounts;
        vec![
            self.start_time.clone(),
            self.end_time.clone(),
            money(a.total_amount),
            money(a.pod_gpu_amount + a.pod_cpu_amount + a.pod_disk_amount),
            money(
                a.serverless_gpu_amount
                    + a.serverless_cpu_amount
                    + a.serverless_disk_amount
                    + a.serverless_fee_amount,
            ),
            money(a.storage_standard_amount + a.storage_high_performance_amount),
        ]
    }
}

impl Row for PodBillingRecord {
    const COLUMNS: &'static [&'static str] =
        &["START", "END", "POD", "TOTAL", "GPU", "CPU", "DISK"];

    fn cells(&self) -> Vec<String> {
        let a = &self.amounts;
        vec![
            self.start_time.clone(),
            self.end_time.clone(),
            self.pod_id.clone(),
            money(a.total_amount),
            money(a.gpu_amount),
            money(a.cpu_amount),
            money(a.disk_amount),
        ]
    }
}

impl Row for ServerlessBillingRecord {
    const COLUMNS: &'static [&'static str] = &[
        "START", "END", "ENDPOINT", "TOTAL", "GPU", "CPU", "DISK", "FEE",
    ];

    fn cells(&self) -> Vec<String> {
        let a = &self.amounts;
        vec![
            self.start_time.clone(),
            self.end_time.clone(),
            self.serverless_id.clone(),
            money(a.total_amount),
            money(a.gpu_amount),
            money(a.cpu_amount),
            money(a.disk_amount),
            money(a.fee_amount),
        ]
    }
}

impl Row for NetworkVolumeBillingRecord {
    const COLUMNS: &'static [&'static str] = &[
        "START",
        "END",
        "VOLUME",
        "TOTAL",
        "STANDARD",
        "HIGH_PERFORMANCE",
    ];

    fn cells(&self) -> Vec<String> {
        let a = &self.amounts;
        vec![
            self.start_time.clone(),
            self.end_time.clone(),
            self.network_volume_id.clone(),
            money(a.total_amount),
            money(a.standard_amount),
            money(a.high_performance_amount),
        ]
    }
}
