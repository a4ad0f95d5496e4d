//! Property tests: every kind, generated in either version, converted to the other and
//! back, is the object it was: through the typed functions and through `convert` on JSON.

use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::super::same_spec::{budget, network_volume, registry_credential};
use super::super::{ConversionError, cluster, convert, endpoint, pod, template};
use super::generate::{alpha_objects, objects};
use crate::v1alpha1 as alpha;

/// What an object is made of, to compare (the kinds' types derive no `PartialEq`).
pub(super) trait Parts {
    /// The kind's name.
    const KIND: &'static str;
    type Spec: Debug + PartialEq;
    type Status: Debug + PartialEq;
    fn parts(&self) -> (&ObjectMeta, &Self::Spec, &Option<Self::Status>);
}

macro_rules! parts {
    ($($kind:ty = $name:literal: $spec:ty, $status:ty;)*) => {$(
        impl Parts for $kind {
            const KIND: &'static str = $name;
            type Spec = $spec;
            type Status = $status;
            fn parts(&self) -> (&ObjectMeta, &$spec, &Option<$status>) {
                (&self.metadata, &self.spec, &self.status)
            }
        }
    )*};
}

parts! {
    alpha::NetworkVolume = "NetworkVolume": crate::NetworkVolumeSpec, crate::NetworkVolumeStatus;
    crate::NetworkVolume = "NetworkVolume": crate::NetworkVolumeSpec, crate::NetworkVolumeStatus;
    alpha::Endpoint = "Endpoint": alpha::endpoint::EndpointSpec, crate::EndpointStatus;
    crate::Endpoint = "Endpoint": crate::EndpointSpec, crate::EndpointStatus;
    alpha::Pod = "Pod": alpha::pod::PodSpec, crate::PodStatus;
    crate::Pod = "Pod": crate::PodSpec, crate::PodStatus;
    alpha::Template = "Template": alpha::template::TemplateSpec, crate::TemplateStatus;
    crate::Template = "Template": crate::TemplateSpec, crate::TemplateStatus;
    alpha::RegistryCredential = "RegistryCredential": crate::RegistryCredentialSpec, crate::RegistryCredentialStatus;
    crate::RegistryCredential = "RegistryCredential": crate::RegistryCredentialSpec, crate::RegistryCredentialStatus;
    alpha::Budget = "Budget": crate::BudgetSpec, crate::BudgetStatus;
    crate::Budget = "Budget": crate::BudgetSpec, crate::BudgetStatus;
    alpha::Cluster = "Cluster": alpha::cluster::ClusterSpec, crate::ClusterStatus;
    crate::Cluster = "Cluster": crate::ClusterSpec, crate::ClusterStatus;
}

/// Whether `a` and `b`, objects of the same kind and version as JSON, are the same object
/// once read as their type; else both, as read.
pub fn same_object(a: &Value, b: &Value) -> Result<(), String> {
    fn same<K: Parts + DeserializeOwned>(a: &Value, b: &Value) -> Result<(), String> {
        let read = |v: &Value| serde_json::from_value::<K>(v.clone()).map_err(|e| e.to_string());
        let (a, b) = (read(a)?, read(b)?);
        if a.parts() == b.parts() {
            Ok(())
        } else {
            Err(format!("{:?}\n!=\n{:?}", a.parts(), b.parts()))
        }
    }
    let alpha = a["apiVersion"] == ALPHA;
    match (alpha, a["kind"].as_str().unwrap_or_default()) {
        (true, "NetworkVolume") => same::<alpha::NetworkVolume>(a, b),
        (false, "NetworkVolume") => same::<crate::NetworkVolume>(a, b),
        (true, "Endpoint") => same::<alpha::Endpoint>(a, b),
        (false, "Endpoint") => same::<crate::Endpoint>(a, b),
        (true, "Pod") => same::<alpha::Pod>(a, b),
        (false, "Pod") => same::<crate::Pod>(a, b),
        (true, "Template") => same::<alpha::Template>(a, b),
        (false, "Template") => same::<crate::Template>(a, b),
        (true, "RegistryCredential") => same::<alpha::RegistryCredential>(a, b),
        (false, "RegistryCredential") => same::<crate::RegistryCredential>(a, b),
        (true, "Budget") => same::<alpha::Budget>(a, b),
        (false, "Budget") => same::<crate::Budget>(a, b),
        (true, "Cluster") => same::<alpha::Cluster>(a, b),
        (false, "Cluster") => same::<crate::Cluster>(a, b),
        (_, kind) => Err(format!("not a kind: {kind}")),
    }
}

/// `object` converted there and back, by the typed functions and by `convert`.
fn there_and_back<A, B>(
    object: &A,
    there: impl Fn(A) -> Result<B, ConversionError>,
    back: impl Fn(B) -> Result<A, ConversionError>,
    api_versions: (&str, &str),
) -> (A, A)
where
    A: Clone + Parts + Serialize + DeserializeOwned,
{
    let typed = back(there(object.clone()).unwrap()).unwrap();
    let mut value = serde_json::to_value(object).unwrap();
    // A `v1alpha1` object's type writes no `apiVersion` and `kind`; the apiserver's do.
    value["apiVersion"] = json!(api_versions.1);
    value["kind"] = json!(A::KIND);
    let converted = convert(value, api_versions.0).unwrap();
    let value = convert(converted, api_versions.1).unwrap();
    (typed, serde_json::from_value(value).unwrap())
}

const ALPHA: &str = "gpucloud.io/v1alpha1";
const BETA: &str = "gpucloud.io/v1beta1";

fn alpha_round_trip<A, B>(
    object: A,
    up: impl Fn(A) -> Result<B, ConversionError>,
    down: impl Fn(B) -> Result<A, ConversionError>,
) -> Result<(), TestCaseError>
where
    A: Clone + Parts + Serialize + DeserializeOwned,
{
    let (typed, json) = there_and_back(&object, up, down, (BETA, ALPHA));
    prop_assert_eq!(typed.parts(), object.parts());
    prop_assert_eq!(json.parts(), object.parts());
    Ok(())
}

fn beta_round_trip<A, B>(
    object: B,
    up: impl Fn(A) -> Result<B, ConversionError>,
    down: impl Fn(B) -> Result<A, ConversionError>,
) -> Result<(), TestCaseError>
where
    B: Clone + Parts + Serialize + DeserializeOwned,
{
    let (typed, json) = there_and_back(&object, down, up, (ALPHA, BETA));
    prop_assert_eq!(typed.parts(), object.parts());
    prop_assert_eq!(json.parts(), object.parts());
    Ok(())
}

fn any_spec(spec: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    spec
}

/// A v1alpha1 Endpoint spec that keeps the rules of its GPU forms: the shorthand or `gpu`,
/// not both, and `gpuCount` only with the shorthand.
fn alpha_endpoint(spec: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    spec.prop_map(|mut spec| {
        let spec_map = spec.as_object_mut().unwrap();
        if spec_map.contains_key("gpuTypeIds") {
            spec_map.remove("gpu");
        } else {
            spec_map.remove("gpuCount");
        }
        spec
    })
    .boxed()
}

/// A duration of one to three parts, each of hours, minutes or seconds, in any order.
fn duration() -> impl Strategy<Value = String> {
    proptest::string::string_regex("([0-9]{1,4}[hms]){1,3}").unwrap()
}

/// A v1beta1 Endpoint spec whose timeouts are durations (a pattern the generator does not
/// read).
fn beta_endpoint(spec: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    (spec, duration(), proptest::option::of(duration()))
        .prop_map(|(mut spec, idle, execution)| {
            spec["idleTimeout"] = json!(idle);
            match execution {
                Some(execution) => spec["executionTimeout"] = json!(execution),
                None => {
                    spec.as_object_mut().unwrap().remove("executionTimeout");
                }
            }
            spec
        })
        .boxed()
}

fn ok<A, B>(f: fn(A) -> B) -> impl Fn(A) -> Result<B, ConversionError> {
    move |a| Ok(f(a))
}

proptest! {
    #[test]
    fn network_volume_alpha(o in alpha_objects::<alpha::NetworkVolume>(any_spec)) {
        alpha_round_trip(o, ok(network_volume::to_v1beta1), ok(network_volume::to_v1alpha1))?;
    }

    #[test]
    fn network_volume_beta(o in objects::<crate::NetworkVolume>(any_spec)) {
        beta_round_trip(o, ok(network_volume::to_v1beta1), ok(network_volume::to_v1alpha1))?;
    }

    #[test]
    fn endpoint_alpha(o in alpha_objects::<alpha::Endpoint>(alpha_endpoint)) {
        alpha_round_trip(o, endpoint::to_v1beta1, endpoint::to_v1alpha1)?;
    }

    #[test]
    fn endpoint_beta(o in objects::<crate::Endpoint>(beta_endpoint)) {
        beta_round_trip(o, endpoint::to_v1beta1, endpoint::to_v1alpha1)?;
    }

    #[test]
    fn pod_alpha(o in alpha_objects::<alpha::Pod>(any_spec)) {
        alpha_round_trip(o, ok(pod::to_v1beta1), ok(pod::to_v1alpha1))?;
    }

    #[test]
    fn pod_beta(o in objects::<crate::Pod>(any_spec)) {
        beta_round_trip(o, ok(pod::to_v1beta1), ok(pod::to_v1alpha1))?;
    }

    #[test]
    fn template_alpha(o in alpha_objects::<alpha::Template>(any_spec)) {
        alpha_round_trip(o, ok(template::to_v1beta1), ok(template::to_v1alpha1))?;
    }

    #[test]
    fn template_beta(o in objects::<crate::Template>(any_spec)) {
        beta_round_trip(o, ok(template::to_v1beta1), ok(template::to_v1alpha1))?;
    }

    #[test]
    fn registry_credential_alpha(o in alpha_objects::<alpha::RegistryCredential>(any_spec)) {
        alpha_round_trip(o, ok(registry_credential::to_v1beta1), ok(registry_credential::to_v1alpha1))?;
    }

    #[test]
    fn registry_credential_beta(o in objects::<crate::RegistryCredential>(any_spec)) {
        beta_round_trip(o, ok(registry_credential::to_v1beta1), ok(registry_credential::to_v1alpha1))?;
    }

    #[test]
    fn budget_alpha(o in alpha_objects::<alpha::Budget>(any_spec)) {
        alpha_round_trip(o, ok(budget::to_v1beta1), ok(budget::to_v1alpha1))?;
    }

    #[test]
    fn budget_beta(o in objects::<crate::Budget>(any_spec)) {
        beta_round_trip(o, ok(budget::to_v1beta1), ok(budget::to_v1alpha1))?;
    }

    #[test]
    fn cluster_alpha(o in alpha_objects::<alpha::Cluster>(any_spec)) {
        alpha_round_trip(o, ok(cluster::to_v1beta1), ok(cluster::to_v1alpha1))?;
    }

    #[test]
    fn cluster_beta(o in objects::<crate::Cluster>(any_spec)) {
        beta_round_trip(o, ok(cluster::to_v1beta1), ok(cluster::to_v1alpha1))?;
    }
}
