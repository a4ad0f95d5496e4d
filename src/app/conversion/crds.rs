//! Points the operator's CRDs at the webhook: `spec.conversion` with the webhook's address
//! and, when the install makes its own certificate, the CA that vouches for it. Applied
//! (server-side, as its own field manager) at start and on every check after, so that a CRD
//! applied again, or installed after the operator, is pointed at it too. With cert-manager
//! the install's CRDs carry their `spec.conversion` themselves and cert-manager's cainjector
//! fills the CA: the operator then writes nothing here.

use k8s_openapi::ByteString;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition, ServiceReference, WebhookClientConfig,
    WebhookConversion,
};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use tracing::{debug, info};

use super::error::WebhookError;

/// The field manager of the operator's writes to the CRDs.
pub const FIELD_MANAGER: &str = "gpucloud-operator-conversion";
/// Where the apiserver posts its reviews.
pub const PATH: &str = "/convert";

/// How the apiserver reaches the webhook.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    /// A Service in the cluster, on `port`.
    Service {
        namespace: String,
        name: String,
        port: i32,
    },
    /// A URL (`https://host:port/convert`): a webhook outside the cluster, such as the test
    /// harness's on the apiserver's own host.
    Url(String),
}

/// Pure: the conversion every CRD of the operator says: by its webhook at `address`, trusting
/// `ca_pem`.
pub fn conversion(address: &Address, ca_pem: &str) -> CustomResourceConversion {
    let mut client = WebhookClientConfig {
        ca_bundle: Some(ByteString(ca_pem.as_bytes().to_vec())),
        ..Default::default()
    };
    match address {
        Address::Service {
            namespace,
            name,
            port,
        } => {
            client.service = Some(ServiceReference {
                namespace: namespace.clone(),
                name: name.clone(),
                path: Some(PATH.into()),
                port: Some(*port),
            })
        }
        Address::Url(url) => client.url = Some(url.clone()),
    }
    CustomResourceConversion {
        strategy: "Webhook".into(),
        webhook: Some(WebhookConversion {
            client_config: Some(client),
            conversion_review_versions: vec!["v1".into()],
        }),
    }
}

/// Applies `want` to each CRD of `names` that says otherwise; a CRD not installed (yet) is
/// skipped. Returns how many were changed.
pub async fn point_at_webhook(
    api: &Api<CustomResourceDefinition>,
    names: &[String],
    want: &CustomResourceConversion,
) -> Result<usize, WebhookError> {
    let mut changed = 0;
    for name in names {
        let failed = |source| WebhookError::Crd {
            crd: name.clone(),
            source,
        };
        let Some(crd) = api.get_opt(name).await.map_err(failed)? else {
            debug!(crd = %name, "not installed: the webhook points it at itself once it is");
            continue;
        };
        if crd.spec.conversion.as_ref() == Some(want) {
            continue;
        }
        let patch = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"conversion": want},
        });
        api.patch(
            name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(patch),
        )
        .await
        .map_err(failed)?;
        info!(crd = %name, "pointed the CRD's conversion at the webhook");
        changed += 1;
    }
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_address_is_its_namespace_name_port_and_path() {
        let address = Address::Service {
            namespace: "gpucloud-system".into(),
            name: "gpucloud-operator-webhook".into(),
            port: 443,
        };
        let conversion = serde_json::to_value(conversion(&address, "CA")).unwrap();
        assert_eq!(conversion["strategy"], "Webhook");
        let webhook = &conversion["webhook"];
        assert_eq!(webhook["conversionReviewVersions"], json!(["v1"]));
        assert_eq!(
            webhook["clientConfig"]["service"],
            json!({"namespace": "gpucloud-system", "name": "gpucloud-operator-webhook",
                "path": "/convert", "port": 443})
        );
        // base64 of the PEM text, as the apiserver reads caBundle.
        assert_eq!(webhook["clientConfig"]["caBundle"], "Q0E=");
    }

    #[test]
    fn a_url_address_is_the_url() {
        let address = Address::Url("https://127.0.0.1:9443/convert".into());
        let conversion = conversion(&address, "CA");
        let client = conversion.webhook.unwrap().client_config.unwrap();
        assert_eq!(
            client.url.as_deref(),
            Some("https://127.0.0.1:9443/convert")
        );
        assert!(client.service.is_none());
    }
}
