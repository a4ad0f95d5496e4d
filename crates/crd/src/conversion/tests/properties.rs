//! Property tests: every kind, generated in either version, converted to the other and
//! back, is the object it was: through the typed functions and through `convert` on JSON.

use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::super::{ConversionError, budget, cluster, convert, endpoint, network_volume, pod};
use super::super::{registry_credential, template};
use super::generate::objects;
use crate::v1beta1 as beta;

/// What an object is made of, to compare (the kinds' types derive no `PartialEq`).
trait Parts {
    type Spec: Debug + PartialEq;
    type Status: Debug + PartialEq;
    fn parts(&self) -> (&ObjectMeta, &Self::Spec, &Option<Self::Status>);
}

macro_rules! parts {
    ($($kind:ty: $spec:ty, $status:ty;)*) => {$(
        impl Parts for $kind {
            type Spec = $spec;
            type Status = $status;
            fn parts(&self) -> (&ObjectMeta, &$spec, &Option<$status>) {
                (&self.metadata, &self.spec, &self.status)
            }
        }
    )*};
}

parts! {
    crate::NetworkVolume: crate::NetworkVolumeSpec, crate::NetworkVolumeStatus;
    beta::NetworkVolume: beta::NetworkVolumeSpec, crate::NetworkVolumeStatus;
    crate::Endpoint: crate::EndpointSpec, crate::EndpointStatus;
    beta::Endpoint: beta::EndpointSpec, crate::EndpointStatus;
    crate::Pod: crate::PodSpec, crate::PodStatus;
    beta::Pod: beta::PodSpec, crate::PodStatus;
    crate::Template: crate::TemplateSpec, crate::TemplateStatus;
    beta::Template: beta::TemplateSpec, crate::TemplateStatus;
    crate::RegistryCredential: crate::RegistryCredentialSpec, crate::RegistryCredentialStatus;
    beta::RegistryCredential: beta::RegistryCredentialSpec, crate::RegistryCredentialStatus;
    crate::Budget: crate::BudgetSpec, crate::BudgetStatus;
    beta::Budget: beta::BudgetSpec, crate::BudgetStatus;
    crate::Cluster: crate::ClusterSpec, crate::ClusterStatus;
    beta::Cluster: beta::ClusterSpec, crate::ClusterStatus;
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
        (true, "NetworkVolume") => same::<crate::NetworkVolume>(a, b),
        (false, "NetworkVolume") => same::<beta::NetworkVolume>(a, b),
        (true, "Endpoint") => same::<crate::Endpoint>(a, b),
        (false, "Endpoint") => same::<beta::Endpoint>(a, b),
        (true, "Pod") => same::<crate::Pod>(a, b),
        (false, "Pod") => same::<beta::Pod>(a, b),
        (true, "Template") => same::<crate::Template>(a, b),
        (false, "Template") => same::<beta::Template>(a, b),
        (true, "RegistryCredential") => same::<crate::RegistryCredential>(a, b),
        (false, "RegistryCredential") => same::<beta::RegistryCredential>(a, b),
        (true, "Budget") => same::<crate::Budget>(a, b),
        (false, "Budget") => same::<beta::Budget>(a, b),
        (true, "Cluster") => same::<crate::Cluster>(a, b),
        (false, "Cluster") => same::<beta::Cluster>(a, b),
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
    A: Clone + Serialize + DeserializeOwned,
{
    let typed = back(there(object.clone()).unwrap()).unwrap();
    let value = serde_json::to_value(object).unwrap();
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
    fn network_volume_alpha(o in objects::<crate::NetworkVolume>(any_spec)) {
        alpha_round_trip(o, ok(network_volume::to_v1beta1), ok(network_volume::to_v1alpha1))?;
    }

    #[test]
    fn network_volume_beta(o in objects::<beta::NetworkVolume>(any_spec)) {
        beta_round_trip(o, ok(network_volume::to_v1beta1), ok(network_volume::to_v1alpha1))?;
    }

    #[test]
    fn endpoint_alpha(o in objects::<crate::Endpoint>(alpha_endpoint)) {
        alpha_round_trip(o, endpoint::to_v1beta1, endpoint::to_v1alpha1)?;
    }

    #[test]
    fn endpoint_beta(o in objects::<beta::Endpoint>(beta_endpoint)) {
        beta_round_trip(o, endpoint::to_v1beta1, endpoint::to_v1alpha1)?;
    }

    #[test]
    fn pod_alpha(o in objects::<crate::Pod>(any_spec)) {
        alpha_round_trip(o, ok(pod::to_v1beta1), ok(pod::to_v1alpha1))?;
    }

    #[test]
    fn pod_beta(o in objects::<beta::Pod>(any_spec)) {
        beta_round_trip(o, ok(pod::to_v1beta1), ok(pod::to_v1alpha1))?;
    }

    #[test]
    fn template_alpha(o in objects::<crate::Template>(any_spec)) {
        alpha_round_trip(o, ok(template::to_v1beta1), ok(template::to_v1alpha1))?;
    }

    #[test]
    fn template_beta(o in objects::<beta::Template>(any_spec)) {
        beta_round_trip(o, ok(template::to_v1beta1), ok(template::to_v1alpha1))?;
    }

    #[test]
    fn registry_credential_alpha(o in objects::<crate::RegistryCredential>(any_spec)) {
        alpha_round_trip(o, ok(registry_credential::to_v1beta1), ok(registry_credential::to_v1alpha1))?;
    }

    #[test]
    fn registry_credential_beta(o in objects::<beta::RegistryCredential>(any_spec)) {
        beta_round_trip(o, ok(registry_credential::to_v1beta1), ok(registry_credential::to_v1alpha1))?;
    }

    #[test]
    fn budget_alpha(o in objects::<crate::Budget>(any_spec)) {
        alpha_round_trip(o, ok(budget::to_v1beta1), ok(budget::to_v1alpha1))?;
    }

    #[test]
    fn budget_beta(o in objects::<beta::Budget>(any_spec)) {
        beta_round_trip(o, ok(budget::to_v1beta1), ok(budget::to_v1alpha1))?;
    }

    #[test]
    fn cluster_alpha(o in objects::<crate::Cluster>(any_spec)) {
        alpha_round_trip(o, ok(cluster::to_v1beta1), ok(cluster::to_v1alpha1))?;
    }

    #[test]
    fn cluster_beta(o in objects::<beta::Cluster>(any_spec)) {
        beta_round_trip(o, ok(cluster::to_v1beta1), ok(cluster::to_v1alpha1))?;
    }
}
