//! The manifests of `examples/`, built into the binary so that `demo` works from anywhere,
//! and the emulator state they expect.

use gpucloud_emulator::Fixtures;
use gpucloud_emulator::model::PodFixture;
use kube::api::DynamicObject;

/// Every file of `examples/`, by file name, in the order the demo applies them.
pub const EXAMPLES: &[(&str, &str)] = &[
    (
        "gpu-pod-fallback.yaml",
        include_str!("../../examples/gpu-pod-fallback.yaml"),
    ),
    (
        "office-hours.yaml",
        include_str!("../../examples/office-hours.yaml"),
    ),
    (
        "endpoint-on-volume.yaml",
        include_str!("../../examples/endpoint-on-volume.yaml"),
    ),
    (
        "grow-volume.yaml",
        include_str!("../../examples/grow-volume.yaml"),
    ),
    (
        "adopt-pod.yaml",
        include_str!("../../examples/adopt-pod.yaml"),
    ),
    (
        "team-budget.yaml",
        include_str!("../../examples/team-budget.yaml"),
    ),
    (
        "private-image-endpoint.yaml",
        include_str!("../../examples/private-image-endpoint.yaml"),
    ),
    (
        "training-cluster.yaml",
        include_str!("../../examples/training-cluster.yaml"),
    ),
    ("cpu-pod.yaml", include_str!("../../examples/cpu-pod.yaml")),
    (
        "lb-endpoint.yaml",
        include_str!("../../examples/lb-endpoint.yaml"),
    ),
];

/// Kinds whose platform object only REST v2 has (the seed API has no Instant Clusters).
const V2_ONLY_KINDS: &[&str] = &["Cluster"];

/// Whether `object` can become Ready with the operator speaking `platform_api` (`v2` or
/// `seed`): on the seed API a Cluster, a CPU Pod, a Pod on the global network, and an
/// Endpoint that is a load balancer or runs on GPU pools or CPU workers, only report
/// `UnsupportedByBackend`, so the demo leaves them out there rather than wait for them.
pub fn runs_on(platform_api: &str, object: &DynamicObject) -> bool {
    let kind = object.types.as_ref().map(|t| t.kind.as_str());
    platform_api != "seed"
        || !(kind.is_some_and(|k| V2_ONLY_KINDS.contains(&k))
            || v2_only_pod(kind, object)
            || v2_only_endpoint(kind, object))
}

/// A Pod with `spec.cpu` or `spec.globalNetworking: true`, which only REST v2 deploys.
fn v2_only_pod(kind: Option<&str>, object: &DynamicObject) -> bool {
    let spec = &object.data["spec"];
    kind == Some("Pod") && (!spec["cpu"].is_null() || spec["globalNetworking"] == true)
}

/// An Endpoint that is a load balancer, or runs on GPU pools or CPU workers: REST v2 only.
fn v2_only_endpoint(kind: Option<&str>, object: &DynamicObject) -> bool {
    let spec = &object.data["spec"];
    kind == Some("Endpoint")
        && (spec["type"] == "LoadBalancer"
            || !spec["gpu"]["pools"].is_null()
            || !spec["cpu"].is_null())
}

/// Id of the pod that `examples/adopt-pod.yaml` adopts.
pub const ADOPTED_POD_ID: &str = "legacy0notebook";

/// The emulator's built-in catalog plus what the examples expect to find on the platform:
/// the pod that `adopt-pod.yaml` takes over, made by hand long ago.
pub fn fixtures() -> Fixtures {
    let mut fixtures = Fixtures::built_in();
    fixtures.pods.push(PodFixture {
        id: Some(ADOPTED_POD_ID.into()),
        name: "legacy-notebook".into(),
        image_name: "runpod/pytorch:2.4.0-py3.11-cuda12.4.1-devel-ubuntu22.04".into(),
        gpu_type_id: "NVIDIA RTX A6000".into(),
        gpu_count: 1,
        secure_cloud: Some(true),
        stopped: false,
    });
    fixtures
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_of_examples_is_built_in() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".yaml"))
            .collect();
        on_disk.sort();
        let mut built_in: Vec<String> = EXAMPLES.iter().map(|(f, _)| f.to_string()).collect();
        built_in.sort();
        assert_eq!(on_disk, built_in);
    }

    #[test]
    fn the_seed_backend_leaves_the_clusters_cpu_pods_and_load_balancer_out_and_nothing_else() {
        let objects: Vec<DynamicObject> = EXAMPLES
            .iter()
            .flat_map(|(f, text)| crate::demo::apply::parse_documents(text, f).unwrap())
            .collect();
        let kinds = |api: &str| -> Vec<String> {
            objects
                .iter()
                .filter(|o| runs_on(api, o))
                .map(|o| o.types.clone().unwrap().kind)
                .collect()
        };
        assert_eq!(kinds("v2").len(), objects.len());
        assert!(kinds("v2").contains(&"Cluster".to_string()));
        let seed = kinds("seed");
        assert!(!seed.contains(&"Cluster".to_string()), "{seed:?}");
        let cpu_pods = objects
            .iter()
            .filter(|o| o.types.as_ref().unwrap().kind == "Pod" && !o.data["spec"]["cpu"].is_null())
            .count();
        assert_eq!(cpu_pods, 1, "examples/cpu-pod.yaml");
        let left_out = objects.len() - seed.len();
        // Every Cluster, the CPU pod, and the one load-balancing Endpoint.
        assert_eq!(
            left_out,
            kinds("v2").iter().filter(|k| *k == "Cluster").count() + cpu_pods + 1
        );
        assert!(
            seed.contains(&"Endpoint".to_string()),
            "queue endpoints stay"
        );
    }

    #[test]
    fn the_adopt_example_names_the_fixture_pod() {
        let (_, text) = EXAMPLES
            .iter()
            .find(|(f, _)| *f == "adopt-pod.yaml")
            .unwrap();
        assert!(text.contains(&format!("gpucloud.io/external-id: {ADOPTED_POD_ID}")));
        fixtures().check().unwrap();
    }
}
