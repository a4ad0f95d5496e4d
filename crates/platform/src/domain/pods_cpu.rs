//! CPU pods: where one can go ([`CpuOffer`]) and the deploy on exactly one CPU flavor in
//! one data center ([`CpuPlacement`]).
//!
//! Only REST v2 has CPU pods: the seed API's deploy always asks for GPUs. A CPU pod runs
//! in the secure cloud only and takes no host-local persistent volume (the document
//! refuses `mounts.persistent` with `cpu`); its memory follows from the flavor.

use super::super::error::PlatformError;
use super::super::v2;
use super::pods::{Pod, PodRequest, Pods, v2_create_body};

type Result<T> = std::result::Result<T, PlatformError>;

/// A CPU flavor in one data center, for a given vCPU count.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuOffer {
    pub flavor_id: String,
    /// `None`: the flavor is offered in no data center now.
    pub data_center_id: Option<String>,
    /// Hourly price of the whole pod (price per vCPU × vCPUs); `None` when not priced.
    pub price_per_hour: Option<f64>,
    /// The catalog shows room for the vCPU count asked.
    pub in_stock: bool,
    /// vCPU counts the flavor allows, `min..=max`.
    pub vcpu_min: u32,
    pub vcpu_max: u32,
}

/// The placement a CPU deploy is tried with.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CpuPlacement {
    pub flavor_id: String,
    pub data_center_id: Option<String>,
    pub vcpu_count: u32,
}

impl Pods {
    /// Deploys a CPU pod on exactly `placement`. A capacity refusal is
    /// `ErrorClass::Capacity`, as for GPU pods; the caller tries its next placement.
    pub async fn deploy_cpu(&self, req: &PodRequest, placement: &CpuPlacement) -> Result<Pod> {
        if !self.supports_cpu_and_global_networking() {
            return Err(PlatformError::invalid_input(
                "cpu",
                "the seed API deploys GPU pods only; use the REST v2 backend for CPU pods",
            ));
        }
        self.create_v2(&v2_cpu_create_request(req, placement)).await
    }
}

/// The REST v2 create of a CPU pod: the flavor and vCPUs instead of a GPU, the secure
/// cloud, and no persistent mount (a network volume still mounts).
pub(super) fn v2_cpu_create_request(req: &PodRequest, placement: &CpuPlacement) -> v2::CreatePod {
    let mut body = v2_create_body(req, placement.data_center_id.as_deref());
    if let Some(mounts) = &mut body.mounts {
        mounts.persistent = None;
    }
    if body.mounts.as_ref().is_some_and(|m| m.network.is_none()) {
        body.mounts = None;
    }
    v2::CreatePod {
        cloud: Some(v2::Cloud::Secure),
        cpu: Some(v2::CreateCpuConfig {
            id: placement.flavor_id.clone(),
            vcpu_count: placement.vcpu_count,
        }),
        ..body
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(volume_gb: i32, network: Option<&str>) -> PodRequest {
        PodRequest {
            name: "n".into(),
            image: "img:1".into(),
            container_disk_gb: 10,
            volume_gb,
            network_volume_id: network.map(str::to_string),
            ..Default::default()
        }
    }

    #[test]
    fn a_cpu_create_asks_for_the_flavor_in_the_secure_cloud_without_a_persistent_volume() {
        let at = CpuPlacement {
            flavor_id: "cpu3c".into(),
            data_center_id: Some("EU-RO-1".into()),
            vcpu_count: 4,
        };
        let body = serde_json::to_value(v2_cpu_create_request(&request(5, None), &at)).unwrap();
        assert_eq!(body["cpu"], json!({"id": "cpu3c", "vcpuCount": 4}));
        assert_eq!(body["cloud"], "SECURE");
        assert_eq!(body["dataCenterIds"], json!(["EU-RO-1"]));
        assert!(body.get("gpu").is_none(), "{body}");
        assert!(body.get("mounts").is_none(), "{body}");
        let body =
            serde_json::to_value(v2_cpu_create_request(&request(0, Some("vol-1")), &at)).unwrap();
        assert_eq!(
            body["mounts"],
            json!({"network": [{"volumeId": "vol-1", "path": "/workspace"}]})
        );
    }
}
