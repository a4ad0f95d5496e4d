//! URL building: paths under the `/v2` base, encoded ids, and the listings' filters.

use url::Url;

use super::build_url;
use super::query;
use super::types::*;

fn base() -> Url {
    Url::parse("http://127.0.0.1:8080/v2").unwrap()
}

fn url_of(segments: &[&str], q: &[(&'static str, String)]) -> String {
    build_url(&base(), segments, q).to_string()
}

#[test]
fn paths_go_under_the_v2_base_and_ids_are_encoded() {
    assert_eq!(url_of(&["pods"], &[]), "http://127.0.0.1:8080/v2/pods");
    assert_eq!(
        url_of(&["pods", "pod_1", "action"], &[]),
        "http://127.0.0.1:8080/v2/pods/pod_1/action"
    );
    let trailing = Url::parse("https://api.example/v2/").unwrap();
    assert_eq!(
        build_url(&trailing, &["network-volumes", "v1"], &[]).as_str(),
        "https://api.example/v2/network-volumes/v1"
    );
    assert_eq!(
        url_of(&["catalog", "gpus", "NVIDIA GeForce RTX 4090"], &[]),
        "http://127.0.0.1:8080/v2/catalog/gpus/NVIDIA%20GeForce%20RTX%204090"
    );
    assert_eq!(
        url_of(&["catalog", "gpus", "a/b?c"], &[]),
        "http://127.0.0.1:8080/v2/catalog/gpus/a%2Fb%3Fc"
    );
}

fn decoded(q: &[(&'static str, String)]) -> Vec<(String, String)> {
    build_url(&base(), &["x"], q)
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn gpu_filters_are_comma_separated_and_only_when_set() {
    assert!(query::gpus(&GpuQuery::default()).is_empty());
    let q = GpuQuery {
        availability: true,
        products: vec![Product::Pod, Product::Serverless],
        count: Some(2),
        cloud: Some(Cloud::Community),
        country_codes: vec!["FR".into(), "DE".into()],
        cuda_versions: vec!["12.8".into()],
        min_cuda_version: None,
    };
    assert_eq!(
        decoded(&query::gpus(&q)),
        pairs(&[
            ("include", "AVAILABILITY"),
            ("product", "POD,SERVERLESS"),
            ("count", "2"),
            ("cloud", "COMMUNITY"),
            ("countryCodes", "FR,DE"),
            ("cudaVersions", "12.8"),
        ])
    );
    let url = build_url(&base(), &["catalog", "gpus"], &query::gpus(&q));
    assert!(
        url.as_str().starts_with(
            "http://127.0.0.1:8080/v2/catalog/gpus?include=AVAILABILITY&product=POD%2CSERVERLESS"
        ),
        "{url}"
    );
}

#[test]
fn other_listing_filters() {
    assert!(query::pods(&PodListQuery::default()).is_empty());
    assert_eq!(
        decoded(&query::pods(&PodListQuery {
            include_cluster_pods: Some(true)
        })),
        pairs(&[("includeClusterPods", "true")])
    );
    assert_eq!(
        decoded(&query::cpus(&CpuQuery {
            availability: true,
            products: vec![Product::Pod],
            vcpu_count: Some(4)
        })),
        pairs(&[
            ("include", "AVAILABILITY"),
            ("product", "POD"),
            ("vcpuCount", "4")
        ])
    );
    assert_eq!(
        decoded(&query::data_centers(&DataCenterQuery {
            gpu_availability: true,
            cpu_availability: true,
            regions: vec![DataCenterRegion::Europe, DataCenterRegion::Asia],
            network_volume_types: vec![VolumeType::Standard],
            compliance: vec![Compliance::Gdpr, Compliance::Soc2Type2],
            global_network: Some(false),
        })),
        pairs(&[
            ("include", "GPU_AVAILABILITY,CPU_AVAILABILITY"),
            ("regions", "EUROPE,ASIA"),
            ("networkVolumeTypes", "STANDARD"),
            ("compliance", "GDPR,SOC_2_TYPE_2"),
            ("globalNetwork", "false"),
        ])
    );
    assert_eq!(
        decoded(&query::logs(&LogQuery {
            source: Some(LogSource::System),
            tail: Some(0),
            since: Some("2026-01-01T00:00:00Z".into()),
            last_event_id: Some("ignored-here".into()),
        })),
        pairs(&[
            ("source", "system"),
            ("tail", "0"),
            ("since", "2026-01-01T00:00:00Z")
        ])
    );
    let w = BillingWindow {
        bucket_size: Some(BillingBucketSize::Hour),
        last_n: Some(24),
        ..Default::default()
    };
    assert_eq!(
        decoded(&query::billing(&w, Some(("podId", "pod_1")))),
        pairs(&[("bucketSize", "hour"), ("lastN", "24"), ("podId", "pod_1")])
    );
    assert!(query::billing(&BillingWindow::default(), None).is_empty());
}
