//! The conversion webhook the suites rely on: scripts/test.sh runs one for the control plane
//! (`gpucloud-operator conversion-webhook`), which points each CRD at itself once it is
//! installed. A suite that reads or writes `v1alpha1` waits for that first.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, Client};

use super::wait_until;

/// Waits until every CRD of the operator converts through the webhook; fails the test,
/// saying what is missing, when that does not happen within 30 s.
pub async fn wait_for_webhook(client: &Client) {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let names: Vec<String> = gpucloud_operator::kinds::crds()
        .into_iter()
        .filter_map(|crd| crd.metadata.name)
        .collect();
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
