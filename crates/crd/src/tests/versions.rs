//! The CRDs as published ([`crate::published`]): what the apiserver needs of a
//! multi-version CRD, with `v1alpha1` frozen and marked deprecated.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion,
};
use serde_json::Value;

use crate::published::deprecation_warning;

/// Every kind's CRD as the operator publishes it, in the order of its CRD stream.
fn both_versions() -> Vec<CustomResourceDefinition> {
    [
        crate::managed_crd::<crate::NetworkVolume>(),
        crate::managed_crd::<crate::Endpoint>(),
        crate::managed_crd::<crate::Pod>(),
        <crate::Budget as kube::CustomResourceExt>::crd(),
        crate::managed_crd::<crate::RegistryCredential>(),
        crate::managed_crd::<crate::Template>(),
        crate::managed_crd::<crate::Cluster>(),
    ]
    .into_iter()
    .map(crate::published)
    .collect()
}

fn version<'a>(
    crd: &'a CustomResourceDefinition,
    name: &str,
) -> &'a CustomResourceDefinitionVersion {
    let found: Vec<_> = crd
        .spec
        .versions
        .iter()
        .filter(|v| v.name == name)
        .collect();
    assert_eq!(found.len(), 1, "{}: {name}", crd.spec.names.kind);
    found[0]
}

fn schema(version: &CustomResourceDefinitionVersion) -> Value {
    let schema = version
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref());
    serde_json::to_value(schema.expect("a schema")).unwrap()
}

#[test]
fn every_kind_has_both_versions_and_one_storage_version() {
    let crds = both_versions();
    let kinds: Vec<&str> = crds.iter().map(|c| c.spec.names.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "NetworkVolume",
            "Endpoint",
            "Pod",
            "Budget",
            "RegistryCredential",
            "Template",
            "Cluster"
        ]
    );
    for crd in &crds {
        let kind = &crd.spec.names.kind;
        assert_eq!(crd.spec.versions.len(), 2, "{kind}");
        let stored: Vec<&str> = crd
            .spec
            .versions
            .iter()
            .filter(|v| v.storage)
            .map(|v| v.name.as_str())
            .collect();
        assert_eq!(stored, ["v1beta1"], "{kind}");
        assert!(crd.spec.versions.iter().all(|v| v.served), "{kind}");
        let beta = version(crd, "v1beta1");
        assert_eq!(beta.deprecated, None, "{kind}");
        assert_eq!(beta.deprecation_warning, None, "{kind}");
        let alpha = version(crd, "v1alpha1");
        assert_eq!(alpha.deprecated, Some(true), "{kind}");
        let warning = alpha.deprecation_warning.as_deref().unwrap();
        assert!(
            warning.contains(&format!("use gpucloud.io/v1beta1 {kind}")),
            "{warning}"
        );
        assert_eq!(warning, deprecation_warning(kind));
        for v in [alpha, beta] {
            let schema = schema(v);
            for part in ["spec", "status"] {
                assert_eq!(
                    schema["properties"][part]["type"], "object",
                    "{kind} {}",
                    v.name
                );
            }
            // Every version of an installed CRD gets the same status default.
            assert_eq!(
                schema["properties"]["status"]["default"],
                serde_json::json!({"observedGeneration": 0}),
                "{kind} {}",
                v.name
            );
            assert!(
                v.subresources.as_ref().is_some_and(|s| s.status.is_some()),
                "{kind}"
            );
        }
        assert_eq!(
            alpha.additional_printer_columns, beta.additional_printer_columns,
            "{kind}"
        );
    }
}

#[test]
fn v1beta1_schemas_say_the_new_names() {
    let crds = both_versions();
    let spec_of = |kind: &str| {
        let crd = crds.iter().find(|c| c.spec.names.kind == kind).unwrap();
        schema(version(crd, "v1beta1"))["properties"]["spec"].clone()
    };
    let pod = spec_of("Pod");
    assert!(pod["properties"]["args"].is_object() && pod["properties"]["dockerArgs"].is_null());
    assert_eq!(
        pod["properties"]["gpu"]["required"],
        serde_json::json!(["typeIds"])
    );
    let endpoint = spec_of("Endpoint");
    for gone in [
        "gpuTypeIds",
        "gpuCount",
        "idleTimeoutSeconds",
        "executionTimeoutMs",
    ] {
        assert!(endpoint["properties"][gone].is_null(), "{gone}");
    }
    assert_eq!(endpoint["properties"]["idleTimeout"]["default"], "5s");
    let cluster = spec_of("Cluster");
    assert!(cluster["properties"]["compute"].is_null());
    assert_eq!(
        cluster["properties"]["gpu"]["required"],
        serde_json::json!(["typeIds"])
    );
    assert_eq!(
        cluster["properties"]["nodeCount"]["minimum"].as_f64(),
        Some(2.0)
    );
}
