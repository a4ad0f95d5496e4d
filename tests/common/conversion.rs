//! The conversion webhook the suites rely on: scripts/test.sh runs one for the control plane
//! (`gpucloud-operator conversion-webhook`), which points each CRD at itself once it is
//! installed. A suite that reads or writes `v1alpha1` waits for that first.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Api, Client};

use super::wait_until;

/// Waits until every CRD of the operator converts through the webhook; fails the test,
/// saying what is missing, when that does not happen within 30 s.
pub async fn wait_for_webhook(client: &Client) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let names = gpucloud_operator::cli::webhook::crd_names();
    let ready = wait_until(Duration::from_secs(30), || async {
        for name in &names {
            let strategy = api
                .get_opt(name)
                .await
                .ok()
                .flatten()
                .and_then(|crd| crd.spec.conversion)
                .map(|c| c.strategy);
            if strategy.as_deref() != Some("Webhook") {
                return false;
            }
        }
        true
    })
    .await;
    assert!(
        ready,
        "the CRDs do not convert through the webhook: scripts/test.sh runs \
         `gpucloud-operator conversion-webhook` for the control plane"
    );
}

/// The objects of `kind` in API version `version` (`v1alpha1`, `v1beta1`) of namespace
/// `ns`, untyped: how a test reads and writes a version the crate has no type of.
pub fn versioned_api(client: &Client, ns: &str, version: &str, kind: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("gpucloud.io", version, kind);
    let plural = format!("{}s", kind.to_lowercase());
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk_with_plural(&gvk, &plural),
    )
}
