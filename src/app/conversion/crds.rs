//! Points the operator's CRDs at the webhook: `spec.conversion` with the webhook's address
//! and the CA that vouches for it: the one the install made ([`Trust::Bundle`]), or, with
//! cert-manager, the annotation that has cert-manager's cainjector fill in its Certificate's
//! CA ([`Trust::InjectedFrom`]; the operator then leaves `caBundle` to it). Applied
//! (server-side, as its own field manager) at start and on every check after, so that a CRD
//! applied again, or installed after the operator, is pointed at it too.

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

/// What vouches for the webhook's certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trust {
    /// This CA (PEM), made by the install.
    Bundle(String),
    /// The CA of cert-manager Certificate NAMESPACE/NAME, which cert-manager's cainjector
    /// writes into `caBundle` when the CRD says `cert-manager.io/inject-ca-from`.
    InjectedFrom(String),
}

/// The annotation that has cert-manager's cainjector fill a CRD's conversion `caBundle`.
pub const INJECT_CA_FROM: &str = "cert-manager.io/inject-ca-from";

/// What every CRD of the operator is to say.
#[derive(Clone, Debug, PartialEq)]
pub struct Wanted {
    pub conversion: CustomResourceConversion,
    pub inject_ca_from: Option<String>,
}

/// Pure: the conversion every CRD of the operator says: by its webhook at `address`, trusting
/// `trust`.
pub fn wanted(address: &Address, trust: &Trust) -> Wanted {
    let (ca_bundle, inject_ca_from) = match trust {
        Trust::Bundle(pem) => (Some(ByteString(pem.as_bytes().to_vec())), None),
        Trust::InjectedFrom(certificate) => (None, Some(certificate.clone())),
    };
    Wanted {
        conversion: conversion(address, ca_bundle),
        inject_ca_from,
    }
}

/// Pure: whether `crd` says less than `want`. A CA injected by cert-manager is its own:
/// only its presence is looked at, not its value.
pub fn lacks(crd: &CustomResourceDefinition, want: &Wanted) -> bool {
    let annotations = crd.metadata.annotations.clone().unwrap_or_default();
    if let Some(from) = &want.inject_ca_from
        && annotations.get(INJECT_CA_FROM) != Some(from)
    {
        return true;
    }
    let Some(mut have) = crd.spec.conversion.clone() else {
        return true;
    };
    if want.inject_ca_from.is_some()
        && let Some(client) = have.webhook.as_mut().and_then(|w| w.client_config.as_mut())
    {
        client.ca_bundle = None;
    }
    have != want.conversion
}

fn conversion(address: &Address, ca_bundle: Option<ByteString>) -> CustomResourceConversion {
    let mut client = WebhookClientConfig {
        ca_bundle,
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

/// Applies `want` to each CRD of `names` that lacks it; a CRD not installed (yet) is
/// skipped. Returns how many were changed.
pub async fn point_at_webhook(
    api: &Api<CustomResourceDefinition>,
    names: &[String],
    want: &Wanted,
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
        if !lacks(&crd, want) {
            continue;
        }
        let mut metadata = json!({"name": name});
        if let Some(from) = &want.inject_ca_from {
            metadata["annotations"] = json!({INJECT_CA_FROM: from});
        }
        let patch = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": metadata,
            "spec": {"conversion": want.conversion},
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
        let want = wanted(&address, &Trust::Bundle("CA".into()));
        assert_eq!(want.inject_ca_from, None);
        let conversion = serde_json::to_value(&want.conversion).unwrap();
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
        let conversion = wanted(&address, &Trust::Bundle("CA".into())).conversion;
        let client = conversion.webhook.unwrap().client_config.unwrap();
        assert_eq!(
            client.url.as_deref(),
            Some("https://127.0.0.1:9443/convert")
        );
        assert!(client.service.is_none());
    }

    #[test]
    fn with_cert_manager_the_ca_is_left_to_its_injector() {
        let address = Address::Service {
            namespace: "ns".into(),
            name: "hook".into(),
            port: 443,
        };
        let want = wanted(&address, &Trust::InjectedFrom("ns/hook".into()));
        let client = want
            .conversion
            .webhook
            .clone()
            .unwrap()
            .client_config
            .unwrap();
        assert_eq!(client.ca_bundle, None);
        let mut crd = CustomResourceDefinition::default();
        assert!(lacks(&crd, &want), "nothing said yet");
        crd.metadata.annotations =
            Some([(INJECT_CA_FROM.to_string(), "ns/hook".to_string())].into());
        let mut injected = want.conversion.clone();
        if let Some(client) = injected
            .webhook
            .as_mut()
            .and_then(|w| w.client_config.as_mut())
        {
            client.ca_bundle = Some(ByteString(b"CA FROM CERT-MANAGER".to_vec()));
        }
        crd.spec.conversion = Some(injected);
        assert!(
            !lacks(&crd, &want),
            "the injected CA is cert-manager's to write"
        );
        crd.metadata.annotations = None;
        assert!(lacks(&crd, &want), "the annotation went");
    }

    #[test]
    fn a_crd_that_says_another_ca_or_none_lacks_the_bundle() {
        let address = Address::Url("https://127.0.0.1:9443/convert".into());
        let want = wanted(&address, &Trust::Bundle("CA".into()));
        let mut crd = CustomResourceDefinition::default();
        crd.spec.conversion = Some(want.conversion.clone());
        assert!(!lacks(&crd, &want));
        crd.spec.conversion = Some(wanted(&address, &Trust::Bundle("OLD".into())).conversion);
        assert!(lacks(&crd, &want));
        crd.spec.conversion = Some(CustomResourceConversion {
            strategy: "None".into(),
            webhook: None,
        });
        assert!(lacks(&crd, &want));
    }
}
