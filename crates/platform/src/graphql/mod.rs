//! The GraphQL API: pods and GPU types. Every call is a POST of `{query, variables}` to
//! `{graphql}?api_key=<key>`; the documents live in `documents/` and a test validates them
//! against the committed schema the emulator serves.

pub mod documents;
pub mod types;

use reqwest::Method;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::error::{self, ErrorBody, ErrorClass, PlatformError};
use super::operation::Operation;
use super::transport::{Auth, Call, Transport, decode};
use super::validate;
use types::{
    DeployPodInput, DeployedPod, GpuType, LowestPriceInput, Pod, PodState, ResumePodInput,
};

type Result<T> = std::result::Result<T, PlatformError>;

/// GraphQL calls. Cheap to clone; obtained from [`super::PlatformClient::graphql`].
#[derive(Clone, Debug)]
pub struct Graphql {
    t: Transport,
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    data: Option<Value>,
    #[serde(default)]
    errors: Option<Vec<Value>>,
}

impl Graphql {
    pub(crate) fn new(t: Transport) -> Self {
        Self { t }
    }

    /// Sends one document and returns `data.<field>` (possibly `null`).
    async fn execute(
        &self,
        op: Operation,
        document: &str,
        variables: Value,
        field: &str,
    ) -> Result<Value> {
        let body = json!({ "query": document, "variables": variables });
        let call = Call::new(
            op,
            Method::POST,
            self.t.urls().graphql.clone(),
            Auth::QueryApiKey,
        )
        .json_body(&body)?;
        let answer = self
            .t
            .send(&call)
            .await
            .map_err(|e| reclassify_400(op, e))?;
        let envelope: Envelope = decode(op, &answer.body)?;
        if let Some(errors) = envelope.errors.filter(|e| !e.is_empty()) {
            let parsed = ErrorBody::from_value(&json!({ "errors": errors }));
            return Err(error::from_graphql(
                op.name(),
                &parsed,
                op.may_apply_on_failure(),
            ));
        }
        let data = envelope.data.ok_or_else(|| {
            PlatformError::decode(op.name(), "answer holds neither data nor errors")
        })?;
        match data {
            Value::Object(mut map) => Ok(map.remove(field).unwrap_or(Value::Null)),
            _ => Err(PlatformError::decode(op.name(), "`data` is not an object")),
        }
    }

    fn typed<T: DeserializeOwned>(op: Operation, v: Value) -> Result<T> {
        serde_json::from_value(v).map_err(|e| PlatformError::decode(op.name(), e.to_string()))
    }

    /// `podFindAndDeployOnDemand`. Never retried after a failure that may have deployed the
    /// pod ([`PlatformError::may_have_been_applied`]): list the pods and look for its name
    /// before deploying again. "No instances available" comes back as
    /// [`super::ErrorClass::Capacity`].
    pub async fn deploy_pod(&self, input: &DeployPodInput) -> Result<DeployedPod> {
        let op = Operation::GraphqlDeployPod;
        validate_deploy(input).map_err(|e| e.in_operation(op.name()))?;
        let v = self
            .execute(
                op,
                documents::DEPLOY_POD,
                json!({ "input": input }),
                "podFindAndDeployOnDemand",
            )
            .await?;
        if v.is_null() {
            // No pod and no error: we cannot tell whether one was deployed.
            return Err(PlatformError::Transient {
                operation: op.name(),
                status: None,
                detail: "the answer holds no pod".into(),
                maybe_applied: true,
            });
        }
        Self::typed(op, v)
    }

    /// `podResume`: starts a stopped pod on its host. "Not enough free GPUs on the host"
    /// comes back as [`super::ErrorClass::Capacity`].
    pub async fn resume_pod(&self, input: &ResumePodInput) -> Result<PodState> {
        let op = Operation::GraphqlResumePod;
        validate::id("podId", &input.pod_id).map_err(|e| e.in_operation(op.name()))?;
        if let Some(n) = input.gpu_count
            && n < 1
        {
            return Err(
                PlatformError::invalid_input("gpuCount", "must be at least 1")
                    .in_operation(op.name()),
            );
        }
        let v = self
            .execute(
                op,
                documents::RESUME_POD,
                json!({ "input": input }),
                "podResume",
            )
            .await?;
        self.pod_state(op, &input.pod_id, v)
    }

    /// `podStop`: stops a running pod; its GPUs are released and volume data kept.
    pub async fn stop_pod(&self, pod_id: &str) -> Result<PodState> {
        let op = Operation::GraphqlStopPod;
        validate::id("podId", pod_id).map_err(|e| e.in_operation(op.name()))?;
        let v = self
            .execute(
                op,
                documents::STOP_POD,
                json!({ "input": { "podId": pod_id } }),
                "podStop",
            )
            .await?;
        self.pod_state(op, pod_id, v)
    }

    fn pod_state(&self, op: Operation, pod_id: &str, v: Value) -> Result<PodState> {
        if v.is_null() {
            return Err(PlatformError::NotFound {
                operation: op.name(),
                detail: format!("pod {pod_id}"),
            });
        }
        Self::typed(op, v)
    }

    /// `podTerminate`: removes the pod for good. Returns the platform's Boolean.
    pub async fn terminate_pod(&self, pod_id: &str) -> Result<bool> {
        let op = Operation::GraphqlTerminatePod;
        validate::id("podId", pod_id).map_err(|e| e.in_operation(op.name()))?;
        let v = self
            .execute(
                op,
                documents::TERMINATE_POD,
                json!({ "input": { "podId": pod_id } }),
                "podTerminate",
            )
            .await?;
        // Some servers answer null for "done"; only an explicit false is a refusal.
        Ok(v.as_bool().unwrap_or(true))
    }

    /// `pod(input: {podId})`; a missing pod is [`super::ErrorClass::NotFound`].
    pub async fn pod(&self, pod_id: &str) -> Result<Pod> {
        let op = Operation::GraphqlPod;
        validate::id("podId", pod_id).map_err(|e| e.in_operation(op.name()))?;
        let v = self
            .execute(
                op,
                documents::POD,
                json!({ "input": { "podId": pod_id } }),
                "pod",
            )
            .await?;
        if v.is_null() {
            return Err(PlatformError::NotFound {
                operation: op.name(),
                detail: format!("pod {pod_id}"),
            });
        }
        Self::typed(op, v)
    }

    /// `myself { pods }`: every pod of the account, with its runtime. One call for all.
    pub async fn my_pods(&self) -> Result<Vec<Pod>> {
        let op = Operation::GraphqlMyPods;
        let v = self
            .execute(op, documents::MY_PODS, json!({}), "myself")
            .await?;
        let pods = v
            .get("pods")
            .cloned()
            .ok_or_else(|| PlatformError::decode(op.name(), "`myself.pods` is missing"))?;
        Self::typed(op, pods)
    }

    /// `gpuTypes`, optionally one type, with `lowestPrice` for the given count and cloud.
    pub async fn gpu_types(
        &self,
        id: Option<&str>,
        price: &LowestPriceInput,
    ) -> Result<Vec<GpuType>> {
        let op = Operation::GraphqlGpuTypes;
        if let Some(id) = id {
            validate::name("id", id).map_err(|e| e.in_operation(op.name()))?;
        }
        if let Some(n) = price.gpu_count
            && n < 1
        {
            return Err(
                PlatformError::invalid_input("gpuCount", "must be at least 1")
                    .in_operation(op.name()),
            );
        }
        let filter = id.map(|id| json!({ "id": id }));
        let v = self
            .execute(
                op,
                documents::GPU_TYPES,
                json!({ "input": filter, "lowestPrice": price }),
                "gpuTypes",
            )
            .await?;
        Self::typed(op, v)
    }
}

/// GraphQL servers answer resolver errors ("pod not found") with HTTP 400 as often as
/// schema errors; read the messages rather than the status to tell them apart.
fn reclassify_400(op: Operation, e: PlatformError) -> PlatformError {
    let PlatformError::InvalidInput {
        detail, problems, ..
    } = &e
    else {
        return e;
    };
    let body = ErrorBody {
        detail: Some(detail.clone()),
        problems: problems.clone(),
        ..ErrorBody::default()
    };
    let again = error::from_graphql(op.name(), &body, false);
    match again.class() {
        ErrorClass::NotFound
        | ErrorClass::Unauthorized
        | ErrorClass::Forbidden
        | ErrorClass::Capacity => again,
        _ => e,
    }
}

/// The deploy input, checked field by field before the call.
pub fn validate_deploy(input: &DeployPodInput) -> Result<()> {
    match &input.name {
        Some(n) => validate::name("name", n)?,
        None => {
            return Err(PlatformError::invalid_input(
                "name",
                "is required (pods are found again by name)",
            ));
        }
    }
    match &input.image_name {
        Some(n) => validate::name("imageName", n)?,
        None => return Err(PlatformError::invalid_input("imageName", "is required")),
    }
    match &input.gpu_type_id {
        Some(g) => validate::name("gpuTypeId", g)?,
        None => return Err(PlatformError::invalid_input("gpuTypeId", "is required")),
    }
    if let Some(n) = input.gpu_count
        && n < 1
    {
        return Err(PlatformError::invalid_input(
            "gpuCount",
            "must be at least 1",
        ));
    }
    for (field, v) in [
        ("volumeInGb", input.volume_in_gb),
        ("containerDiskInGb", input.container_disk_in_gb),
        ("minVcpuCount", input.min_vcpu_count),
        ("minMemoryInGb", input.min_memory_in_gb),
    ] {
        if let Some(v) = v
            && v < 0
        {
            return Err(PlatformError::invalid_input(field, "must not be negative"));
        }
    }
    if let Some(ports) = &input.ports {
        validate_ports(ports)?;
    }
    for e in input.env.iter().flatten() {
        if e.key.is_empty()
            || e.key.contains('=')
            || e.key.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(PlatformError::invalid_input(
                "env",
                format!("invalid variable name {:?}", e.key),
            ));
        }
    }
    if let Some(v) = &input.network_volume_id {
        validate::id("networkVolumeId", v)?;
    }
    if let Some(v) = &input.template_id {
        validate::id("templateId", v)?;
    }
    if let Some(p) = &input.volume_mount_path
        && !p.starts_with('/')
    {
        return Err(PlatformError::invalid_input(
            "volumeMountPath",
            "must be an absolute path",
        ));
    }
    Ok(())
}

/// `ports`: comma-separated `<port>/<type>`, port 1..=65535, type `http`, `tcp` or `udp`.
pub fn validate_ports(ports: &str) -> Result<()> {
    for entry in ports.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let ok = entry.split_once('/').is_some_and(|(port, kind)| {
            port.parse::<u16>().is_ok_and(|p| p > 0) && matches!(kind, "http" | "tcp" | "udp")
        });
        if !ok {
            return Err(PlatformError::invalid_input(
                "ports",
                format!("entry {entry:?} is not <port>/<http|tcp|udp>"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::types::{CloudType, EnvVar};
    use super::*;

    fn good() -> DeployPodInput {
        DeployPodInput {
            cloud_type: Some(CloudType::All),
            gpu_count: Some(1),
            gpu_type_id: Some("NVIDIA A40".into()),
            name: Some("p1".into()),
            image_name: Some("img:1".into()),
            ports: Some("8888/http,22/tcp".into()),
            env: Some(vec![EnvVar {
                key: "A".into(),
                value: "b=c".into(),
            }]),
            ..Default::default()
        }
    }

    fn field(e: PlatformError) -> String {
        match e {
            PlatformError::InvalidInput { field, .. } => field,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn deploy_input_serialises_with_schema_names() {
        let v = serde_json::to_value(good()).unwrap();
        assert_eq!(v["cloudType"], "ALL");
        assert_eq!(v["gpuTypeId"], "NVIDIA A40");
        assert_eq!(v["env"][0], json!({"key": "A", "value": "b=c"}));
        assert!(v.get("volumeInGb").is_none());
    }

    #[test]
    fn deploy_input_is_checked() {
        assert!(validate_deploy(&good()).is_ok());
        let mut i = good();
        i.gpu_count = Some(0);
        assert_eq!(field(validate_deploy(&i).unwrap_err()), "gpuCount");
        let mut i = good();
        i.ports = Some("8888/ftp".into());
        assert_eq!(field(validate_deploy(&i).unwrap_err()), "ports");
        let mut i = good();
        i.ports = Some("0/http".into());
        assert_eq!(field(validate_deploy(&i).unwrap_err()), "ports");
        let mut i = good();
        i.env = Some(vec![EnvVar {
            key: "A=B".into(),
            value: String::new(),
        }]);
        assert_eq!(field(validate_deploy(&i).unwrap_err()), "env");
        let mut i = good();
        i.name = None;
        assert_eq!(field(validate_deploy(&i).unwrap_err()), "name");
        let mut i = good();
        i.volume_in_gb = Some(-1);
        assert_eq!(field(validate_deploy(&i).unwrap_err()), "volumeInGb");
    }

    #[test]
    fn graphql_400_not_found_is_not_found() {
        let e = PlatformError::InvalidInput {
            operation: "graphql.podStop",
            field: "request".into(),
            detail: "invalid request: pod not found: abc".into(),
            problems: vec!["pod not found: abc".into()],
        };
        assert_eq!(
            reclassify_400(Operation::GraphqlStopPod, e).class(),
            ErrorClass::NotFound
        );
        let e = PlatformError::invalid_input("input", "Unknown field \"x\"");
        assert_eq!(
            reclassify_400(Operation::GraphqlStopPod, e).class(),
            ErrorClass::InvalidInput
        );
    }

    #[test]
    fn pod_env_lookup() {
        let p: Pod = serde_json::from_value(json!({
            "id": "p", "desiredStatus": "RUNNING", "env": ["A=1", "AB=2", "C=x=y"]
        }))
        .unwrap();
        assert_eq!(p.env_value("A"), Some("1"));
        assert_eq!(p.env_value("C"), Some("x=y"));
        assert_eq!(p.env_value("D"), None);
    }
}
