//! The one seam between the controllers and the platform: a domain-level interface per
//! kind of remote object, with two implementations behind it.
//!
//! - `seed`: REST v1 and GraphQL, exactly as the seed spec describes them.
//! - `v2`: REST v2, as the platform's published document describes it (the default).
//!
//! The choice is made per account ([`super::PlatformApi`] in the client's configuration);
//! callers get the same domain types from both and never learn which backend answered.
//! Each facade is obtained from the client (`client.volumes()`, ...) and is as cheap to
//! make as the client is to clone.

use std::future::Future;

use super::config::PlatformApi;
use super::error::PlatformError;

/// A platform record that the platform names by an id: what the operator keeps in status
/// and looks a remote object up by.
pub trait Identified {
    fn id(&self) -> &str;
}

/// Implements [`Identified`] for records whose id is their `id` field.
macro_rules! identified_by_id_field {
    ($($record:ty),* $(,)?) => {
        $(impl Identified for $record {
            fn id(&self) -> &str {
                &self.id
            }
        })*
    };
}

identified_by_id_field!(
    Cluster,
    Pod,
    RegistryCredential,
    ServerlessEndpoint,
    Template,
    Volume,
);

/// Lists from the configured backend, each record in the domain's type: what every
/// facade's `list` does (REST v2 converts them while it decodes). Both listings are passed
/// in, but a future does nothing until awaited, so only the configured backend is called.
pub(crate) async fn list_from<S, T>(
    api: PlatformApi,
    seed: impl Future<Output = Result<Vec<S>, PlatformError>>,
    from_seed: impl FnMut(S) -> T,
    v2: impl Future<Output = Result<Vec<T>, PlatformError>>,
) -> Result<Vec<T>, PlatformError> {
    Ok(match api {
        PlatformApi::Seed => seed.await?.into_iter().map(from_seed).collect(),
        // Converted while decoded (see `crate::streamed_json::Listing`).
        PlatformApi::V2 => v2.await?,
    })
}

/// A create's "not found" is about something the request names (a template, a network
/// volume), not about the object being made: the input is wrong, and retrying cannot
/// help. REST v2 answers 404 there; the seed API answers 400. The field is the first of
/// `fields` (`(word in the platform's answer, domain field)`) whose word the answer uses.
pub(crate) fn refers_to_missing(err: PlatformError, fields: &[(&str, &str)]) -> PlatformError {
    match err {
        PlatformError::NotFound { operation, detail } => {
            let lower = detail.to_ascii_lowercase();
            let field = fields
                .iter()
                .find(|(word, _)| lower.contains(word))
                .map_or("request", |(_, field)| field);
            PlatformError::InvalidInput {
                operation,
                field: field.into(),
                problems: vec![detail.clone()],
                detail,
            }
        }
        other => other,
    }
}

/// An invalid-input error about a backend's field `from`, told in the domain's name `to`
/// (REST v2's `dataCenter` is the spec's `dataCenterId`).
pub(crate) fn rename_field(err: PlatformError, from: &str, to: &str) -> PlatformError {
    match err {
        PlatformError::InvalidInput {
            operation,
            field,
            detail,
            problems,
        } => {
            let rename = |text: &str| text.replace(&format!("{from}:"), &format!("{to}:"));
            PlatformError::InvalidInput {
                operation,
                field: if field == from { to.to_string() } else { field },
                detail: rename(&detail),
                problems: problems.iter().map(|p| rename(p)).collect(),
            }
        }
        other => other,
    }
}

pub mod catalog;
pub(crate) mod catalog_cache;
pub mod catalog_cpu;
pub mod clusters;
pub mod endpoint_shape;
pub mod endpoints;
pub mod pod_logs;
pub mod pods;
pub mod pods_cpu;
pub mod registries;
pub mod templates;
pub mod volumes;

pub use catalog::{Catalog, PoolMap, ServerlessPrices, Unpriced};
pub use clusters::{Cluster, ClusterNode, ClusterOffer, ClusterRequest, Clusters, NodeContainer};
pub use endpoints::{
    CpuPrices, CpuWorkers, EndpointChange, EndpointSpec, Endpoints, GpuPools, GpuSelection,
    LoadBalancerPorts, LoadBalancerUrls, Rollout, Routing, Scaler, ServerlessEndpoint,
    WorkerStates, seed_unsupported,
};
pub use pod_logs::{PodLogs, SystemLine, SystemLines};
pub use pods::{EXITED, GpuOffer, Placement, Pod, PodRequest, Pods, RUNNING, TERMINATED};
pub use pods_cpu::{CpuOffer, CpuPlacement};
pub use registries::{NewRegistryCredential, RegistryCredential, RegistryCredentials};
pub use templates::{NewTemplate, Template, TemplateChange, Templates};
pub use volumes::{NewVolume, Volume, VolumeType, VolumeUpdate, Volumes};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorClass;

    #[test]
    fn a_create_that_names_a_missing_object_is_invalid_input() {
        let err = refers_to_missing(
            PlatformError::NotFound {
                operation: "POST /v2/serverless",
                detail: "template tpl-x not found".into(),
            },
            &[("template", "templateId"), ("volume", "networkVolumeId")],
        );
        assert_eq!(err.class(), ErrorClass::InvalidInput);
        let text = err.to_string();
        assert!(text.contains("invalid templateId"), "{text}");
        assert!(text.contains("template tpl-x not found"), "{text}");
    }

    #[test]
    fn a_backend_field_is_told_in_the_domain_name() {
        let err = rename_field(
            PlatformError::invalid_input("dataCenter", "dataCenter: unknown data center \"X\""),
            "dataCenter",
            "dataCenterId",
        );
        let text = err.to_string();
        assert!(text.contains("invalid dataCenterId"), "{text}");
        assert!(!text.contains("dataCenter:"), "{text}");
    }
}
