//! The client's GraphQL documents and variables against the committed schema that the
//! emulator serves (`schema/platform.graphql`): if either drifts, this fails.

use apollo_compiler::{ExecutableDocument, Schema};
use gpucloud_platform::graphql::documents;
use gpucloud_platform::{CloudType, DeployPodInput, EnvVar, LowestPriceInput, ResumePodInput};

const SCHEMA: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../schema/platform.graphql"
));

fn schema() -> apollo_compiler::validation::Valid<Schema> {
    Schema::parse_and_validate(SCHEMA, "schema/platform.graphql")
        .unwrap_or_else(|e| panic!("committed schema is invalid:\n{}", e.errors))
}

#[test]
fn every_document_validates_against_the_schema() {
    let schema = schema();
    assert!(!documents::ALL.is_empty());
    for (name, doc) in documents::ALL {
        let parsed =
            ExecutableDocument::parse_and_validate(&schema, *doc, format!("{name}.graphql"))
                .unwrap_or_else(|e| panic!("document {name} does not validate:\n{}", e.errors));
        assert_eq!(
            parsed.operations.iter().count(),
            1,
            "document {name} must hold exactly one operation"
        );
        assert!(
            parsed.operations.get(Some(name)).is_ok(),
            "document {name} must name its operation {name}"
        );
    }
}

/// Every key the client can put into an input object exists in the schema's input type.
fn assert_input_keys(schema: &Schema, type_name: &str, value: serde_json::Value) {
    let ty = schema
        .get_input_object(type_name)
        .unwrap_or_else(|| panic!("schema has no input type {type_name}"));
    let obj = value.as_object().expect("input serialises to an object");
    for key in obj.keys() {
        assert!(
            ty.fields.contains_key(key.as_str()),
            "{type_name} has no field {key} (the client sends it)"
        );
    }
}

#[test]
fn every_input_field_the_client_sends_exists() {
    let schema = schema();
    let full_deploy = DeployPodInput {
        cloud_type: Some(CloudType::Secure),
        gpu_count: Some(1),
        volume_in_gb: Some(1),
        container_disk_in_gb: Some(1),
        min_vcpu_count: Some(1),
        min_memory_in_gb: Some(1),
        gpu_type_id: Some("g".into()),
        name: Some("n".into()),
        image_name: Some("i".into()),
        docker_args: Some("a".into()),
        ports: Some("80/http".into()),
        volume_mount_path: Some("/w".into()),
        env: Some(vec![EnvVar {
            key: "K".into(),
            value: "v".into(),
        }]),
        allowed_cuda_versions: Some(vec!["12.4".into()]),
        data_center_id: Some("d".into()),
        network_volume_id: Some("v".into()),
        template_id: Some("t".into()),
        support_public_ip: Some(true),
    };
    let v = serde_json::to_value(&full_deploy).unwrap();
    assert_input_keys(&schema, "PodFindAndDeployOnDemandInput", v.clone());
    assert_input_keys(&schema, "EnvironmentVariableInput", v["env"][0].clone());
    // Enum values the client can send exist too.
    let cloud = schema.get_enum("CloudTypeEnum").unwrap();
    for c in [CloudType::All, CloudType::Secure, CloudType::Community] {
        let name = serde_json::to_value(c).unwrap();
        assert!(cloud.values.contains_key(name.as_str().unwrap()), "{name}");
    }
    let resume = ResumePodInput {
        pod_id: "p".into(),
        gpu_count: Some(1),
        allowed_cuda_versions: Some(vec!["12.4".into()]),
    };
    assert_input_keys(
        &schema,
        "PodResumeInput",
        serde_json::to_value(&resume).unwrap(),
    );
    let price = LowestPriceInput {
        gpu_count: Some(1),
        secure_cloud: Some(true),
    };
    assert_input_keys(
        &schema,
        "GpuLowestPriceInput",
        serde_json::to_value(&price).unwrap(),
    );
}
