//! The CPU side of the catalog: where a CPU pod of a vCPU count can go, and which data
//! centers are on the global network. Both are REST v2 reads (the seed API has neither).

use super::super::error::PlatformError;
use super::super::v2;
use super::catalog::{Catalog, level};
use super::pods_cpu::CpuOffer;

type Result<T> = std::result::Result<T, PlatformError>;

impl Catalog {
    /// Every CPU flavor, per data center, for pods of `vcpu_count` vCPUs: one call
    /// (`GET /v2/catalog/cpus?include=AVAILABILITY&product=POD&vcpuCount=n`).
    pub async fn cpu_offers(&self, vcpu_count: u32) -> Result<Vec<CpuOffer>> {
        let query = v2::CpuQuery {
            availability: true,
            products: vec![v2::Product::Pod],
            vcpu_count: Some(vcpu_count),
        };
        let flavors = self.client().v2().list_cpu_types(&query).await?;
        Ok(v2_cpu_offers(flavors, vcpu_count))
    }

    /// Ids of the data centers that offer global networking: one call
    /// (`GET /v2/catalog/datacenters?globalNetwork=true`).
    pub async fn global_network_data_centers(&self) -> Result<Vec<String>> {
        let query = v2::DataCenterQuery {
            global_network: Some(true),
            ..Default::default()
        };
        let dcs = self.client().v2().list_data_centers(&query).await?;
        Ok(dcs
            .into_iter()
            .filter(|d| d.global_network)
            .map(|d| d.id)
            .collect())
    }
}

/// Pure: the offers of one CPU catalog answer for `vcpu_count` vCPUs: one per flavor and
/// data center, most available first; a flavor in no data center is one offer out of
/// stock (still known, never placed).
pub fn v2_cpu_offers(flavors: Vec<v2::CpuType>, vcpu_count: u32) -> Vec<CpuOffer> {
    let mut offers = Vec::new();
    for f in flavors {
        let per_vcpu = f.price.secure_per_vcpu;
        let price = (per_vcpu > 0.0).then(|| per_vcpu * f64::from(vcpu_count));
        let offer = |data_center_id: Option<String>, in_stock: bool| CpuOffer {
            flavor_id: f.id.clone(),
            data_center_id,
            price_per_hour: price,
            in_stock,
            vcpu_min: f.vcpu.min,
            vcpu_max: f.vcpu.max,
        };
        let mut dcs = f.data_centers.clone().unwrap_or_default();
        dcs.sort_by_key(|d| std::cmp::Reverse(level(&d.availability)));
        if dcs.is_empty() {
            offers.push(offer(None, false));
        }
        for dc in dcs {
            let in_stock = level(&dc.availability) > 0;
            offers.push(offer(Some(dc.id), in_stock));
        }
    }
    offers
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn offers_are_per_flavor_and_data_center_priced_for_the_whole_pod() {
        let flavors: Vec<v2::CpuType> = serde_json::from_value(json!([
            {"id": "cpu3c", "name": "C3", "group": "g", "vcpu": {"min": 2, "max": 32},
             "ramGbPerVcpu": 2, "price": {"securePerVcpu": 0.03, "serverlessPerVcpu": 0.04},
             "dataCenters": [
                {"id": "US-TX-3", "name": "", "availability": "LOW"},
                {"id": "EU-RO-1", "name": "", "availability": "HIGH"},
                {"id": "EU-SE-1", "name": "", "availability": "NONE"}]},
            {"id": "cpu5g", "name": "G5", "group": "g", "vcpu": {"min": 2, "max": 32},
             "ramGbPerVcpu": 4, "price": {"securePerVcpu": 0.05, "serverlessPerVcpu": 0.06}}
        ]))
        .unwrap();
        let offers = v2_cpu_offers(flavors, 4);
        let got: Vec<(&str, Option<&str>, bool)> = offers
            .iter()
            .map(|o| {
                (
                    o.flavor_id.as_str(),
                    o.data_center_id.as_deref(),
                    o.in_stock,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("cpu3c", Some("EU-RO-1"), true),
                ("cpu3c", Some("US-TX-3"), true),
                ("cpu3c", Some("EU-SE-1"), false),
                ("cpu5g", None, false),
            ]
        );
        assert!((offers[0].price_per_hour.unwrap() - 0.12).abs() < 1e-9);
        assert_eq!((offers[0].vcpu_min, offers[0].vcpu_max), (2, 32));
    }
}
