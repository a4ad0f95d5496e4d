//! Pure: a `ConversionReview` from the apiserver in, its answer out. Every object of the
//! request is converted to the version asked for ([`gpucloud_crd::conversion::convert`]);
//! one that cannot be fails the whole review, as the apiserver requires, with a message
//! that names the object, the field and the rule.

use kube::core::Status;
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use serde_json::Value;

use gpucloud_crd::conversion::convert;

/// The answer to `review`.
pub fn answer(review: ConversionReview) -> ConversionReview {
    let request = match ConversionRequest::from_review(review) {
        Ok(request) => request,
        Err(err) => {
            return ConversionResponse::invalid(Status::failure(&err.to_string(), "BadRequest"))
                .into_review();
        }
    };
    let desired = request.desired_api_version.clone();
    let converted: Result<Vec<Value>, String> = request
        .objects
        .iter()
        .cloned()
        .map(|object| {
            let name = name_of(&object);
            convert(object, &desired).map_err(|err| format!("{name}: {err}"))
        })
        .collect();
    let response = ConversionResponse::for_request(request);
    match converted {
        Ok(objects) => response.success(objects),
        Err(message) => response.failure(Status::failure(&message, "Invalid")),
    }
    .into_review()
}

/// `namespace/name` of an object as the request holds it, for the message of a refusal.
fn name_of(object: &Value) -> String {
    let metadata = &object["metadata"];
    let text = |field: &str| metadata[field].as_str().unwrap_or("?").to_string();
    format!(
        "{} {}/{}",
        object["kind"].as_str().unwrap_or("object"),
        text("namespace"),
        text("name")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn review(desired: &str, objects: Vec<Value>) -> ConversionReview {
        serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "request": {"uid": "705ab4f5", "desiredAPIVersion": desired, "objects": objects},
        }))
        .unwrap()
    }

    fn alpha_pod(name: &str, spec: Value) -> Value {
        json!({"apiVersion": "gpucloud.io/v1alpha1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "team-a"}, "spec": spec})
    }

    #[test]
    fn every_object_is_converted_and_the_uid_is_answered() {
        let objects = vec![
            alpha_pod(
                "a",
                json!({"image": "x", "dockerArgs": "serve", "gpu": {"types": ["A"]}}),
            ),
            alpha_pod("b", json!({"image": "y"})),
        ];
        let answer = answer(review("gpucloud.io/v1beta1", objects));
        let response = answer.response.expect("a response");
        assert_eq!(response.uid, "705ab4f5");
        assert_eq!(
            response.result.status,
            Some(kube::core::response::StatusSummary::Success)
        );
        assert_eq!(response.converted_objects.len(), 2);
        let pod = &response.converted_objects[0];
        assert_eq!(pod["apiVersion"], "gpucloud.io/v1beta1");
        assert_eq!(pod["spec"]["args"], "serve");
        assert_eq!(pod["spec"]["gpu"]["typeIds"], json!(["A"]));
        assert_eq!(response.converted_objects[1]["metadata"]["name"], "b");
    }

    #[test]
    fn one_object_that_cannot_be_converted_fails_the_review_naming_it() {
        let objects = vec![
            alpha_pod("fine", json!({"image": "x"})),
            alpha_pod("bad", json!({"image": "x", "volumeGb": "ten"})),
        ];
        let answer = answer(review("gpucloud.io/v1beta1", objects));
        let response = answer.response.unwrap();
        assert_eq!(
            response.result.status,
            Some(kube::core::response::StatusSummary::Failure)
        );
        assert!(response.converted_objects.is_empty());
        let message = &response.result.message;
        assert!(message.contains("Pod team-a/bad"), "{message}");
        assert!(message.contains("spec.volumeGb"), "{message}");
    }

    #[test]
    fn a_version_not_of_this_group_is_refused() {
        let answer = answer(review(
            "gpucloud.io/v2",
            vec![alpha_pod("a", json!({"image": "x"}))],
        ));
        let result = answer.response.unwrap().result;
        assert!(
            result.message.contains("gpucloud.io/v2"),
            "{}",
            result.message
        );
    }

    #[test]
    fn a_review_without_a_request_is_answered_as_invalid() {
        let review: ConversionReview = serde_json::from_value(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"}))
        .unwrap();
        let response = answer(review).response.unwrap();
        assert_eq!(
            response.result.status,
            Some(kube::core::response::StatusSummary::Failure)
        );
    }
}
